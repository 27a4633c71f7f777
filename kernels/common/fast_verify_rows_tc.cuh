#pragma once
// The grouped FP32 verify's row dots S_c q_t, S_c k_t (16 per row at T = 8, GDN) on the tensor cores
// (kernels/PERF_NOTES.md), as 3xTF32 (x = big + small, each rounded to TF32; big*big + big*small + small*big,
// the dropped small*small and the two roundings ~2^-22 of |x y| per product): the verify kernel's form 2
// (the plan override dots=tc); form 1's FFMA dots are ~3/4 of its instructions. Not the emulation's bits (the MMA's
// summation order and internal rounding are not specified): checked against the FP64 reference with the mode's
// tolerance and against the emulation within tc_dots_tolerance before any flush ([tc-verify]).
// Part of fast_kernel.cuh, included by fast_replay_group.cuh.
#include <cstdint>

#include "kernels/common/fast_replay_head.cuh"
#include "kernels/common/tc_verify_layout.h"

namespace replayssm::kern::fast {

// x = big + small as TF32 operands: big = x rounded to 11 significant bits (nearest, ties away: the carry of bit 12
// into the kept bits, then the low 13 bits cleared), small = x - big (exact in FP32) with the same carry. The MMA reads
// a TF32 operand's upper 19 bits only (nvcc's own cvt.rna.tf32.f32 feeding an MMA leaves the low bits set), so small
// needs no clearing; its rounding costs <= 2^-22 |x|. Four instructions per element, where cvt.rna.tf32.f32 compiles
// to four each for big and small (a finiteness test and a select that finite state never needs: an infinite or NaN x
// still gives a non-finite dot).
__device__ __forceinline__ void tc_split_tf32(float x, std::uint32_t& big, std::uint32_t& small) {
  big = (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u;
  small = __float_as_uint(__fsub_rn(x, __uint_as_float(big))) + 0x1000u;
}
__device__ __forceinline__ void tc_mma1688(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                           std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A's fragments (the drafts' q_t, GDN also k_{n+t}: rows t and 8 + t of A; lanes g >= nd hold zeros and store
// nothing), split once per CTA into TF32 big and small terms: 32 blocks q = 2 s + term of kAW floats per lane g < nd
// (block_floats = 4 nd kAW), lane-contiguous so that each lane's load is one conflict-free LDS at a constant offset
// from one base. kAW = 4 (a0..a3; GDN) or 2 (a0, a2; Mamba-2, whose rows 8..15 are zero). Blocks 0..30 replace sK and
// sQ, which nothing reads after the window's dots; the last (small terms of step 15) stays in each lane's registers
// (last), so that GDN's T = 8 at L = 16 fits: 31 blocks of 128 floats, sK and sQ's (15 + 8 + 8) 128 = 3968 floats.
// Where they do not fit (fits: e.g. L = 8), the launcher keeps form 1. (Putting the overflow in the Gd
// table instead spills: nvcc hoists the per-block base pointers.) Each thread reads its entries before the caller's
// barrier and stores them after it.
template <bool kGdn>
struct TcVerifyA {
  static constexpr int kAW = kGdn ? 4 : 2, kEntries = kTcVerifySteps * 32, kBlocks = 2 * kTcVerifySteps;
  static constexpr int kPer = kEntries / kThreads;  // entries (s, lane) per thread
  static __host__ __device__ constexpr int block_floats(int nd) { return 4 * nd * kAW; }
  static bool fits(const KParams& p) { return tc_verify_fits(p.T, p.K, head_records(p), kAW); }
  float v[kPer][kAW];
  std::uint32_t last[kAW];  // the small terms of this lane's step-15 fragment
  // the values of entry (s, ln) of the fragments; sKd = k_{n + 0}
  static __device__ __forceinline__ void entry(const float* sQ, const float* sKd, int nd, int s, int ln,
                                               float (&x)[kAW]) {
    const int g = ln >> 2, t = ln & 3, el = g * kTcVerifyK + 32 * t + 2 * s;
    const bool on = g < nd;
    const float2 q = on ? *reinterpret_cast<const float2*>(sQ + el) : make_float2(0.0f, 0.0f);
    if constexpr (kGdn) {
      const float2 k = on ? *reinterpret_cast<const float2*>(sKd + el) : make_float2(0.0f, 0.0f);
      x[0] = q.x, x[1] = k.x, x[2] = q.y, x[3] = k.y;
    } else {
      x[0] = q.x, x[1] = q.y;
    }
  }
  __device__ __forceinline__ void load(const float* sQ, const float* sKd, int nd, int tid, int lane) {
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int x = tid + e * kThreads;
      entry(sQ, sKd, nd, tc_entry_s(x), tc_entry_lane(x), v[e]);  // tc_verify_layout.h
    }
    float y[kAW];
    entry(sQ, sKd, nd, kTcVerifySteps - 1, lane, y);
#pragma unroll
    for (int j = 0; j < kAW; ++j) {
      std::uint32_t big;
      tc_split_tf32(y[j], big, last[j]);
    }
  }
  __device__ __forceinline__ void store(float* sAf, int nd, int tid) const {
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int x = tid + e * kThreads, s = tc_entry_s(x), ln = tc_entry_lane(x);
      if ((ln >> 2) >= nd) continue;
      std::uint32_t big[kAW], small[kAW];
#pragma unroll
      for (int j = 0; j < kAW; ++j) tc_split_tf32(v[e][j], big[j], small[j]);
      float* db = sAf + 2 * s * block_floats(nd) + ln * kAW;
      float* ds = db + block_floats(nd);
      if constexpr (kGdn) {
        *reinterpret_cast<uint4*>(db) = make_uint4(big[0], big[1], big[2], big[3]);
        if (s + 1 < kTcVerifySteps) *reinterpret_cast<uint4*>(ds) = make_uint4(small[0], small[1], small[2], small[3]);
      } else {
        *reinterpret_cast<uint2*>(db) = make_uint2(big[0], big[1]);
        if (s + 1 < kTcVerifySteps) *reinterpret_cast<uint2*>(ds) = make_uint2(small[0], small[1]);
      }
    }
  }
};

// The row dots of 8 rows: the warp's 4 rows of two consecutive ring stages (st0, st1: [4 rows][128] FP32, chunks at
// tc_ring_slot), as B's 8 columns (n < 4: row n of st0; else row n - 4 of st1). D = A B: D[t][n] = q_t . row n,
// D[8 + t][n] = k_t . row n (GDN). big*big in one pair of accumulator chains, the two cross products in another (even
// and odd steps apart, so that 8, not 16 or 32, MMAs wait on each other), summed small-first at the end. Stores
// sDq[t * R + row] (and sDk) for t < nd: lane (g, t) holds D[g][2t], D[g][2t + 1] (and D[g + 8][..]), rows 2 t, 2 t + 1
// of the tile: row0 + 2 (t % 2) of stage t / 2, where row0 is st0's first row and st1's first is row0 + kRows.
template <bool kGdn, int kND>
__device__ __forceinline__ void verify_rows_tc(const float* st0, const float* st1, const float* sAf,
                                               const std::uint32_t (&last)[TcVerifyA<kGdn>::kAW], float* sDq,
                                               float* sDk, int R, int row0, int lane) {
  constexpr int kAW = TcVerifyA<kGdn>::kAW, kBF = TcVerifyA<kGdn>::block_floats(kND);
  const int g = lane >> 2, t = lane & 3, r = g & 3;
  const bool ga = g < kND;  // A's rows g (and g + 8) are drafts; else zeros, nothing loaded
  const float* row = (g < 4 ? st0 : st1) + r * kTcVerifyK;
  const float* pa = sAf + lane * kAW;
  float db[4] = {0, 0, 0, 0}, db2[4] = {0, 0, 0, 0}, dx[4] = {0, 0, 0, 0}, dx2[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < 8; ++i) {  // chunk 8 t + i: the elements of steps 2 i and 2 i + 1
    const F4 b = ld4(row + 4 * tc_ring_slot(r, 8 * t + i));
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int s = 2 * i + h;
      std::uint32_t bb0, bs0, bb1, bs1;
      tc_split_tf32(b.x[2 * h], bb0, bs0);
      tc_split_tf32(b.x[2 * h + 1], bb1, bs1);
      std::uint32_t ab[4] = {0u, 0u, 0u, 0u}, as[4] = {0u, 0u, 0u, 0u};
      if (ga) {
        const float* pb = pa + 2 * s * kBF;
        if constexpr (kGdn) {
          const uint4 x = *reinterpret_cast<const uint4*>(pb);
          ab[0] = x.x, ab[1] = x.y, ab[2] = x.z, ab[3] = x.w;
          if (s + 1 < kTcVerifySteps) {
            const uint4 y = *reinterpret_cast<const uint4*>(pb + kBF);
            as[0] = y.x, as[1] = y.y, as[2] = y.z, as[3] = y.w;
          } else {
            as[0] = last[0], as[1] = last[1], as[2] = last[2], as[3] = last[3];
          }
        } else {
          const uint2 x = *reinterpret_cast<const uint2*>(pb);
          ab[0] = x.x, ab[2] = x.y;
          if (s + 1 < kTcVerifySteps) {
            const uint2 y = *reinterpret_cast<const uint2*>(pb + kBF);
            as[0] = y.x, as[2] = y.y;
          } else {
            as[0] = last[0], as[2] = last[1];
          }
        }
      }
      float(&big)[4] = h == 0 ? db : db2;
      float(&cross)[4] = h == 0 ? dx : dx2;
      tc_mma1688(cross, ab[0], ab[1], ab[2], ab[3], bs0, bs1);
      tc_mma1688(cross, as[0], as[1], as[2], as[3], bb0, bb1);
      tc_mma1688(big, ab[0], ab[1], ab[2], ab[3], bb0, bb1);
    }
  }
  float d[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) d[j] = __fadd_rn(__fadd_rn(dx[j], dx2[j]), __fadd_rn(db[j], db2[j]));
  if (ga) {
    const int hr = row0 + (t >> 1) * kRows + 2 * (t & 1);
    *reinterpret_cast<float2*>(sDq + g * R + hr) = make_float2(d[0], d[1]);
    if constexpr (kGdn) *reinterpret_cast<float2*>(sDk + g * R + hr) = make_float2(d[2], d[3]);
  }
}

}  // namespace replayssm::kern::fast
