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
//   encode_state(x, V, K, params, codes, scales); decode_state(codes, scales, V, K, params, out).
//
// Storage (src/formats/README.md has the full table):
//   codes : row-major [V][K] elements, flat index i = v*K + k. 32/16-bit codes little-endian; 8-bit one byte;
//           4-bit two per byte: element i in byte i/2, even i in the low nibble, odd i in the high nibble
//           (as __nv_fp4x2_storage_t).
//   scales: raw bytes, little-endian:
//           fp8/int8  head : float32[1];  row : float32[V];  block : float32[V][ceil(K/32)]  (decode scale)
//           nvfp4          : float32 head amax at bytes [0,4), then E4M3 block scales uint8[V][ceil(K/16)]
//           mxfp8/mxfp4    : E8M0 block scales uint8[V][ceil(K/32)]
// Blocks never cross a row; a row whose K is not a multiple of the block ends in a short block.
// Random bits for SR of element (v, k): sr_bits(seed, head, v, k, step).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "formats/format_id.h"
#include "formats/hd.h"
#include "formats/minifloat.h"
#include "formats/sr_hash.h"

namespace replayssm::formats {

struct CodecParams {
  Scaling scaling = Scaling::none;
  Rounding rounding = Rounding::rne;
  uint64_t seed = 0;
  uint32_t head = 0;
  uint32_t step = 0;
};

REPLAYSSM_HD uint32_t element_rand_bits(const CodecParams& p, int v, int k) {
  return p.rounding == Rounding::sr
             ? sr_bits(p.seed, p.head, static_cast<uint32_t>(v), static_cast<uint32_t>(k), p.step)
             : 0u;
}

// ---- raw little-endian storage helpers ----
REPLAYSSM_HD void store_f32(uint8_t* p, float f) {
  const uint32_t u = float_to_bits(f);
  p[0] = static_cast<uint8_t>(u);
  p[1] = static_cast<uint8_t>(u >> 8);
  p[2] = static_cast<uint8_t>(u >> 16);
  p[3] = static_cast<uint8_t>(u >> 24);
}
REPLAYSSM_HD float load_f32(const uint8_t* p) {
  return bits_to_float(static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                       (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24));
}

// Store / load code i of a packed array of kBits-wide codes (kBits in {4, 8, 16, 32}).
template <int kBits>
REPLAYSSM_HD void store_code(uint8_t* codes, std::size_t i, uint32_t c) {
  if constexpr (kBits == 4) {
    uint8_t& byte = codes[i / 2];
    byte = (i & 1u) ? static_cast<uint8_t>((byte & 0x0Fu) | ((c & 0xFu) << 4))
                    : static_cast<uint8_t>((byte & 0xF0u) | (c & 0xFu));
  } else {
    for (int b = 0; b < kBits / 8; ++b) codes[i * (kBits / 8) + b] = static_cast<uint8_t>(c >> (8 * b));
  }
}
template <int kBits>
REPLAYSSM_HD uint32_t load_code(const uint8_t* codes, std::size_t i) {
  if constexpr (kBits == 4) {
    return (i & 1u) ? (codes[i / 2] >> 4) & 0xFu : codes[i / 2] & 0xFu;
  } else {
    uint32_t c = 0;
    for (int b = 0; b < kBits / 8; ++b) c |= static_cast<uint32_t>(codes[i * (kBits / 8) + b]) << (8 * b);
    return c;
  }
}

REPLAYSSM_HD constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <FormatId F>
struct StateCodec;

namespace detail {

// Shared head-state code for the formats whose elements are packed codes (everything).
template <class Derived, int kBitsT>
struct PackedCodes {
  static constexpr std::size_t code_bytes(int V, int K) {
    return (static_cast<std::size_t>(V) * static_cast<std::size_t>(K) * kBitsT + 7) / 8;
  }
};

// fp32, bf16, fp16: no scale.
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

// fp8_e4m3, fp8_e5m2, int8: FP32 decode scale per head / row / 32-block, or none (unit scale).
// scale = amax / kMax (amax = max |x| over the group, NaN ignored), or 1 when amax == 0.
// encode: code = encode(x * (1 / scale)); decode: decode(code) * scale.
template <class Derived, class CodeT>
struct FloatScaledCodec : PackedCodes<Derived, 8> {
  using code_t = CodeT;
  static constexpr int kBits = 8;
  static constexpr int kBlock = 32;

  REPLAYSSM_HD static float scale_from_amax(float amax) {
    return amax == 0.0f ? 1.0f : div_rn(amax, Derived::kMax);
  }
  REPLAYSSM_HD static constexpr int num_scales(int V, int K, Scaling s) {
    return s == Scaling::head ? 1 : s == Scaling::row ? V : s == Scaling::block ? V * ceil_div(K, kBlock) : 0;
  }
  // Index of the scale of element (v, k) in the float32 scale array (Scaling::none has no scale: 0, unused).
  REPLAYSSM_HD static constexpr int scale_index(int v, int k, int K, Scaling s) {
    return s == Scaling::row ? v : s == Scaling::block ? v * ceil_div(K, kBlock) + k / kBlock : 0;
  }
  static constexpr std::size_t scale_bytes(int V, int K, Scaling s) {
    return 4u * static_cast<std::size_t>(num_scales(V, K, s));
  }
  static constexpr std::size_t bytes_per_state(int V, int K, Scaling s) {
    return PackedCodes<Derived, 8>::code_bytes(V, K) + scale_bytes(V, K, s);
  }

  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* scales) {
    const Scaling s = p.scaling;
    if (s != Scaling::none) {
      const int n = num_scales(V, K, s);
      // amax per scale group, then the scale, written in place
      for (int j = 0; j < n; ++j) store_f32(scales + 4 * j, 0.0f);
      // amax is order-free; it is carried in a register while consecutive elements share a group.
      int group = -1;
      float m = 0.0f;
      for (int v = 0; v < V; ++v)
        for (int k = 0; k < K; ++k) {
          const int j = scale_index(v, k, K, s);
          if (j != group) {
            if (group >= 0) store_f32(scales + 4 * group, m);
            group = j;
            m = load_f32(scales + 4 * j);
          }
          m = amax_ignore_nan(m, x[static_cast<std::size_t>(v) * K + k]);
        }
      if (group >= 0) store_f32(scales + 4 * group, m);
      for (int j = 0; j < n; ++j) store_f32(scales + 4 * j, scale_from_amax(load_f32(scales + 4 * j)));
    }
    // The reciprocal of a group's scale is formed once per group (same value as forming it per element).
    int group = -1;
    float inv = 1.0f;
    for (int v = 0; v < V; ++v)
      for (int k = 0; k < K; ++k) {
        const std::size_t i = static_cast<std::size_t>(v) * K + k;
        float xs = x[i];
        if (s != Scaling::none) {
          const int j = scale_index(v, k, K, s);
          if (j != group) {
            group = j;
            inv = div_rn(1.0f, load_f32(scales + 4 * j));
          }
          xs = mul_rn(xs, inv);
        }
        const code_t c = Derived::encode(xs, p.rounding, element_rand_bits(p, v, k));
        store_code<8>(codes, i, static_cast<uint8_t>(c));
      }
  }
  REPLAYSSM_HD static void decode_state(const uint8_t* codes, const uint8_t* scales, int V, int K,
                                        const CodecParams& p, float* out) {
    for (int v = 0; v < V; ++v)
      for (int k = 0; k < K; ++k) {
        const std::size_t i = static_cast<std::size_t>(v) * K + k;
        float y = Derived::decode(static_cast<code_t>(codes[i]));
        if (p.scaling != Scaling::none) y = mul_rn(y, load_f32(scales + 4 * scale_index(v, k, K, p.scaling)));
        out[i] = y;
      }
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
  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* scales) {
    const int nb = ceil_div(K, kBlock);
    for (int v = 0; v < V; ++v)
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
                                        const CodecParams& /*p*/, float* out) {
    const int nb = ceil_div(K, kBlock);
    for (int v = 0; v < V; ++v)
      for (int k = 0; k < K; ++k) {
        const std::size_t i = static_cast<std::size_t>(v) * K + k;
        out[i] = mul_rn(Derived::decode(static_cast<code_t>(load_code<kBits>(codes, i))),
                        e8m0_decode(scales[v * nb + k / kBlock]));
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
  REPLAYSSM_HD static uint8_t block_scale_code(float block_amax, float s_enc) {
    return e4m3_encode(fmin_flt_max(mul_rn(block_amax, mul_rn(s_enc, kFp4MaxInv))));
  }
  REPLAYSSM_HD static float block_encode_multiplier(uint8_t scale_code, float s_enc) {
    const float s_dec = div_rn(1.0f, s_enc);
    return fmin_flt_max(div_rn(1.0f, mul_rn(e4m3_decode(scale_code), s_dec)));
  }
  REPLAYSSM_HD static float block_decode_multiplier(uint8_t scale_code, float head_amax) {
    return mul_rn(mul_rn(e4m3_decode(scale_code), head_amax), kDecodeFactor);
  }

  static constexpr std::size_t scale_bytes(int V, int K, Scaling) {
    return 4u + static_cast<std::size_t>(V) * static_cast<std::size_t>(ceil_div(K, kBlock));
  }
  static constexpr std::size_t bytes_per_state(int V, int K, Scaling s) { return code_bytes(V, K) + scale_bytes(V, K, s); }

  REPLAYSSM_HD static void encode_state(const float* x, int V, int K, const CodecParams& p, uint8_t* codes,
                                        uint8_t* scales) {
    const std::size_t n = static_cast<std::size_t>(V) * K;
    float head_amax = 0.0f;
    for (std::size_t i = 0; i < n; ++i) head_amax = amax_ignore_nan(head_amax, x[i]);
    store_f32(scales, head_amax);
    const float s_enc = scale_from_amax(head_amax);
    const int nb = ceil_div(K, kBlock);
    for (int v = 0; v < V; ++v)
      for (int b = 0; b < nb; ++b) {
        const int k0 = b * kBlock;
        const int k1 = k0 + kBlock < K ? k0 + kBlock : K;
        const float* row = x + static_cast<std::size_t>(v) * K;
        float bamax = 0.0f;
        for (int k = k0; k < k1; ++k) bamax = amax_ignore_nan(bamax, row[k]);
        const uint8_t sc = block_scale_code(bamax, s_enc);
        scales[4 + v * nb + b] = sc;
        const float mult = block_encode_multiplier(sc, s_enc);
        for (int k = k0; k < k1; ++k)
          store_code<4>(codes, static_cast<std::size_t>(v) * K + k,
                        encode(mul_rn(row[k], mult), p.rounding, element_rand_bits(p, v, k)));
      }
  }
  REPLAYSSM_HD static void decode_state(const uint8_t* codes, const uint8_t* scales, int V, int K,
                                        const CodecParams& /*p*/, float* out) {
    const float head_amax = load_f32(scales);
    const int nb = ceil_div(K, kBlock);
    for (int v = 0; v < V; ++v)
      for (int k = 0; k < K; ++k) {
        const std::size_t i = static_cast<std::size_t>(v) * K + k;
        out[i] = mul_rn(decode(static_cast<code_t>(load_code<4>(codes, i))),
                        block_decode_multiplier(scales[4 + v * nb + k / kBlock], head_amax));
      }
  }
};

// The one place a FormatId maps to a type: calls f(StateCodec<id>{}) and returns its result (host only).
template <class Fn>
decltype(auto) dispatch_format(FormatId id, Fn&& f) {
  switch (id) {
    case FormatId::fp32: return std::forward<Fn>(f)(StateCodec<FormatId::fp32>{});
    case FormatId::bf16: return std::forward<Fn>(f)(StateCodec<FormatId::bf16>{});
    case FormatId::fp16: return std::forward<Fn>(f)(StateCodec<FormatId::fp16>{});
    case FormatId::fp8_e4m3: return std::forward<Fn>(f)(StateCodec<FormatId::fp8_e4m3>{});
    case FormatId::fp8_e5m2: return std::forward<Fn>(f)(StateCodec<FormatId::fp8_e5m2>{});
    case FormatId::int8: return std::forward<Fn>(f)(StateCodec<FormatId::int8>{});
    case FormatId::nvfp4: return std::forward<Fn>(f)(StateCodec<FormatId::nvfp4>{});
    case FormatId::mxfp8: return std::forward<Fn>(f)(StateCodec<FormatId::mxfp8>{});
    case FormatId::mxfp4: return std::forward<Fn>(f)(StateCodec<FormatId::mxfp4>{});
  }
  throw std::invalid_argument("dispatch_format: invalid FormatId " + std::to_string(static_cast<int>(id)));
}

// Convenience (host): bytes of one [V, K] head state (codes + scales) in a format; validates the combination.
inline std::size_t bytes_per_state(FormatId f, int V, int K, Scaling s) {
  check_combination(f, s, Rounding::rne);
  return dispatch_format(f, [&](auto codec) { return decltype(codec)::bytes_per_state(V, K, s); });
}

}  // namespace replayssm::formats
