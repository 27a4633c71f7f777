#pragma once
// replay_head's ring stages: their byte layout (also the host's shared-memory sizes) and the row dots of one stage
// (stage_row_dots). Part of fast_kernel.cuh.
#include <cstdint>

#include "kernels/common/fast_replay_lean.cuh"

namespace replayssm::kern::fast {

// K: p.K, or the same value as a constant (replay_head's kK).
template <class C>
__host__ __device__ inline int head_nsc(const KParams& p, int K) {  // scales per row in the ring
  if (C::kBlock == 0 || p.scaling == formats::Scaling::none) return 0;
  return p.scaling == formats::Scaling::row ? 1 : (K + 31) / 32;
}
template <class C>
__host__ __device__ inline int head_nsc(const KParams& p) { return head_nsc<C>(p, p.K); }
template <class C>
__host__ __device__ inline int head_stage_bytes(const KParams& p, bool u_hp, int K) {  // one ring stage: 4 rows
  return 4 * (K * C::kBits / 8) + (u_hp ? 16 * K : 0) + (16 * head_nsc<C>(p, K) + 15) / 16 * 16;
}
// kStep's form: the scales per row as a constant. Not called by head_stage_bytes on purpose: routing it through this
// helper moves ptxas's allocation of the group kernels (12 / 24 -> 16 / 44 B of spills).
template <class C>
__host__ __device__ constexpr int head_stage_bytes_nsc(bool u_hp, int K, int nsc) {
  return 4 * (K * C::kBits / 8) + (u_hp ? 16 * K : 0) + (16 * nsc + 15) / 16 * 16;
}
template <class C>
__host__ __device__ inline int head_stage_bytes(const KParams& p, bool u_hp) { return head_stage_bytes<C>(p, u_hp, p.K); }
// Where ring rows are 128 B (E4M3 at K = 128; also FP32 at K = 32), byte b of row i is stored at chunk
// (b / 16) ^ 2 i of the row, so that stage_row_dots' 4-byte E4M3 loads of one column of virtual lanes (lanes 8 i + j,
// rows 128 B apart) hit 32 distinct banks instead of 4-way conflicts (16-byte loads: no conflict either way). Writer
// ring_copy_codes, reader stage_row_dots; replay_group's ring is not swizzled. RB: bytes per row.
__host__ __device__ constexpr int head_ring_byte(int RB, int i, int b) {
  return RB == 128 ? (((b >> 4) ^ (2 * i)) << 4) | (b & 15) : b;
}
// The warp's 4 rows of codes (4 RB bytes from src) into a ring stage, in head_ring_byte's order.
__device__ __forceinline__ void ring_copy_codes(std::uint8_t* st, const std::uint8_t* src, int RB, int lane) {
  if (RB == 128) {  // one chunk per lane: row lane / 8
    const int i = lane >> 3;
    cp_async16(st + 128 * i + head_ring_byte(128, i, 16 * (lane & 7)), src + 16 * lane);
    return;
  }
#pragma unroll 4
  for (int c = lane; c < RB / 4; c += 32) cp_async16(st + 16 * c, src + 16 * c);
}
// One ring stage (the warp's 4 rows: codes, HP rows for u=hp, scales) -> S_c q_t, S_c k_t (canonical trees) of drafts
// t < nd into sDq / sDk [t][R] (the warp's first row). One row per 8 lanes, lane 8 ri + rj holding the tree's
// virtual lanes v = rj + 8 m (elements 4 v .. 4 v + 3) of row ri: bfly_sum_row8 gives the sums of bfly_sum4 (4 rows
// per lane) in half the shuffles and without its selects, a row's scale is loaded once (row scaling), and E4M3 words
// decode without the NaN test (the values only feed dots). sKn: the staged k of draft 0 (sK + n K).
// kND > 0 (the step: nd = kND = 1) and kRowScale (scaled<C>(p) and row scaling) are compile-time where the caller
// knows them, so that the draft loop and the scaling selects fold (replay_head's kAll loop).
// kPlain: the stage's rows unswizzled (head_step_kernel's checkpoint, staged by a bulk copy).
template <class C, bool kGdn, bool kHp, int kND = 0, bool kRowScale = false, bool kPlain = false>
__device__ __forceinline__ void stage_row_dots(const KParams& p, const std::uint8_t* st, int RB, int oHP, int oSC,
                                               int nsc, int K, int lane, const float* sQ, const float* sKn, int nd_rt,
                                               int R, float* sDq, float* sDk) {
  const int nd = kND > 0 ? kND : nd_rt;
  const int ri = lane >> 3, rj = lane & 7;
  const bool sc = kRowScale || scaled<C>(p), sc_row = kRowScale || p.scaling == formats::Scaling::row;
  const std::uint8_t* row = st + ri * RB;
  const float* scs = reinterpret_cast<const float*>(st + oSC) + ri * nsc;
  const float s_row = sc && sc_row ? scs[0] : 1.0f;
  F4 S[4], Sh[kHp ? 4 : 1];
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const int v = rj + 8 * m;
    S[m] = F4{{0, 0, 0, 0}};
    if constexpr (kHp) Sh[m] = F4{{0, 0, 0, 0}};
    if (4 * v < K) {
      RawRow<C> w;
      if constexpr (C::kBits == 32) {
        const uint4 u = *reinterpret_cast<const uint4*>(row + head_ring_byte(RB, ri, 16 * v));
        w.c[0] = u.x, w.c[1] = u.y, w.c[2] = u.z, w.c[3] = u.w;
      } else if constexpr (C::kBits == 16) {  // not instantiated today (fast_kernel.cuh: fp32, fp8_e4m3)
        const uint2 u = *reinterpret_cast<const uint2*>(row + head_ring_byte(RB, ri, 8 * v));
        w.c[0] = u.x, w.c[1] = u.y;
      } else {
        static_assert(C::kBits == 8, "stage_row_dots: 32-, 16- and 8-bit codes");
        w.c[0] = *reinterpret_cast<const std::uint32_t*>(row + (kPlain ? 4 * v : head_ring_byte(RB, ri, 4 * v)));
      }
      w.s = !sc ? 1.0f : sc_row ? s_row : scs[m];  // block scaling: virtual lane v's block is v / 8 = m
      // u=hp too: the four-code integer decode (e4m3_decode4_scaled) spills there, this arithmetic one does not
      if constexpr (C::kFormat == formats::FormatId::fp8_e4m3)
        formats::hw_e4m3_decode4_scaled_arith(w.c[0], w.s, S[m].x);
      else
        S[m] = decode_raw<C>(p, w);
      if constexpr (kHp) Sh[m] = ld4(reinterpret_cast<const float*>(st + oHP) + ri * K + 4 * v);
    }
  }
  for (int t = 0; t < nd; ++t) {
    float P[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int v = rj + 8 * m;
      const bool a = 4 * v < K;
      P[m] = part4(S[m], a ? ld4(sQ + t * K + 4 * v) : F4{{0, 0, 0, 0}}, a);
    }
    const float dq = bfly_sum_row8(P[0], P[1], P[2], P[3]);
    if (rj == 0) sDq[t * R + ri] = dq;
    if constexpr (kGdn) {
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int v = rj + 8 * m;
        const bool a = 4 * v < K;
        const F4 kk = a ? ld4(sKn + t * K + 4 * v) : F4{{0, 0, 0, 0}};
        if constexpr (kHp) P[m] = part4(Sh[m], kk, a);
        else P[m] = part4(S[m], kk, a);
      }
      const float dk = bfly_sum_row8(P[0], P[1], P[2], P[3]);
      if (rj == 0) sDk[t * R + ri] = dk;
    }
  }
}

}  // namespace replayssm::kern::fast
