#pragma once
// Building blocks of the tuned decode kernels (fast_kernel.cuh): launch constants, the canonical 32-lane dot trees,
// row loads / stores, per-element codecs with warp-amax scales, the replay path's shared-memory layout.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "emulation/decode_math.h"
#include "formats/hw_convert.cuh"
#include "formats/state_codec.h"
#include "kernels/common/decode_kernel.h"
#include "kernels/common/replay_smem.h"

namespace replayssm::kern::fast {

template <class C>
inline constexpr bool kSupported = C::kBits >= 8 && (C::kBlock == 0 || C::kBlock == 32) &&
                                   (C::kFormat == formats::FormatId::fp32 || C::kFormat == formats::FormatId::bf16 ||
                                    C::kFormat == formats::FormatId::fp16 || C::kFormat == formats::FormatId::fp8_e4m3 ||
                                    C::kFormat == formats::FormatId::fp8_e5m2 || C::kFormat == formats::FormatId::int8);

struct F4 {
  float x[4];
};

__device__ __forceinline__ float bfly_sum(float acc) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc = __fadd_rn(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, off));
  return acc;
}
// The 32-lane tree sums of 4 rows at once (a reduce-scatter): returns the sum of row lane / 8 (in lanes 8i..8i+7).
// Level 1 adds the values of lanes l and l ^ 16 (lanes < 16 keep rows 0, 1; the others rows 2, 3), level 2 those of
// l and l ^ 8 (one row per lane), then 4, 2, 1 as bfly_sum. Every level adds exactly the two values the pairwise tree
// adds (IEEE addition is commutative), so each row's sum has the bits of bfly_sum: 6 shuffles for 4 rows, not 20.
__device__ __forceinline__ float bfly_sum4(float p0, float p1, float p2, float p3, int lane) {
  const bool h16 = (lane & 16) != 0, h8 = (lane & 8) != 0;
  float k0 = h16 ? p2 : p0, k1 = h16 ? p3 : p1;
  const float s0 = h16 ? p0 : p2, s1 = h16 ? p1 : p3;
  k0 = __fadd_rn(k0, __shfl_xor_sync(0xFFFFFFFFu, s0, 16));
  k1 = __fadd_rn(k1, __shfl_xor_sync(0xFFFFFFFFu, s1, 16));
  float k = h8 ? k1 : k0;
  const float s = h8 ? k0 : k1;
  k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, s, 8));
#pragma unroll
  for (int off = 4; off > 0; off /= 2) k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, k, off));
  return k;
}
// One row per 8 lanes: lane j of the row holds the tree's virtual lanes j, j + 8, j + 16, j + 24 (partials
// p0..p3).
// bfly_sum's levels 16 and 8 add p_v + p_(v ^ 16), then that of v and of v ^ 8: here additions inside the lane; levels
// 4, 2, 1 are shuffles among the row's 8 lanes. The same additions of the same operands, so the bits of bfly_sum, in 3
// shuffles per row where bfly_sum4 takes 6 (and its selects) per 4 rows of 4 lanes' partials each.
__device__ __forceinline__ float bfly_sum_row8(float p0, float p1, float p2, float p3) {
  float k = __fadd_rn(__fadd_rn(p0, p2), __fadd_rn(p1, p3));
#pragma unroll
  for (int off = 4; off > 0; off /= 2) k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, k, off));
  return k;
}
// Two rows' tree levels kOff, kOff / 2, .., 1: lanes with bit kOff clear keep row a at level kOff, the others row b,
// then every lane adds as bfly_sum. kOff = 16 (bfly_sum2): lane partials in, the sum of row lane / 16 out.
// kOff = 8 (bfly_sum_halves): lane 16 h + i holds s1 = p_i + p_(i+16) (the tree's level 16, added in the lane)
// of rows 2 h (a) and 2 h + 1 (b); the sum of row lane / 8 out, as bfly_sum4. The same additions of the same operands
// as bfly_sum, so the same bits.
template <int kOff>
__device__ __forceinline__ float bfly_sum_pair(float a, float b, int lane) {
  const bool hi = (lane & kOff) != 0;
  float k = hi ? b : a;
  const float s = hi ? a : b;
  k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, s, kOff));
#pragma unroll
  for (int off = kOff / 2; off > 0; off /= 2) k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, k, off));
  return k;
}
__device__ __forceinline__ float bfly_sum2(float p0, float p1, int lane) { return bfly_sum_pair<16>(p0, p1, lane); }
// The tree sums of N dots at once (bfly_sum4's reduce-scatter for any power of two N <= 32): at levels 16, 8, ..,
// 32 / N a lane keeps half of its dots (the upper half where its bit of that level is set) and adds the partner's
// values of them; the levels below add as bfly_sum. Every level adds the two values the canonical tree adds, so each
// dot has the bits of bfly_sum. Lane l returns dot l / (32 / N); v is overwritten.
// One split level of bfly_sum_scatter: Half of the lane's 2 Half dots kept, at offset 16 (2 Half) / N; then the next.
// (A template per level: with a loop over the levels nvcc unrolled the inner loop first, at a run-time bound, and put
// v in local memory.)
template <int N, int Half>
__device__ __forceinline__ void bfly_scatter_level(float (&v)[N], int lane) {
  if constexpr (Half >= 1) {
    constexpr int kOff = 32 * Half / N;  // 16, 8, .., 32 / N
    const bool hi = (lane & kOff) != 0;
#pragma unroll
    for (int i = 0; i < Half; ++i) {
      const float keep = hi ? v[i + Half] : v[i];
      const float send = hi ? v[i] : v[i + Half];
      v[i] = __fadd_rn(keep, __shfl_xor_sync(0xFFFFFFFFu, send, kOff));
    }
    bfly_scatter_level<N, Half / 2>(v, lane);
  }
}
template <int N>
__device__ __forceinline__ float bfly_sum_scatter(float (&v)[N], int lane) {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "bfly_sum_scatter: a power of two up to 32 dots");
  bfly_scatter_level<N, N / 2>(v, lane);
  float k = v[0];
#pragma unroll
  for (int off = 16 / N; off > 0; off /= 2) k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, k, off));
  return k;
}
__device__ __forceinline__ float bfly_sum_halves(float a, float b, int lane) { return bfly_sum_pair<8>(a, b, lane); }
// Lane partials of the canonical dot (before the tree): fmaf over the lane's 4 elements in order; 0 if inactive.
__device__ __forceinline__ float part4(const F4& s, const F4& y, bool act) {
  float acc = 0.0f;
  if (act) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc = __fmaf_rn(s.x[e], y.x[e], acc);
  }
  return acc;
}
// The canonical dot of a row (lane's 4 elements) with y (lane's 4 elements); inactive lanes contribute 0.
__device__ __forceinline__ float dot4(const F4& s, const F4& y, bool act) {
  float acc = 0.0f;
  if (act) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc = __fmaf_rn(s.x[e], y.x[e], acc);
  }
  return bfly_sum(acc);
}
__device__ __forceinline__ F4 ld4(const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  return F4{{v.x, v.y, v.z, v.w}};
}
__device__ __forceinline__ void st4(float* p, const F4& a) {
  *reinterpret_cast<float4*>(p) = make_float4(a.x[0], a.x[1], a.x[2], a.x[3]);
}

// Raw codes of elements i..i+3 (i % 4 == 0).
template <int kBits>
__device__ __forceinline__ void load_codes(const std::uint8_t* codes, std::size_t i, std::uint32_t (&c)[4]) {
  if constexpr (kBits == 32) {
    const uint4 u = *reinterpret_cast<const uint4*>(codes + i * 4);
    c[0] = u.x, c[1] = u.y, c[2] = u.z, c[3] = u.w;
  } else if constexpr (kBits == 16) {
    const uint2 u = *reinterpret_cast<const uint2*>(codes + i * 2);
    c[0] = u.x & 0xFFFFu, c[1] = u.x >> 16, c[2] = u.y & 0xFFFFu, c[3] = u.y >> 16;
  } else {
    const std::uint32_t u = *reinterpret_cast<const std::uint32_t*>(codes + i);
    c[0] = u & 0xFFu, c[1] = (u >> 8) & 0xFFu, c[2] = (u >> 16) & 0xFFu, c[3] = u >> 24;
  }
}
template <int kBits>
__device__ __forceinline__ void store_codes(std::uint8_t* codes, std::size_t i, const std::uint32_t (&c)[4]) {
  if constexpr (kBits == 32) {
    *reinterpret_cast<uint4*>(codes + i * 4) = make_uint4(c[0], c[1], c[2], c[3]);
  } else if constexpr (kBits == 16) {
    *reinterpret_cast<uint2*>(codes + i * 2) =
        make_uint2((c[0] & 0xFFFFu) | (c[1] << 16), (c[2] & 0xFFFFu) | (c[3] << 16));
  } else {
    *reinterpret_cast<std::uint32_t*>(codes + i) =
        (c[0] & 0xFFu) | ((c[1] & 0xFFu) << 8) | ((c[2] & 0xFFu) << 16) | ((c[3] & 0xFFu) << 24);
  }
}

// Element decode. E4M3: the magnitude's bits placed at FP32 bits 20..26 read as an FP32 number (a denormal for the
// E4M3 subnormals) times 2^120 is exactly the E4M3 value (exponent bias 7 = 127 - 120); NaN codes return the
// canonical NaN of formats::e4m3_decode. Checked equal to e4m3_decode for all 256 codes (kernels/PERF_NOTES.md).
template <class C>
__device__ __forceinline__ float decode_code(std::uint32_t c) {
  if constexpr (C::kFormat == formats::FormatId::fp8_e4m3) {
    const std::uint32_t m = c & 0x7Fu;
    const float v = __fmul_rn(__uint_as_float(((c & 0x80u) << 24) | (m << 20)), 0x1p120f);
    return m == 0x7Fu ? __uint_as_float(0x7FFFFFFFu) : v;
  } else {
    return C::decode(static_cast<typename C::code_t>(c));
  }
}

// The key head (GDN) / group (Mamba-2) of head h: a shift where the launcher found H / G a power of two (the two
// integer divisions cost 2-4% of the replay kernel's instructions).
__device__ __forceinline__ int group_of(const KParams& p, int h) {
  return p.group_shift >= 0 ? h >> p.group_shift : h / (p.H / p.G);
}
// b H + h (hh) of the first head of head h's group where H / G is a power of two (it divides H, so the group's
// heads are hh's aligned block of 2^group_shift), else hh itself.
__device__ __forceinline__ int group_head0(const KParams& p, int hh) {
  return p.group_shift >= 0 ? (hh >> p.group_shift) << p.group_shift : hh;
}

template <class C>
__device__ __forceinline__ bool scaled(const KParams& p) {
  if constexpr (C::kBlock == 0) return false;
  else return p.scaling != formats::Scaling::none;
}
// Index of the FP32 scale of row r, lane's block.
template <class C>
__device__ __forceinline__ int scale_idx(const KParams& p, int r, int lane) {
  return p.scaling == formats::Scaling::row ? r : r * formats::ceil_div(p.K, 32) + lane / 8;
}

// Raw codes of row r (lane's 4 elements) and its scale: loads only, decoded after the window has been staged so that
// the state loads and the window's cp.async fly together.
template <class C>
struct RawRow {
  std::uint32_t c[C::kBits == 32 ? 4 : (C::kBits == 16 ? 2 : 1)];
  float s;
};
// kRow (the folded step flush): row scaling (8-bit codes) or none (FP32) known at compile time, K = kRow's value.
template <class C, int kRow = 0>
__device__ __forceinline__ void load_raw(const KParams& p, const std::uint8_t* codes, const std::uint8_t* scales, int r,
                                         int lane, RawRow<C>& w) {
  const std::size_t i = std::size_t(r) * (kRow > 0 ? kRow : p.K) + 4 * lane;
  if constexpr (C::kBits == 32) {
    const uint4 u = *reinterpret_cast<const uint4*>(codes + i * 4);
    w.c[0] = u.x, w.c[1] = u.y, w.c[2] = u.z, w.c[3] = u.w;
  } else if constexpr (C::kBits == 16) {
    const uint2 u = *reinterpret_cast<const uint2*>(codes + i * 2);
    w.c[0] = u.x, w.c[1] = u.y;
  } else {
    w.c[0] = *reinterpret_cast<const std::uint32_t*>(codes + i);
  }
  if constexpr (kRow > 0) w.s = C::kBlock != 0 ? reinterpret_cast<const float*>(scales)[r] : 1.0f;
  else w.s = scaled<C>(p) ? reinterpret_cast<const float*>(scales)[scale_idx<C>(p, r, lane)] : 1.0f;
}
// E4M3: four codes at once (hw_e4m3_decode4_scaled, the hardware form of formats::e4m3_decode4_scaled;
// hw_convert.cuh), NaN codes code by code (the codec's bits). This one serves the flush paths (whose decoded values are
// stored); the non-flush dots decode with hw_e4m3_decode4_scaled_arith instead (no NaN test: the values only feed
// dots).
template <class C, bool kRow = false>  // kRow: load_raw's (row scaling or none known at compile time)
__device__ __forceinline__ F4 decode_raw(const KParams& p, const RawRow<C>& w) {
  if constexpr (C::kFormat == formats::FormatId::fp8_e4m3) {  // one multiplication per code
    F4 y;
    if (formats::hw_e4m3_decode4_scaled(w.c[0], (kRow ? C::kBlock != 0 : scaled<C>(p)) ? w.s : 1.0f, y.x))
      return y;  // no NaN code: the hardware conversion, same bits
  }
  std::uint32_t c[4];
  if constexpr (C::kBits == 32) {
    c[0] = w.c[0], c[1] = w.c[1], c[2] = w.c[2], c[3] = w.c[3];
  } else if constexpr (C::kBits == 16) {
    c[0] = w.c[0] & 0xFFFFu, c[1] = w.c[0] >> 16, c[2] = w.c[1] & 0xFFFFu, c[3] = w.c[1] >> 16;
  } else {
    c[0] = w.c[0] & 0xFFu, c[1] = (w.c[0] >> 8) & 0xFFu, c[2] = (w.c[0] >> 16) & 0xFFu, c[3] = w.c[0] >> 24;
  }
  F4 y;
#pragma unroll
  for (int e = 0; e < 4; ++e) y.x[e] = decode_code<C>(c[e]);
  if (kRow ? C::kBlock != 0 : scaled<C>(p)) {
#pragma unroll
    for (int e = 0; e < 4; ++e) y.x[e] = formats::mul_rn(y.x[e], w.s);
  }
  return y;
}

// Decode row r of a store (codes / scales of one head) into the lane's 4 elements.
template <class C>
__device__ __forceinline__ F4 decode_row(const KParams& p, const std::uint8_t* codes, const std::uint8_t* scales, int r,
                                         int lane, bool act) {
  F4 y{{0.0f, 0.0f, 0.0f, 0.0f}};
  if (!act) return y;
  if constexpr (C::kFormat == formats::FormatId::fp8_e4m3) {  // one multiplication per code
    const std::uint32_t w = *reinterpret_cast<const std::uint32_t*>(codes + std::size_t(r) * p.K + 4 * lane);
    const float s = scaled<C>(p) ? reinterpret_cast<const float*>(scales)[scale_idx<C>(p, r, lane)] : 1.0f;
    if (formats::hw_e4m3_decode4_scaled(w, s, y.x)) return y;  // the hardware conversion, same bits
  }
  std::uint32_t c[4];
  load_codes<C::kBits>(codes, std::size_t(r) * p.K + 4 * lane, c);
#pragma unroll
  for (int e = 0; e < 4; ++e) y.x[e] = decode_code<C>(c[e]);
  if (scaled<C>(p)) {
    const float s = reinterpret_cast<const float*>(scales)[scale_idx<C>(p, r, lane)];
#pragma unroll
    for (int e = 0; e < 4; ++e) y.x[e] = formats::mul_rn(y.x[e], s);
  }
  return y;
}

// The codes of the scaled elements xs = row r's 4 vl .. 4 vl + 3: the hardware pair conversion where the format has
// one and the rounding is RNE (the same bits, hw_convert.cuh), else C::encode with each element's stochastic-rounding
// bits. kRne: the caller knows it is the former, and the software path is not compiled in.
template <class C, bool kRne>
__device__ __forceinline__ void encode4(const KParams& p, const F4& xs, int r, int vl, std::uint32_t hh,
                                        std::uint32_t step, std::uint32_t (&c)[4]) {
  (void)hh, (void)step, (void)r, (void)vl;  // the stochastic-rounding inputs: unused where kRne
  static_assert(!kRne || formats::kHwRnePair<C::kFormat>, "encode4<C, true>: formats with the hardware pair only");
  bool done = false;
  if constexpr (formats::kHwRnePair<C::kFormat>) {
    if (kRne || p.rounding == formats::Rounding::rne) {
      formats::hw_rne_encode2<C::kFormat>(xs.x[0], xs.x[1], c[0], c[1]);
      formats::hw_rne_encode2<C::kFormat>(xs.x[2], xs.x[3], c[2], c[3]);
      done = true;
    }
  }
  if constexpr (!kRne) {
    if (!done) {
      const formats::CodecParams cp{p.scaling, p.rounding, p.seed, hh, step};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        c[e] = static_cast<std::uint32_t>(
            C::encode(xs.x[e], p.rounding, formats::element_rand_bits(cp, r, 4 * vl + e)));
    }
  }
}

// Encode row r (lane's 4 elements; warp-collective) into codes / scales; returns the decoded stored values.
// kRne: the caller knows the rounding is RNE and the format has the hardware pair conversion, so the software
// encode and the stochastic-rounding inputs are not compiled in (fewer live registers in the caller's loop).
template <class C, bool kRne = false>
__device__ __forceinline__ F4 encode_row(const KParams& p, const F4& x, std::uint8_t* codes, std::uint8_t* scales,
                                         int r, int lane, bool act, std::uint32_t hh, std::uint32_t step) {
  F4 xs = x;
  float scale = 1.0f;
  if (scaled<C>(p)) {
    float am = 0.0f;
    if (act) {
#pragma unroll
      for (int e = 0; e < 4; ++e) am = formats::amax_ignore_nan(am, x.x[e]);
    }
    const int start = p.scaling == formats::Scaling::row ? 16 : 4;
    for (int off = start; off > 0; off /= 2) am = formats::amax_ignore_nan(am, __shfl_xor_sync(0xFFFFFFFFu, am, off));
    scale = C::scale_from_amax(am);
    const bool writer = p.scaling == formats::Scaling::row ? lane == 0 : (lane % 8 == 0 && act);
    if (writer) reinterpret_cast<float*>(scales)[scale_idx<C>(p, r, lane)] = scale;
    const float inv = formats::div_rn(1.0f, scale);
#pragma unroll
    for (int e = 0; e < 4; ++e) xs.x[e] = formats::mul_rn(x.x[e], inv);
  }
  F4 y{{0.0f, 0.0f, 0.0f, 0.0f}};
  if (act) {
    std::uint32_t c[4];
    encode4<C, kRne>(p, xs, r, lane, hh, step, c);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float d = C::decode(static_cast<typename C::code_t>(c[e]));
      if (scaled<C>(p)) d = formats::mul_rn(d, scale);
      y.x[e] = d;
    }
    store_codes<C::kBits>(codes, std::size_t(r) * p.K + 4 * lane, c);
  }
  return y;
}

// The replay paths' shared-memory layout (struct Smem): kernels/common/replay_smem.h.

// The work of one CTA of a replay path: sequence b, head h (replay_group: the group's first head), 32-row slice sp of
// the head's nsplit (replay_head / replay_group run all of them). The kernels map their grids onto it
// (fast_kernel.cuh), so that the paths do not read blockIdx.
struct Cta {
  int b, h, sp, nsplit;
  int ns = 1;  // row slices sp .. sp + ns - 1 of the head (replay_lean's step flush; 1 everywhere else)
};

// Early flush: the CTAs of a head count themselves in after staging the old window; the last one writes the new
// per-head records (so no CTA can still be reading the slots they overwrite), then resets the counter.
inline constexpr unsigned kCounters = 1u << 17;  // >= heads per launch (checked on the host)
__device__ unsigned g_stage_count[kCounters];

}  // namespace replayssm::kern::fast
