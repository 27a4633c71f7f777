#pragma once
// The conventional decode kernel (read, update and write back every step; conventional verify stores every draft's
// state), rows streamed through registers. Part of fast_kernel.cuh.
#include "kernels/common/fast_rows.cuh"

namespace replayssm::kern::fast {

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
        encode_row<C, kRne>(p, S[i], dc, ds, r, lane, act, std::uint32_t(hh), step);
      }
    }
    return;
  }

}

}  // namespace replayssm::kern::fast
