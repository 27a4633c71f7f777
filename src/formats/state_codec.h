#pragma once
// StateCodec<FormatId>: the storage format of one recurrent head state [V][K] as a type.
//
// Element level (what a kernel calls per element):
//   using code_t; kBits; kMax; encode(float x_scaled, Rounding, uint32_t rand_bits) -> code_t; decode(code_t) -> float
// Scale level:
//   kBlock (elements per block along K for Scaling::block, 0 where the format has no scale);
//   scale_from_amax(amax) (see each codec).
// Head-state level (what the CPU emulation calls per head state):
//   code_bytes(V, K), scale_bytes(V, K, Scaling), bytes_per_state(V, K, Scaling);
//   encode_state(x, V, K, params, codes, scales); decode_state(codes, scales, V, K, params, out);
//   kStateful, and the free encode_state_after(...) below: a store that reads the previous stored state (int8_ef).
//
// Storage (src/formats/README.md has the full table):
//   codes : row-major [V][K] elements, flat index i = v*K + k. 32/16-bit codes little-endian (int16 two's
//           complement); 8-bit one byte; 4-bit two per byte: element i in byte i/2, even i in the low nibble, odd i in the high nibble
//           (as __nv_fp4x2_storage_t).
//   scales: raw bytes, little-endian:
//           fp8/int8/int16  head : float32[1];  row : float32[V];  block : float32[V][ceil(K/32)];
//                           column : float32[K]  (decode scale)
//           nvfp4          : float32 head amax at bytes [0,4), then E4M3 block scales uint8[V][ceil(K/16)]
//           mxfp8/mxfp4    : E8M0 block scales uint8[V][ceil(K/32)]
// Blocks never cross a row; a row whose K is not a multiple of the block ends in a short block.
// Random bits for SR of element (v, k): sr_bits(seed, head, v, k, step).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "formats/codec_common.h"
#include "formats/codec_feedback.h"
#include "formats/codec_scaled.h"
#include "formats/format_id.h"
#include "formats/hd.h"
#include "formats/minifloat.h"
#include "formats/storage.h"

namespace replayssm::formats {

namespace detail {

// fp32, bf16, bf16x2, fp16: no scale.
template <class Derived, class CodeT, int kBitsT>
struct UnscaledCodec : PackedCodes<Derived, kBitsT> {
  using code_t = CodeT;
  static constexpr int kBits = kBitsT;
  static constexpr int kBlock = 0;
  REPLAYSSM_HD static float scale_from_amax(float) { return 1.0f; }
  static constexpr std::size_t scale_bytes(int, int, Scaling) { return 0; }
  static constexpr std::size_t bytes_per_state(int V, int K, Scaling s) {
    return PackedCodes<Derived, kBitsT>::code_bytes(V, K) + scale_bytes(V, K, s);
  }
  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* /*scales*/) {
    if (p.rounding == Rounding::rne) {
      const std::size_t n = static_cast<std::size_t>(V) * K;
      for (std::size_t i = 0; i < n; ++i)
        store_code<kBits>(codes, i, static_cast<uint32_t>(Derived::encode(x[i], Rounding::rne, 0u)));
      return;
    }
    for (int v = 0; v < V; ++v)
      for (int k = 0; k < K; ++k) {
        const std::size_t i = static_cast<std::size_t>(v) * K + k;
        store_code<kBits>(codes, i, static_cast<uint32_t>(Derived::encode(x[i], p.rounding, element_rand_bits(p, v, k))));
      }
  }
  REPLAYSSM_HD static void decode_state(const uint8_t* codes, const uint8_t* /*scales*/, int V, int K,
                                        const CodecParams& /*p*/, float* out) {
    const std::size_t n = static_cast<std::size_t>(V) * K;
    for (std::size_t i = 0; i < n; ++i) out[i] = Derived::decode(static_cast<code_t>(load_code<kBits>(codes, i)));
  }
};

// mxfp8 / mxfp4 (OCP MX v1.0): 32-element blocks along K with an E8M0 scale 2^(floor(log2(amax)) - emax_elem).
// amax propagates NaN; a block with a NaN or Inf gets scale 0xFF (NaN) and decodes to NaN.
// encode: code = encode(x * 2^-shared_exp) (exact), decode: decode(code) * 2^shared_exp.
template <class Derived, int kBitsT, int kEmaxElem>
struct MxCodec : PackedCodes<Derived, kBitsT> {
  using code_t = uint8_t;
  static constexpr int kBits = kBitsT;
  static constexpr int kBlock = 32;
  static constexpr int kEmax = kEmaxElem;

  REPLAYSSM_HD static uint8_t scale_code_from_amax(float amax) { return e8m0_from_amax(amax, kEmax); }
  // The block scale X as a float (NaN for amax NaN/Inf).
  REPLAYSSM_HD static float scale_from_amax(float amax) { return e8m0_decode(scale_code_from_amax(amax)); }
  static constexpr std::size_t scale_bytes(int V, int K, Scaling) {
    return static_cast<std::size_t>(V) * static_cast<std::size_t>(ceil_div(K, kBlock));
  }
  static constexpr std::size_t bytes_per_state(int V, int K, Scaling s) {
    return PackedCodes<Derived, kBitsT>::code_bytes(V, K) + scale_bytes(V, K, s);
  }
  REPLAYSSM_HD static constexpr bool rows_apart(Scaling) { return true; }  // blocks along K: every group in a row
  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* scales) {
    encode_rows(x, 0, V, K, p, 0.0f, codes, scales);
  }
  // Rows [v0, v1) of encode_state (head_amax: unused, the common signature of the scaled codecs).
  REPLAYSSM_HD static void encode_rows(const float* x, int v0, int v1, int K, const CodecParams& p, float /*head_amax*/,
                                       uint8_t* codes, uint8_t* scales) {
    const int nb = ceil_div(K, kBlock);
    for (int v = v0; v < v1; ++v)
      for (int b = 0; b < nb; ++b) {
        const int k0 = b * kBlock;
        const int k1 = k0 + kBlock < K ? k0 + kBlock : K;
        const float* row = x + static_cast<std::size_t>(v) * K;
        float amax = 0.0f;
        for (int k = k0; k < k1; ++k) amax = amax_propagate_nan(amax, row[k]);
        const uint8_t sc = scale_code_from_amax(amax);
        scales[v * nb + b] = sc;
        const float inv = sc == 0xFFu ? 0.0f : e8m0_inverse(sc);
        for (int k = k0; k < k1; ++k) {
          const float xs = sc == 0xFFu ? 0.0f : mul_rn(row[k], inv);
          store_code<kBits>(codes, static_cast<std::size_t>(v) * K + k,
                            Derived::encode(xs, p.rounding, element_rand_bits(p, v, k)));
        }
      }
  }
  REPLAYSSM_HD static void decode_state(const uint8_t* codes, const uint8_t* scales, int V, int K,
                                        const CodecParams& p, float* out) {
    decode_rows(codes, scales, 0, V, K, p, out);
  }
  REPLAYSSM_HD static void decode_rows(const uint8_t* codes, const uint8_t* scales, int v0, int v1, int K,
                                       const CodecParams& /*p*/, float* out) {
    const int nb = ceil_div(K, kBlock);
    for (int v = v0; v < v1; ++v)
      for (int b = 0; b < nb; ++b) {
        const int k0 = b * kBlock;
        const int k1 = k0 + kBlock < K ? k0 + kBlock : K;
        const float sc = e8m0_decode(scales[v * nb + b]);
        for (int k = k0; k < k1; ++k) {
          const std::size_t i = static_cast<std::size_t>(v) * K + k;
          out[i] = mul_rn(Derived::decode(static_cast<code_t>(load_code<kBits>(codes, i))), sc);
        }
      }
  }
};

}  // namespace detail

// ================================ element codecs ================================

template <>
struct StateCodec<FormatId::fp32> : detail::UnscaledCodec<StateCodec<FormatId::fp32>, uint32_t, 32> {
  static constexpr FormatId kFormat = FormatId::fp32;
  static constexpr float kMax = 3.40282346638528859812e+38f;
  REPLAYSSM_HD static code_t encode(float x, Rounding = Rounding::rne, uint32_t = 0) { return float_to_bits(x); }
  REPLAYSSM_HD static float decode(code_t c) { return bits_to_float(c); }
};

template <>
struct StateCodec<FormatId::bf16> : detail::UnscaledCodec<StateCodec<FormatId::bf16>, uint16_t, 16> {
  static constexpr FormatId kFormat = FormatId::bf16;
  static constexpr float kMax = 3.38953138925153547590e+38f;  // 0x7F7F
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return bf16_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return bf16_decode(c); }
};

template <>
struct StateCodec<FormatId::bf16x2> : detail::UnscaledCodec<StateCodec<FormatId::bf16x2>, uint32_t, 32> {
  static constexpr FormatId kFormat = FormatId::bf16x2;
  static constexpr float kMax = 3.40282346638528859812e+38f;  // hi 0x7F7F plus lo: every finite float
  REPLAYSSM_HD static code_t encode(float x, Rounding = Rounding::rne, uint32_t = 0) { return bf16x2_encode(x); }
  REPLAYSSM_HD static float decode(code_t c) { return bf16x2_decode(c); }
};

template <>
struct StateCodec<FormatId::fp16> : detail::UnscaledCodec<StateCodec<FormatId::fp16>, uint16_t, 16> {
  static constexpr FormatId kFormat = FormatId::fp16;
  static constexpr float kMax = 65504.0f;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return fp16_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return fp16_decode(c); }
};

template <>
struct StateCodec<FormatId::fp8_e4m3> : detail::FloatScaledCodec<StateCodec<FormatId::fp8_e4m3>, uint8_t> {
  static constexpr FormatId kFormat = FormatId::fp8_e4m3;
  static constexpr float kMax = kE4M3Max;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return e4m3_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return e4m3_decode(c); }
};

template <>
struct StateCodec<FormatId::fp8_e5m2> : detail::FloatScaledCodec<StateCodec<FormatId::fp8_e5m2>, uint8_t> {
  static constexpr FormatId kFormat = FormatId::fp8_e5m2;
  static constexpr float kMax = kE5M2Max;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return e5m2_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return e5m2_decode(c); }
};

template <>
struct StateCodec<FormatId::int8> : detail::FloatScaledCodec<StateCodec<FormatId::int8>, int8_t> {
  static constexpr FormatId kFormat = FormatId::int8;
  static constexpr float kMax = kInt8Max;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return int8_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return int8_decode(c); }
};

// INT8 with an error-feedback residual (codec_feedback.h): the stored state of a store depends on the previous one.
template <>
struct StateCodec<FormatId::int8_ef> : detail::FeedbackInt8Codec<StateCodec<FormatId::int8_ef>> {
  static constexpr FormatId kFormat = FormatId::int8_ef;
  static constexpr float kMax = kInt8Max;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return int8_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return int8_decode(c); }
};

template <>
struct StateCodec<FormatId::int16> : detail::FloatScaledCodec<StateCodec<FormatId::int16>, int16_t, 16> {
  static constexpr FormatId kFormat = FormatId::int16;
  static constexpr float kMax = kInt16Max;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return int16_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return int16_decode(c); }
};

template <>
struct StateCodec<FormatId::mxfp8> : detail::MxCodec<StateCodec<FormatId::mxfp8>, 8, 8> {
  static constexpr FormatId kFormat = FormatId::mxfp8;
  static constexpr float kMax = kE4M3Max;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return e4m3_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return e4m3_decode(c); }
};

template <>
struct StateCodec<FormatId::mxfp4> : detail::MxCodec<StateCodec<FormatId::mxfp4>, 4, 2> {
  static constexpr FormatId kFormat = FormatId::mxfp4;
  static constexpr float kMax = kE2M1Max;
  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return e2m1_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return e2m1_decode(c); }
};

// NVFP4, Transformer Engine semantics (core_nvfp4.cuh, quantize_transpose_nvfp4.cuh, dequantize_nvfp4.cuh):
//   head amax A = max |x| over the head state (NaN ignored)          -> stored as float32 at scales[0..4)
//   S_enc  = fminf(2688 / A, FLT_MAX); 1 if A == 0 or S_enc == 0   (scale_from_amax)
//   S_dec  = 1 / S_enc                                             (TE: (float)(1.0 / (double)S_enc), identical)
//   block (16 along K): b = max |x| (NaN ignored);
//            scale code  = e4m3_satfinite(fminf(b * (S_enc * (1.0f/6)), FLT_MAX))          (block_scale_code)
//            multiplier  = fminf(1 / (e4m3(scale) * S_dec), FLT_MAX)   (all-zero block: 1/0 -> FLT_MAX)
//            element     = e2m1_satfinite(x * multiplier)     (RNE or SR)
//   decode: x = e2m1(c) * ((e4m3(scale) * A) * (float)(1.0 / 2688.0))                        (TE dequantize)
template <>
struct StateCodec<FormatId::nvfp4> : detail::PackedCodes<StateCodec<FormatId::nvfp4>, 4> {
  static constexpr FormatId kFormat = FormatId::nvfp4;
  using code_t = uint8_t;
  static constexpr int kBits = 4;
  static constexpr int kBlock = 16;
  static constexpr int kChunk = 128;  // elements per chunk of encode_state / decode_state (a multiple of kBlock)
  static constexpr float kMax = kE2M1Max;
  static constexpr float kFp4MaxInv = 1.0f / 6.0f;
  static constexpr float kDecodeFactor = static_cast<float>(1.0 / (6.0 * 448.0));

  REPLAYSSM_HD static code_t encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) { return e2m1_encode(x, r, rnd); }
  REPLAYSSM_HD static float decode(code_t c) { return e2m1_decode(c); }

  // S_enc from the per-head amax (TE compute_global_encode_scaling_factor_FP4).
  REPLAYSSM_HD static float scale_from_amax(float head_amax) {
    const float s = fmin_flt_max(div_rn(448.0f * 6.0f, head_amax));
    if (head_amax == 0.0f || s == 0.0f) return 1.0f;
    return s;
  }
  // The per-head factors of the two block formulas, formed once per head by encode_state.
  REPLAYSSM_HD static float block_scale_factor(float s_enc) { return mul_rn(s_enc, kFp4MaxInv); }
  REPLAYSSM_HD static float decode_scale(float s_enc) { return div_rn(1.0f, s_enc); }
  REPLAYSSM_HD static uint8_t block_scale_code_f(float block_amax, float scale_factor) {
    return e4m3_encode(fmin_flt_max(mul_rn(block_amax, scale_factor)));
  }
  REPLAYSSM_HD static float block_encode_multiplier_d(uint8_t scale_code, float s_dec) {
    return fmin_flt_max(div_rn(1.0f, mul_rn(e4m3_decode(scale_code), s_dec)));
  }
  REPLAYSSM_HD static uint8_t block_scale_code(float block_amax, float s_enc) {
    return block_scale_code_f(block_amax, block_scale_factor(s_enc));
  }
  REPLAYSSM_HD static float block_encode_multiplier(uint8_t scale_code, float s_enc) {
    return block_encode_multiplier_d(scale_code, decode_scale(s_enc));
  }
  // TE's (e4m3(scale) * A) / 2688 wherever it is finite and consistent with the encode; at the range edges:
  // * A > FLT_MAX / 448: e4m3(scale) * A overflows; the same product is formed on A * 2^-kEdgeShift and scaled back
  //   (exact power-of-two steps, no subnormals on the way: the bits TE's formula has without an exponent limit);
  // * A < 2688 / FLT_MAX: the encode's S_enc was clamped to FLT_MAX, so the blocks were encoded with
  //   S_dec = 1 / FLT_MAX, not A / 2688, and a block's multiplier may itself be clamped to FLT_MAX: the decode
  //   multiplier is the reciprocal of the encode's (block_encode_multiplier), whatever it was.
  static constexpr int kEdgeShift = 12;
  REPLAYSSM_HD static float block_decode_multiplier(uint8_t scale_code, float head_amax) {
    const float e = e4m3_decode(scale_code);
    const float m = mul_rn(e, head_amax);
    if (is_inf(m) && !is_inf(head_amax)) {
      const float down = bits_to_float(static_cast<uint32_t>(127 - kEdgeShift) << 23);
      const float up = bits_to_float(static_cast<uint32_t>(127 + kEdgeShift) << 23);
      return mul_rn(mul_rn(mul_rn(e, mul_rn(head_amax, down)), kDecodeFactor), up);
    }
    if (head_amax > 0.0f && is_inf(div_rn(448.0f * 6.0f, head_amax)))
      return div_rn(1.0f, block_encode_multiplier(scale_code, scale_from_amax(head_amax)));
    return mul_rn(m, kDecodeFactor);
  }
  // A decoded element of a finite head saturates at +-FLT_MAX (6 * e4m3(scale) * A / 2688 may round one ulp past
  // A = FLT_MAX); an Inf or NaN head keeps TE's Inf/NaN.
  REPLAYSSM_HD static float saturate_finite(float y) {
    const float m = bits_to_float(0x7F7FFFFFu);
    return y > m ? m : (y < -m ? -m : y);
  }

  static constexpr std::size_t scale_bytes(int V, int K, Scaling) {
    return 4u + static_cast<std::size_t>(V) * static_cast<std::size_t>(ceil_div(K, kBlock));
  }
  static constexpr std::size_t bytes_per_state(int V, int K, Scaling s) { return code_bytes(V, K) + scale_bytes(V, K, s); }

  static constexpr bool kHeadAmax = true;
  REPLAYSSM_HD static constexpr bool rows_apart(Scaling) { return true; }  // given the head's amax
  REPLAYSSM_HD static void store_head_amax(uint8_t* scales, float head_amax) { store_f32(scales, head_amax); }
  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* scales) {
    float head_amax = 0.0f;
    for (int v = 0; v < V; ++v) head_amax = amax_ignore_nan_n(x + static_cast<std::size_t>(v) * K, K, head_amax);
    store_head_amax(scales, head_amax);
    encode_rows(x, 0, V, K, p, head_amax, codes, scales);
  }
  // Rows [v0, v1) of encode_state, given the head's amax over every element (stored apart: store_head_amax).
  REPLAYSSM_HD static void encode_rows(const float* x, int v0, int v1, int K, const CodecParams& p, float head_amax,
                                       uint8_t* codes, uint8_t* scales) {
    const float s_enc = scale_from_amax(head_amax);
    // block_scale_code / block_encode_multiplier with their per-head factors formed once (the same values)
    const float s_enc_fp4 = block_scale_factor(s_enc);
    const float s_dec = decode_scale(s_enc);
    const int nb = ceil_div(K, kBlock);
    const bool whole = K % 2 == 0;  // every row starts on a byte: chunks are written as whole bytes
    for (int v = v0; v < v1; ++v) {
      const float* row = x + static_cast<std::size_t>(v) * K;
      const std::size_t base = static_cast<std::size_t>(v) * K;
      // Chunks of up to kChunk elements (whole blocks): block scales first, then one vectorisable element loop with
      // each element's block multiplier, then the nibbles packed.
      for (int c0 = 0; c0 < K; c0 += kChunk) {
        const int n = (c0 + kChunk < K ? c0 + kChunk : K) - c0;
        const int nblk = ceil_div(n, kBlock);
        float bm[kChunk / kBlock], mult[kChunk];
        uint8_t bsc[kChunk / kBlock];
        for (int b = 0; b < nblk; ++b) {
          const int k0 = b * kBlock, k1 = k0 + kBlock < n ? k0 + kBlock : n;
          bm[b] = amax_ignore_nan_n(row + c0 + k0, k1 - k0, 0.0f);
        }
        for (int b = 0; b < nblk; ++b) bsc[b] = block_scale_code_f(bm[b], s_enc_fp4);
        for (int b = 0; b < nblk; ++b) bm[b] = block_encode_multiplier_d(bsc[b], s_dec);
        for (int b = 0; b < nblk; ++b) {
          scales[4 + v * nb + c0 / kBlock + b] = bsc[b];
          const int k0 = b * kBlock, k1 = k0 + kBlock < n ? k0 + kBlock : n;
          for (int j = k0; j < k1; ++j) mult[j] = bm[b];
        }
        uint8_t q[kChunk];
        if (p.rounding == Rounding::rne)
          for (int j = 0; j < n; ++j) q[j] = encode(mul_rn(row[c0 + j], mult[j]), Rounding::rne, 0u);
        else
          for (int j = 0; j < n; ++j)
            q[j] = encode(mul_rn(row[c0 + j], mult[j]), p.rounding, element_rand_bits(p, v, c0 + j));
        if (whole) {  // element i in the low nibble of byte i/2, i + 1 in the high nibble
          uint8_t* dst = codes + (base + static_cast<std::size_t>(c0)) / 2;
          for (int jj = 0; jj < n / 2; ++jj)
            dst[jj] = static_cast<uint8_t>((static_cast<uint32_t>(q[2 * jj]) & 0xFu) |
                                           ((static_cast<uint32_t>(q[2 * jj + 1]) & 0xFu) * 16u));
        } else {
          for (int j = 0; j < n; ++j) store_code<4>(codes, base + static_cast<std::size_t>(c0 + j), q[j]);
        }
      }
    }
  }
  REPLAYSSM_HD static void decode_state(const uint8_t* codes, const uint8_t* scales, int V, int K,
                                        const CodecParams& p, float* out) {
    decode_rows(codes, scales, 0, V, K, p, out);
  }
  REPLAYSSM_HD static void decode_rows(const uint8_t* codes, const uint8_t* scales, int v0, int v1, int K,
                                       const CodecParams& /*p*/, float* out) {
    const float head_amax = load_f32(scales);
    const int nb = ceil_div(K, kBlock);
    const bool whole = K % 2 == 0;
    for (int v = v0; v < v1; ++v) {
      const std::size_t base = static_cast<std::size_t>(v) * K;
      for (int c0 = 0; c0 < K; c0 += kChunk) {
        const int n = (c0 + kChunk < K ? c0 + kChunk : K) - c0;
        float mult[kChunk];
        for (int k0 = 0; k0 < n; k0 += kBlock) {
          const int k1 = k0 + kBlock < n ? k0 + kBlock : n;
          const float m = block_decode_multiplier(scales[4 + v * nb + (c0 + k0) / kBlock], head_amax);
          for (int j = k0; j < k1; ++j) mult[j] = m;
        }
        uint8_t q[kChunk];
        if (whole) {
          const uint8_t* src = codes + (base + static_cast<std::size_t>(c0)) / 2;
          for (int jj = 0; jj < n / 2; ++jj) {
            q[2 * jj] = static_cast<uint8_t>(src[jj] & 0xFu);
            q[2 * jj + 1] = static_cast<uint8_t>(src[jj] >> 4);
          }
        } else {
          for (int j = 0; j < n; ++j) q[j] = static_cast<uint8_t>(load_code<4>(codes, base + static_cast<std::size_t>(c0 + j)));
        }
        float* o = out + base + c0;
        for (int j = 0; j < n; ++j) o[j] = mul_rn(decode(static_cast<code_t>(q[j])), mult[j]);
        if (!is_inf(head_amax) && !is_nan(head_amax))
          for (int j = 0; j < n; ++j) o[j] = saturate_finite(o[j]);
      }
    }
  }
};

// A store of x that follows the previous stored state of the same head (prev_codes / prev_scales in C's layout;
// nullptr: no previous store, as at init). Every path that replaces a stored state calls this, so that a stateful
// codec (C::kStateful: int8_ef's error feedback) sees the state it replaces; a stateless codec ignores prev. prev may
// alias codes / scales (a store in place).
template <class C>
REPLAYSSM_HD void encode_state_after(const float* x, int V, int K, const CodecParams& p, const uint8_t* prev_codes,
                                     const uint8_t* prev_scales, uint8_t* codes, uint8_t* scales) {
  if constexpr (C::kStateful)
    C::encode_state_after(x, V, K, p, prev_codes, prev_scales, codes, scales);
  else
    C::encode_state(x, V, K, p, codes, scales);
}

// The one place a FormatId maps to a type: calls f(StateCodec<id>{}) and returns its result (host only).
template <class Fn>
decltype(auto) dispatch_format(FormatId id, Fn&& f) {
  switch (id) {
    case FormatId::fp32: return std::forward<Fn>(f)(StateCodec<FormatId::fp32>{});
    case FormatId::bf16: return std::forward<Fn>(f)(StateCodec<FormatId::bf16>{});
    case FormatId::bf16x2: return std::forward<Fn>(f)(StateCodec<FormatId::bf16x2>{});
    case FormatId::fp16: return std::forward<Fn>(f)(StateCodec<FormatId::fp16>{});
    case FormatId::fp8_e4m3: return std::forward<Fn>(f)(StateCodec<FormatId::fp8_e4m3>{});
    case FormatId::fp8_e5m2: return std::forward<Fn>(f)(StateCodec<FormatId::fp8_e5m2>{});
    case FormatId::int8: return std::forward<Fn>(f)(StateCodec<FormatId::int8>{});
    case FormatId::int8_ef: return std::forward<Fn>(f)(StateCodec<FormatId::int8_ef>{});
    case FormatId::int16: return std::forward<Fn>(f)(StateCodec<FormatId::int16>{});
    case FormatId::nvfp4: return std::forward<Fn>(f)(StateCodec<FormatId::nvfp4>{});
    case FormatId::mxfp8: return std::forward<Fn>(f)(StateCodec<FormatId::mxfp8>{});
    case FormatId::mxfp4: return std::forward<Fn>(f)(StateCodec<FormatId::mxfp4>{});
  }
  throw std::invalid_argument("dispatch_format: invalid FormatId " + std::to_string(static_cast<int>(id)));
}

// Whether a format's store reads the previous stored state (host).
inline bool is_stateful(FormatId f) {
  return dispatch_format(f, [](auto codec) { return decltype(codec)::kStateful; });
}

// Convenience (host): bytes of one [V, K] head state (codes + scales) in a format; validates the combination.
inline std::size_t bytes_per_state(FormatId f, int V, int K, Scaling s) {
  check_combination(f, s, Rounding::rne);
  return dispatch_format(f, [&](auto codec) { return decltype(codec)::bytes_per_state(V, K, s); });
}

}  // namespace replayssm::formats
