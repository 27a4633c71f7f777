#pragma once
// The ReplaySSM non-flush op with one CTA per group of heads. Part of fast_kernel.cuh.
#include "kernels/common/fast_group_sums.cuh"
#include "kernels/common/fast_replay_head.cuh"
#include "kernels/common/fast_verify_rows_tc.cuh"

namespace replayssm::kern::fast {

// replay_group: the CTA runs p.group_heads heads h0 .. h0 + group_heads - 1 of one key group (GDN: value heads of
// one key head; Mamba-2: heads of one B/C group), in turn. They share the token k and q and every record's k: the k
// records of a group's heads are copies of the same token keys (written by every path from the group's k), so the
// canonical dots k_j . q_t and k_j . k_t have the same bits for each of them, and the emulation's coefficient is
// mul_rn(G_j, dot) with only the decay G_j per head. The CTA stages k, q and builds the dots once; per head it stages
// a, beta, w, v, skip, forms decays and coefficients (one multiplication each) and runs the head's rows; the ring
// streams the rows of all its heads without a break (the next head's first groups fly during this head's window sums).
// Runs in its own kernel instantiations (replay_hot_kernel<.., kGroup = true>; group_verify_kernel).
// kND (group_verify_kernel): the verify op's draft count as a constant (0: p.T / 1 at run time). kTc (the
// verify kernel's form 2): the row dots on the tensor cores (fast_verify_rows_tc.cuh), two ring stages at a time.
// BF16 records (fast_records.cuh): FP32 codes, not form 2; the window widened into shared memory by the threads, the
// drafts' k and Mamba-2's w = v rounded there, GDN's u rounded before the next draft or an output reads it.
template <class C, bool kGdn, bool kHp, int kK = 0, int kV = 0, int kND = 0, bool kTc = false>  // kHp: GDN u=hp
__device__ __forceinline__ void replay_group(const KParams& p, float* sm, const Cta& cta) {
  static_assert(!kBf16Rec<C> || (C::kBits == 32 && !kTc), "replay_group: BF16 records with FP32 codes, exact dots");
  using Rec = record_t<C>;
  const int nsplit = kV > 0 ? (kV + kRows - 1) / kRows : cta.nsplit;
  const int b = cta.b, h0 = cta.h, hh0 = b * p.H + h0;  // h0 % group_heads == 0
  const int nh = p.group_heads;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int rr0 = warp * kRPW;
  const int K = kK > 0 ? kK : p.K, V = kV > 0 ? kV : p.V, K4 = K / 4, V4 = V / 4;
  const bool act = 4 * lane < K;
  const int grp = group_of(p, h0);
  const bool split = p.policy == emu::Policy::replay_split;
  const bool recompute = kGdn && split && p.usource == emu::USource::recompute;
  constexpr bool u_hp = kHp;  // = kGdn && split && p.usource == hp (the dispatch in replay_kernel / replay_hot_kernel)
  const int n = p.n[b];
  const int nd = kND > 0 ? kND : p.op == Op::verify ? p.T : 1;
  const int W = n + nd;
  auto bt = [&](int t) { return std::size_t(b) * p.T + t; };

  const int R = nsplit * kRows;
  const int NR = head_records(p);
  const KParams::HeadLayout& hl = p.hl;  // offsets in floats (group_plan)
  float* sA = sm + hl.A;
  float* sB = sm + hl.B;
  float* sK = sm + hl.K;
  float* sQ = sm + hl.Q;
  float* sW = sm + hl.W;
  float* sVt = sm + hl.Vt;
  float* sSk = sm + hl.Sk;
  float* sTot = sm + hl.Tot;
  float* sCU = sm + hl.CU;
  float* sCO = sm + hl.CO;
  float* sDotQ = sm + hl.DotQ;  // [t][j] k_j . q_t, once per CTA
  float* sDotK = sm + hl.DotK;  // [t][j] k_j . k_{n+t} (GDN)

  // The ring: stage s of warp w at hl.ring + (2 w + s) SB bytes: [4 rows of codes][4 HP rows (u=hp)][4 x nsc scales].
  // Row group gi = i nsplit + g is group g of head h0 + i; it goes to stage gi & 1.
  const int RB = K * C::kBits / 8;
  const int nsc = head_nsc<C>(p, K);
  const int SB = head_stage_bytes<C>(p, u_hp, K);
  const int oHP = 4 * RB, oSC = 4 * RB + (u_hp ? 16 * K : 0);
  std::uint8_t* ring = reinterpret_cast<std::uint8_t*>(sm + hl.ring) + warp * 2 * SB;
  // The groups are issued in order gi = 0, 1, 2, ...: a cursor (head ci, group cg, stage cs), no division (the
  // division would be 5% of the instructions).
  int ci = 0, cg = 0, cs = 0;
  const int tc_slot0 = kTc ? tc_ring_slot(0, lane) : 0, tc_slot1 = kTc ? tc_ring_slot(1, lane) : 0;
  auto issue = [&]() {  // the warp's 4 rows of the cursor's group (rows r..r+3 are contiguous), then advance
    const int i = ci, r = cg * kRows + rr0;
    std::uint8_t* st = ring + cs * SB;
    cs ^= 1;
    if (++cg == nsplit) cg = 0, ++ci;
    if (i >= nh || r >= V) return;
    const std::size_t hh = std::size_t(hh0 + i);
    const std::uint8_t* src = p.codes + hh * p.code_bytes + std::size_t(r) * RB;
    if constexpr (kTc) {  // 4 rows of 32 chunks, each row's chunks at tc_ring_slot (which depends on the row's parity)
#pragma unroll
      for (int rr = 0; rr < kRPW; ++rr)
        cp_async16(st + 16 * (32 * rr + (rr & 1 ? tc_slot1 : tc_slot0)), src + 16 * (32 * rr + lane));
    } else {
      for (int c = lane; c < RB / 4; c += 32) cp_async16(st + 16 * c, src + 16 * c);
    }
    if (u_hp) {
      const float* hs = p.hp + (hh * V + r) * K;
      for (int c = lane; c < K; c += 32) cp_async16(st + oHP + 16 * c, hs + 4 * c);
    }
    const float* gsc = reinterpret_cast<const float*>(p.scales + hh * p.scale_bytes);
    if (lane < 4 * nsc) cp_async4(st + oSC + 4 * lane, gsc + std::size_t(r) * nsc + lane);
  };
  // The window of head h0 + i by cp.async (as replay_lean, all rows of the head); k and q only for the first head.
  auto stage = [&](int i) {
    const int h = h0 + i;
    const std::size_t hh = std::size_t(hh0 + i);
    const float* ra = p.ra + hh * p.cap;
    const float* rw = p.rw + hh * p.cap * V;
    if (tid < W) {
      cp_async4(sA + tid, tid < n ? ra + tid : p.a + bt(tid - n) * p.H + h);
      if (tid >= n) {
        if (p.beta) cp_async4(sB + tid, p.beta + bt(tid - n) * p.H + h);
        else sB[tid] = 1.0f;
      }
    }
    if (act && i == 0) {
      const float* rk = p.rk + hh * p.cap * K + 4 * lane;
      const float* tk = p.k + (std::size_t(b) * p.T * p.G + grp) * K + 4 * lane;
      const float* tq = p.q + (std::size_t(b) * p.T * p.G + grp) * K + 4 * lane;
      const int GK = p.G * K;
      if constexpr (kBf16Rec<C>) {
        const Rec* rkb = records_of<Rec>(p.rk) + hh * p.cap * K + 4 * lane;
        for (int j = warp; j < W; j += kWarps)
          st4(sK + j * K + 4 * lane, j < n ? rec_ld4(rkb + j * K) : rec_round4<Rec>(ld4(tk + (j - n) * GK)));
      } else {
        for (int j = warp; j < W; j += kWarps)
          cp_async16(sK + j * K + 4 * lane, j < n ? rk + j * K : tk + (j - n) * GK);
      }
      for (int t = warp; t < nd; t += kWarps) cp_async16(sQ + t * K + 4 * lane, tq + t * GK);
    }
    for (int c4 = lane; c4 < V4; c4 += 32) {
      const int c = 4 * c4;
      if constexpr (kBf16Rec<C>) {
        const Rec* rwb = records_of<Rec>(p.rw) + hh * p.cap * V;
        for (int j = warp; j < n; j += kWarps) st4(sW + j * R + c, rec_ld4(rwb + std::size_t(j) * V + c));
      } else {
        for (int j = warp; j < n; j += kWarps) cp_async16(sW + j * R + c, rw + std::size_t(j) * V + c);
      }
      for (int t = warp; t < nd; t += kWarps) {
        const std::size_t o = (bt(t) * p.H + h) * V + c;
        cp_async16(sVt + t * R + c, p.v + o);
        if constexpr (kBf16Rec<C>) {
          if (!kGdn) st4(sW + (n + t) * R + c, rec_round4<Rec>(ld4(p.v + o)));
        } else {
          if (!kGdn) cp_async16(sW + (n + t) * R + c, p.v + o);
        }
        if (p.skip) cp_async16(sSk + t * R + c, p.skip + o);
      }
    }
  };

  // 1. The first head's window, then the first two groups of rows.
  stage(0);
  issue();  // group 0
  cp_async_commit();
  issue();  // group 1
  cp_async_commit();
  cp_async_wait<1>();  // the window and group 0
  __syncthreads();

  // 2. The dots k_j . q_t, k_j . k_t of the group, once per CTA (canonical trees: one warp per pair, or a warp per
  //    record j for all drafts where kScatterDots).
  auto window_dot = [&](int t, int j) {
    const F4 xa = act ? ld4(sK + j * K + 4 * lane) : F4{{0, 0, 0, 0}};
    const F4 yq = act ? ld4(sQ + t * K + 4 * lane) : F4{{0, 0, 0, 0}};
    float pu = 0.0f;
    const bool has_u = kGdn && j < n + t;
    if (has_u) {
      const F4 yk = act ? ld4(sK + (n + t) * K + 4 * lane) : F4{{0, 0, 0, 0}};
      pu = part4(xa, yk, act);
    }
    const float d = bfly_sum2(part4(xa, yq, act), pu, lane);
    if (lane == 0) sDotQ[t * NR + j] = d;
    if (lane == 16 && has_u) sDotK[t * NR + j] = d;
  };
  if constexpr (kScatterDots<kGdn, kND, kTc>) {
    // A warp per record j against every draft's q_t (and GDN's k_{n+t}), all their trees in one reduce-scatter
    // (bfly_sum_scatter: the canonical trees' bits); the dots a draft's window does not hold are formed and dropped.
    // A warp per (draft, record) pair, each with its own 5-level tree and the k_j load, is ~15% of form 2's
    // instructions (ncu).
    constexpr int kDots = kGdn ? 2 * kND : kND;
    constexpr int kN = kDots <= 2 ? 2 : kDots <= 4 ? 4 : kDots <= 8 ? 8 : kDots <= 16 ? 16 : 32;
    constexpr int kLanesPerDot = 32 / kN;
    static_assert(kDots <= 32, "replay_group: at most 32 dots per record");
    for (int j = warp; j < W; j += kWarps) {
      const F4 xa = act ? ld4(sK + j * K + 4 * lane) : F4{{0, 0, 0, 0}};
      float v[kN];
#pragma unroll
      for (int d = 0; d < kN; ++d) {
        v[d] = 0.0f;
        if (d < kDots) {
          const float* y = d < kND ? sQ + d * K : sK + (n + d - kND) * K;
          v[d] = part4(xa, act ? ld4(y + 4 * lane) : F4{{0, 0, 0, 0}}, act);
        }
      }
      const float sum = bfly_sum_scatter<kN>(v, lane);
      const int d = lane / kLanesPerDot;
      if (lane % kLanesPerDot == 0) {
        if (d < kND) {
          if (j <= n + d) sDotQ[d * NR + j] = sum;
        } else if (d < kDots && j < n + (d - kND)) {
          sDotK[(d - kND) * NR + j] = sum;
        }
      }
    }
  } else if constexpr (kND > 0) {  // task = t W + j by a cursor, without the division (5% of form 2's instructions)
    int t = 0, j = warp;
    for (; j >= W; j -= W) ++t;
    while (t < nd) {
      if (j <= n + t) window_dot(t, j);
      for (j += kWarps; j >= W && t < nd; j -= W) ++t;
    }
  } else {
    for (int task = warp; task < nd * W; task += kWarps) {
      const int t = task / W, j = task - t * W;
      if (j <= n + t) window_dot(t, j);
    }
  }

  // form 2: every head's k records now (they are the group's, in sK), then A's fragments replace sK and sQ, which
  // nothing reads after the dots above
  float* sAf = sm + hl.K;
  TcVerifyA<kGdn> fa;  // form 2: A's fragments, the last block's in registers
  if constexpr (kTc) {
    static_assert(C::kBits == 32 && kK == kTcVerifyK && kV > 0 && kV % (2 * kRows) == 0 && kND > 0 && !kHp,
                  "replay_group's form 2: FP32 codes at the real dims, the verify kernel");
    fa.load(sQ, sK + n * K, nd, tid, lane);
    for (int i = 0; i < nh; ++i) {
      float* wk = p.rk + std::size_t(hh0 + i) * p.cap * K;
      for (int x = tid; x < nd * K4; x += kThreads) {
        const int j = x / K4, c = 4 * (x % K4);
        st4(wk + std::size_t(n + j) * K + c, ld4(sK + (n + j) * K + c));
      }
    }
    __syncthreads();
    fa.store(sAf, nd, tid);
  }

  float* sDq0 = sm + hl.D;  // row dots S_c q_t, S_c k_t [t][R] of the current head
  float* sDk0 = sDq0 + nd * R;
  for (int i = 0; i < nh; ++i) {
    const int h = h0 + i;
    const std::size_t hh = std::size_t(hh0 + i);
    if (i > 0) {  // the previous head's window sums are done with its window: stage this head's
      __syncthreads();
      stage(i);
      cp_async_commit();
      cp_async_wait<0>();  // the window and this head's first two groups (issued during the previous head)
    }
    __syncthreads();

    // 3. Decays (emu::window_gammas, one thread per (draft, record)) and the coefficients mul_rn(G_j, dot)
    //    (emu::window_coefs).
    for (int x = tid; x < nd * W; x += kThreads) {
      const int t = x / W, j = x - t * W;
      if (j > n + t) continue;
      float g = 1.0f;
#pragma unroll 4
      for (int e = n + t; e > j; --e) g = formats::mul_rn(g, sA[e]);
      sCO[t * NR + j] = formats::mul_rn(g, sDotQ[t * NR + j]);
      if (kGdn && j < n + t) sCU[t * NR + j] = formats::mul_rn(g, sDotK[t * NR + j]);
      if (j == 0) sTot[t] = formats::mul_rn(g, sA[0]);
    }
    __syncthreads();

    // Per-head record fields of the appended tokens (this CTA is the head's only one here).
    {
      float* wa = p.ra + hh * p.cap;
      float* wb = p.rbeta + hh * p.cap;
      float* wk = p.rk + hh * p.cap * K;
      for (int j = tid; j < nd; j += kThreads) wa[n + j] = sA[n + j], wb[n + j] = sB[n + j];
      for (int x = tid; x < (kTc ? 0 : nd * K4); x += kThreads) {  // form 2: written above
        const int j = x / K4, c = 4 * (x % K4);
        if constexpr (kBf16Rec<C>)
          rec_st4(records_of<Rec>(p.rk) + (hh * p.cap + n + j) * K + c, ld4(sK + (n + j) * K + c));
        else
          st4(wk + std::size_t(n + j) * K + c, ld4(sK + (n + j) * K + c));
      }
    }

    // 4a. Row groups: the checkpoint rows of the stage -> S_c q_t, S_c k_t (canonical trees) into sDq / sDk [t][R].
    //     2 rows per lane, 2 virtual lanes each (bfly_sum_halves): 2 loads per draft, the tree's level 16 inside the
    //     lane. 4 rows per lane (bfly_sum4) or one row per 8 lanes (replay_head's stage_row_dots) measure 4-10% slower
    //     here: 4 loads of q_t, k_t per draft, spills in the draft loop.
    if constexpr (kTc) {  // the warp's rows of groups g, g + 1 (both stages) as one n8 tile
      for (int g = 0; g < nsplit; g += 2) {
        cp_async_wait<0>();  // groups i nsplit + g (stage 0: nsplit is even) and + 1 (stage 1)
        __syncwarp();
        verify_rows_tc<kGdn, kND>(reinterpret_cast<const float*>(ring), reinterpret_cast<const float*>(ring + SB),
                                  sAf, fa.last, sDq0, sDk0, R, g * kRows + rr0, lane);
        __syncwarp();  // every lane is done with both stages before they are refilled
        issue();  // group i nsplit + g + 2
        cp_async_commit();
        issue();  // and + 3
        cp_async_commit();
      }
    }
    for (int g = 0; g < (kTc ? 0 : nsplit); ++g) {
      const int gi = i * nsplit + g;
      if (g > 0) cp_async_wait<1>();  // group gi landed (this thread's copies); the warp barrier shows the others'
      __syncwarp();
      const int hr = g * kRows + rr0;
      if (hr < V) {
        const std::uint8_t* st = ring + (gi & 1) * SB;
        float* sDq = sDq0 + hr;
        float* sDk = sDk0 + hr;
        // lane 16 h + i holds the tree's virtual lanes i and i + 16 (elements 4 i .. 4 i + 3 and 64 + 4 i ..) of
        // rows 2 h and 2 h + 1, so that the tree's level 16 is one addition inside the lane (bfly_sum_halves)
        const int h2 = lane >> 4, li = lane & 15;
        const bool ac[2] = {4 * li < K, 64 + 4 * li < K};
        F4 S[2][2], Sh[kHp ? 2 : 1][2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int el = 4 * li + 64 * c, r = 2 * h2 + e;
            S[e][c] = F4{{0, 0, 0, 0}};
            if constexpr (kHp) Sh[e][c] = F4{{0, 0, 0, 0}};
            if (ac[c]) {
              RawRow<C> w;
              const std::uint8_t* cp = st + r * RB + el * (C::kBits / 8);
              if constexpr (C::kBits == 32) {
                const uint4 u = *reinterpret_cast<const uint4*>(cp);
                w.c[0] = u.x, w.c[1] = u.y, w.c[2] = u.z, w.c[3] = u.w;
              } else if constexpr (C::kBits == 16) {
                const uint2 u = *reinterpret_cast<const uint2*>(cp);
                w.c[0] = u.x, w.c[1] = u.y;
              } else {
                w.c[0] = *reinterpret_cast<const std::uint32_t*>(cp);
              }
              w.s = scaled<C>(p) ? reinterpret_cast<const float*>(st + oSC)[r * nsc + (p.scaling == formats::Scaling::row
                                                                                          ? 0
                                                                                          : el / 32)]
                                 : 1.0f;
              if constexpr (C::kFormat == formats::FormatId::fp8_e4m3)  // no NaN test (the values only feed dots)
                formats::hw_e4m3_decode4_scaled_arith(w.c[0], scaled<C>(p) ? w.s : 1.0f, S[e][c].x);
              else
                S[e][c] = decode_raw<C>(p, w);
              if constexpr (kHp) Sh[e][c] = ld4(reinterpret_cast<const float*>(st + oHP) + r * K + el);
            }
          }
        }
        auto lvl16 = [&](const F4 (&X)[2], const F4& y0, const F4& y1) {
          return __fadd_rn(part4(X[0], y0, ac[0]), part4(X[1], y1, ac[1]));
        };
        auto draft = [&](int t) {
          const F4 q0 = ac[0] ? ld4(sQ + t * K + 4 * li) : F4{{0, 0, 0, 0}};
          const F4 q1 = ac[1] ? ld4(sQ + t * K + 64 + 4 * li) : F4{{0, 0, 0, 0}};
          const float dq = bfly_sum_halves(lvl16(S[0], q0, q1), lvl16(S[1], q0, q1), lane);
          if (lane % 8 == 0) sDq[t * R + lane / 8] = dq;
          if constexpr (kGdn) {
            const F4 k0 = ac[0] ? ld4(sK + (n + t) * K + 4 * li) : F4{{0, 0, 0, 0}};
            const F4 k1 = ac[1] ? ld4(sK + (n + t) * K + 64 + 4 * li) : F4{{0, 0, 0, 0}};
            float dk;
            if constexpr (kHp)
              dk = bfly_sum_halves(lvl16(Sh[0], k0, k1), lvl16(Sh[1], k0, k1), lane);
            else
              dk = bfly_sum_halves(lvl16(S[0], k0, k1), lvl16(S[1], k0, k1), lane);
            if (lane % 8 == 0) sDk[t * R + lane / 8] = dk;
          }
        };
        if constexpr (kND > 0) {  // the verify kernel's drafts unrolled
#pragma unroll
          for (int t = 0; t < kND; ++t) draft(t);
        } else {
          for (int t = 0; t < nd; ++t) draft(t);
        }
      }
      __syncwarp();  // every lane is done with stage gi & 1 before it is refilled
      issue();  // group gi + 2
      cp_async_commit();
    }
    __syncthreads();

    // 4b. Window sums: emu::window_sum over the staged records, the same function and order as the emulation. GDN
    //     first forms u of the drafts in order (the window of draft t + 1 holds draft t's record), then every (draft,
    //     row) output is independent. One thread per row (not every lane of the row's warp); the verify kernel's in
    //     phases on every thread (verify_window_sums), where kPhasedSums.
    if constexpr (kPhasedSums<kGdn, kND, kTc>) {
      static_assert(kV > 0, "replay_group: the verify kernel's window sums at the real dims");
      verify_window_sums<kGdn, kND, kV, Rec>(p, n, b, h, hh, R, NR, sTot, sDq0, sDk0, sCU, sCO, sW, sB, sVt, sSk,
                                              recompute, tid);
      continue;
    }
    float* gw = p.rw + hh * p.cap * V;
    if constexpr (kGdn) {
      float* gv = recompute ? p.rv + hh * p.cap * V : nullptr;
      for (int r = tid; r < V; r += kThreads) {
        for (int t = 0; t < nd; ++t) {
          const int jn = n + t;
          const float vt = sVt[t * R + r];
          const float ws = kND > 0 ? window_sum_u4(sTot[t], sDk0[t * R + r], sCU + t * NR, sW + r, R, jn)
                                   : emu::window_sum(sTot[t], sDk0[t * R + r], sCU + t * NR, sW, R, r, jn);
          if constexpr (kBf16Rec<C>) {
            const float u = rec_round<Rec>(emu::gdn_u(sB[jn], vt, ws));
            sW[jn * R + r] = u;
            emu::record_store(records_of<Rec>(p.rw) + (hh * p.cap + jn) * V + r, u);
            if (recompute) emu::record_store(records_of<Rec>(p.rv) + (hh * p.cap + jn) * V + r, vt);
          } else {
            const float u = emu::gdn_u(sB[jn], vt, ws);
            sW[jn * R + r] = u;
            gw[std::size_t(jn) * V + r] = u;
            if (recompute) gv[std::size_t(jn) * V + r] = vt;
          }
        }
      }
      __syncthreads();
    }
    auto output = [&](int t, int r) {
      const int jn = n + t;
      if constexpr (kBf16Rec<C>) {
        if (!kGdn) emu::record_store(records_of<Rec>(p.rw) + (hh * p.cap + jn) * V + r, sW[jn * R + r]);
      } else {
        if (!kGdn) gw[std::size_t(jn) * V + r] = sW[jn * R + r];
      }
      const float y = kND > 0 ? window_sum_u4(sTot[t], sDq0[t * R + r], sCO + t * NR, sW + r, R, jn + 1)
                              : emu::window_sum(sTot[t], sDq0[t * R + r], sCO + t * NR, sW, R, r, jn + 1);
      p.o[(bt(t) * p.H + h) * V + r] = p.skip ? __fadd_rn(y, sSk[t * R + r]) : y;  // emu::add_skip
    };
    constexpr int kVr = kV > 0 ? kV : 1;
    if constexpr (kND > 0 && kV > 0 && kThreads % kVr == 0) {  // rows tid % V, drafts tid / V + e kThreads / V
#pragma unroll
      for (int t = tid / kVr; t < kND; t += kThreads / kVr) output(t, tid % kVr);
    } else {
      int t = 0, r = tid;  // this thread's (draft, row) pairs, tid + e kThreads = t V + r, without a division
      for (; r >= V && t < nd; r -= V) ++t;
      while (t < nd) {
        output(t, r);
        for (r += kThreads; r >= V && t < nd; r -= V) ++t;
      }
    }
  }
}

}  // namespace replayssm::kern::fast
