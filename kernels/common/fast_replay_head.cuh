#pragma once
// The ReplaySSM non-flush op with one CTA per head. Part of fast_kernel.cuh.
#include <type_traits>

#include "kernels/common/fast_async_copy.cuh"
#include "kernels/common/fast_head_ring.cuh"
#include "kernels/common/fast_replay_lean.cuh"
#include "kernels/common/fast_step_rows.cuh"
#include "kernels/common/fast_step_rows_tc.cuh"

namespace replayssm::kern::fast {

// -------------------------------------------------------------------------------------------------------------
// replay_head: the non-flush op of a whole head in one CTA (kernels/PERF_NOTES.md). The window staging, the decay
// table and the coefficient tables G_j (k_j . q_t), G_j (k_j . k_t) are built once per head instead of once per
// 32-row CTA (GDN 4x, Mamba-2 2x); the 8 warps then loop over the head's 32-row groups (a warp owns rows
// 32 g + 4 warp .. + 3 of group g: the same 4-row tiles as replay_lean, the same operations in the same order).
// The checkpoint rows of a warp's next group fly while it computes the current one: a per-warp two-stage ring in
// shared memory filled by cp.async (codes, scales, and the HP rows for split u=hp), warp-local waits only. In the
// combined kernel the other CTAs of the head (replay_lean's grid) return at once; replay_hot_kernel launches one CTA
// per head. A step with the whole checkpoint in flight from the start (kAllStages) runs its row dots before the
// window lands (head_early). The ring stages' layout and row dots: fast_head_ring.cuh.
// Records of the non-flush window: it never holds more than cap (the host flags n + T > cap as an early flush, and a
// step flushes once n + 1 >= L, L <= cap), so its tables need no room for cap + T (the lean and flush paths' Smem
// keep cap + T). cap + T would cost a residency step exactly where verify jumps (GDN T=4->5: 3->2 CTAs per SM;
// Mamba-2 T=2->3: 4->3).
// A step (not verify) that does not flush has n + 1 < L, so its window holds at most L - 1 records (with cap records
// at cap = 23 the GDN FP32 step's tables take 8 KB more, and the layout 3 CTAs per SM instead of 4).
__host__ __device__ inline int head_records(const KParams& p) {
  return p.op == Op::verify ? p.cap : (p.L - 1 < p.cap ? p.L - 1 : p.cap);
}
// kStep's record count (a step's head_records); kept apart from head_records for the same reason as
// head_stage_bytes_nsc.
__host__ __device__ inline int step_records(const KParams& p) { return p.L - 1 < p.cap ? p.L - 1 : p.cap; }
// The ring's offset: ring_offset, kHeadRingMod, kGroupRingMod (replay_smem.h).

// kReal: the head dims of the real shapes, which the replay paths take as compile-time constants where the
// launcher finds p.K, p.V equal to them (fast_kernel.cuh: real_dims).
template <bool kGdn>
inline constexpr int kRealK = 128;
template <bool kGdn>
inline constexpr int kRealV = kGdn ? 128 : 64;  // Qwen3.5 GDN V = 128, Nemotron-H Mamba-2 P = 64
template <bool kGdn>
__host__ __device__ inline bool real_dims(const KParams& p) { return p.K == kRealK<kGdn> && p.V == kRealV<kGdn>; }
// Ring stages per warp of replay_head. 8-bit codes at the real dims (not u=hp, whose HP rows are 4x the codes)
// hold every row group of the warp at once (GDN 4 x 528 B, Mamba-2 2 x 528 B per warp): all of them are issued before
// the window and the row loop runs without waits, refills or the ring's address arithmetic. Otherwise two stages,
// refilled two groups ahead. kAllStages must agree with replay_head's (kK, kV > 0 there iff real_dims here).
template <class C, bool kHp, bool kReal>
inline constexpr bool kAllStages = C::kBits == 8 && !kHp && kReal;
template <class C, bool kGdn>
__host__ __device__ inline int head_ring_stages(const KParams& p, bool u_hp) {
  const int nsplit = (p.V + kRows - 1) / kRows;
  return C::kBits == 8 && !u_hp && real_dims<kGdn>(p) ? nsplit : 2;
}

// Where the whole checkpoint is in flight from the start (kAllStages), a step runs its row dots (S_c q_t, S_c k_t)
// before the window lands: they need only the checkpoint and the token's q and k, which then sit in rows 0 and 1 of
// the Q region (so its Smem has T >= 2), at places that do not depend on n. Must agree with replay_head's `early`.
template <class C, bool kGdn>
__host__ __device__ inline bool head_early(const KParams& p, bool u_hp) {
  return C::kBits == 8 && !u_hp && real_dims<kGdn>(p) && p.op != Op::verify;
}
__host__ __device__ inline int head_q_rows(const KParams& p, bool early) { return early && p.T < 2 ? 2 : p.T; }

// Dynamic shared memory of replay_head in floats; 0 where it does not apply (then replay_lean runs).
template <class C, bool kGdn>
__host__ __device__ inline int head_smem_floats(const KParams& p) {
  const bool split = p.policy == emu::Policy::replay_split;
  const bool rec = kGdn && split && p.usource == emu::USource::recompute;
  const bool u_hp = kGdn && split && p.usource == emu::USource::hp;
  if (p.V % 4 != 0 || (p.K * C::kBits / 8) % 16 != 0 || p.code_bytes % 16 != 0 || p.scale_bytes % 4 != 0) return 0;
  const int nsplit = (p.V + kRows - 1) / kRows;
  const Smem L{head_records(p), head_q_rows(p, head_early<C, kGdn>(p, u_hp)), p.K, rec, nsplit * kRows,
               p.skip != nullptr, false};
  const int stages = head_ring_stages<C, kGdn>(p, u_hp);
  const int f = ring_offset(L.size(), kHeadRingMod) + kWarps * stages * head_stage_bytes<C>(p, u_hp) / 4;
  return f * 4 <= 160 * 1024 ? f : 0;
}

// kK, kV: the head dims as constants where the launcher found them equal (0: p.K, p.V), so that ptxas folds
// the lane masks, loop bounds and row offsets of the real shapes (kernels/PERF_NOTES.md).
// kStep (head_step_kernel): the launcher found a one-token step with 8-bit row-scaled (or FP32) codes at the real
// dims, not u=hp nor u=recompute; the draft count, the scaling's selects and the ring's stage layout then fold (without
// it, Mamba-2's FP8 non-flush kernel issues ~1000 instructions per warp and head at IPC 3.5, of which ~6% re-derive the
// scales per row from p.scaling and ~5% the shared-memory layout). kBulk (kStep with row-scaled 8-bit codes): the
// checkpoint's codes and scales come by two bulk copies from one thread on bar[1] ([V][RB] codes, then V scales, as in
// global memory), not a cp.async per 16 bytes from every warp: GDN's step kernel -20% instructions; its rows sit
// unswizzled (3-way bank conflicts on average, 22% of the shared-load wavefronts; the step is issue-bound, not
// bandwidth-bound in shared memory). One copy per warp (each warp's rows contiguous, a barrier each) measured slower.
// kFused (kStep only; head_step_kernel's kForm): 1: the 8-bit row dots' trees of kStepRsChunk row groups reduced
// together (step_rows_rs), and GDN's u and output chains of a row in one thread (step_window_fused). 0: stage_row_dots
// per row group and the separate u and output loops of 3b. 2: the tensor cores (fast_step_rows_tc.cuh).
// kNR (kStep only): the window's record count in the layout (step_records) as a constant, 0: from p.
// kSlice (kStep with FP32 codes only): the CTA computes the rows of group cta.sp alone (a grid of nsplit CTAs per
// head, LaunchPlan::hot == slice_step). Each CTA stages the window and builds the tables (the same values, so the
// same bits); its warps wait for one group of rows instead of a chain of refills, which is what a small batch needs:
// a CTA per head leaves most SMs idle and each head's rows arrive two groups at a time.
// BF16 records (fast_records.cuh): FP32 codes (kStep: form 1); the window is widened into shared memory by the threads
// (kStep: its codes arrive by the bulk copies and are widened in place, Bf16Widen), the tokens' k and Mamba-2's w = v
// rounded there, GDN's u rounded before anything reads it.
template <class C, bool kGdn, bool kHp, int kK = 0, int kV = 0, bool kStep = false, int kFused = 0,
          int kNR = 0, bool kSlice = false>  // kHp: GDN replay_split u=hp
__device__ __forceinline__ void replay_head(const KParams& p, float* sm, const Cta& cta, std::uint64_t* bar = nullptr) {
  static_assert(!kStep || ((C::kBits == 8 || C::kBits == 32) && !kHp && kK > 0 && kV > 0),
                "replay_head: kStep needs 8- or 32-bit codes at the real dims");
  static_assert(kFused == 0 || kStep, "replay_head: kFused is head_step_kernel's");
  static_assert(!kSlice || (kStep && C::kBits == 32 && kFused == 1), "replay_head: kSlice is the FP32 step's");
  static_assert(!kBf16Rec<C> || (C::kBits == 32 && (!kStep || kFused == 1)),
                "replay_head: BF16 records with FP32 codes, exact dots");
  using Rec = record_t<C>;
  constexpr bool kRowSc = kStep && C::kBlock != 0;  // kStep with 8-bit codes: row scaling (FP32: none)
  constexpr bool kBulk = kRowSc;                     // the checkpoint by bulk copies (comment above)
  static_assert(!kStep || kV % kRows == 0, "replay_head: kStep's bulk copies need the w rows unpadded (R = V)");
  const int nsplit = kV > 0 ? (kV + kRows - 1) / kRows : cta.nsplit;
  const int b = cta.b, h = cta.h, hh = b * p.H + h;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int rr0 = warp * kRPW;
  const int K = kK > 0 ? kK : p.K, V = kV > 0 ? kV : p.V, K4 = K / 4, V4 = V / 4;
  const bool act = 4 * lane < K;
  const int g0 = kSlice ? cta.sp : 0, g1 = kSlice ? cta.sp + 1 : nsplit;  // the CTA's row groups
  const int grp = group_of(p, h);
  const bool split = p.policy == emu::Policy::replay_split;
  const bool recompute = !kStep && kGdn && split && p.usource == emu::USource::recompute;
  constexpr bool u_hp = kHp;  // = kGdn && split && p.usource == hp (the dispatch in replay_kernel / replay_hot_kernel)
  const int n = p.n[b];
  const int nd = kStep ? 1 : p.op == Op::verify ? p.T : 1;
  auto bt = [&](int t) { return std::size_t(b) * p.T + t; };

  // head_early: the step's row dots before the window lands; kAllStages as kAll below.
  const bool early = kAllStages<C, kHp, (kK > 0 && kV > 0)> && (kStep || p.op != Op::verify);
  const int R = nsplit * kRows;
  static_assert(kNR == 0 || kStep, "replay_head: kNR is head_step_kernel's");
  // Mamba-2's 8-bit fused step writes its record fields from the last warp, which 3b leaves idle, and drops the
  // barrier before 3b (Mamba-2 FP8 steps -2.0..-2.4%; GDN's 40-register kernel spills with it, +30%).
  constexpr bool kTail = kFused != 0 && !kGdn && kAllStages<C, kHp, (kK > 0 && kV > 0)>;
  const int nr = kStep ? (kNR > 0 ? kNR : step_records(p)) : head_records(p);
  const Smem L{nr, kStep ? (early ? 2 : 1) : head_q_rows(p, early), K, recompute, R, p.skip != nullptr, false};
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
  // BF16 records of a step: the window's codes by bulk copies where each thread widens at most kBf16WidenF4 groups
  // of four elements per record vector (uniform in the CTA)
  const bool bf16_bulk =
      kStep && kBf16Rec<C> && n * K4 <= kBf16WidenF4 * kThreads && n * V4 <= kBf16WidenF4 * kThreads;

  // The ring: stage s of warp w at ring_offset(..) + (NS w + s) SB bytes: [4 rows of codes][4 HP rows (u=hp)]
  // [4 x nsc scales]. kAll (head_ring_stages): a stage per row group, all issued up front.
  constexpr bool kAll = kAllStages<C, kHp, (kK > 0 && kV > 0)>;
  const int NS = kAll ? nsplit : 2;
  const int RB = K * C::kBits / 8;
  const int nsc = kStep ? (kRowSc ? 1 : 0) : head_nsc<C>(p, K);
  const int SB = kStep ? head_stage_bytes_nsc<C>(false, K, kRowSc ? 1 : 0) : head_stage_bytes<C>(p, u_hp, K);
  const int oHP = 4 * RB, oSC = 4 * RB + (u_hp ? 16 * K : 0);
  std::uint8_t* ring = reinterpret_cast<std::uint8_t*>(sm + ring_offset(L.size(), kHeadRingMod)) + warp * NS * SB;
  const std::uint8_t* gcodes = p.codes + std::size_t(hh) * p.code_bytes;
  const float* gsc = reinterpret_cast<const float*>(p.scales + std::size_t(hh) * p.scale_bytes);
  const float* ghp = u_hp ? p.hp + std::size_t(hh) * V * K : nullptr;
  auto issue = [&](int g) {  // the warp's 4 rows of group g into stage g & 1 (rows r..r+3 are contiguous)
    const int r = g * kRows + rr0;
    if (g >= nsplit || r >= V) return;
    std::uint8_t* st = ring + (kAll ? g : (g & 1)) * SB;
    ring_copy_codes(st, gcodes + std::size_t(r) * RB, RB, lane);
    if (u_hp) {
      const float* hs = ghp + std::size_t(r) * K;
      for (int c = lane; c < K; c += 32) cp_async16(st + oHP + 16 * c, hs + 4 * c);
    }
    if constexpr (kRowSc) {  // the 4 rows' scales are 16 contiguous, aligned bytes (row scaling: nsc = 1)
      if (lane == 0) cp_async16(st + oSC, gsc + r);
    } else if (lane < 4 * nsc) {
      cp_async4(st + oSC + 4 * lane, gsc + std::size_t(r) * nsc + lane);
    }
  };

  // 1. The window by cp.async (as replay_lean, all rows of the head), then the first two groups of rows (kAll: every
  //    group first, so that the checkpoint's bytes fly while the window and the tables are built).
  std::uint8_t* ck = reinterpret_cast<std::uint8_t*>(sm + ring_offset(L.size(), kHeadRingMod));  // kBulk's rows
  if constexpr (kBulk) {  // the ring's bytes: kWarps x nsplit stages of 4 rows and their scales = V RB + 4 V
    static_assert(kAll, "replay_head: kBulk stages every row up front");
    if (tid == 0) {
      mbar_init_tx(bar + 1, unsigned(V * RB + V * 4));
      bulk_copy(ck, gcodes, unsigned(V * RB), bar + 1);
      bulk_copy(ck + V * RB, gsc, unsigned(V * 4), bar + 1);
    }
  }
  if constexpr (kAll) {
    if constexpr (!kBulk) {
#pragma unroll
      for (int g = 0; g < nsplit; ++g) issue(g);
    }
    if (early) {  // the token's q and k (rows 0, 1 of the Q region) with the checkpoint, before n is needed
      const std::size_t o = (std::size_t(b) * p.T * p.G + grp) * K + 4 * lane;
      if (act && warp == 0) cp_async16(sQ + 4 * lane, p.q + o);
      if (kGdn && act && warp == 1) cp_async16(sQ + K + 4 * lane, p.k + o);
      cp_async_commit();
    }
  } else if constexpr (kStep) {
    issue(g0);  // the FP32 step's first rows fly while n is read (the window's sizes and slots need it)
  }
  {
    const float* ra = p.ra + std::size_t(hh) * p.cap;
    // FP32 codes: the group's first head's k records, as the step's bulk copy below (8-bit codes: the combined
    // kernel spills with it)
    const float* rk = p.rk + std::size_t(kStep || C::kBits != 32 ? hh : group_head0(p, hh)) * p.cap * K + 4 * lane;
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
    if constexpr (kStep && kBf16Rec<C>) {
      // The n records' BF16 rows by two bulk copies into the first half of their FP32 regions, widened in place
      // after the wait (Bf16Widen); a window too long for that is widened from global memory by every thread.
      const Rec* gk = records_of<Rec>(p.rk) + std::size_t(group_head0(p, hh)) * p.cap * K;
      const Rec* gwr = records_of<Rec>(p.rw) + std::size_t(hh) * p.cap * V;
      if (tid == 0) {
        const unsigned bk = unsigned(n) * K * 2, bw = unsigned(n) * V * 2;
        mbar_init_tx(bar, bf16_bulk ? bk + bw : 0u);
        if (bf16_bulk && n > 0) {
          bulk_copy(sK, gk, bk, bar);
          bulk_copy(sW, gwr, bw, bar);  // R = V (kStep)
        }
      }
      if (!bf16_bulk) {
        for (int x = tid; x < n * K4; x += kThreads) st4(sK + 4 * x, rec_ld4(gk + 4 * x));
        for (int x = tid; x < n * V4; x += kThreads) st4(sW + 4 * x, rec_ld4(gwr + 4 * x));
      }
      if (act && warp == kWarps - 1) st4(sK + n * K + 4 * lane, rec_round4<Rec>(ld4(tk)));
      if (!early && act && warp == kWarps - 3) cp_async16(sQ + 4 * lane, tq);
      if (warp == kWarps - 2)
        for (int c4 = lane; c4 < V4; c4 += 32) {
          const int c = 4 * c4;
          const std::size_t o = (bt(0) * p.H + h) * V + c;
          cp_async16(sVt + c, p.v + o);
          if (!kGdn) st4(sW + n * R + c, rec_round4<Rec>(ld4(p.v + o)));
          if (p.skip) cp_async16(sSk + c, p.skip + o);
        }
    } else if constexpr (kStep) {  // the n records' k and w rows as two bulk copies; the token's rows by cp.async
      if (tid == 0) {
        const unsigned bk = unsigned(n) * K * 4, bw = unsigned(n) * V * 4;
        mbar_init_tx(bar, bk + bw);
        if (n > 0) {
          // the k records of the group's first head, which every head of the group holds (each appends its
          // group's k_t; replay_group's staging relies on the same), so that its sibling CTAs read them from L2;
          // not GDN's 8-bit step, whose 40-register kernel spills with it (64 / 76 B)
          const int hk = kGdn && C::kBits == 8 ? hh : group_head0(p, hh);
          bulk_copy(sK, p.rk + std::size_t(hk) * p.cap * K, bk, bar);
          bulk_copy(sW, rw, bw, bar);
        }
      }
      if (act && warp == kWarps - 1) cp_async16(sK + n * K + 4 * lane, tk);
      if (!early && act && warp == kWarps - 3) cp_async16(sQ + 4 * lane, tq);  // FP32: q is not staged early
      if (warp == kWarps - 2)
        for (int c4 = lane; c4 < V4; c4 += 32) {
          const int c = 4 * c4;
          const std::size_t o = (bt(0) * p.H + h) * V + c;
          cp_async16(sVt + c, p.v + o);
          if (!kGdn) cp_async16(sW + n * R + c, p.v + o);
          if (p.skip) cp_async16(sSk + c, p.skip + o);
        }
    } else if constexpr (kBf16Rec<C>) {  // the records widened, the tokens' k and (Mamba-2) w = v rounded
    const Rec* rkb = records_of<Rec>(p.rk) + std::size_t(group_head0(p, hh)) * p.cap * K + 4 * lane;
    const Rec* rwb = records_of<Rec>(p.rw) + std::size_t(hh) * p.cap * V;
    if (act) {
      for (int j = warp; j < W; j += kWarps)
        st4(sK + j * K + 4 * lane, j < n ? rec_ld4(rkb + j * K) : rec_round4<Rec>(ld4(tk + (j - n) * GK)));
      for (int t = warp; t < nd; t += kWarps) cp_async16(sQ + t * K + 4 * lane, tq + t * GK);  // FP32: not early
    }
    for (int c4 = lane; c4 < V4; c4 += 32) {
      const int c = 4 * c4;
      for (int j = warp; j < n; j += kWarps) st4(sW + j * R + c, rec_ld4(rwb + std::size_t(j) * V + c));
      for (int t = warp; t < nd; t += kWarps) {
        const std::size_t o = (bt(t) * p.H + h) * V + c;
        cp_async16(sVt + t * R + c, p.v + o);
        if (!kGdn) st4(sW + (n + t) * R + c, rec_round4<Rec>(ld4(p.v + o)));
        if (p.skip) cp_async16(sSk + t * R + c, p.skip + o);
      }
    }
    } else {
    if (act) {
      for (int j = warp; j < W; j += kWarps)
        cp_async16(sK + j * K + 4 * lane, j < n ? rk + j * K : tk + (j - n) * GK);
      if (!early)
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
    }  // !kStep
  }
  if constexpr (kStep && !kAllStages<C, kHp, true>) __syncthreads();  // the mbarrier's init before any wait
  // 3a's kAll row loop (the step's nd = 1 and row scaling as constants where they hold; the step's runs before the
  // window lands, verify's after, one instantiation each)
  auto rows = [&](auto nd_c, auto row_c, const float* sKn) {
    float* dq = sm + L.oD();  // sDq0, sDk0 of 3a (declared there: declared here, they move the FP32 paths' SASS)
    float* dk = dq + nd * R;
    if constexpr (kBulk && kFused == 2) {  // the tensor cores (not the emulation's bits, fast_step_rows_tc.cuh)
      // B's FP16 columns in shared memory that nothing uses before 3b: the row dots' region past dq, dk (the second
      // draft's [2R, 4R), 4 columns) and the second-draft v row (2 columns); the 2^-e factors in the coefficient
      // table sCO, built after this. GDN only (the launcher; Mamba-2 measures slower in this form)
      static_assert(kGdn && kV == 2 * 64, "replay_head: form 2's B columns fill [2R, 4R) and one row of sVt");
      static_assert(C::kFormat == formats::FormatId::fp8_e4m3, "replay_head: form 2 decodes E4M3 codes");
      step_rows_tc<kV>(ck, reinterpret_cast<const __half*>(dq + 2 * R), reinterpret_cast<const __half*>(sVt + R),
                             sCO, dq, dk);  // B's columns: step_tc_build_b before the barrier below
    } else if constexpr (kBulk && kFused != 0) {  // form 1
      step_rows_rs<C, kGdn, kK, kV, kV / kRows, kStepRsChunk>(ck, rr0, lane, sQ, sKn, dq, dk);
    } else {
#pragma unroll
      for (int g = 0; g < nsplit; ++g) {
        const int hr = g * kRows + rr0;
        if constexpr (kBulk)  // the stage's 4 rows at ck + hr RB, their scales at ck + V RB + 4 hr
          stage_row_dots<C, kGdn, kHp, decltype(nd_c)::value, decltype(row_c)::value, true>(
              p, ck + hr * RB, RB, 0, V * RB + hr * (4 - RB), nsc, K, lane, sQ, sKn, nd, R, dq + hr, dk + hr);
        else if (hr < V)
          stage_row_dots<C, kGdn, kHp, decltype(nd_c)::value, decltype(row_c)::value>(
              p, ring + g * SB, RB, oHP, oSC, nsc, K, lane, sQ, sKn, nd, R, dq + hr, dk + hr);
      }
    }
  };
  using One = std::integral_constant<int, 1>;
  using Any = std::integral_constant<int, 0>;
  using Row = std::true_type;
  using Gen = std::false_type;
  if constexpr (kAll) {
    cp_async_commit();
    if (early) {  // 3a for the step, while the window flies (every stage and q, k were the first group)
      cp_async_wait<1>();
      if constexpr (kBulk && kFused == 2)  // B's columns of form 2 from each lane's own copies of q, k
        if (warp < 2)
          step_tc_build_b(warp == 0 ? sQ : sQ + K, reinterpret_cast<__half*>(sm + L.oD() + 2 * R),
                          reinterpret_cast<__half*>(sVt + R), sCO, warp, lane);
      __syncthreads();  // q, k were copied by warps 0 and 1 (form 2: and B's columns built from them)
      if constexpr (kBulk) mbar_wait0(bar + 1);  // the checkpoint (bar[1]'s init published by the barrier above)
      if (kRowSc || (scaled<C>(p) && p.scaling == formats::Scaling::row)) rows(One{}, Row{}, sQ + K);
      else rows(One{}, Gen{}, sQ + K);
    }
    cp_async_wait<0>();  // the window and every group
    if constexpr (kStep) mbar_wait0(bar);  // the records' bulk copies
  } else {
    if constexpr (!kStep) issue(g0);
    cp_async_commit();  // group 0 and the window
    if (!kSlice) issue(1);
    cp_async_commit();
    cp_async_wait<1>();  // the window and group 0
    if constexpr (kStep) mbar_wait0(bar);  // the records' bulk copies (init published by the barrier above)
  }
  if constexpr (kStep && kBf16Rec<C>) {
    Bf16Widen widen;  // every thread's codes read before the barrier and widened after it (Bf16Widen)
    if (bf16_bulk) widen.load(sK, n * K4, sW, n * V4, tid);
    __syncthreads();
    if (bf16_bulk) widen.store(sK, n * K4, sW, n * V4, tid);  // the tables read them after the decays' barrier
  } else {
    __syncthreads();
  }

  // 2. Decays and coefficient tables, once per head (replay_lean's step 3).
  {
    const int W = n + nd;
    for (int x = tid; x < nd * W; x += kThreads) {
      const int t = kStep ? 0 : x / W, j = x - t * W;  // kStep's nd = 1, no division
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
      const int t = kStep ? 0 : task / W, j = task - t * W;
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

  // Per-head record fields of the appended tokens (kSlice: the head's first CTA writes them).
  if (!kSlice || g0 == 0) {
    float* wa = p.ra + std::size_t(hh) * p.cap;
    float* wb = p.rbeta + std::size_t(hh) * p.cap;
    float* wk = p.rk + std::size_t(hh) * p.cap * K;
    if constexpr (kTail) {  // one token; the last warp, which no row of 3b needs
      static_assert(kV > 0 && kV <= (kWarps - 1) * 32, "replay_head: kTail's record warp must be free in 3b");
      if (warp == kWarps - 1) {
        if (lane == 0) wa[n] = sA[n], wb[n] = sB[n];
        for (int c4 = lane; c4 < K4; c4 += 32) st4(wk + std::size_t(n) * K + 4 * c4, ld4(sK + n * K + 4 * c4));
      }
    } else {
      for (int j = tid; j < nd; j += kThreads) wa[n + j] = sA[n + j], wb[n + j] = sB[n + j];
      for (int x = tid; x < nd * K4; x += kThreads) {
        const int j = x / K4, c = 4 * (x % K4);
        if constexpr (kBf16Rec<C>)
          rec_st4(records_of<Rec>(p.rk) + (std::size_t(hh) * p.cap + n + j) * K + c, ld4(sK + (n + j) * K + c));
        else
          st4(wk + std::size_t(n + j) * K + c, ld4(sK + (n + j) * K + c));
      }
    }
  }

  // 3a. Row groups: the checkpoint rows of the stage -> S_c q_t, S_c k_t (canonical trees) into sDq / sDk [t][R].
  float* sDq0 = sm + L.oD();
  float* sDk0 = sDq0 + nd * R;
  if constexpr (kAll) {  // every stage landed before the barrier above; nothing is refilled
    if (!early) {  // verify (a step ran it above), any draft count
      if (scaled<C>(p) && p.scaling == formats::Scaling::row) rows(Any{}, Row{}, sK + n * K);
      else rows(Any{}, Gen{}, sK + n * K);
    }
  } else {
    for (int g = g0; g < g1; ++g) {
      if (g > g0) cp_async_wait<1>();  // group g landed (this thread's copies); the warp barrier shows the others'
      __syncwarp();
      const int hr = g * kRows + rr0;
      if (hr < V)
        stage_row_dots<C, kGdn, kHp>(p, ring + (g & 1) * SB, RB, oHP, oSC, nsc, K, lane, sQ, sK + n * K, nd, R,
                                     sDq0 + hr, sDk0 + hr);
      __syncwarp();  // every lane is done with stage g & 1 before it is refilled
      if (!kSlice) issue(g + 2);
      cp_async_commit();
    }
  }
  // kTail: the row dots ran before the window's barrier, and since then no thread wrote what 3b reads (the record
  // fields above only read shared memory): no barrier.
  if constexpr (!kTail) __syncthreads();

  // 3b. Window sums, one thread per row (not every lane of the row's warp): emu::window_sum over the
  //     staged records, the same function and order as the emulation. GDN first forms u of the drafts in order (the
  //     window of draft t + 1 holds draft t's record), then every (draft, row) output is independent.
  float* gw = p.rw + std::size_t(hh) * p.cap * V;
  if constexpr (kGdn && kFused != 0) {  // nd = 1, V <= kThreads
    static_assert(kV > 0 && kV <= kThreads, "replay_head: the fused window takes one thread per row");
    const int r = g0 * kRows + tid;  // kSlice: the group's rows, one thread each
    if (kSlice ? tid < kRows : tid < V) {
      if constexpr (kBf16Rec<C>)
        step_window_fused(r, n, sTot[0], sDq0[r], sDk0[r], sCU, sCO, sW, R, sB[n], sVt[r], p.skip ? sSk + r : nullptr,
                          records_of<Rec>(p.rw) + (std::size_t(hh) * p.cap + n) * V, p.o + (bt(0) * p.H + h) * V);
      else
        step_window_fused(r, n, sTot[0], sDq0[r], sDk0[r], sCU, sCO, sW, R, sB[n], sVt[r],
                          p.skip ? sSk + r : nullptr, gw + std::size_t(n) * V, p.o + (bt(0) * p.H + h) * V);
    }
  } else {
    if constexpr (kGdn) {
      float* gv = recompute ? p.rv + std::size_t(hh) * p.cap * V : nullptr;
      for (int r = tid; r < V; r += kThreads) {
        for (int t = 0; t < nd; ++t) {
          const int jn = n + t;
          const float vt = sVt[t * R + r];
          if constexpr (kBf16Rec<C>) {
            const float ws = emu::window_sum(sTot[t], sDk0[t * R + r], sCU + t * NR, sW, R, r, jn);
            const float u = rec_round<Rec>(emu::gdn_u(sB[jn], vt, ws));
            sW[jn * R + r] = u;
            emu::record_store(records_of<Rec>(p.rw) + (std::size_t(hh) * p.cap + jn) * V + r, u);
            if (recompute) emu::record_store(records_of<Rec>(p.rv) + (std::size_t(hh) * p.cap + jn) * V + r, vt);
          } else {
          const float u = emu::gdn_u(sB[jn], vt, emu::window_sum(sTot[t], sDk0[t * R + r], sCU + t * NR, sW, R, r, jn));
          sW[jn * R + r] = u;
          gw[std::size_t(jn) * V + r] = u;
          if (recompute) gv[std::size_t(jn) * V + r] = vt;
          }
        }
      }
      __syncthreads();
    }
    // this thread's (draft, row) pairs, tid + i kThreads = t V + r, without a division (kSlice: one draft, the
    // group's rows, r = V past them)
    int t = 0, r = kSlice ? (tid < kRows ? g0 * kRows + tid : V) : tid;
    for (; r >= V && t < nd; r -= V) ++t;
    while (t < nd) {
      const int jn = n + t;
      if constexpr (kBf16Rec<C>) {
        if (!kGdn) emu::record_store(records_of<Rec>(p.rw) + (std::size_t(hh) * p.cap + jn) * V + r, sW[jn * R + r]);
      } else {
        if (!kGdn) gw[std::size_t(jn) * V + r] = sW[jn * R + r];
      }
      const float y = emu::window_sum(sTot[t], sDq0[t * R + r], sCO + t * NR, sW, R, r, jn + 1);
      p.o[(bt(t) * p.H + h) * V + r] = p.skip ? __fadd_rn(y, sSk[t * R + r]) : y;  // emu::add_skip
      for (r += kThreads; r >= V && t < nd; r -= V) ++t;
    }
  }
}

}  // namespace replayssm::kern::fast
