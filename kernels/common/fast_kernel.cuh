#pragma once
// The tuned decode kernel (issue 5): state rows streamed through registers, no whole-state staging.
//
// Grid: nsplit = ceil(V / 32) CTAs per (sequence, head) (conv_kernel: 1-D; replay_kernel: (nsplit, H, B), so that no
// CTA divides to find its head), 256 threads = 8 warps, each warp owns 4 rows of the CTA's 32.
// Lane l holds elements 4l..4l+3 of its rows (K <= 128: one 16-byte load of FP32 codes per row per lane), exactly the
// 32-lane tree of emulation/decode_math.h, so the xor butterfly reproduces the emulation's dot products bit for bit.
// Every row of the GDN / Mamba-2 update only needs that row's dots (u_r = beta (v_r - a (S k)_r)), so rows are
// independent and a head splits across CTAs. Per-head window data (decays, k records, coefficient tables
// G_j (k_j . x)) are small: each CTA stages the records in shared memory and recomputes them (same formulas, same
// order as the emulation: emu::window_gammas / window_sum / window_state_elem / gdn_u).
// Codecs run per element in parallel; row / 32-block scales come from warp amax reductions (max is order-free).
// Supported: K <= 128 (K % 4 == 0), V <= 256, L >= 2, scaling none | row | block, every op but Op::state; formats
// instantiated: fp32, fp8_e4m3 (the template also takes bf16 / fp16 / fp8_e5m2 / int8: add a case to launch_any).
// Everything else uses the reference kernel (decode_kernel.cuh).
// An early flush overwrites record slots from 0 while other CTAs of the head may still read the old window: the last
// CTA of the head to finish staging writes the new per-head records (atomic counter, no waiting).
// ReplaySSM dispatch per CTA (replay_kernel): non-flush ops (15 of 16 steps at L = 16, verify without an early flush)
// run replay_head (v6: CTA 0 of the head does the whole head; the others return. v8: its window sums run one thread
// per row. v9: u=hp is a template parameter) where its shared memory fits, else replay_lean<.., false>; a step that
// fills the window (not u=recompute) replay_lean<.., true>; verify's early flush and the u=recompute flush run
// replay_flush (not inlined). PERF_NOTES.md: "second pass" (v3-v5), "third pass" (v6-v7), "fourth pass" (v8-v9).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "emulation/decode_math.h"
#include "formats/state_codec.h"
#include "kernels/common/decode_kernel.h"

namespace replayssm::kern::fast {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = 8;
inline constexpr int kRPW = 4;                // rows per warp
inline constexpr int kRows = kWarps * kRPW;   // rows per CTA

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
// Two rows at once: returns the sum of row lane / 16 (level 1 keeps row 0 in lanes < 16, row 1 in the others).
__device__ __forceinline__ float bfly_sum2(float p0, float p1, int lane) {
  const bool h16 = (lane & 16) != 0;
  float k = h16 ? p1 : p0;
  const float s = h16 ? p0 : p1;
  k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, s, 16));
#pragma unroll
  for (int off = 8; off > 0; off /= 2) k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, k, off));
  return k;
}
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
// canonical NaN of formats::e4m3_decode. Checked equal to e4m3_decode for all 256 codes (PERF_NOTES, v3).
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

// Decode row r of a store (codes / scales of one head) into the lane's 4 elements.
template <class C>
__device__ __forceinline__ F4 decode_row(const KParams& p, const std::uint8_t* codes, const std::uint8_t* scales, int r,
                                         int lane, bool act) {
  F4 y{{0.0f, 0.0f, 0.0f, 0.0f}};
  if (!act) return y;
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

// Encode row r (lane's 4 elements; warp-collective) into codes / scales; returns the decoded stored values.
template <class C>
__device__ __forceinline__ F4 encode_row(const KParams& p, const F4& x, std::uint8_t* codes, std::uint8_t* scales,
                                         int r, int lane, bool act, std::uint32_t hh, std::uint32_t step) {
  const formats::CodecParams cp{p.scaling, p.rounding, p.seed, hh, step};
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
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const auto code = C::encode(xs.x[e], p.rounding, formats::element_rand_bits(cp, r, 4 * lane + e));
      c[e] = static_cast<std::uint32_t>(code);
      float d = C::decode(code);
      if (scaled<C>(p)) d = formats::mul_rn(d, scale);
      y.x[e] = d;
    }
    store_codes<C::kBits>(codes, std::size_t(r) * p.K + 4 * lane, c);
  }
  return y;
}

// Shared-memory layout of the replay path (floats). NR = cap + T records (old window + this op's tokens).
struct Smem {
  int NR, T, K;
  bool rec;  // u = recompute
  int R = kRows;  // rows staged per CTA (w / v / skip / row dots): kRows, or the whole head (replay_head, v6)
  __host__ __device__ int oS() const { return (size() + 3) / 4 * 4; }  // replay_head: per-warp state ring
  __host__ __device__ int oA() const { return 0; }
  __host__ __device__ int oB() const { return NR; }
  __host__ __device__ int oK() const { return (2 * NR + 3) / 4 * 4; }  // 16-byte aligned rows
  __host__ __device__ int oQ() const { return oK() + NR * K; }
  __host__ __device__ int oW() const { return oQ() + T * K; }
  __host__ __device__ int oVr() const { return oW() + NR * R; }
  __host__ __device__ int oVt() const { return oVr() + (rec ? NR * R : 0); }  // draft v [T][rows]
  __host__ __device__ int oSk() const { return oVt() + T * R; }                 // draft skip [T][rows]
  __host__ __device__ int oTot() const { return oSk() + T * R; }  // T drafts + totm + NR totR
  __host__ __device__ int oGd() const { return oTot() + T + 1 + NR; }
  __host__ __device__ int oCU() const { return oGd() + T * NR; }
  __host__ __device__ int oCO() const { return oCU() + T * NR; }
  __host__ __device__ int oGm() const { return oCO() + T * NR; }
  __host__ __device__ int oGR() const { return oGm() + NR; }
  // lean path: row dots [2][T][rows] (16-byte aligned: float4 accesses)
  __host__ __device__ int oD() const { return (oGR() + (rec ? NR * NR : 0) + 3) / 4 * 4; }
  __host__ __device__ int size() const { return oD() + 2 * T * R; }
};

// Early flush: the CTAs of a head count themselves in after staging the old window; the last one writes the new
// per-head records (so no CTA can still be reading the slots they overwrite), then resets the counter.
inline constexpr unsigned kCounters = 1u << 17;  // >= heads per launch (checked on the host)
__device__ unsigned g_stage_count[kCounters];

template <class C, bool kGdn>
__global__ void __launch_bounds__(kThreads, 4) conv_kernel(KParams p) {
  const int nsplit = (p.V + kRows - 1) / kRows;
  const int hh = blockIdx.x / nsplit, sp = blockIdx.x % nsplit;
  const int b = hh / p.H, h = hh % p.H;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int r0 = sp * kRows;
  const bool act = 4 * lane < p.K;
  const int K = p.K, V = p.V;
    const int grp = h / (p.H / p.G);
  std::uint8_t* codes = p.codes + std::size_t(hh) * p.code_bytes;
  std::uint8_t* scales = p.scales + std::size_t(hh) * p.scale_bytes;
  auto bt = [&](int t) { return std::size_t(b) * p.T + t; };
  auto tok_k = [&](int t) { return p.k + (bt(t) * p.G + grp) * K; };
  auto tok_q = [&](int t) { return p.q + (bt(t) * p.G + grp) * K; };
  auto tok_v = [&](int t) { return p.v + (bt(t) * p.H + h) * V; };
  auto tok_skip = [&](int t) { return p.skip ? p.skip + (bt(t) * p.H + h) * V : nullptr; };
  auto out_o = [&](int t) { return p.o + (bt(t) * p.H + h) * V; };
  auto tok_a = [&](int t) { return p.a[bt(t) * p.H + h]; };
  auto tok_beta = [&](int t) { return p.beta ? p.beta[bt(t) * p.H + h] : 1.0f; };
  auto row_of = [&](int i) { return r0 + warp * kRPW + i; };

  // ------------------------------------------------------------------ conventional (step: T = 1; verify: T drafts)
  {
    const int tok0 = p.tok[b];
    F4 S[kRPW];
#pragma unroll
    for (int i = 0; i < kRPW; ++i)
      if (row_of(i) < V) S[i] = decode_row<C>(p, codes, scales, row_of(i), lane, act);
    const int T = p.op == Op::verify ? p.T : 1;
    for (int t = 0; t < T; ++t) {
      const float a = tok_a(t), beta = tok_beta(t);
      const F4 k = act ? ld4(tok_k(t) + 4 * lane) : F4{{0, 0, 0, 0}};
      const F4 q = act ? ld4(tok_q(t) + 4 * lane) : F4{{0, 0, 0, 0}};
      const float* v = tok_v(t);
      const float* skip = tok_skip(t);
      float* o = out_o(t);
      const std::uint32_t step = std::uint32_t(tok0 + t);
      // Per-row token values first: after this token's stores the compiler could not hoist them (aliasing), and
      // each would cost a memory round trip.
      float vr[kRPW], sk[kRPW];
#pragma unroll
      for (int i = 0; i < kRPW; ++i) {
        const int r = row_of(i) < V ? row_of(i) : 0;
        vr[i] = v[r];
        sk[i] = skip ? skip[r] : 0.0f;
      }
      std::uint8_t* dc = codes;
      std::uint8_t* ds = scales;
      if (p.op == Op::verify) {
        const std::size_t slot = std::size_t(hh) * p.max_drafts + t;
        dc = p.snap_codes + slot * p.code_bytes;
        ds = p.snap_scales + slot * p.scale_bytes;
      }
#pragma unroll
      for (int i = 0; i < kRPW; ++i) {
        const int r = row_of(i);
        if (r >= V) continue;
#pragma unroll
        for (int e = 0; e < 4; ++e) S[i].x[e] = emu::conv_decay(a, S[i].x[e]);
        float w = vr[i];
        if constexpr (kGdn) w = emu::gdn_u(beta, vr[i], dot4(S[i], k, act));
#pragma unroll
        for (int e = 0; e < 4; ++e) S[i].x[e] = emu::conv_update(w, k.x[e], S[i].x[e]);
        const float y = dot4(S[i], q, act);
        if (lane == 0) o[r] = skip ? __fadd_rn(y, sk[i]) : y;  // emu::add_skip
        encode_row<C>(p, S[i], dc, ds, r, lane, act, std::uint32_t(hh), step);
      }
    }
    return;
  }

}

// cp.async (sm_80+): global -> shared without registers; the whole window is staged in one round trip.
__device__ __forceinline__ void cp_async16(void* s, const void* g) {
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async4(void* s, const void* g) {
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
}

// Raw codes of row r (lane's 4 elements) and its scale: loads only, decoded after the window has been staged so that
// the state loads and the window's cp.async fly together.
template <class C>
struct RawRow {
  std::uint32_t c[C::kBits == 32 ? 4 : (C::kBits == 16 ? 2 : 1)];
  float s;
};
template <class C>
__device__ __forceinline__ void load_raw(const KParams& p, const std::uint8_t* codes, const std::uint8_t* scales, int r,
                                         int lane, RawRow<C>& w) {
  const std::size_t i = std::size_t(r) * p.K + 4 * lane;
  if constexpr (C::kBits == 32) {
    const uint4 u = *reinterpret_cast<const uint4*>(codes + i * 4);
    w.c[0] = u.x, w.c[1] = u.y, w.c[2] = u.z, w.c[3] = u.w;
  } else if constexpr (C::kBits == 16) {
    const uint2 u = *reinterpret_cast<const uint2*>(codes + i * 2);
    w.c[0] = u.x, w.c[1] = u.y;
  } else {
    w.c[0] = *reinterpret_cast<const std::uint32_t*>(codes + i);
  }
  w.s = scaled<C>(p) ? reinterpret_cast<const float*>(scales)[scale_idx<C>(p, r, lane)] : 1.0f;
}
template <class C>
__device__ __forceinline__ F4 decode_raw(const KParams& p, const RawRow<C>& w) {
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
  if (scaled<C>(p)) {
#pragma unroll
    for (int e = 0; e < 4; ++e) y.x[e] = formats::mul_rn(y.x[e], w.s);
  }
  return y;
}

// The non-flush ReplaySSM op (step without flush, verify without early flush): the hot path, 15 of 16 steps at L=16.
// S_c rows are read once into registers (split u=hp: the HP rows after the tables); the window (a, k records, q, w
// rows of the CTA, v, skip) is staged by cp.async in the same round trip; one thread per (draft t, record j) forms the
// decay G_j (its own running product from the newest record: the same multiplications as emu::window_gammas), then
// one warp per pair the coefficients G_j (k_j . k_t), G_j (k_j . q_t); then every warp runs its 4 rows' window sums,
// records in increasing j (emu::window_sum), the 4 rows interleaved. kFlush: the step that fills the window (u, then
// materialise + output + HP row + encode of the warp's rows). Writes: the appended records (w = u for GDN, v for
// Mamba-2; raw v for u=recompute; a, beta, k by CTA 0 of the head) and the outputs. Nothing else is stored.
template <class C, bool kGdn, bool kFlush>
__device__ __forceinline__ void replay_lean(const KParams& p, float* sm) {
  const int b = blockIdx.z, h = blockIdx.y, hh = b * p.H + h, sp = blockIdx.x;  // grid (nsplit, H, B)
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int r0 = sp * kRows, rr0 = warp * kRPW;
  const bool act = 4 * lane < p.K;
  const int K = p.K, V = p.V, K4 = K / 4;
  const int grp = h / (p.H / p.G);
  const bool split = p.policy == emu::Policy::replay_split;
  const bool recompute = kGdn && split && p.usource == emu::USource::recompute;
  const bool u_hp = kGdn && split && p.usource == emu::USource::hp;
  const int n = p.n[b];  // = m0: no early flush here
  const int nd = kFlush ? 1 : (p.op == Op::verify ? p.T : 1);
  const bool rows_ok = r0 + rr0 < V;  // V % 4 == 0: a warp's 4 rows are all valid or all not
  // kFlush (a step that fills the window, not u=recompute): the LP checkpoint is read only where u comes from it (split)
  // or it is the recurrence checkpoint (shared); the HP rows (split) are the checkpoint that is materialised.
  const bool need_lp = !kFlush || !split || (kGdn && !u_hp);
  const bool need_hp = kFlush ? split : u_hp;
  auto bt = [&](int t) { return std::size_t(b) * p.T + t; };

  const Smem L{p.cap + p.T, p.T, K, recompute};
  const int NR = L.NR;
  float* sA = sm + L.oA();
  float* sB = sm + L.oB();
  float* sK = sm + L.oK();
  float* sQ = sm + L.oQ();
  float* sW = sm + L.oW();
  float* sVt = sm + L.oVt();
  float* sSk = sm + L.oSk();
  float* sTot = sm + L.oTot();
  float* sCU = sm + L.oCU();
  float* sCO = sm + L.oCO();
  float* sGd = sm + L.oGd();  // [t][NR]: G_j of draft t's window

  // 1. The window by cp.async: records [0, n) from the buffer, this op's tokens at [n, n + nd).
  RawRow<C> raw[kRPW];
  F4 Sh[kRPW];
  {
    // Division-free mapping: a, beta one thread per record; k records and q one warp per row, lane = 16-byte chunk
    // (K <= 128); w / v / skip rows 8 chunks of 4 rows per record.
    const float* ra = p.ra + std::size_t(hh) * p.cap;
    const float* rk = p.rk + std::size_t(hh) * p.cap * K + 4 * lane;
    const float* rw = p.rw + std::size_t(hh) * p.cap * V + r0;
    const float* tk = p.k + (std::size_t(b) * p.T * p.G + grp) * K + 4 * lane;  // token t: + t G K
    const float* tq = p.q + (std::size_t(b) * p.T * p.G + grp) * K + 4 * lane;
    const int GK = p.G * K;
    const int W = n + nd;
    if (tid < W) {
      cp_async4(sA + tid, tid < n ? ra + tid : p.a + bt(tid - n) * p.H + h);
      if (tid >= n) {
        if (p.beta) cp_async4(sB + tid, p.beta + bt(tid - n) * p.H + h);
        else sB[tid] = 1.0f;
      }
    }
    if (act) {
      for (int j = warp; j < W; j += kWarps)
        cp_async16(sK + j * K + 4 * lane, j < n ? rk + j * K : tk + (j - n) * GK);
      for (int t = warp; t < nd; t += kWarps) cp_async16(sQ + t * K + 4 * lane, tq + t * GK);
    }
    {
      const int c = 4 * (tid & 7);
      if (r0 + c < V) {
        for (int j = tid >> 3; j < n; j += kThreads / 8) cp_async16(sW + j * kRows + c, rw + j * V + c);
        for (int t = tid >> 3; t < nd; t += kThreads / 8) {
          const std::size_t o = (bt(t) * p.H + h) * V + r0 + c;
          cp_async16(sVt + t * kRows + c, p.v + o);
          if (!kGdn) cp_async16(sW + (n + t) * kRows + c, p.v + o);
          if (p.skip) cp_async16(sSk + t * kRows + c, p.skip + o);
        }
      }
    }
  }
  // 2. Checkpoint rows (raw codes) into registers, issued after the window's cp.async (so that the staging loops do
  //    not hold them live) and before the wait: one round trip for both.
  const std::uint8_t* codes = p.codes + std::size_t(hh) * p.code_bytes;
  const std::uint8_t* scales = p.scales + std::size_t(hh) * p.scale_bytes;
#pragma unroll
  for (int i = 0; i < kRPW; ++i) {
    if (need_lp && rows_ok && act) load_raw<C>(p, codes, scales, r0 + rr0 + i, lane, raw[i]);
  }
  cp_async_wait_all();
  __syncthreads();

  // 3. Decays, then coefficient tables. (a) G_j of draft t's window (m = n + t + 1 records), one thread per (t, j):
  //    G_{m-1} = 1, G_j = G_{j+1} a_{j+1} as its own running product from the newest record (emu::window_gammas'
  //    multiplications, in its order); total_t = G_0 a_0. (b) one warp per (t, j): G_j (k_j . q_t) and, for j < n + t,
  //    G_j (k_j . k_t) from one k_j load, both trees in one reduce-scatter.
  {
    const int W = n + nd;
    for (int x = tid; x < nd * W; x += kThreads) {
      const int t = x / W, j = x - t * W;
      if (j > n + t) continue;
      float g = 1.0f;
#pragma unroll 4
      for (int i = n + t; i > j; --i) g = formats::mul_rn(g, sA[i]);
      sGd[t * NR + j] = g;
      if (j == 0) sTot[t] = formats::mul_rn(g, sA[0]);
    }
  }
  __syncthreads();
  {
    const int W = n + nd;
    for (int task = warp; task < nd * W; task += kWarps) {
      const int t = task / W, j = task - t * W;
      if (j > n + t) continue;
      const float g = sGd[t * NR + j];
      const F4 xa = act ? ld4(sK + j * K + 4 * lane) : F4{{0, 0, 0, 0}};
      const F4 yq = act ? ld4(sQ + t * K + 4 * lane) : F4{{0, 0, 0, 0}};
      float pu = 0.0f;
      const bool has_u = kGdn && j < n + t;
      if (has_u) {  // warp-uniform
        const F4 yk = act ? ld4(sK + (n + t) * K + 4 * lane) : F4{{0, 0, 0, 0}};
        pu = part4(xa, yk, act);
      }
      const float d = bfly_sum2(part4(xa, yq, act), pu, lane);  // lanes < 16: k_j . q_t; others: k_j . k_t
      if (lane == 0) sCO[t * NR + j] = formats::mul_rn(g, d);  // emu::window_coefs
      if (lane == 16 && has_u) sCU[t * NR + j] = formats::mul_rn(g, d);
    }
  }
  __syncthreads();

  // Per-head record fields of the appended tokens (CTA 0 of the head; no early flush: no other CTA reads these slots).
  if (sp == 0) {
    float* wa = p.ra + std::size_t(hh) * p.cap;
    float* wb = p.rbeta + std::size_t(hh) * p.cap;
    float* wk = p.rk + std::size_t(hh) * p.cap * K;
    for (int j = tid; j < nd; j += kThreads) wa[n + j] = sA[n + j], wb[n + j] = sB[n + j];
    for (int x = tid; x < nd * K4; x += kThreads) {
      const int j = x / K4, c = 4 * (x % K4);
      st4(wk + std::size_t(n + j) * K + c, ld4(sK + (n + j) * K + c));
    }
  }
  if (!rows_ok) return;
  // Split u=hp: the HP rows (for S_c k only) are loaded here, a second round trip for that variant only, so that they
  // do not hold 16 registers through the window phases.
#pragma unroll
  for (int i = 0; i < kRPW; ++i) {
    Sh[i] = F4{{0, 0, 0, 0}};
    if (need_hp && act) Sh[i] = ld4(p.hp + std::size_t(hh) * V * K + std::size_t(r0 + rr0 + i) * K + 4 * lane);
  }
  if constexpr (kFlush) {
    // u of the appended record (GDN; emu::window_sum over the n old records), then materialise the warp's rows:
    // N = total S + sum_{j <= n} (G_j w_j[r]) k_j (emu::window_state_elem), output N q, HP row (split), encode.
    float* gw = p.rw + std::size_t(hh) * p.cap * V + r0 + rr0;
    const float tot = sTot[0];
    F4 S[kRPW];
#pragma unroll
    for (int i = 0; i < kRPW; ++i) S[i] = (need_lp && act) ? decode_raw<C>(p, raw[i]) : F4{{0, 0, 0, 0}};
    F4 wn;
    if constexpr (kGdn) {
      const F4 kk = act ? ld4(sK + n * K + 4 * lane) : F4{{0, 0, 0, 0}};
      float U[kRPW];
      if (u_hp) {
#pragma unroll
        for (int i = 0; i < kRPW; ++i) U[i] = formats::mul_rn(tot, dot4(Sh[i], kk, act));
      } else {
#pragma unroll
        for (int i = 0; i < kRPW; ++i) U[i] = formats::mul_rn(tot, dot4(S[i], kk, act));
      }
#pragma unroll 4
      for (int j = 0; j < n; ++j) {
        const F4 w = ld4(sW + j * kRows + rr0);
        const float c_u = sCU[j];
#pragma unroll
        for (int i = 0; i < kRPW; ++i) U[i] = __fmaf_rn(c_u, w.x[i], U[i]);
      }
      const float beta = sB[n];
      const F4 vt = ld4(sVt + rr0);
#pragma unroll
      for (int i = 0; i < kRPW; ++i) wn.x[i] = emu::gdn_u(beta, vt.x[i], U[i]);
      __syncwarp();
      if (lane == 0) st4(sW + n * kRows + rr0, wn);
      __syncwarp();
    } else {
      wn = ld4(sW + n * kRows + rr0);
    }
    if (lane == 0) st4(gw + std::size_t(n) * V, wn);
    const F4 qq = act ? ld4(sQ + 4 * lane) : F4{{0, 0, 0, 0}};
    // The 4 rows advance together through the records (k_j and w_j loaded once for all four; v8 reloaded k_j per
    // row); each element's chain is unchanged: total * S, then + (G_j w_j[r]) k_j[c] for j = 0..n in order.
    F4 N[kRPW];
#pragma unroll
    for (int i = 0; i < kRPW; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) N[i].x[e] = formats::mul_rn(tot, split ? Sh[i].x[e] : S[i].x[e]);
    for (int j = 0; j <= n; ++j) {
      const float g = sGd[j];
      const F4 wj = ld4(sW + j * kRows + rr0);
      const F4 kj = act ? ld4(sK + j * K + 4 * lane) : F4{{0, 0, 0, 0}};
#pragma unroll
      for (int i = 0; i < kRPW; ++i) {
        const float rc = formats::mul_rn(g, wj.x[i]);
#pragma unroll
        for (int e = 0; e < 4; ++e) N[i].x[e] = __fmaf_rn(rc, kj.x[e], N[i].x[e]);
      }
    }
    F4 y;
#pragma unroll
    for (int i = 0; i < kRPW; ++i) {
      const int r = r0 + rr0 + i;
      y.x[i] = dot4(N[i], qq, act);
      if (split && act) st4(p.hp + std::size_t(hh) * V * K + std::size_t(r) * K + 4 * lane, N[i]);
      encode_row<C>(p, N[i], p.codes + std::size_t(hh) * p.code_bytes, p.scales + std::size_t(hh) * p.scale_bytes, r,
                    lane, act, std::uint32_t(hh), std::uint32_t(p.tok[b]));
    }
    if (p.skip) {
      const F4 sk = ld4(sSk + rr0);
#pragma unroll
      for (int i = 0; i < kRPW; ++i) y.x[i] = __fadd_rn(y.x[i], sk.x[i]);  // emu::add_skip
    }
    if (lane == 0) st4(p.o + bt(0) * p.H * V + std::size_t(h) * V + r0 + rr0, y);
    return;
  }

  // 4. Rows, first S_c q_t and S_c k_t of every draft by the canonical butterfly (the state registers die here), into
  //    shared memory (this warp's rows only: no block barrier), then the window sums of the warp's 4 rows.
  float* sDq = sm + L.oD() + rr0;            // [t][kRows]: (S_c q_t)_r
  float* sDk = sm + L.oD() + nd * kRows + rr0;  // [t][kRows]: (S_c k_t)_r
  {
    F4 S[kRPW];
#pragma unroll
    for (int i = 0; i < kRPW; ++i) S[i] = act ? decode_raw<C>(p, raw[i]) : F4{{0, 0, 0, 0}};
    for (int t = 0; t < nd; ++t) {
      static_assert(kRPW == 4, "bfly_sum4 reduces 4 rows");
      const F4 qq = act ? ld4(sQ + t * K + 4 * lane) : F4{{0, 0, 0, 0}};
      const float dq = bfly_sum4(part4(S[0], qq, act), part4(S[1], qq, act), part4(S[2], qq, act),
                                 part4(S[3], qq, act), lane);
      if (lane % 8 == 0) sDq[t * kRows + lane / 8] = dq;
      if constexpr (kGdn) {
        const F4 kk = act ? ld4(sK + (n + t) * K + 4 * lane) : F4{{0, 0, 0, 0}};
        float dk;
        if (u_hp)
          dk = bfly_sum4(part4(Sh[0], kk, act), part4(Sh[1], kk, act), part4(Sh[2], kk, act), part4(Sh[3], kk, act),
                         lane);
        else
          dk = bfly_sum4(part4(S[0], kk, act), part4(S[1], kk, act), part4(S[2], kk, act), part4(S[3], kk, act),
                         lane);
        if (lane % 8 == 0) sDk[t * kRows + lane / 8] = dk;
      }
    }
  }
  __syncwarp();
  float* gw = p.rw + std::size_t(hh) * p.cap * V + r0 + rr0;
  float* gv = recompute ? p.rv + std::size_t(hh) * p.cap * V + r0 + rr0 : nullptr;
  for (int t = 0; t < nd; ++t) {
    const int jn = n + t;
    const float tot = sTot[t];
    float O[kRPW], U[kRPW];
    {
      const F4 dq = ld4(sDq + t * kRows);
#pragma unroll
      for (int i = 0; i < kRPW; ++i) O[i] = formats::mul_rn(tot, dq.x[i]);
      if constexpr (kGdn) {
        const F4 dk = ld4(sDk + t * kRows);
#pragma unroll
        for (int i = 0; i < kRPW; ++i) U[i] = formats::mul_rn(tot, dk.x[i]);
      }
    }
    const float* cu = sCU + t * NR;
    const float* co = sCO + t * NR;
#pragma unroll 4
    for (int j = 0; j < jn; ++j) {
      const F4 w = ld4(sW + j * kRows + rr0);
      const float c_o = co[j];
#pragma unroll
      for (int i = 0; i < kRPW; ++i) O[i] = __fmaf_rn(c_o, w.x[i], O[i]);
      if constexpr (kGdn) {
        const float c_u = cu[j];
#pragma unroll
        for (int i = 0; i < kRPW; ++i) U[i] = __fmaf_rn(c_u, w.x[i], U[i]);
      }
    }
    F4 wn;
    if constexpr (kGdn) {
      const float beta = sB[jn];
      const F4 vt = ld4(sVt + t * kRows + rr0);
#pragma unroll
      for (int i = 0; i < kRPW; ++i) wn.x[i] = emu::gdn_u(beta, vt.x[i], U[i]);
      __syncwarp();
      if (lane == 0) {
        st4(sW + jn * kRows + rr0, wn);
        if (recompute) st4(gv + std::size_t(jn) * V, vt);
      }
      __syncwarp();
    } else {
      wn = ld4(sW + jn * kRows + rr0);
    }
    const float c_n = co[jn];
    F4 y;
#pragma unroll
    for (int i = 0; i < kRPW; ++i) y.x[i] = __fmaf_rn(c_n, wn.x[i], O[i]);
    if (p.skip) {
      const F4 sk = ld4(sSk + t * kRows + rr0);
#pragma unroll
      for (int i = 0; i < kRPW; ++i) y.x[i] = __fadd_rn(y.x[i], sk.x[i]);  // emu::add_skip
    }
    if (lane == 0) {
      st4(gw + std::size_t(jn) * V, wn);
      st4(p.o + (bt(t) * p.H + h) * V + r0 + rr0, y);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------- v6
// replay_head: the non-flush op of a whole head in one CTA (PERF_NOTES, "third pass"). The window staging, the decay
// table and the coefficient tables G_j (k_j . q_t), G_j (k_j . k_t) are built once per head instead of once per
// 32-row CTA (GDN 4x, Mamba-2 2x); the 8 warps then loop over the head's 32-row groups (a warp owns rows
// 32 g + 4 warp .. + 3 of group g: the same 4-row tiles as replay_lean, the same operations in the same order).
// The checkpoint rows of a warp's next group fly while it computes the current one: a per-warp two-stage ring in
// shared memory filled by cp.async (codes, scales, and the HP rows for split u=hp), warp-local waits only. The other
// CTAs of the head (same grid as v5) return at once.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
template <class C>
__host__ __device__ inline int head_nsc(const KParams& p) {  // scales per row in the ring
  if (C::kBlock == 0 || p.scaling == formats::Scaling::none) return 0;
  return p.scaling == formats::Scaling::row ? 1 : (p.K + 31) / 32;
}
template <class C>
__host__ __device__ inline int head_stage_bytes(const KParams& p, bool u_hp) {  // one ring stage: 4 rows
  return 4 * (p.K * C::kBits / 8) + (u_hp ? 16 * p.K : 0) + (16 * head_nsc<C>(p) + 15) / 16 * 16;
}
// Dynamic shared memory of replay_head in floats; 0 where it does not apply (then replay_lean runs, as in v5).
template <class C, bool kGdn>
__host__ __device__ inline int head_smem_floats(const KParams& p) {
  const bool split = p.policy == emu::Policy::replay_split;
  const bool rec = kGdn && split && p.usource == emu::USource::recompute;
  const bool u_hp = kGdn && split && p.usource == emu::USource::hp;
  if (p.V % 4 != 0 || (p.K * C::kBits / 8) % 16 != 0 || p.code_bytes % 16 != 0 || p.scale_bytes % 4 != 0) return 0;
  const int nsplit = (p.V + kRows - 1) / kRows;
  const Smem L{p.cap + p.T, p.T, p.K, rec, nsplit * kRows};
  const int f = L.oS() + kWarps * 2 * head_stage_bytes<C>(p, u_hp) / 4;
  return f * 4 <= 160 * 1024 ? f : 0;
}

template <class C, bool kGdn, bool kHp>  // kHp: GDN replay_split u=hp (the only variant with a second row copy)
__device__ __forceinline__ void replay_head(const KParams& p, float* sm) {
  const int nsplit = gridDim.x;
  const int b = blockIdx.z, h = blockIdx.y, hh = b * p.H + h;  // grid (nsplit, H, B)
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int rr0 = warp * kRPW;
  const bool act = 4 * lane < p.K;
  const int K = p.K, V = p.V, K4 = K / 4, V4 = V / 4;
  const int grp = h / (p.H / p.G);
  const bool split = p.policy == emu::Policy::replay_split;
  const bool recompute = kGdn && split && p.usource == emu::USource::recompute;
  constexpr bool u_hp = kHp;  // = kGdn && split && p.usource == hp (the dispatch in replay_kernel)
  const int n = p.n[b];
  const int nd = p.op == Op::verify ? p.T : 1;
  auto bt = [&](int t) { return std::size_t(b) * p.T + t; };

  const int R = nsplit * kRows;
  const Smem L{p.cap + p.T, p.T, K, recompute, R};
  const int NR = L.NR;
  float* sA = sm + L.oA();
  float* sB = sm + L.oB();
  float* sK = sm + L.oK();
  float* sQ = sm + L.oQ();
  float* sW = sm + L.oW();
  float* sVt = sm + L.oVt();
  float* sSk = sm + L.oSk();
  float* sTot = sm + L.oTot();
  float* sCU = sm + L.oCU();
  float* sCO = sm + L.oCO();
  float* sGd = sm + L.oGd();

  // The ring: stage s of warp w at oS + (2 w + s) SB bytes: [4 rows of codes][4 HP rows (u=hp)][4 x nsc scales].
  const int RB = K * C::kBits / 8;
  const int nsc = head_nsc<C>(p);
  const int SB = head_stage_bytes<C>(p, u_hp);
  const int oHP = 4 * RB, oSC = 4 * RB + (u_hp ? 16 * K : 0);
  std::uint8_t* ring = reinterpret_cast<std::uint8_t*>(sm + L.oS()) + warp * 2 * SB;
  const std::uint8_t* gcodes = p.codes + std::size_t(hh) * p.code_bytes;
  const float* gsc = reinterpret_cast<const float*>(p.scales + std::size_t(hh) * p.scale_bytes);
  const float* ghp = u_hp ? p.hp + std::size_t(hh) * V * K : nullptr;
  auto issue = [&](int g) {  // the warp's 4 rows of group g into stage g & 1 (rows r..r+3 are contiguous)
    const int r = g * kRows + rr0;
    if (g >= nsplit || r >= V) return;
    std::uint8_t* st = ring + (g & 1) * SB;
    const std::uint8_t* src = gcodes + std::size_t(r) * RB;
    for (int c = lane; c < RB / 4; c += 32) cp_async16(st + 16 * c, src + 16 * c);
    if (u_hp) {
      const float* hs = ghp + std::size_t(r) * K;
      for (int c = lane; c < K; c += 32) cp_async16(st + oHP + 16 * c, hs + 4 * c);
    }
    if (lane < 4 * nsc) cp_async4(st + oSC + 4 * lane, gsc + std::size_t(r) * nsc + lane);
  };

  // 1. The window by cp.async (as replay_lean, all rows of the head), then the first two groups of rows.
  {
    const float* ra = p.ra + std::size_t(hh) * p.cap;
    const float* rk = p.rk + std::size_t(hh) * p.cap * K + 4 * lane;
    const float* rw = p.rw + std::size_t(hh) * p.cap * V;
    const float* tk = p.k + (std::size_t(b) * p.T * p.G + grp) * K + 4 * lane;
    const float* tq = p.q + (std::size_t(b) * p.T * p.G + grp) * K + 4 * lane;
    const int GK = p.G * K;
    const int W = n + nd;
    if (tid < W) {
      cp_async4(sA + tid, tid < n ? ra + tid : p.a + bt(tid - n) * p.H + h);
      if (tid >= n) {
        if (p.beta) cp_async4(sB + tid, p.beta + bt(tid - n) * p.H + h);
        else sB[tid] = 1.0f;
      }
    }
    if (act) {
      for (int j = warp; j < W; j += kWarps)
        cp_async16(sK + j * K + 4 * lane, j < n ? rk + j * K : tk + (j - n) * GK);
      for (int t = warp; t < nd; t += kWarps) cp_async16(sQ + t * K + 4 * lane, tq + t * GK);
    }
    for (int c4 = lane; c4 < V4; c4 += 32) {
      const int c = 4 * c4;
      for (int j = warp; j < n; j += kWarps) cp_async16(sW + j * R + c, rw + std::size_t(j) * V + c);
      for (int t = warp; t < nd; t += kWarps) {
        const std::size_t o = (bt(t) * p.H + h) * V + c;
        cp_async16(sVt + t * R + c, p.v + o);
        if (!kGdn) cp_async16(sW + (n + t) * R + c, p.v + o);
        if (p.skip) cp_async16(sSk + t * R + c, p.skip + o);
      }
    }
  }
  issue(0);
  cp_async_commit();
  issue(1);
  cp_async_commit();
  cp_async_wait<1>();  // the window and group 0
  __syncthreads();

  // 2. Decays and coefficient tables, once per head (replay_lean step 3, unchanged).
  {
    const int W = n + nd;
    for (int x = tid; x < nd * W; x += kThreads) {
      const int t = x / W, j = x - t * W;
      if (j > n + t) continue;
      float g = 1.0f;
#pragma unroll 4
      for (int i = n + t; i > j; --i) g = formats::mul_rn(g, sA[i]);
      sGd[t * NR + j] = g;
      if (j == 0) sTot[t] = formats::mul_rn(g, sA[0]);
    }
  }
  __syncthreads();
  {
    const int W = n + nd;
    for (int task = warp; task < nd * W; task += kWarps) {
      const int t = task / W, j = task - t * W;
      if (j > n + t) continue;
      const float g = sGd[t * NR + j];
      const F4 xa = act ? ld4(sK + j * K + 4 * lane) : F4{{0, 0, 0, 0}};
      const F4 yq = act ? ld4(sQ + t * K + 4 * lane) : F4{{0, 0, 0, 0}};
      float pu = 0.0f;
      const bool has_u = kGdn && j < n + t;
      if (has_u) {
        const F4 yk = act ? ld4(sK + (n + t) * K + 4 * lane) : F4{{0, 0, 0, 0}};
        pu = part4(xa, yk, act);
      }
      const float d = bfly_sum2(part4(xa, yq, act), pu, lane);
      if (lane == 0) sCO[t * NR + j] = formats::mul_rn(g, d);  // emu::window_coefs
      if (lane == 16 && has_u) sCU[t * NR + j] = formats::mul_rn(g, d);
    }
  }
  __syncthreads();

  // Per-head record fields of the appended tokens (this CTA is the head's only one here).
  {
    float* wa = p.ra + std::size_t(hh) * p.cap;
    float* wb = p.rbeta + std::size_t(hh) * p.cap;
    float* wk = p.rk + std::size_t(hh) * p.cap * K;
    for (int j = tid; j < nd; j += kThreads) wa[n + j] = sA[n + j], wb[n + j] = sB[n + j];
    for (int x = tid; x < nd * K4; x += kThreads) {
      const int j = x / K4, c = 4 * (x % K4);
      st4(wk + std::size_t(n + j) * K + c, ld4(sK + (n + j) * K + c));
    }
  }

  // 3a. Row groups: the checkpoint rows of the stage -> S_c q_t, S_c k_t (canonical trees) into sDq / sDk [t][R].
  float* sDq0 = sm + L.oD();
  float* sDk0 = sDq0 + nd * R;
  for (int g = 0; g < nsplit; ++g) {
    if (g > 0) cp_async_wait<1>();  // group g landed (this thread's copies); the warp barrier shows the others'
    __syncwarp();
    const int hr = g * kRows + rr0;
    if (hr < V) {
      const std::uint8_t* st = ring + (g & 1) * SB;
      float* sDq = sDq0 + hr;
      float* sDk = sDk0 + hr;
      {
        F4 S[kRPW], Sh[kHp ? kRPW : 1];
#pragma unroll
        for (int i = 0; i < kRPW; ++i) {
          S[i] = F4{{0, 0, 0, 0}};
          if constexpr (kHp) Sh[i] = F4{{0, 0, 0, 0}};
          if (act) {
            RawRow<C> w;
            const std::uint8_t* cp = st + i * RB + lane * (C::kBits / 2);
            if constexpr (C::kBits == 32) {
              const uint4 u = *reinterpret_cast<const uint4*>(cp);
              w.c[0] = u.x, w.c[1] = u.y, w.c[2] = u.z, w.c[3] = u.w;
            } else if constexpr (C::kBits == 16) {
              const uint2 u = *reinterpret_cast<const uint2*>(cp);
              w.c[0] = u.x, w.c[1] = u.y;
            } else {
              w.c[0] = *reinterpret_cast<const std::uint32_t*>(cp);
            }
            w.s = scaled<C>(p) ? reinterpret_cast<const float*>(st + oSC)[i * nsc + (p.scaling == formats::Scaling::row
                                                                                      ? 0
                                                                                      : lane / 8)]
                               : 1.0f;
            S[i] = decode_raw<C>(p, w);
            if constexpr (kHp) Sh[i] = ld4(reinterpret_cast<const float*>(st + oHP) + i * K + 4 * lane);
          }
        }
        for (int t = 0; t < nd; ++t) {
          const F4 qq = act ? ld4(sQ + t * K + 4 * lane) : F4{{0, 0, 0, 0}};
          const float dq = bfly_sum4(part4(S[0], qq, act), part4(S[1], qq, act), part4(S[2], qq, act),
                                     part4(S[3], qq, act), lane);
          if (lane % 8 == 0) sDq[t * R + lane / 8] = dq;
          if constexpr (kGdn) {
            const F4 kk = act ? ld4(sK + (n + t) * K + 4 * lane) : F4{{0, 0, 0, 0}};
            float dk;
            if constexpr (kHp)
              dk = bfly_sum4(part4(Sh[0], kk, act), part4(Sh[1], kk, act), part4(Sh[2], kk, act),
                             part4(Sh[3], kk, act), lane);
            else
              dk = bfly_sum4(part4(S[0], kk, act), part4(S[1], kk, act), part4(S[2], kk, act), part4(S[3], kk, act),
                             lane);
            if (lane % 8 == 0) sDk[t * R + lane / 8] = dk;
          }
        }
      }
    }
    __syncwarp();  // every lane is done with stage g & 1 before it is refilled
    issue(g + 2);
    cp_async_commit();
  }
  __syncthreads();

  // 3b. Window sums, one thread per row (v8; v6 ran them in every lane of the row's warp): emu::window_sum over the
  //     staged records, the same function and order as the emulation. GDN first forms u of the drafts in order (the
  //     window of draft t + 1 holds draft t's record), then every (draft, row) output is independent.
  float* gw = p.rw + std::size_t(hh) * p.cap * V;
  if constexpr (kGdn) {
    float* gv = recompute ? p.rv + std::size_t(hh) * p.cap * V : nullptr;
    for (int r = tid; r < V; r += kThreads) {
      for (int t = 0; t < nd; ++t) {
        const int jn = n + t;
        const float vt = sVt[t * R + r];
        const float u = emu::gdn_u(sB[jn], vt, emu::window_sum(sTot[t], sDk0[t * R + r], sCU + t * NR, sW, R, r, jn));
        sW[jn * R + r] = u;
        gw[std::size_t(jn) * V + r] = u;
        if (recompute) gv[std::size_t(jn) * V + r] = vt;
      }
    }
    __syncthreads();
  }
  int t = 0, r = tid;  // this thread's (draft, row) pairs, tid + i kThreads = t V + r, without a division
  for (; r >= V && t < nd; r -= V) ++t;
  while (t < nd) {
    const int jn = n + t;
    if (!kGdn) gw[std::size_t(jn) * V + r] = sW[jn * R + r];
    const float y = emu::window_sum(sTot[t], sDq0[t * R + r], sCO + t * NR, sW, R, r, jn + 1);
    p.o[(bt(t) * p.H + h) * V + r] = p.skip ? __fadd_rn(y, sSk[t * R + r]) : y;  // emu::add_skip
    for (r += kThreads; r >= V && t < nd; r -= V) ++t;
  }
}

// The flush path (1 / L of the steps, and verify's early flush): materialise + encode, the u=recompute chain.
// Not inlined, so that its register pressure does not reach the lean path's allocation.
template <class C, bool kGdn>
__device__ __noinline__ void replay_flush(const KParams& p, float* sm) {
  const int nsplit = gridDim.x;
  const int b = blockIdx.z, h = blockIdx.y, hh = b * p.H + h, sp = blockIdx.x;  // grid (nsplit, H, B)
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int r0 = sp * kRows;
  const bool act = 4 * lane < p.K;
  const int K = p.K, V = p.V;
  const std::size_t VK = std::size_t(V) * K;
  const int grp = h / (p.H / p.G);
  std::uint8_t* codes = p.codes + std::size_t(hh) * p.code_bytes;
  std::uint8_t* scales = p.scales + std::size_t(hh) * p.scale_bytes;
  auto bt = [&](int t) { return std::size_t(b) * p.T + t; };
  auto tok_k = [&](int t) { return p.k + (bt(t) * p.G + grp) * K; };
  auto tok_q = [&](int t) { return p.q + (bt(t) * p.G + grp) * K; };
  auto tok_v = [&](int t) { return p.v + (bt(t) * p.H + h) * V; };
  auto tok_skip = [&](int t) { return p.skip ? p.skip + (bt(t) * p.H + h) * V : nullptr; };
  auto out_o = [&](int t) { return p.o + (bt(t) * p.H + h) * V; };
  auto tok_a = [&](int t) { return p.a[bt(t) * p.H + h]; };
  auto tok_beta = [&](int t) { return p.beta ? p.beta[bt(t) * p.H + h] : 1.0f; };
  auto row_of = [&](int i) { return r0 + warp * kRPW + i; };

  // ------------------------------------------------------------------ ReplaySSM (replay-shared / replay-split)
  const bool split = p.policy == emu::Policy::replay_split;
  const bool recompute = kGdn && split && p.usource == emu::USource::recompute;
  const bool u_hp = kGdn && split && p.usource == emu::USource::hp;
  const int n = p.n[b];
  const bool early = p.early[b] != 0;
  const std::uint32_t tok0 = std::uint32_t(p.tok[b]);
  const bool verify = p.op == Op::verify;
  const int nd = verify ? p.T : 1;                         // records appended by this op
  const int m0 = early ? 0 : n;                             // records of the window before the op's tokens
  const int start = early ? n : 0;                          // smem index of the window's first record
  const bool mat_out = !verify && !early && n + 1 >= p.L;   // step flush (with output)
  const bool need_mat = early || mat_out;
  const int mm = early ? n : n + 1;                         // records materialised (smem records 0..mm-1)
  const bool draft_u = kGdn && !(mat_out && recompute);     // drafts compute u from the u-source checkpoint
  const bool draft_out = !mat_out;

  const Smem L{p.cap + p.T, p.T, K, recompute};
  const int NR = L.NR;
  float* sA = sm + L.oA();
  float* sB = sm + L.oB();
  float* sK = sm + L.oK();
  float* sQ = sm + L.oQ();
  float* sW = sm + L.oW();
  float* sVr = sm + L.oVr();
  float* sVt = sm + L.oVt();
  float* sSk = sm + L.oSk();
  float* sTot = sm + L.oTot();  // [0, T): drafts; [T]: materialise; [T + 1 + i]: recompute record i
  float* sGd = sm + L.oGd();
  float* sCU = sm + L.oCU();
  float* sCO = sm + L.oCO();
  float* sGm = sm + L.oGm();
  float* sGR = sm + L.oGR();

  // Checkpoint rows first: the loads fly while the window tables are built.
  const bool need_hp = split && (need_mat || u_hp);
  const bool need_out = !split || (!early && (draft_out || (draft_u && !u_hp)));
  F4 So[kRPW], Sh[kRPW];
#pragma unroll
  for (int i = 0; i < kRPW; ++i) {
    const int r = row_of(i);
    So[i] = F4{{0, 0, 0, 0}};
    Sh[i] = F4{{0, 0, 0, 0}};
    if (r < V && need_out) So[i] = decode_row<C>(p, codes, scales, r, lane, act);
    if (r < V && need_hp && act) Sh[i] = ld4(p.hp + std::size_t(hh) * VK + std::size_t(r) * K + 4 * lane);
  }

  // Stage the records: old window [0, n) from the buffer, this op's tokens at [n, n + nd).
  const float* ra = p.ra + std::size_t(hh) * p.cap;
  const float* rbeta = p.rbeta + std::size_t(hh) * p.cap;
  const float* rk = p.rk + std::size_t(hh) * p.cap * K;
  const float* rw = p.rw + std::size_t(hh) * p.cap * V;
  const float* rv = recompute ? p.rv + std::size_t(hh) * p.cap * V : nullptr;
  for (int j = tid; j < n + nd; j += kThreads) {
    sA[j] = j < n ? ra[j] : tok_a(j - n);
    sB[j] = j < n ? rbeta[j] : tok_beta(j - n);
  }
  const int K4 = K / 4;
  for (int x = tid; x < (n + nd) * K4; x += kThreads) {
    const int j = x / K4, c = 4 * (x % K4);
    st4(sK + j * K + c, j < n ? ld4(rk + std::size_t(j) * K + c) : ld4(tok_k(j - n) + c));
  }
  if (draft_out || mat_out)
    for (int x = tid; x < nd * K4; x += kThreads) {
      const int t = x / K4, c = 4 * (x % K4);
      st4(sQ + t * K + c, ld4(tok_q(t) + c));
    }
  for (int x = tid; x < (n + nd) * kRows; x += kThreads) {
    const int j = x / kRows, rr = x % kRows, r = r0 + rr;
    if (r >= V) continue;
    if (j < n) {
      sW[x] = rw[std::size_t(j) * V + r];
      if (recompute) sVr[x] = rv[std::size_t(j) * V + r];
    } else {
      const float vv = tok_v(j - n)[r];
      if (!kGdn) sW[x] = vv;
      if (recompute) sVr[x] = vv;
      sVt[(j - n) * kRows + rr] = vv;
      const float* sk = tok_skip(j - n);
      sSk[(j - n) * kRows + rr] = sk ? sk[r] : 0.0f;
    }
  }
  __syncthreads();

  // Window decays (one thread per window, emu::window_gammas).
  if (tid < nd) sTot[tid] = emu::window_gammas(sA + start, m0 + tid + 1, sGd + tid * NR);
  if (need_mat && tid == 64) sTot[p.T] = emu::window_gammas(sA, mm, sGm);
  if (need_mat && recompute && tid >= 128 && tid - 128 < mm)
    sTot[p.T + 1 + (tid - 128)] = emu::window_gammas(sA, tid - 128 + 1, sGR + (tid - 128) * NR);
  __syncthreads();

  // Coefficient tables G_j (k_j . x): one warp per dot (canonical tree).
  {
    const int nu = draft_u ? nd * (m0 + nd) : 0;        // (draft i, record jj < m0 + i)
    const int no = draft_out ? nd * (m0 + nd) : 0;      // (draft i, record jj < m0 + i + 1)
    const int nr = (need_mat && recompute) ? mm * mm : 0;  // (record i, jj < i)
    const int W = m0 + nd;
    for (int task = warp; task < nu + no + nr; task += kWarps) {
      const float* x;
      const float* y;
      float* dst;
      float g;
      if (task < nu) {
        const int i = task / W, jj = task % W;
        if (jj >= m0 + i) continue;
        x = sK + (start + jj) * K, y = sK + (start + m0 + i) * K;
        g = sGd[i * NR + jj], dst = sCU + i * NR + jj;
      } else if (task < nu + no) {
        const int i = (task - nu) / W, jj = (task - nu) % W;
        if (jj > m0 + i) continue;
        x = sK + (start + jj) * K, y = sQ + i * K;
        g = sGd[i * NR + jj], dst = sCO + i * NR + jj;
      } else {
        const int i = (task - nu - no) / mm, jj = (task - nu - no) % mm;
        if (jj >= i) continue;
        x = sK + jj * K, y = sK + i * K;
        g = sGR[i * NR + jj], dst = sGR + i * NR + jj;
      }
      const F4 xa = act ? ld4(x + 4 * lane) : F4{{0, 0, 0, 0}};
      const F4 ya = act ? ld4(y + 4 * lane) : F4{{0, 0, 0, 0}};
      const float d = dot4(xa, ya, act);
      // The recompute table is written in place (dst aliases the gamma read above): every lane must have read it
      // before lane 0 overwrites it (compute-sanitizer racecheck reported the read/write hazard without this).
      __syncwarp();
      if (lane == 0) *dst = formats::mul_rn(g, d);  // emu::window_coefs
    }
  }
  __syncthreads();

  // Per-head record fields of the appended tokens (CTA 0 of the head). An early flush overwrites slots the other CTAs
  // of the head were reading: the last CTA of the head to have staged them writes.
  bool writer = sp == 0;
  if (early && nsplit > 1) {
    __shared__ unsigned last;
    if (tid == 0) {
      __threadfence();
      const unsigned slot = unsigned(hh) % kCounters;
      const unsigned old_count = atomicAdd(&g_stage_count[slot], 1u);
      last = old_count == unsigned(nsplit - 1);
      if (last) atomicExch(&g_stage_count[slot], 0u);  // ready for the next launch
    }
    __syncthreads();
    writer = last != 0;
  }
  if (writer) {
    float* wa = p.ra + std::size_t(hh) * p.cap;
    float* wb = p.rbeta + std::size_t(hh) * p.cap;
    float* wk = p.rk + std::size_t(hh) * p.cap * K;
    for (int j = tid; j < nd; j += kThreads) wa[m0 + j] = sA[n + j], wb[m0 + j] = sB[n + j];
    for (int x = tid; x < nd * K4; x += kThreads) {
      const int j = x / K4, c = 4 * (x % K4);
      st4(wk + std::size_t(m0 + j) * K + c, ld4(sK + (n + j) * K + c));
    }
  }

  float* gw = p.rw + std::size_t(hh) * p.cap * V;
  float* gv = recompute ? p.rv + std::size_t(hh) * p.cap * V : nullptr;
  const float totm = sTot[p.T];

  // Materialise rows (records 0..mm-1 of the smem window) from the recurrence checkpoint; write HP / store.
  auto materialise = [&](int i, F4& so, F4& sh) {
    const int r = row_of(i), rr = warp * kRPW + i;
    F4 S = split ? sh : so;
    if (recompute) {
      for (int ii = 0; ii < mm; ++ii) {
        const F4 kk = act ? ld4(sK + ii * K + 4 * lane) : F4{{0, 0, 0, 0}};
        const float sck = dot4(S, kk, act);
        const float ask = emu::window_sum(sTot[p.T + 1 + ii], sck, sGR + ii * NR, sW + rr, kRows, 0, ii);
        const float u = emu::gdn_u(sB[ii], sVr[ii * kRows + rr], ask);
        __syncwarp();
        if (lane == 0) {
          sW[ii * kRows + rr] = u;
          gw[std::size_t(ii < n ? ii : m0 + (ii - n)) * V + r] = u;
        }
        __syncwarp();
      }
    }
    F4 N;
#pragma unroll
    for (int e = 0; e < 4; ++e) N.x[e] = formats::mul_rn(totm, S.x[e]);
    for (int jj = 0; jj < mm; ++jj) {
      const float rc = formats::mul_rn(sGm[jj], sW[jj * kRows + rr]);
      const F4 kk = act ? ld4(sK + jj * K + 4 * lane) : F4{{0, 0, 0, 0}};
#pragma unroll
      for (int e = 0; e < 4; ++e) N.x[e] = __fmaf_rn(rc, kk.x[e], N.x[e]);
    }
    if (mat_out) {
      const F4 q = act ? ld4(sQ + 4 * lane) : F4{{0, 0, 0, 0}};
      const float y = dot4(N, q, act);
      if (lane == 0) out_o(0)[r] = p.skip ? __fadd_rn(y, sSk[rr]) : y;  // emu::add_skip
    }
    if (split && act) st4(p.hp + std::size_t(hh) * VK + std::size_t(r) * K + 4 * lane, N);
    const F4 dq = encode_row<C>(p, N, codes, scales, r, lane, act, std::uint32_t(hh), tok0);
    sh = N;
    so = dq;
  };

  // Drafts: u of each appended record (GDN) and the non-flush outputs.
  auto drafts = [&](int i, const F4& so, const F4& sh) {
    const int r = row_of(i), rr = warp * kRPW + i;
    float* w = sW + start * kRows + rr;  // w[jj * kRows] = record jj of the window
    for (int t = 0; t < nd; ++t) {
      const int jn = start + m0 + t;     // smem index of the draft's record
      const std::size_t slot = std::size_t(m0 + t);
      if constexpr (kGdn) {
        if (draft_u) {
          const F4 kk = act ? ld4(sK + jn * K + 4 * lane) : F4{{0, 0, 0, 0}};
          const float sck = dot4(u_hp ? sh : so, kk, act);
          const float ask = emu::window_sum(sTot[t], sck, sCU + t * NR, w, kRows, 0, m0 + t);
          const float u = emu::gdn_u(sB[jn], sVt[t * kRows + rr], ask);
          __syncwarp();
          if (lane == 0) {
            sW[jn * kRows + rr] = u;
            gw[slot * V + r] = u;
          }
          __syncwarp();
        }
      } else {
        if (lane == 0) gw[slot * V + r] = sW[jn * kRows + rr];
      }
      if (recompute && lane == 0) gv[slot * V + r] = sVr[jn * kRows + rr];
      if (draft_out) {
        const F4 q = act ? ld4(sQ + t * K + 4 * lane) : F4{{0, 0, 0, 0}};
        const float scq = dot4(so, q, act);
        const float y = emu::window_sum(sTot[t], scq, sCO + t * NR, w, kRows, 0, m0 + t + 1);
        if (lane == 0) out_o(t)[r] = p.skip ? __fadd_rn(y, sSk[t * kRows + rr]) : y;  // emu::add_skip
      }
    }
  };

#pragma unroll
  for (int i = 0; i < kRPW; ++i) {
    if (row_of(i) >= V) continue;
    if (early) {
      materialise(i, So[i], Sh[i]);
      drafts(i, So[i], Sh[i]);
    } else {
      drafts(i, So[i], Sh[i]);
      if (mat_out) materialise(i, So[i], Sh[i]);
    }
  }
}

// Which lean paths run (bit 0: non-flush, bit 1: step flush, bit 2: the non-flush op per head, replay_head, v6);
// REPLAYSSM_LEAN=0..7 in the environment overrides the default 7 (3 = v5; diagnostics and A/B).
__device__ int g_lean = 7;
inline int host_lean() {
  static const int v = [] {
    const char* e = std::getenv("REPLAYSSM_LEAN");
    return (!e || !*e) ? 7 : (std::atoi(e) & 7);
  }();
  return v;
}

// Minimum resident CTAs per SM the replay kernel is compiled for (register cap 65536 / (256 x this));
// -DREPLAYSSM_REPLAY_MIN_CTAS=N overrides it for every instantiation (A/B builds in kernels/bench).
// GDN FP32: replay_head's ring already limits it to 3 CTAs per SM, so 80 registers cost no occupancy (measured -7%);
// FP8 and Mamba-2 fit 4 CTAs and lose 9-15% at 3 (PERF_NOTES, "fourth pass").
template <class C, bool kGdn>
inline constexpr int kReplayMinCtas = (kGdn && C::kBits == 32) ? 3 : 4;
#ifdef REPLAYSSM_REPLAY_MIN_CTAS
#define REPLAYSSM_REPLAY_BOUNDS REPLAYSSM_REPLAY_MIN_CTAS
#else
#define REPLAYSSM_REPLAY_BOUNDS (kReplayMinCtas<C, kGdn>)
#endif
template <class C, bool kGdn>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_REPLAY_BOUNDS) replay_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  const int b = blockIdx.z;  // grid (nsplit, H, B): no divisions here, 3 of 4 GDN CTAs return at once
  const bool flush = p.early[b] != 0 || (p.op != Op::verify && p.n[b] + 1 >= p.L);
  const bool recompute = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  const int lean = g_lean;
  if ((lean & 1) && p.V % 4 == 0 && !flush) {  // hot path: 15 of 16 steps (L=16)
    if (p.head_floats > 0) {  // set by the launcher where replay_head's shared memory fits (and REPLAYSSM_LEAN & 4)
      if (blockIdx.x == 0) {
        if (kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::hp)
          replay_head<C, kGdn, kGdn>(p, sm);
        else
          replay_head<C, kGdn, false>(p, sm);
      }
      return;  // the other CTAs of the head have nothing to do
    }
    replay_lean<C, kGdn, false>(p, sm);
  } else if ((lean & 2) && p.V % 4 == 0 && p.early[b] == 0 && !recompute) replay_lean<C, kGdn, true>(p, sm);  // step flush
  else replay_flush<C, kGdn>(p, sm);  // early flush (verify), u=recompute flush
}

template <class C, bool kGdn>
inline std::size_t smem_bytes(const KParams& p) {
  if (p.policy == emu::Policy::conventional_shared) return 0;
  const bool rec = p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  std::size_t f = std::size_t(Smem{p.cap + p.T, p.T, p.K, rec}.size());
  f = std::max(f, std::size_t(p.head_floats));
  return f * sizeof(float);
}

// -1: not handled here (the caller uses the reference kernel); else a cudaError_t.
template <class C, bool kGdn>
int launch_one(const KParams& p_in, cudaStream_t s) {
  if constexpr (!kSupported<C>) {
    return -1;
  } else {
    KParams p = p_in;  // + head_floats
    if (p.op == Op::state || p.K > 128 || p.K % 4 != 0 || p.V > 8 * kRows || p.L < 2 || p.cap > 64 ||
        p.scaling == formats::Scaling::head)
      return -1;
    if (p.op == Op::verify && p.T > p.max_drafts) return -1;
    if (p.cap + p.T > kThreads) return -1;  // the lean path stages a / beta one thread per record
    const int nsplit = (p.V + kRows - 1) / kRows;
    p.head_floats = (host_lean() & 5) == 5 ? head_smem_floats<C, kGdn>(p) : 0;
    const std::size_t sm = smem_bytes<C, kGdn>(p);
    if (sm > 200 * 1024) return -1;
    const unsigned grid = unsigned(std::size_t(p.B) * p.H * nsplit);
    if (p.policy == emu::Policy::conventional_shared) {
      conv_kernel<C, kGdn><<<grid, kThreads, 0, s>>>(p);
      return int(cudaGetLastError());
    }
    if (std::size_t(p.B) * p.H > kCounters || p.B > 65535 || p.H > 65535) return -1;
    static const bool lean_set = [] {  // once per process, before any graph capture (the first launch is plain)
      if (!std::getenv("REPLAYSSM_LEAN")) return true;
      const int v = host_lean();
      return cudaMemcpyToSymbol(g_lean, &v, sizeof v) == cudaSuccess;
    }();
    if (!lean_set) return int(cudaErrorInvalidValue);
    const cudaError_t e =
        cudaFuncSetAttribute(replay_kernel<C, kGdn>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm));
    if (e != cudaSuccess) return int(e);
    replay_kernel<C, kGdn><<<dim3(unsigned(nsplit), unsigned(p.H), unsigned(p.B)), kThreads, sm, s>>>(p);
    return int(cudaGetLastError());
  }
}

template <bool kGdn>
int launch_any(formats::FormatId f, const KParams& p, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  using formats::FormatId;
  using formats::StateCodec;
  switch (f) {
    case FormatId::fp32: return launch_one<StateCodec<FormatId::fp32>, kGdn>(p, s);
    case FormatId::fp8_e4m3: return launch_one<StateCodec<FormatId::fp8_e4m3>, kGdn>(p, s);
    // bf16 / fp16 / fp8_e5m2 / int8 are supported by the template (kSupported) but not instantiated yet: nvcc time
    // on the shared build machine. Add a case to enable one.
    default: return -1;
  }
}

}  // namespace replayssm::kern::fast
