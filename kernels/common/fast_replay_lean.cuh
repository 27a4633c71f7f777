#pragma once
// The ReplaySSM non-flush and step-flush paths with one CTA per 32 rows (the step flush, and the non-flush op where
// replay_head's shared memory does not fit). Part of fast_kernel.cuh.
#include "kernels/common/fast_flush_fold.cuh"

namespace replayssm::kern::fast {

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

// The non-flush ReplaySSM op (step without flush, verify without early flush): the hot path, 15 of 16 steps at L=16.
// S_c rows are read once into registers (split u=hp: the HP rows after the tables); the window (a, k records, q, w
// rows of the CTA, v, skip) is staged by cp.async in the same round trip; one thread per (draft t, record j) forms the
// decay G_j (its own running product from the newest record: the same multiplications as emu::window_gammas), then
// one warp per pair the coefficients G_j (k_j . k_t), G_j (k_j . q_t); then every warp runs its 4 rows' window sums,
// records in increasing j (emu::window_sum), the 4 rows interleaved. kFlush: the step that fills the window (u, then
// materialise + output + HP row + encode of the warp's rows). Writes: the appended records (w = u for GDN, v for
// Mamba-2; raw v for u=recompute; a, beta, k by CTA 0 of the head) and the outputs. Nothing else is stored.
// kK, kV: the head dims as constants (replay_head's), 0: p.K, p.V. The step flush does cta.ns row slices
// (sp .. sp + ns - 1) after one staging of the window and one set of tables (the rows of all ns slices staged
// side by side, RS = ns kRows per record); the non-flush path keeps one slice.
// kFold (the folded step flush: replay_flush_kernel's kFold, launcher flush_fold_applies): 1 replay-shared,
// 2 replay-split (GDN u=lp), at the real dims with row-scaled 8-bit codes rounded to nearest even, or FP32: the
// policy, the scaling and the rounding are constants, and each warp's 4 rows share their dot trees (bfly_sum4), their
// amax reduction and their scale divisions (encode_rows4) instead of one tree per row; u and the coefficient rows
// G_j w_j[r] once per row of the CTA before the slices (flush_prep_folded). The same operations on the same operands in
// the same order, so the same bits. BF16 records (fast_records.cuh): the folded step flush only, the window widened
// into shared memory by the threads and the appended k and w rounded there.
template <class C, bool kGdn, bool kFlush, int kK = 0, int kV = 0, int kFold = 0>
__device__ __forceinline__ void replay_lean(const KParams& p, float* sm, const Cta& cta) {
  static_assert(kFold == 0 || (kFlush && kK > 0 && kV > 0), "replay_lean: kFold is the step flush at the real dims");
  static_assert(!kBf16Rec<C> || kFold != 0, "replay_lean: BF16 records in the folded step flush only");
  using Rec = record_t<C>;
  constexpr int kRowK = kFold ? kK : 0;  // load_raw's folded form
  const int b = cta.b, h = cta.h, hh = b * p.H + h, sp = cta.sp;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int r0 = sp * kRows, rr0 = warp * kRPW;
  const int ns = kFlush ? cta.ns : 1, RS = ns * kRows;  // slices of this CTA, rows staged per record
  const int K = kK > 0 ? kK : p.K, V = kV > 0 ? kV : p.V, K4 = K / 4;
  const bool act = 4 * lane < K;
  const int grp = group_of(p, h);
  const bool split = kFold ? kFold == 2 : p.policy == emu::Policy::replay_split;
  const bool recompute = !kFold && kGdn && split && p.usource == emu::USource::recompute;
  const bool u_hp = !kFold && kGdn && split && p.usource == emu::USource::hp;
  const int n = p.n[b];  // = m0: no early flush here
  const int nd = kFlush ? 1 : (p.op == Op::verify ? p.T : 1);
  const bool rows_ok = r0 + rr0 < V;  // V % 4 == 0: a warp's 4 rows are all valid or all not
  // kFlush (a step that fills the window, not u=recompute): the LP checkpoint is read only where u comes from it (split)
  // or it is the recurrence checkpoint (shared); the HP rows (split) are the checkpoint that is materialised.
  const bool need_lp = !kFlush || !split || (kGdn && !u_hp);
  const bool need_hp = kFlush ? split : u_hp;
  auto bt = [&](int t) { return std::size_t(b) * p.T + t; };

  const Smem L{p.cap + p.T, p.T, K, recompute, RS};
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
    if constexpr (kBf16Rec<C>) {  // the records widened, the token's k and (Mamba-2) w = v rounded
      const Rec* rkb = records_of<Rec>(p.rk) + std::size_t(hh) * p.cap * K + 4 * lane;
      const Rec* rwb = records_of<Rec>(p.rw) + std::size_t(hh) * p.cap * V + r0;
      if (act) {
        for (int j = warp; j < W; j += kWarps)
          st4(sK + j * K + 4 * lane, j < n ? rec_ld4(rkb + j * K) : rec_round4<Rec>(ld4(tk + (j - n) * GK)));
        for (int t = warp; t < nd; t += kWarps) cp_async16(sQ + t * K + 4 * lane, tq + t * GK);
      }
      for (int c = 4 * (tid & 7); c < RS; c += kRows) {
        if (r0 + c < V) {
          for (int j = tid >> 3; j < n; j += kThreads / 8) st4(sW + j * RS + c, rec_ld4(rwb + j * V + c));
          for (int t = tid >> 3; t < nd; t += kThreads / 8) {
            const std::size_t o = (bt(t) * p.H + h) * V + r0 + c;
            cp_async16(sVt + t * RS + c, p.v + o);
            if (!kGdn) st4(sW + (n + t) * RS + c, rec_round4<Rec>(ld4(p.v + o)));
            if (p.skip) cp_async16(sSk + t * RS + c, p.skip + o);
          }
        }
      }
    } else {
    if (act) {
      for (int j = warp; j < W; j += kWarps)
        cp_async16(sK + j * K + 4 * lane, j < n ? rk + j * K : tk + (j - n) * GK);
      for (int t = warp; t < nd; t += kWarps) cp_async16(sQ + t * K + 4 * lane, tq + t * GK);
    }
    for (int c = 4 * (tid & 7); c < RS; c += kRows) {  // one pass where ns = 1
      if (r0 + c < V) {
        for (int j = tid >> 3; j < n; j += kThreads / 8) cp_async16(sW + j * RS + c, rw + j * V + c);
        for (int t = tid >> 3; t < nd; t += kThreads / 8) {
          const std::size_t o = (bt(t) * p.H + h) * V + r0 + c;
          cp_async16(sVt + t * RS + c, p.v + o);
          if (!kGdn) cp_async16(sW + (n + t) * RS + c, p.v + o);
          if (p.skip) cp_async16(sSk + t * RS + c, p.skip + o);
        }
      }
    }
    }  // FP32 records
  }
  // 2. Checkpoint rows (raw codes) into registers, issued after the window's cp.async (so that the staging loops do
  //    not hold them live) and before the wait: one round trip for both.
  const std::uint8_t* codes = p.codes + std::size_t(hh) * p.code_bytes;
  const std::uint8_t* scales = p.scales + std::size_t(hh) * p.scale_bytes;
#pragma unroll
  for (int i = 0; i < kRPW; ++i) {
    if (need_lp && rows_ok && act) load_raw<C, kRowK>(p, codes, scales, r0 + rr0 + i, lane, raw[i]);
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
      if constexpr (kBf16Rec<C>)
        rec_st4(records_of<Rec>(p.rk) + (std::size_t(hh) * p.cap + n + j) * K + c, ld4(sK + (n + j) * K + c));
      else
        st4(wk + std::size_t(n + j) * K + c, ld4(sK + (n + j) * K + c));
    }
  }
  if constexpr (kFlush) {
    // Per slice s: u of the appended record (GDN; emu::window_sum over the n old records), then materialise the
    // warp's rows: N = total S + sum_{j <= n} (G_j w_j[r]) k_j (emu::window_state_elem), output N q, HP row (split),
    // encode. Slice 0's LP rows were loaded with the window, a later slice's at the top of its iteration.
    // kFold: u and the coefficient rows first, per row of the CTA (flush_prep_folded); the slices then need
    // the LP rows only where they are the state (replay-shared).
    if constexpr (kFold != 0)
      flush_prep_folded<C, kGdn, kK, kV>(p, raw, codes, scales, ns, r0, rr0, RS, sTot[0], n, sK, sB, sVt, sW, sGd, sCU,
                                         hh, tid, lane, act);
    for (int s = 0; s < ns; ++s) {
      // The slice loop keeps the smem loads in the loop: loop-invariant ones hoisted by the compiler stay live
      // across slices (k_t, q_t, beta, v rows) and ptxas spills. o is 0, opaque to the compiler.
      int o = 0;
      asm volatile("" : "+r"(o));
      const float* sKs = sK + o;
      const float* sQs = sQ + o;
      const float* sBs = sB + o;
      const float* sVts = sVt + o;
      float* sWs = sW + o;
      const float* sGds = sGd + o;
      const float* sCUs = sCU + o;
      const float* sSks = sSk + o;
      const float* sTots = sTot + o;
      const int rs = r0 + s * kRows + rr0;  // the warp's first row in this slice
      const int ro = s * kRows + rr0;       // its column in the staged rows
      if (rs >= V) break;                   // V % 4 == 0; later slices only have larger rows
      if (s > 0) {
#pragma unroll
        for (int i = 0; i < kRPW; ++i)
          if ((kFold ? !split : need_lp) && act) load_raw<C, kRowK>(p, codes, scales, rs + i, lane, raw[i]);
      }
#pragma unroll
      for (int i = 0; i < kRPW; ++i) {
        Sh[i] = F4{{0, 0, 0, 0}};
        if (need_hp && act) Sh[i] = ld4(p.hp + std::size_t(hh) * V * K + std::size_t(rs + i) * K + 4 * lane);
      }
      float* gw = p.rw + std::size_t(hh) * p.cap * V + rs;
      const float tot = sTots[0];
      F4 S[kRPW];
#pragma unroll
      for (int i = 0; i < kRPW; ++i)
        S[i] = ((kFold ? !split : need_lp) && act) ? decode_raw<C, kFold != 0>(p, raw[i]) : F4{{0, 0, 0, 0}};
      if constexpr (kFold != 0) {
        flush_rows_folded<C, kFold == 2, kK, kV>(p, S, Sh, tot, n, rs, ro, RS, sKs, sQs, sWs, sSks, hh, b, h, lane, act);
        continue;
      }
      F4 wn;
      if constexpr (kGdn) {
        const F4 kk = act ? ld4(sKs + n * K + 4 * lane) : F4{{0, 0, 0, 0}};
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
          const F4 w = ld4(sWs + j * RS + ro);
          const float c_u = sCUs[j];
#pragma unroll
          for (int i = 0; i < kRPW; ++i) U[i] = __fmaf_rn(c_u, w.x[i], U[i]);
        }
        const float beta = sBs[n];
        const F4 vt = ld4(sVts + ro);
#pragma unroll
        for (int i = 0; i < kRPW; ++i) wn.x[i] = emu::gdn_u(beta, vt.x[i], U[i]);
        __syncwarp();
        if (lane == 0) st4(sWs + n * RS + ro, wn);
        __syncwarp();
      } else {
        wn = ld4(sWs + n * RS + ro);
      }
      if (lane == 0) st4(gw + std::size_t(n) * V, wn);
      const F4 qq = act ? ld4(sQs + 4 * lane) : F4{{0, 0, 0, 0}};
      // The 4 rows advance together through the records (k_j and w_j loaded once for all four, not per row); each
      // element's chain is the emulation's: total * S, then + (G_j w_j[r]) k_j[c] for j = 0..n in order.
      F4 N[kRPW];
#pragma unroll
      for (int i = 0; i < kRPW; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) N[i].x[e] = formats::mul_rn(tot, split ? Sh[i].x[e] : S[i].x[e]);
      for (int j = 0; j <= n; ++j) {
        const float g = sGds[j];
        const F4 wj = ld4(sWs + j * RS + ro);
        const F4 kj = act ? ld4(sKs + j * K + 4 * lane) : F4{{0, 0, 0, 0}};
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
        const int r = rs + i;
        y.x[i] = dot4(N[i], qq, act);
        if (split && act) st4(p.hp + std::size_t(hh) * V * K + std::size_t(r) * K + 4 * lane, N[i]);
        encode_row<C>(p, N[i], p.codes + std::size_t(hh) * p.code_bytes, p.scales + std::size_t(hh) * p.scale_bytes, r,
                      lane, act, std::uint32_t(hh), std::uint32_t(p.tok[b]));
      }
      if (p.skip) {
        const F4 sk = ld4(sSks + ro);
#pragma unroll
        for (int i = 0; i < kRPW; ++i) y.x[i] = __fadd_rn(y.x[i], sk.x[i]);  // emu::add_skip
      }
      if (lane == 0) st4(p.o + bt(0) * p.H * V + std::size_t(h) * V + rs, y);
    }
    return;
  }
  if (!rows_ok) return;
  // Split u=hp: the HP rows (for S_c k only) are loaded here, a second round trip for that variant only, so that they
  // do not hold 16 registers through the window phases.
#pragma unroll
  for (int i = 0; i < kRPW; ++i) {
    Sh[i] = F4{{0, 0, 0, 0}};
    if (need_hp && act) Sh[i] = ld4(p.hp + std::size_t(hh) * V * K + std::size_t(r0 + rr0 + i) * K + 4 * lane);
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

}  // namespace replayssm::kern::fast
