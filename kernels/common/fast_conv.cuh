#pragma once
// The conventional decode kernel (read, update and write back every step; conventional verify stores every draft's
// state), rows streamed through registers. Part of fast_kernel.cuh.
#include "kernels/common/fast_rows.cuh"

namespace replayssm::kern::fast {

// Where token t's state is written: the head's stored state (a step) or, in a verify, its snapshot slot t (a verify
// stores every draft's state and leaves the stored one as it was).
__device__ __forceinline__ void to_snapshot(const KParams& p, int hh, int t, std::uint8_t*& codes,
                                            std::uint8_t*& scales) {
  if (p.op != Op::verify) return;
  const std::size_t slot = std::size_t(hh) * p.max_drafts + t;
  codes = p.snap_codes + slot * p.code_bytes;
  scales = p.snap_scales + slot * p.scale_bytes;
}

// kRne: RNE stores of a format with the hardware pair conversion (encode_row<C, true>).
template <class C, bool kGdn, bool kRne = false>
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
      to_snapshot(p, hh, t, dc, ds);
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
        encode_row<C, kRne>(p, S[i], dc, ds, r, lane, act, std::uint32_t(hh), step);
      }
    }
    return;
  }

}

// Encode the row of a row8 lane (conv_row8_kernel's layout: chunk c = the canonical virtual lane j + 8 c). The amax
// of a row (row scaling) is reduced over the row's 8 lanes after the lane's 16 elements, that of a 32-column block
// (block scaling: block c is chunk c) over the same 8 lanes per chunk; the maximum is order-free, so the scales, the
// codes and their bits are encode_row's.
template <class C, bool kRne = false>
__device__ __forceinline__ void encode_row8(const KParams& p, const F4 (&x)[4], std::uint8_t* codes,
                                            std::uint8_t* scales, int r, int j, const bool (&act)[4], bool row_ok,
                                            std::uint32_t hh, std::uint32_t step) {
  F4 xs[4] = {x[0], x[1], x[2], x[3]};
  if (scaled<C>(p)) {
    float am[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      am[c] = 0.0f;
      if (act[c]) {
#pragma unroll
        for (int e = 0; e < 4; ++e) am[c] = formats::amax_ignore_nan(am[c], x[c].x[e]);
      }
    }
    float scale[4];
    if (p.scaling == formats::Scaling::row) {
      float m = formats::amax_ignore_nan(formats::amax_ignore_nan(am[0], am[1]), formats::amax_ignore_nan(am[2], am[3]));
#pragma unroll
      for (int off = 4; off > 0; off /= 2) m = formats::amax_ignore_nan(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
      scale[0] = scale[1] = scale[2] = scale[3] = C::scale_from_amax(m);
      if (j == 0 && row_ok) reinterpret_cast<float*>(scales)[r] = scale[0];
      const float inv = formats::div_rn(1.0f, scale[0]);
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) xs[c].x[e] = formats::mul_rn(x[c].x[e], inv);
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
#pragma unroll
        for (int off = 4; off > 0; off /= 2)
          am[c] = formats::amax_ignore_nan(am[c], __shfl_xor_sync(0xFFFFFFFFu, am[c], off));
        scale[c] = C::scale_from_amax(am[c]);
        if (j == 0 && act[c] && row_ok) reinterpret_cast<float*>(scales)[scale_idx<C>(p, r, 8 * c)] = scale[c];
        const float inv = formats::div_rn(1.0f, scale[c]);
#pragma unroll
        for (int e = 0; e < 4; ++e) xs[c].x[e] = formats::mul_rn(x[c].x[e], inv);
      }
    }
  }
  if (!row_ok) return;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    if (!act[c]) continue;
    const int vl = j + 8 * c;
    std::uint32_t cc[4];
    encode4<C, kRne>(p, xs[c], r, vl, hh, step, cc);
    store_codes<C::kBits>(codes, std::size_t(r) * p.K + 4 * vl, cc);
  }
}

// One token of a row8 lane's row (conv_row8_kernel, conv_row8_slices_kernel): decay, the GDN delta-rule update and
// the output. The caller encodes the store: with the encode inside this helper, ptxas schedules seven of
// conv_row8_kernel's software-encode instantiations differently.
template <bool kGdn>
__device__ __forceinline__ void conv_row8_token(F4 (&S)[4], const F4 (&k)[4], const F4 (&q)[4],
                                                float a, float beta, float vr, bool has_skip, float sk, float* o,
                                                int r, int j, const bool (&act)[4], bool row_ok) {
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[c].x[e] = emu::conv_decay(a, S[c].x[e]);
  float w = vr;
  if constexpr (kGdn)
    w = emu::gdn_u(beta, vr,
                   bfly_sum_row8(part4(S[0], k[0], act[0]), part4(S[1], k[1], act[1]), part4(S[2], k[2], act[2]),
                                 part4(S[3], k[3], act[3])));
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[c].x[e] = emu::conv_update(w, k[c].x[e], S[c].x[e]);
  const float y = bfly_sum_row8(part4(S[0], q[0], act[0]), part4(S[1], q[1], act[1]), part4(S[2], q[2], act[2]),
                                part4(S[3], q[3], act[3]));
  if (j == 0 && row_ok) o[r] = has_skip ? __fadd_rn(y, sk) : y;  // emu::add_skip
}

// The conventional decode with one row per 8 lanes (plan row8): lane j of the warp's lane group g holds row
// 4 warp + g of the CTA's 32, as the canonical layout's virtual lanes j, j + 8, j + 16, j + 24 (chunk c: elements
// 4 (j + 8 c) .. + 3). Its dots are bfly_sum_row8 (the canonical tree's additions, so conv_kernel's bits) and its
// amax an 8-lane reduction: 3 shuffles per row and reduction where conv_kernel takes 5, each serving the warp's 4 rows
// at once. An 8-bit store moves a quarter of FP32's bytes, and conv_kernel's 15 shuffles per row then bound its time
// (PERF_NOTES "Conventional decode").
template <class C, bool kGdn, bool kRne = false>
__global__ void __launch_bounds__(kThreads, 4) conv_row8_kernel(KParams p) {
  const int nsplit = (p.V + kRows - 1) / kRows;
  const int hh = blockIdx.x / nsplit, sp = blockIdx.x % nsplit;
  const int b = hh / p.H, h = hh % p.H;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, j = lane % 8;
  const int r = sp * kRows + warp * kRPW + lane / 8;
  const bool row_ok = r < p.V;
  const int K = p.K, V = p.V;
  const int grp = h / (p.H / p.G);
  bool act[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) act[c] = 4 * (j + 8 * c) < K;
  std::uint8_t* codes = p.codes + std::size_t(hh) * p.code_bytes;
  std::uint8_t* scales = p.scales + std::size_t(hh) * p.scale_bytes;
  const auto bt = [&](int t) { return std::size_t(b) * p.T + t; };
  const F4 zero{{0.0f, 0.0f, 0.0f, 0.0f}};

  const int tok0 = p.tok[b];
  F4 S[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) S[c] = row_ok ? decode_row<C>(p, codes, scales, r, j + 8 * c, act[c]) : zero;
  const int T = p.op == Op::verify ? p.T : 1;
  for (int t = 0; t < T; ++t) {
    const float a = p.a[bt(t) * p.H + h], beta = p.beta ? p.beta[bt(t) * p.H + h] : 1.0f;
    const float* kt = p.k + (bt(t) * p.G + grp) * K;
    const float* qt = p.q + (bt(t) * p.G + grp) * K;
    const float* vt = p.v + (bt(t) * p.H + h) * V;
    const float* skip = p.skip ? p.skip + (bt(t) * p.H + h) * V : nullptr;
    float* o = p.o + (bt(t) * p.H + h) * V;
    F4 k[4], q[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      k[c] = act[c] ? ld4(kt + 4 * (j + 8 * c)) : zero;
      q[c] = act[c] ? ld4(qt + 4 * (j + 8 * c)) : zero;
    }
    const float vr = row_ok ? vt[r] : 0.0f;
    const float sk = skip && row_ok ? skip[r] : 0.0f;
    std::uint8_t* dc = codes;
    std::uint8_t* ds = scales;
    to_snapshot(p, hh, t, dc, ds);
    conv_row8_token<kGdn>(S, k, q, a, beta, vr, skip != nullptr, sk, o, r, j, act, row_ok);
    encode_row8<C, kRne>(p, S, dc, ds, r, j, act, row_ok, std::uint32_t(hh), std::uint32_t(tok0 + t));
  }
}

// A one-token step of a store narrower than FP32 with kGroups 32-row slices per CTA (plan conv_groups): the lane
// layout and the per-token work of conv_row8_kernel, but a CTA loads the raw codes of all its slices before decoding
// the first, so that kGroups times the bytes are in flight: one slice of 8-bit codes (4 KB) cannot keep enough in
// flight at 4 CTAs per SM (PERF_NOTES "Conventional decode of narrow stores").
template <class C, bool kGdn, bool kRne, int kGroups>
__global__ void __launch_bounds__(kThreads, 2) conv_row8_slices_kernel(KParams p) {
  static_assert(kGroups > 1 && C::kBits < 32, "conv_row8_slices_kernel: several slices of a narrow store");
  constexpr int kCtaRows = kRows * kGroups;
  const int nsplit = (p.V + kCtaRows - 1) / kCtaRows;
  const int hh = blockIdx.x / nsplit, sp = blockIdx.x % nsplit;
  const int b = hh / p.H, h = hh % p.H;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, j = lane % 8;
  const int r0 = sp * kCtaRows + warp * kRPW + lane / 8;  // slice i's row: r0 + 32 i
  const int K = p.K, V = p.V;
  const int grp = h / (p.H / p.G);
  bool act[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) act[c] = 4 * (j + 8 * c) < K;
  std::uint8_t* codes = p.codes + std::size_t(hh) * p.code_bytes;
  std::uint8_t* scales = p.scales + std::size_t(hh) * p.scale_bytes;
  const std::size_t bt = std::size_t(b) * p.T;  // the step's one token
  const F4 zero{{0.0f, 0.0f, 0.0f, 0.0f}};
  RawRow<C> raw[kGroups][4];
#pragma unroll
  for (int i = 0; i < kGroups; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (r0 + kRows * i < V && act[c]) load_raw<C>(p, codes, scales, r0 + kRows * i, j + 8 * c, raw[i][c]);
  const float* kt = p.k + (bt * p.G + grp) * K;
  const float* qt = p.q + (bt * p.G + grp) * K;
  F4 k[4], q[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    k[c] = act[c] ? ld4(kt + 4 * (j + 8 * c)) : zero;
    q[c] = act[c] ? ld4(qt + 4 * (j + 8 * c)) : zero;
  }
  const float a = p.a[bt * p.H + h], beta = p.beta ? p.beta[bt * p.H + h] : 1.0f;
  const float* vt = p.v + (bt * p.H + h) * V;
  const float* skip = p.skip ? p.skip + (bt * p.H + h) * V : nullptr;
  float* o = p.o + (bt * p.H + h) * V;
  // Every slice's token values before the first store (after it the compiler could not hoist them: aliasing).
  float vr[kGroups], sk[kGroups];
#pragma unroll
  for (int i = 0; i < kGroups; ++i) {
    const int r = r0 + kRows * i < V ? r0 + kRows * i : 0;
    vr[i] = vt[r];
    sk[i] = skip ? skip[r] : 0.0f;
  }
  const int tok0 = p.tok[b];
#pragma unroll
  for (int i = 0; i < kGroups; ++i) {
    const int r = r0 + kRows * i;
    const bool row_ok = r < V;
    F4 S[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) S[c] = row_ok && act[c] ? decode_raw<C>(p, raw[i][c]) : zero;
    conv_row8_token<kGdn>(S, k, q, a, beta, vr[i], skip != nullptr, sk[i], o, r, j, act, row_ok);
    encode_row8<C, kRne>(p, S, codes, scales, r, j, act, row_ok, std::uint32_t(hh), std::uint32_t(tok0));
  }
}

}  // namespace replayssm::kern::fast
