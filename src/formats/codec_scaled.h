#pragma once
// The FP32-scaled codecs: fp8_e4m3, fp8_e5m2, int8, int16 with one FP32 decode scale per head / row / 32-block /
// column, or none (unit scale). See state_codec.h for the other codecs and src/formats/README.md for the layouts.
#include <cstddef>
#include <cstdint>

#include "formats/codec_common.h"
#include "formats/format_id.h"
#include "formats/hd.h"
#include "formats/storage.h"

namespace replayssm::formats::detail {

// scale = amax / kMax (amax = max |x| over the group, NaN ignored), or 1 when amax == 0.
// encode: code = encode(x * (1 / scale)); decode: decode(code) * scale.
// Groups: head (every element), row (one per row v), block (32 contiguous elements of a row along K), column (one
// per column k over the V rows: the per-(head, column) scales of vLLM's quantized Mamba state cache), tile (kTileRows
// whole rows, E4M3 only, scale = amax / kTileQMax = amax / 240: SGLang's FP8 state tiles, which keep the codes below
// 240 so that a later step's growth does not saturate at 448).
template <class Derived, class CodeT, int kBitsT = 8>
struct FloatScaledCodec : PackedCodes<Derived, kBitsT> {
  using code_t = CodeT;
  static constexpr int kBits = kBitsT;
  static constexpr int kBlock = 32;
  static constexpr int kColChunk = 128;
  static constexpr int kTileRows = 32;
  static constexpr float kTileQMax = 240.0f;  // columns per chunk of the column-scaled encode (a local array of inverses)

  // The range edges (the normal range is untouched: amax / kMax is a normal float and scale * kMax is finite):
  // * a scale below FLT_MIN would have a reciprocal that overflows (1/scale = Inf: zeros encode to NaN, every other
  //   element to +-kMax), or a subnormal one: it is raised to kMinScale = FLT_MIN (2^-126, exact reciprocal), so a
  //   row with amax < kMax * FLT_MIN is stored on the grid of FLT_MIN (exact power-of-two scaling: fp8 keeps its
  //   relative precision down to its own subnormals; int8 steps by FLT_MIN there);
  // * where scale * kMax rounds past FLT_MAX (amax within a rounding of FLT_MAX) the largest code would decode to Inf:
  //   the scale is taken one ulp lower, so the largest code decodes to a finite value and amax saturates to it.
  // An Inf amax keeps an Inf scale (the group decodes to NaN: a blown-up state stays loud).
  static constexpr float kMinScale = 1.17549435082228750797e-38f;  // FLT_MIN
  REPLAYSSM_HD static float scale_from_amax_q(float amax, float qmax) {
    if (amax == 0.0f) return 1.0f;
    const float s = div_rn(amax, qmax);
    if (s < kMinScale) return kMinScale;
    if (is_inf(mul_rn(s, qmax)) && !is_inf(s)) return next_below(s);
    return s;
  }
  REPLAYSSM_HD static float scale_from_amax(float amax) { return scale_from_amax_q(amax, Derived::kMax); }
  REPLAYSSM_HD static constexpr int num_scales(int V, int K, Scaling s) {
    return s == Scaling::head     ? 1
           : s == Scaling::row    ? V
           : s == Scaling::block  ? V * ceil_div(K, kBlock)
           : s == Scaling::column ? K
           : s == Scaling::tile   ? ceil_div(V, kTileRows)
                                  : 0;
  }
  // Index of the scale of element (v, k) in the float32 scale array (Scaling::none has no scale: 0, unused).
  REPLAYSSM_HD static constexpr int scale_index(int v, int k, int K, Scaling s) {
    return s == Scaling::row      ? v
           : s == Scaling::block  ? v * ceil_div(K, kBlock) + k / kBlock
           : s == Scaling::column ? k
           : s == Scaling::tile   ? v / kTileRows
                                  : 0;
  }
  static constexpr std::size_t scale_bytes(int V, int K, Scaling s) {
    return 4u * static_cast<std::size_t>(num_scales(V, K, s));
  }
  static constexpr std::size_t bytes_per_state(int V, int K, Scaling s) {
    return PackedCodes<Derived, kBitsT>::code_bytes(V, K) + scale_bytes(V, K, s);
  }

  REPLAYSSM_HD static void put(uint8_t* codes, int v, int k, int K, code_t c) {
    store_code<kBits>(codes, static_cast<std::size_t>(v) * K + k, static_cast<uint32_t>(c));
  }

  // One scale group: elements [k0, k1) of row v (a head group is every row, [0, K)). amax is order-free (NaN ignored);
  // the reciprocal of the group's scale is formed once per group (the same value as forming it per element).
  REPLAYSSM_HD static float group_amax(const float* row, int k0, int k1, float m) {
    return amax_ignore_nan_n(row + k0, k1 - k0, m);
  }
  REPLAYSSM_HD static void encode_group(const float* row, int v, int k0, int k1, int K, float inv, bool scaled,
                                        const CodecParams& p, uint8_t* codes) {
    if (p.rounding == Rounding::rne) {
      if (scaled)
        for (int k = k0; k < k1; ++k) put(codes, v, k, K, Derived::encode(mul_rn(row[k], inv), Rounding::rne, 0u));
      else
        for (int k = k0; k < k1; ++k) put(codes, v, k, K, Derived::encode(row[k], Rounding::rne, 0u));
      return;
    }
    for (int k = k0; k < k1; ++k)
      put(codes, v, k, K, Derived::encode(scaled ? mul_rn(row[k], inv) : row[k], p.rounding, element_rand_bits(p, v, k)));
  }

  // Column scales: chunks of up to kColChunk columns; the chunk's column amaxes over every row, its scales, their
  // reciprocals, then the elements row by row (each with its column's reciprocal).
  REPLAYSSM_HD static void encode_columns(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                          uint8_t* scales) {
    for (int c0 = 0; c0 < K; c0 += kColChunk) {
      const int n = (c0 + kColChunk < K ? c0 + kColChunk : K) - c0;
      float inv[kColChunk];
      for (int j = 0; j < n; ++j) inv[j] = 0.0f;
      for (int v = 0; v < V; ++v)
        for (int j = 0; j < n; ++j) inv[j] = amax_ignore_nan(inv[j], x[static_cast<std::size_t>(v) * K + c0 + j]);
      for (int j = 0; j < n; ++j) {
        const float sc = scale_from_amax(inv[j]);
        store_f32(scales + 4 * (c0 + j), sc);
        inv[j] = div_rn(1.0f, sc);
      }
      for (int v = 0; v < V; ++v) {
        const float* row = x + static_cast<std::size_t>(v) * K;
        for (int j = 0; j < n; ++j) {
          const int k = c0 + j;
          const uint32_t rnd = p.rounding == Rounding::rne ? 0u : element_rand_bits(p, v, k);
          put(codes, v, k, K, Derived::encode(mul_rn(row[k], inv[j]), p.rounding, rnd));
        }
      }
    }
  }

  // Whether encode_rows may run rows apart: every scale group within one row (none, row, block). A caller that runs
  // them in parallel also needs each row's codes on whole bytes (K * kBits % 8 == 0).
  REPLAYSSM_HD static constexpr bool rows_apart(Scaling s) {
    return s == Scaling::none || s == Scaling::row || s == Scaling::block;
  }
  // Rows [v0, v1) of encode_state where rows_apart (x: the head's state, row v at x + v K; head_amax: unused, the
  // common signature of the scaled codecs).
  REPLAYSSM_HD static void encode_rows(const float* x, int v0, int v1, int K, const CodecParams& p, float /*head_amax*/,
                                       uint8_t* codes, uint8_t* scales) {
    const Scaling s = p.scaling;
    if (s == Scaling::none) {
      for (int v = v0; v < v1; ++v) encode_group(x + static_cast<std::size_t>(v) * K, v, 0, K, K, 1.0f, false, p, codes);
      return;
    }
    // row: one group per row; block: kBlock-wide groups along K (a short last block when K % kBlock != 0)
    const int width = s == Scaling::row ? K : kBlock;
    for (int v = v0; v < v1; ++v) {
      const float* row = x + static_cast<std::size_t>(v) * K;
      for (int k0 = 0; k0 < K; k0 += width) {
        const int k1 = k0 + width < K ? k0 + width : K;
        const float sc = scale_from_amax(group_amax(row, k0, k1, 0.0f));
        store_f32(scales + 4 * scale_index(v, k0, K, s), sc);
        encode_group(row, v, k0, k1, K, div_rn(1.0f, sc), true, p, codes);
      }
    }
  }

  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* scales) {
    const Scaling s = p.scaling;
    if (rows_apart(s)) {
      encode_rows(x, 0, V, K, p, 0.0f, codes, scales);
      return;
    }
    if (s == Scaling::column) {
      encode_columns(x, V, K, p, codes, scales);
      return;
    }
    if (s == Scaling::head || s == Scaling::tile) {  // groups of whole rows: all V, or kTileRows
      const int rows = s == Scaling::head ? V : kTileRows;
      for (int v0 = 0; v0 < V; v0 += rows) {
        const int v1 = v0 + rows < V ? v0 + rows : V;
        float m = 0.0f;
        for (int v = v0; v < v1; ++v) m = group_amax(x + static_cast<std::size_t>(v) * K, 0, K, m);
        const float sc = s == Scaling::head ? scale_from_amax(m) : scale_from_amax_q(m, kTileQMax);
        store_f32(scales + 4 * scale_index(v0, 0, K, s), sc);
        const float inv = div_rn(1.0f, sc);
        for (int v = v0; v < v1; ++v) encode_group(x + static_cast<std::size_t>(v) * K, v, 0, K, K, inv, true, p, codes);
      }
    }
  }
  REPLAYSSM_HD static float get(const uint8_t* codes, int v, int k, int K) {
    return Derived::decode(static_cast<code_t>(load_code<kBits>(codes, static_cast<std::size_t>(v) * K + k)));
  }
  REPLAYSSM_HD static void decode_state(const uint8_t* codes, const uint8_t* scales, int V, int K,
                                        const CodecParams& p, float* out) {
    decode_rows(codes, scales, 0, V, K, p, out);
  }
  // Rows [v0, v1) of decode_state (every scaling: an element reads its own group's scale).
  REPLAYSSM_HD static void decode_rows(const uint8_t* codes, const uint8_t* scales, int v0, int v1, int K,
                                       const CodecParams& p, float* out) {
    const Scaling s = p.scaling;
    const int width = s == Scaling::block ? kBlock : s == Scaling::column ? 1 : K;
    for (int v = v0; v < v1; ++v) {
      float* o = out + static_cast<std::size_t>(v) * K;
      for (int k0 = 0; k0 < K; k0 += width) {
        const int k1 = k0 + width < K ? k0 + width : K;
        if (s == Scaling::none) {
          for (int k = k0; k < k1; ++k) o[k] = get(codes, v, k, K);
        } else {
          const float sc = load_f32(scales + 4 * scale_index(v, k0, K, s));
          for (int k = k0; k < k1; ++k) o[k] = mul_rn(get(codes, v, k, K), sc);
        }
      }
    }
  }
};

}  // namespace replayssm::formats::detail
