#pragma once
// The ReplaySSM early flush (verify) and u=recompute flush. Part of fast_kernel.cuh.
#include "kernels/common/fast_replay_lean.cuh"

namespace replayssm::kern::fast {

// The flush path (1 / L of the steps, and verify's early flush): materialise + encode, the u=recompute chain.
// Not inlined, so that its register pressure does not reach the lean path's allocation.
template <class C, bool kGdn>
__device__ __noinline__ void replay_flush(const KParams& p, float* sm, const Cta cta) {
  const int nsplit = cta.nsplit;
  const int b = cta.b, h = cta.h, hh = b * p.H + h, sp = cta.sp;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int r0 = sp * kRows;
  const bool act = 4 * lane < p.K;
  const int K = p.K, V = p.V;
  const std::size_t VK = std::size_t(V) * K;
  const int grp = group_of(p, h);
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
  const bool mat_out = !verify && !early && emu::step_fills_window(n, p.L);   // step flush (with output)
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
      // before lane 0 overwrites it (compute-sanitizer racecheck reports the read/write hazard without this).
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

}  // namespace replayssm::kern::fast
