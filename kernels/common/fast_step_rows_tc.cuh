#pragma once
// GDN head_step_kernel's 8-bit row dots S_c q_t and S_c k_t on the tensor cores (kernels/PERF_NOTES.md), the
// rowdot_v2 of kernels/dev/rowdot_fp8.cu inside the step kernel (the plan override dots=tc). The dev
// bench measured the shipped FFMA trees at 37.6 us of GPU time per 8192 heads and this form at 4.2 us.
// Not the emulation's bits: the MMA accumulates in an order (and with an internal rounding) that no CPU code
// reproduces, so the outputs of this form are checked against the FP64 reference with the format's tolerance (and the
// emulation within the dot's error bound), not bit for bit; form 1 (the default) keeps the emulation's bits.
// Part of fast_kernel.cuh, included by fast_replay_head.cuh.
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/fast_rows.cuh"

namespace replayssm::kern::fast {

// Two E4M3 codes (low byte first) as an FP16 pair: exact, every E4M3 value being an FP16 value.
__device__ __forceinline__ std::uint32_t tc_e4m3x2_to_f16x2(std::uint32_t two) {
  std::uint32_t r;
  asm("{\n .reg .b16 t;\n cvt.u16.u32 t, %1;\n cvt.rn.f16x2.e4m3x2 %0, t;\n}\n" : "=r"(r) : "r"(two));
  return r;
}
__device__ __forceinline__ void tc_mma16816(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                            std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The 8-byte slot of B column n's fragment for MMA step s and lane group t (elements 32 t + 4 s .. + 3): the columns'
// 32 slots in step order, the step XOR-ed with n & 3, so that the 16 lanes of a half warp (4 columns g x 4 groups t)
// read 16 distinct bank pairs at every step (in plain order every column's slot of (s, t) sits on the same banks:
// 8-way conflicts on every B load).
__device__ __forceinline__ int tc_b_slot(int n, int s, int t) { return 4 * (s ^ (n & 3)) + t; }

// B's columns from one vector x (128 FP32 values, lane l holding 4l..4l+3; warp 0 q, warp 1 k): three FP16 terms
// hi + mid + lo after a power-of-two prescale 2^e that puts max |x| in [2^14, 2^15) (e clamped to [-100, 100]): each
// remainder is exact in FP32 and the three terms carry 33 bits, so they sum to x 2^e exactly except where a term falls
// below FP16's subnormals (an error below 2^-38 of max |x|). Term i is column n = 2 i + which; lane l's 4 halves are
// the B fragment of step s = l % 8 and lane group t = l / 8, at tc_b_slot. 2^-e goes to scratch[2 which ..] as two
// factors (each exact). Each lane reads only the 4 elements it copied itself, so B is built before the barrier that
// publishes q and k, which then publishes B too (no barrier of its own).
__device__ __forceinline__ void step_tc_build_b(const float* x, __half* colA, __half* colB, float* scratch, int which,
                                                int lane) {
  const F4 v = ld4(x + 4 * lane);
  float m = fmaxf(fmaxf(fabsf(v.x[0]), fabsf(v.x[1])), fmaxf(fabsf(v.x[2]), fabsf(v.x[3])));
#pragma unroll
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  const int e = m > 0.0f ? max(-100, min(100, 14 - ilogbf(m))) : 0, e1 = e / 2, e2 = e - e1;
  const float f1 = ldexpf(1.0f, e1), f2 = ldexpf(1.0f, e2);
  float r[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) r[i] = __fmul_rn(__fmul_rn(v.x[i], f1), f2);  // exact: powers of two in range
#pragma unroll
  for (int term = 0; term < 3; ++term) {
    const __half2 p01 = __floats2half2_rn(r[0], r[1]), p23 = __floats2half2_rn(r[2], r[3]);
    uint2 w;
    w.x = *reinterpret_cast<const std::uint32_t*>(&p01);
    w.y = *reinterpret_cast<const std::uint32_t*>(&p23);
    const int n = 2 * term + which;
    __half* col = n < 4 ? colA + 128 * n : colB + 128 * (n - 4);
    *reinterpret_cast<uint2*>(col + 4 * tc_b_slot(n, lane % 8, lane / 8)) = w;
    if (term < 2) {  // the remainders, exact in FP32
      const float2 q01 = __half22float2(p01), q23 = __half22float2(p23);
      r[0] = __fsub_rn(r[0], q01.x), r[1] = __fsub_rn(r[1], q01.y);
      r[2] = __fsub_rn(r[2], q23.x), r[3] = __fsub_rn(r[3], q23.y);
    }
  }
  if (lane == 0) scratch[2 * which] = ldexpf(1.0f, -e1), scratch[2 * which + 1] = ldexpf(1.0f, -e2);
}

// The row dots of the whole head from the checkpoint as head_step_kernel's bulk copy lands it (ck: [kV][128] E4M3
// codes, rows unswizzled, then kV FP32 row scales) into sDq and sDk [kV], after step_tc_build_b's columns are
// published (a barrier). Warp w owns rows 16 w .. 16 w + 15 (one m16 tile), K = 128 in
// 8 k16 steps of mma.sync m16n8k16 (FP16 in, FP32 accumulation). The dot is a sum over K, so any bijection of K
// serves if A and B share it: lane (g = lane / 4, t = lane % 4) holds at step s the MMA's logical columns
// {2t, 2t + 1, 2t + 8, 2t + 9} as physical columns 32 t + 4 s + {0, 1, 2, 3}, so its A fragments are 32 contiguous
// bytes of rows g and g + 8. B's columns (FP16 terms, step_tc_build_b): q hi, k hi, q mid, k mid, q lo, k lo, 0, 0.
// Column n's 128 halves sit at colA + 128 n for n < 4, else at colB + 128 (n - 4) (the caller's free shared memory,
// 8-byte aligned; column addresses by arithmetic, not an array of pointers, which a lane-dependent index put on the
// stack); scratch holds the 2^-e factors (4 floats).
template <int kV>
__device__ __forceinline__ void step_rows_tc(const std::uint8_t* ck, const __half* colA, const __half* colB,
                                             const float* scratch, float* sDq, float* sDk) {
  constexpr int kK = 128, kNT = 6;  // B columns that are not zero
  // GDN only: Mamba-2's step (one dot per row, kV = 64) measures slower in this form, with warps 4-7 idle (+6%) and
  // with 8 rows per warp in half-empty tiles (+11%) (kernels/PERF_NOTES.md)
  static_assert(kV == 16 * kWarps, "step_rows_tc: GDN's head, 16 rows per warp");
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4, r0 = 16 * warp + g;
  const std::uint8_t* ra = ck + r0 * kK + 32 * t;
  const uint4 A0 = reinterpret_cast<const uint4*>(ra)[0], A1 = reinterpret_cast<const uint4*>(ra)[1];
  const uint4 B0 = reinterpret_cast<const uint4*>(ra + 8 * kK)[0], B1 = reinterpret_cast<const uint4*>(ra + 8 * kK)[1];
  const std::uint32_t wa[8] = {A0.x, A0.y, A0.z, A0.w, A1.x, A1.y, A1.z, A1.w};
  const std::uint32_t wb[8] = {B0.x, B0.y, B0.z, B0.w, B1.x, B1.y, B1.z, B1.w};
  const __half* bc = g < 4 ? colA + 128 * g : colB + 128 * (g - 4);  // lanes g >= kNT: zeros, no load
  // two accumulator chains (even and odd steps), so that four MMAs, not eight, wait on each other
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    uint2 bb = make_uint2(0u, 0u);
    if (g < kNT) bb = *reinterpret_cast<const uint2*>(bc + 4 * tc_b_slot(g, s, t));
    tc_mma16816(s % 2 == 0 ? d : d2, tc_e4m3x2_to_f16x2(wa[s] & 0xFFFFu), tc_e4m3x2_to_f16x2(wb[s] & 0xFFFFu),
                tc_e4m3x2_to_f16x2(wa[s] >> 16), tc_e4m3x2_to_f16x2(wb[s] >> 16), bb.x, bb.y);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) d[i] = __fadd_rn(d[i], d2[i]);
  const float* scales = reinterpret_cast<const float*>(ck + kV * kK);
  // d[0], d[1]: row r0, columns 2t, 2t + 1; d[2], d[3]: row r0 + 8.
  {  // lane t holds term t (t = 3: zeros) of q (d[0], d[2]) and k (d[1], d[3]): (hi + mid) + lo
#pragma unroll
    for (int i = 0; i < 4; ++i) d[i] = __fadd_rn(d[i], __shfl_xor_sync(0xFFFFFFFFu, d[i], 1));
#pragma unroll
    for (int i = 0; i < 4; ++i) d[i] = __fadd_rn(d[i], __shfl_xor_sync(0xFFFFFFFFu, d[i], 2));
    // one store per lane: t = 0 q of row r0, 1 k of r0, 2 q of r0 + 8, 3 k of r0 + 8
    const int r = r0 + (t >= 2 ? 8 : 0), kq = t & 1;
    const float x = t == 0 ? d[0] : t == 1 ? d[1] : t == 2 ? d[2] : d[3];
    (kq ? sDk : sDq)[r] = __fmul_rn(__fmul_rn(__fmul_rn(x, scratch[2 * kq]), scratch[2 * kq + 1]), scales[r]);
  }
}

}  // namespace replayssm::kern::fast
