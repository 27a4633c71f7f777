#pragma once
// head_step_kernel's 8-bit row dots with the trees of several row groups reduced together (kFused of
// replay_head). Part of fast_kernel.cuh, included by fast_replay_head.cuh.
#include "kernels/common/fast_records.cuh"
#include "kernels/common/fast_rows.cuh"

namespace replayssm::kern::fast {

// The levels 4, 2, 1 of M row trees at once among the 8 lanes of a row (M a power of two <= 8): while more than one
// value is left, lanes with the level's bit set keep the upper half of the values and send the lower half, the others
// the reverse (a reduce-scatter); then plain butterfly levels. Each value's sum adds the two operands that
// bfly_sum_row8's level adds (IEEE addition commutes), so the bits of bfly_sum_row8, in log2(8 / M) + M - 1 shuffles
// for M trees where bfly_sum_row8 takes 3 M. Lane rj (lane & 7) ends with value rj >> (3 - log2 M); the lanes with
// rj % (8 / M) == 0 hold distinct values.
template <int M, int kOff = 4>
__device__ __forceinline__ float row8_reduce_scatter(const float (&a)[M], int rj) {
  static_assert(M == 1 || M == 2 || M == 4 || M == 8, "row8_reduce_scatter: M = 1, 2, 4 or 8");
  if constexpr (M == 1) {
    float k = a[0];
#pragma unroll
    for (int off = kOff; off > 0; off /= 2) k = __fadd_rn(k, __shfl_xor_sync(0xFFFFFFFFu, k, off));
    return k;
  } else {
    const bool hi = (rj & kOff) != 0;
    float b[M / 2];
#pragma unroll
    for (int i = 0; i < M / 2; ++i) {
      const float keep = hi ? a[i + M / 2] : a[i], send = hi ? a[i] : a[i + M / 2];
      b[i] = __fadd_rn(keep, __shfl_xor_sync(0xFFFFFFFFu, send, kOff));
    }
    return row8_reduce_scatter<M / 2, kOff / 2>(b, rj);
  }
}

// The step's row dots S_c q and (GDN) S_c k of the warp's kNS row groups, from the checkpoint as head_step_kernel's
// bulk copy lands it (ck: [V][RB] codes, then V row scales; rows unswizzled): the decode and the lane partials of
// stage_row_dots<.., kND = 1, kRowScale, kPlain> (one row per 8 lanes, lane 8 ri + rj holding virtual lanes
// rj + 8 m), the in-lane levels 16 and 8 of bfly_sum_row8, then the levels 4, 2, 1 of kChunk groups' trees together
// (row8_reduce_scatter) and one store per tree. The same operations on the same operands as stage_row_dots, so the same
// bits. Value 2 i + d of a chunk (GDN) is group i's S_c q (d = 0) or S_c k (d = 1); Mamba-2's value i is group i's S_c q.
template <class C, bool kGdn, int kK, int kV, int kNS, int kChunk>
__device__ __forceinline__ void step_rows_rs(const std::uint8_t* ck, int rr0, int lane, const float* sQ, const float* sKn,
                                             float* sDq, float* sDk) {
  static_assert(C::kFormat == formats::FormatId::fp8_e4m3, "step_rows_rs: E4M3 codes (the 8-bit codec instantiated)");
  static_assert(kNS % kChunk == 0, "step_rows_rs: whole chunks of row groups");
  static_assert(kK == 128, "step_rows_rs: 32 virtual lanes of 4 elements cover the row (no lane mask)");
  constexpr int RB = kK, kT = kGdn ? 2 : 1, M = kChunk * kT;
  constexpr int kLog = M == 1 ? 0 : M == 2 ? 1 : M == 4 ? 2 : 3;
  const int ri = lane >> 3, rj = lane & 7;
  const float* scales = reinterpret_cast<const float*>(ck + kV * RB);
#pragma unroll
  for (int c = 0; c < kNS / kChunk; ++c) {
    float val[M];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const int r = (c * kChunk + i) * kRows + rr0 + ri;  // this lane's row
      const std::uint8_t* row = ck + r * RB;
      const float s_row = scales[r];
      F4 S[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int v = rj + 8 * m;
        formats::hw_e4m3_decode4_scaled_arith(*reinterpret_cast<const std::uint32_t*>(row + 4 * v), s_row, S[m].x);
      }
      float P[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) P[m] = part4(S[m], ld4(sQ + 4 * (rj + 8 * m)), true);
      val[kT * i] = __fadd_rn(__fadd_rn(P[0], P[2]), __fadd_rn(P[1], P[3]));
      if constexpr (kGdn) {
#pragma unroll
        for (int m = 0; m < 4; ++m) P[m] = part4(S[m], ld4(sKn + 4 * (rj + 8 * m)), true);
        val[kT * i + 1] = __fadd_rn(__fadd_rn(P[0], P[2]), __fadd_rn(P[1], P[3]));
      }
    }
    const float d = row8_reduce_scatter<M>(val, rj);
    const int idx = rj >> (3 - kLog);
    if ((rj & ((8 >> kLog) - 1)) == 0) {
      const int g = c * kChunk + idx / kT;
      float* dst = kGdn && (idx % kT) != 0 ? sDk : sDq;
      dst[g * kRows + rr0 + ri] = d;
    }
  }
}

// Row groups per reduce-scatter: GDN's 4 groups x 2 trees in chunks of 2 groups (4 values; all 8 at once spill
// 4 bytes at the 40 registers of 6 CTAs per SM, for 8 fewer SASS instructions), Mamba-2's 2 groups x 1 tree at once.
inline constexpr int kStepRsChunk = 2;

// GDN's window sums of row r in the step (one draft), u's and the output's in one thread: emu::window_sum over the n
// records for S_(t-1) k_t (u = emu::gdn_u), and over the n records and u for the output, each chain in the emulation's
// order, so the same bits as replay_head's two loops; the records' w[r] are loaded once for both chains, and no
// barrier separates them (the output of row r needs only row r's u). Stores u (record n's w[r], in the record buffer's
// element type Rec: u is rounded to that record value first, which the output reads) and the output.
template <class Rec>
__device__ __forceinline__ void step_window_fused(int r, int n, float total, float dq, float dk, const float* sCU,
                                                  const float* sCO, const float* sW, int R, float beta, float vt,
                                                  const float* skip_r, Rec* gw_n, float* out) {
  float au = __fmul_rn(total, dk), ao = __fmul_rn(total, dq);
#pragma unroll 4
  for (int j = 0; j < n; ++j) {
    const float w = sW[j * R + r];
    au = __fmaf_rn(sCU[j], w, au);
    ao = __fmaf_rn(sCO[j], w, ao);
  }
  float u = emu::gdn_u(beta, vt, au);
  if constexpr (std::is_same_v<Rec, float>) {
    gw_n[r] = u;
  } else {
    u = rec_round<Rec>(u);
    emu::record_store(gw_n + r, u);
  }
  ao = __fmaf_rn(sCO[n], u, ao);
  out[r] = skip_r ? __fadd_rn(ao, *skip_r) : ao;
}

}  // namespace replayssm::kern::fast
