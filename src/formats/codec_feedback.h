#pragma once
// int8_ef: INT8 codes with FP32 group scales (the int8 rule of codec_scaled.h) plus a 4-bit signed residual per
// element holding the quantization error of the last store, added back to the value before the next store (error
// feedback, first-order sigma-delta). src/formats/README.md ("Error-feedback INT8") has the rule in full.
//
//   store t:  r     = res_{t-1} * (scale_{t-1} / 15)            (0 at the first store: no previous stored state, and
//                                                                where scale_{t-1} is Inf or NaN: no error to carry)
//             y     = x + r                                      (FP32, RNE; y = x at the first store)
//             scale = amax(y over the group) / 127               (scale_from_amax of the int8 codec, NaN ignored)
//             inv   = 1 / scale;  q = int8(rint(y * inv))        (clamped to +-127, NaN -> 0)
//             e     = y - q * scale                              (FP32: the error of this store)
//             res   = clamp(rint((e * inv) * 15), -8, 7)         (NaN -> 0; RNE; |e * inv| <= 1/2 gives [-7.5, 7.5])
//   decode:   q * scale                                          (the residual is not part of the value)
//
// Why the residual is not decoded: it is the part of the state the INT8 store lost, carried to the next store. A
// reader that saw q + r would feed r into the recurrence through the state it reads, and the next store would add
// it a second time. With decode = q the sum of the errors telescopes: after n decay-free stores the stored state is
// the exact sum minus the last residual (and the 4-bit rounding of the residuals), where plain INT8 accumulates (or,
// for updates below half a step, drops) every store's error.
//
// Why 1/15 of a step and not 1/16: with 1/16 the error range [-1/2, 1/2] of a step maps to [-8, 8] and +8 saturates
// to 7, a loss that always has the same sign; it recurs in 1/32 of the stores and adds up (about 3 steps over 2000
// stores in test_feedback.cpp). With 1/15 the range is [-7.5, 7.5]: only the tie at exactly +7.5 saturates.
//
// Storage: codes = int8 [V][K] (one byte each), then the residuals as 4-bit two's complement, packed two a byte
// (element i in byte V*K + i/2, even i in the low nibble); scales = float32 as int8's (head / row / block / column).
#include <cstddef>
#include <cstdint>

#include "formats/codec_common.h"
#include "formats/codec_scaled.h"
#include "formats/format_id.h"
#include "formats/hd.h"
#include "formats/minifloat.h"
#include "formats/storage.h"

namespace replayssm::formats::detail {

template <class Derived>
struct FeedbackInt8Codec : FloatScaledCodec<Derived, int8_t> {
  using Base = FloatScaledCodec<Derived, int8_t>;
  using code_t = int8_t;
  static constexpr bool kStateful = true;
  static constexpr float kResidualPerStep = 15.0f;  // residual scale = code scale / 15: +-half a step in [-7.5, 7.5]
  static constexpr int kResidualMin = -8, kResidualMax = 7;

  REPLAYSSM_HD static constexpr std::size_t elements(int V, int K) {
    return static_cast<std::size_t>(V) * static_cast<std::size_t>(K);
  }
  static constexpr std::size_t code_bytes(int V, int K) { return elements(V, K) + (elements(V, K) + 1) / 2; }
  static constexpr std::size_t bytes_per_state(int V, int K, Scaling s) {
    return code_bytes(V, K) + Base::scale_bytes(V, K, s);
  }

  // The 4-bit residual code of an error already divided by the code scale (t = e * inv, |t| <= 1/2 under RNE).
  REPLAYSSM_HD static int residual_encode(float t) {
    const int c = int8_encode(mul_rn(t, kResidualPerStep));  // rint, NaN -> 0 (the int8 rule)
    return c < kResidualMin ? kResidualMin : (c > kResidualMax ? kResidualMax : c);
  }
  REPLAYSSM_HD static int residual_decode(uint32_t nibble) { return static_cast<int>((nibble & 0xFu) ^ 0x8u) - 8; }
  REPLAYSSM_HD static int load_residual(const uint8_t* codes, std::size_t n, std::size_t i) {
    return residual_decode(load_code<4>(codes + n, i));
  }

  // The value the store quantizes: x plus the previous store's residual (pc == nullptr: the first store, y = x).
  REPLAYSSM_HD static float fed(float x, const uint8_t* pc, std::size_t n, std::size_t i, float prev_scale) {
    if (!pc || is_inf(prev_scale) || is_nan(prev_scale)) return x;
    const float r = mul_rn(static_cast<float>(load_residual(pc, n, i)), div_rn(prev_scale, kResidualPerStep));
    return x + r;
  }
  // One element of a group whose scale (and its reciprocal) is known: the int8 code and the residual of this store.
  REPLAYSSM_HD static void put_element(uint8_t* codes, std::size_t n, std::size_t i, float y, float sc, float inv) {
    const int8_t q = int8_encode(mul_rn(y, inv));
    const float e = y - mul_rn(int8_decode(q), sc);
    store_code<8>(codes, i, static_cast<uint32_t>(static_cast<uint8_t>(q)));
    store_code<4>(codes + n, i, static_cast<uint32_t>(residual_encode(mul_rn(e, inv))) & 0xFu);
  }

  // A store after the previous stored state (prev_codes / prev_scales in this layout, or nullptr for the first
  // store). prev may be the destination itself: each group's previous scale is read before its scale is written and
  // each element's previous residual before its own nibble is written.
  REPLAYSSM_HD static void encode_state_after(const float* x, int V, int K, const CodecParams& p,
                                              const uint8_t* prev_codes, const uint8_t* prev_scales, uint8_t* codes,
                                              uint8_t* scales) {
    const std::size_t n = elements(V, K);
    const Scaling s = p.scaling;
    if (s == Scaling::column) {
      constexpr int kChunk = Base::kColChunk;
      for (int c0 = 0; c0 < K; c0 += kChunk) {
        const int w = (c0 + kChunk < K ? c0 + kChunk : K) - c0;
        float ps[kChunk], sc[kChunk], inv[kChunk];
        for (int j = 0; j < w; ++j) {
          ps[j] = prev_codes ? load_f32(prev_scales + 4 * (c0 + j)) : 0.0f;
          sc[j] = 0.0f;
        }
        for (int v = 0; v < V; ++v)
          for (int j = 0; j < w; ++j) {
            const std::size_t i = static_cast<std::size_t>(v) * K + c0 + j;
            sc[j] = amax_ignore_nan(sc[j], fed(x[i], prev_codes, n, i, ps[j]));
          }
        for (int j = 0; j < w; ++j) {
          sc[j] = Base::scale_from_amax(sc[j]);
          inv[j] = div_rn(1.0f, sc[j]);
          store_f32(scales + 4 * (c0 + j), sc[j]);
        }
        for (int v = 0; v < V; ++v)
          for (int j = 0; j < w; ++j) {
            const std::size_t i = static_cast<std::size_t>(v) * K + c0 + j;
            put_element(codes, n, i, fed(x[i], prev_codes, n, i, ps[j]), sc[j], inv[j]);
          }
      }
      return;
    }
    // head: one group of every row; row: one group per row; block: kBlock-wide groups along each row
    const int rows = s == Scaling::head ? V : 1;
    const int width = s == Scaling::block ? Base::kBlock : K;
    for (int v0 = 0; v0 < V; v0 += rows)
      for (int k0 = 0; k0 < K; k0 += width) {
        const int k1 = k0 + width < K ? k0 + width : K;
        const int si = Base::scale_index(v0, k0, K, s);
        const float ps = prev_codes ? load_f32(prev_scales + 4 * si) : 0.0f;
        float m = 0.0f;
        for (int v = v0; v < v0 + rows; ++v)
          for (int k = k0; k < k1; ++k) {
            const std::size_t i = static_cast<std::size_t>(v) * K + k;
            m = amax_ignore_nan(m, fed(x[i], prev_codes, n, i, ps));
          }
        const float sc = Base::scale_from_amax(m), inv = div_rn(1.0f, sc);
        store_f32(scales + 4 * si, sc);
        for (int v = v0; v < v0 + rows; ++v)
          for (int k = k0; k < k1; ++k) {
            const std::size_t i = static_cast<std::size_t>(v) * K + k;
            put_element(codes, n, i, fed(x[i], prev_codes, n, i, ps), sc, inv);
          }
      }
  }
  // Its residuals make every store depend on the one it replaces: no encode by rows (the base's would write plain int8
  // codes and no residual).
  REPLAYSSM_HD static constexpr bool rows_apart(Scaling) { return false; }
  static void encode_rows(const float*, int, int, int, const CodecParams&, float, uint8_t*, uint8_t*) = delete;
  // Without a previous stored state: the first store (residual zero).
  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* scales) {
    encode_state_after(x, V, K, p, nullptr, nullptr, codes, scales);
  }
  // The INT8 value: the int8 codec's decode over the first V*K bytes (the residuals follow them).
  using Base::decode_state;
};

}  // namespace replayssm::formats::detail
