#pragma once
// replay_group's shared-memory plan and its verify window sums (the phased and scattered forms), which
// fast_replay_group.cuh composes. Part of fast_kernel.cuh.
#include "kernels/common/fast_replay_head.cuh"

namespace replayssm::kern::fast {

// Dynamic shared memory of replay_group in floats, 0 where it does not apply; with hl, its layout: the non-flush Smem
// with the rows of the whole head (as replay_head), the ring at kGroupRingMod, then the dot tables [T][NR] each. The
// launcher passes the offsets as kernel parameters: computed in the kernel they held registers and made ptxas spill.
template <class C, bool kGdn>
inline int group_plan(const KParams& p, KParams::HeadLayout* hl) {
  const bool split = p.policy == emu::Policy::replay_split;
  const bool rec = kGdn && split && p.usource == emu::USource::recompute;
  const bool u_hp = kGdn && split && p.usource == emu::USource::hp;
  if (p.V % 4 != 0 || (p.K * C::kBits / 8) % 16 != 0 || p.code_bytes % 16 != 0 || p.scale_bytes % 4 != 0) return 0;
  const int nsplit = (p.V + kRows - 1) / kRows, R = nsplit * kRows;
  const Smem L{head_records(p), p.T, p.K, rec, R, p.skip != nullptr, false};
  const int NR = L.NR;
  const int ring = ring_offset(L.size(), kGroupRingMod);
  const int dots = ring + kWarps * 2 * head_stage_bytes<C>(p, u_hp) / 4;
  const int f = dots + 2 * p.T * NR;
  if (f * 4 > 160 * 1024) return 0;
  if (hl) {
    hl->A = L.oA(), hl->B = L.oB(), hl->K = L.oK(), hl->Q = L.oQ(), hl->W = L.oW(), hl->Vt = L.oVt();
    hl->Sk = L.oSk(), hl->Tot = L.oTot(), hl->CU = L.oCU(), hl->CO = L.oCO(), hl->D = L.oD(), hl->ring = ring;
    hl->DotQ = dots, hl->DotK = dots + p.T * NR;
  }
  return f;
}

// emu::window_sum (the same multiplication and FMAs in the same order: the emulation's bits) with its chain unrolled
// by 4 (the verify kernel: rolled, its window sums are 18% of the tc form's instructions, half of them the loop's), the
// m % 4 first records peeled off without a loop (a remainder loop after the blocks costs 6%); w = w_0[r].
__device__ __forceinline__ float window_sum_u4(float total, float x, const float* coef, const float* w, int ws, int m) {
  float acc = __fmul_rn(total, x);
  const int j0 = m & 3;
  if (j0 >= 1) acc = __fmaf_rn(coef[0], w[0], acc);
  if (j0 >= 2) acc = __fmaf_rn(coef[1], w[ws], acc);
  if (j0 >= 3) acc = __fmaf_rn(coef[2], w[2 * ws], acc);
  w += j0 * ws;
  for (int j = j0; j < m; j += 4, w += 4 * ws) {
    acc = __fmaf_rn(coef[j], w[0], acc);
    acc = __fmaf_rn(coef[j + 1], w[ws], acc);
    acc = __fmaf_rn(coef[j + 2], w[2 * ws], acc);
    acc = __fmaf_rn(coef[j + 3], w[3 * ws], acc);
  }
  return acc;
}

// The verify kernel's window sums (4b) in phases, each chain still emu::window_sum's multiplication and FMAs in its
// order (the emulation's bits): a chain over the window [0, m) is its prefix over the n old records, whose w rows are
// staged, continued over the drafts' records n .. m - 1. Unphased, GDN's u chains of a row run one draft after the
// other on 128 of the 256 threads (draft t's window holds drafts 0 .. t - 1's u), then every (draft, row) output alone.
// A. Every thread: the prefixes of its row r = tid % kV for drafts t0, t0 + kP, ... (t0 = tid / kV): the output's and
//    (GDN) u's, all from one load of each old w_j[r]; GDN's u prefixes go to sDk (their own S_c k_t slots).
// B. GDN, one thread per row: u of the drafts in order, each its prefix continued over the earlier drafts' u (held in
//    registers), then emu::gdn_u; into sW and the records.
// C. Every thread: its outputs, each its prefix continued over records n .. n + t.
// kPhasedSums: where it runs (measured: GDN -2..-13%, every T, both forms; Mamba-2 form 1 -2.4% from T = 6, but
// +0.5..+1.5% at T = 2, 3); Mamba-2 form 2 measured +3..+9% (more spills), so it keeps the unphased sums.
template <bool kGdn, int kND, bool kTc>
inline constexpr bool kPhasedSums = kND > 0 && (kGdn || (!kTc && kND >= 6));
// kScatterDots (the window dots by a warp per record): where it runs (measured: GDN -0.6..-5.7%, every T, both
// forms; Mamba-2 form 1 -1.6% at T = 8); Mamba-2 form 2 at T = 8 measured +3.5% (spills 8 -> 12 B), so it keeps a warp
// per (draft, record) pair there and at T = 7 (not measured; its spills as T = 8's).
template <bool kGdn, int kND, bool kTc>
inline constexpr bool kScatterDots = kND > 0 && (kGdn || !kTc || kND < 7);
// Rec: the record buffers' element type (fast_records.cuh): GDN's u rounded to its record value before the later
// drafts and the outputs read it.
template <bool kGdn, int kND, int kV, class Rec = float>
__device__ __forceinline__ void verify_window_sums(const KParams& p, int n, int b, int h, std::size_t hh, int R, int NR,
                                                   const float* sTot, const float* sDq, float* sDk, const float* sCU,
                                                   const float* sCO, float* sW, const float* sB, const float* sVt,
                                                   const float* sSk, bool recompute, int tid) {
  static_assert(kThreads % kV == 0, "verify_window_sums: whole row sets of threads");
  constexpr int kP = kThreads / kV, kD = (kND + kP - 1) / kP;  // threads per row, drafts per thread
  const int r = tid % kV, t0 = tid / kV;                       // t0: warp-uniform
  // row r's stores as a base pointer and a draft stride (index math per store would be 4% of form 2's instructions)
  float* gw = p.rw + (hh * p.cap + n) * kV + r;  // the drafts' records: + t kV
  // A. A thread whose last draft t0 + kP (kD - 1) is past kND runs that chain on draft kND - 1's tables and drops it
  //    (its u prefix from sDq: sDk[kND - 1] is another thread's to overwrite).
  float py[kD], pu[kD];
  const float* co[kD];
  const float* cu[kD];
#pragma unroll
  for (int e = 0; e < kD; ++e) {
    const int t = min(t0 + kP * e, kND - 1);
    co[e] = sCO + t * NR, cu[e] = sCU + t * NR;
    py[e] = __fmul_rn(sTot[t], sDq[t * R + r]);
    const bool own = kND % kP == 0 || t0 + kP * e < kND;
    if constexpr (kGdn) pu[e] = __fmul_rn(sTot[t], (own ? sDk : sDq)[t * R + r]);
  }
  const float* wr = sW + r;
#pragma unroll 4
  for (int j = 0; j < n; ++j) {
    const float w = wr[j * R];
#pragma unroll
    for (int e = 0; e < kD; ++e) {
      py[e] = __fmaf_rn(co[e][j], w, py[e]);
      if constexpr (kGdn) pu[e] = __fmaf_rn(cu[e][j], w, pu[e]);
    }
  }
  if constexpr (kGdn) {
#pragma unroll
    for (int e = 0; e < kD; ++e)
      if (kND % kP == 0 || t0 + kP * e < kND) sDk[(t0 + kP * e) * R + r] = pu[e];
    __syncthreads();
    if (tid < kV) {  // B
      float* gv = recompute ? p.rv + (hh * p.cap + n) * kV + r : nullptr;
      const float* cun = sCU + n;
      float uu[kND];
#pragma unroll
      for (int t = 0; t < kND; ++t) {
        float acc = sDk[t * R + r];
#pragma unroll
        for (int s = 0; s < t; ++s) acc = __fmaf_rn(cun[t * NR + s], uu[s], acc);
        const float vt = sVt[t * R + r];
        uu[t] = emu::gdn_u(sB[n + t], vt, acc);
        if constexpr (std::is_same_v<Rec, float>) {
          sW[(n + t) * R + r] = uu[t];
          gw[t * kV] = uu[t];
          if (recompute) gv[t * kV] = vt;
        } else {
          uu[t] = rec_round<Rec>(uu[t]);
          sW[(n + t) * R + r] = uu[t];
          emu::record_store(records_of<Rec>(p.rw) + (hh * p.cap + n + t) * kV + r, uu[t]);
          if (recompute) emu::record_store(records_of<Rec>(p.rv) + (hh * p.cap + n + t) * kV + r, vt);
        }
      }
    }
    __syncthreads();
  }
  // C. The drafts as constants (a warp-uniform branch each), so that the continued chains unroll.
  const float* con = sCO + n;
  const float* wn = sW + n * R + r;
  float* o = p.o + (std::size_t(b) * p.T * p.H + h) * kV + r;  // draft t's output: + t H kV
  const int oT = p.H * kV;
#pragma unroll
  for (int t = 0; t < kND; ++t) {
    if (t % kP != t0) continue;
    float y = py[t / kP];
#pragma unroll
    for (int s = 0; s <= t; ++s) y = __fmaf_rn(con[t * NR + s], wn[s * R], y);
    if constexpr (std::is_same_v<Rec, float>) {
      if (!kGdn) gw[t * kV] = wn[t * R];
    } else {
      if (!kGdn) emu::record_store(records_of<Rec>(p.rw) + (hh * p.cap + n + t) * kV + r, wn[t * R]);
    }
    o[t * oT] = p.skip ? __fadd_rn(y, sSk[t * R + r]) : y;  // emu::add_skip
  }
}

}  // namespace replayssm::kern::fast
