// Dev bench (llm.c's dev/cuda style): the ReplaySSM step's row dots S_c q and S_c k over a row-scaled E4M3
// checkpoint, the part of GDN's FP8 step kernel that decodes and multiplies (kernels/PERF_NOTES.md, twenty-first
// pass). Numbered versions, each checked against an FP64 dot of the same decoded values:
//   1  the shipped form: step_rows_rs (fast_step_rows.cuh) on the checkpoint staged in shared memory, the bits of
//      the emulation's canonical dot (decode c s rounded to FP32, then FP32 FMA chains and the fixed tree);
//   2  tensor cores: mma.sync m16n8k16 with the codes as FP16 (every E4M3 value is an FP16 value) and q, k each
//      split into three FP16 terms after a power-of-two prescale (hi + mid + lo carry the FP32 value), FP32
//      accumulation inside the MMA, the row scale applied once per row. Not the emulation's bits: how far from the
//      FP64 dot it lands, and how much faster it is, are what this bench measures;
//   3  v1 with the row scale applied once per row after the tree (comment at rows_v3).
// Usage: dev_rowdot_fp8 [heads=8192] [l2_heads=0 (inputs of head h % l2_heads: an L2-resident set)] [reps=50]
//                       [repeat=1 (the row dots repeated per staged head: their instruction cost without the loads)]
// Prints one line per version: median us, GB/s over the bytes read, and replayssm::compare's summary (the project's one
// comparison) of each row's dot normalised by its sum |c s x|, so max_abs is the worst row error in that unit; fails
// (exit 1) where a row's error exceeds kDotBound or a value is not finite. Exits 3 without a CUDA device
// (as `replayssm bench`; CTest reports the smoke run as skipped there).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "core/compare.h"
#include "formats/minifloat.h"
#include "kernels/common/fast_step_rows.cuh"
#include "kernels/common/fast_step_rows_tc.cuh"

namespace {

using replayssm::kern::fast::kRows;
using replayssm::kern::fast::kRPW;
using C8 = replayssm::formats::StateCodec<replayssm::formats::FormatId::fp8_e4m3>;
constexpr int kK = 128, kV = 128, kThreads = 256;
// gamma_K of an FP32 dot of K terms (K u, u = 2^-24), relative to sum |c s x|: any summation order meets it, the
// tensor cores' too; the three FP16 terms carry x to ~2^-33 of max |x|.
constexpr double kDotBound = kK * 0x1p-24;
// compare() on the normalised dots: every row within kDotBound (an absolute bound there), rel-RMS reported only.
constexpr replayssm::Tolerance kDotTolerance{0.0, std::numeric_limits<double>::infinity(), kDotBound};

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "dev_rowdot_fp8: %s: %s\n", #x, cudaGetErrorString(e_));            \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

struct Args {
  const std::uint8_t* codes;  // [H][V][K]
  const float* scales;        // [H][V]
  const float* q;             // [H][K]
  const float* k;             // [H][K]
  float* dq;                  // [H][V]
  float* dk;                  // [H][V]
  int l2_heads;               // > 0: inputs of head h % l2_heads
  int repeat;                 // row dots per staged head
};

__device__ __forceinline__ int in_head(const Args& a) {
  return a.l2_heads > 0 ? int(blockIdx.x) % a.l2_heads : int(blockIdx.x);
}

// v3: v1 with the row scale applied once per row, after the tree (sum_j c_j x_j, then times s), not to each decoded
// element: one FMUL per element fewer, IEEE-deterministic (an emulation could reproduce it), but not the shipped
// emulation's bits (which round c s to FP32 first).
template <int kChunk>
__device__ __forceinline__ void rows_v3(const std::uint8_t* ck, int rr0, int lane, const float* sQ, const float* sKn,
                                        float* sDq, float* sDk) {
  using namespace replayssm::kern::fast;
  constexpr int RB = kK, M = kChunk * 2, kLog = M == 2 ? 1 : M == 4 ? 2 : 3;
  const int ri = lane >> 3, rj = lane & 7;
  const float* scales = reinterpret_cast<const float*>(ck + kV * RB);
#pragma unroll
  for (int c = 0; c < kV / kRows / kChunk; ++c) {
    float val[M];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const std::uint8_t* row = ck + ((c * kChunk + i) * kRows + rr0 + ri) * RB;
      F4 S[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const std::uint32_t w = *reinterpret_cast<const std::uint32_t*>(row + 4 * (rj + 8 * m));
        const __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w & 0xFFFFu), __NV_E4M3);
        const __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w >> 16), __NV_E4M3);
        S[m].x[0] = __half2float(__ushort_as_half(lo.x)), S[m].x[1] = __half2float(__ushort_as_half(lo.y));
        S[m].x[2] = __half2float(__ushort_as_half(hi.x)), S[m].x[3] = __half2float(__ushort_as_half(hi.y));
      }
      float P[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) P[m] = part4(S[m], ld4(sQ + 4 * (rj + 8 * m)), true);
      val[2 * i] = __fadd_rn(__fadd_rn(P[0], P[2]), __fadd_rn(P[1], P[3]));
#pragma unroll
      for (int m = 0; m < 4; ++m) P[m] = part4(S[m], ld4(sKn + 4 * (rj + 8 * m)), true);
      val[2 * i + 1] = __fadd_rn(__fadd_rn(P[0], P[2]), __fadd_rn(P[1], P[3]));
    }
    const float d = row8_reduce_scatter<M>(val, rj);
    const int idx = rj >> (3 - kLog);
    if ((rj & ((8 >> kLog) - 1)) == 0) {
      const int r = (c * kChunk + idx / 2) * kRows + rr0 + ri;
      ((idx % 2) != 0 ? sDk : sDq)[r] = __fmul_rn(d, scales[r]);
    }
  }
}
// v1 (kV3 false): the shipped decode and dots; v3: rows_v3. The checkpoint is staged as head_step_kernel's bulk copy
// lands it ([V][K] codes, then V scales).
template <bool kV3>
__global__ void __launch_bounds__(kThreads) rowdot_smem(Args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  std::uint8_t* ck = smem;
  float* sQ = reinterpret_cast<float*>(smem + kV * kK + kV * 4);
  float* sK = sQ + kK;
  float* sDq = sK + kK;
  float* sDk = sDq + kV;
  const int hi = in_head(a), tid = threadIdx.x;
  const uint4* gc = reinterpret_cast<const uint4*>(a.codes + std::size_t(hi) * kV * kK);
  for (int i = tid; i < kV * kK / 16; i += kThreads) reinterpret_cast<uint4*>(ck)[i] = gc[i];
  if (tid < kV) reinterpret_cast<float*>(ck + kV * kK)[tid] = a.scales[std::size_t(hi) * kV + tid];
  if (tid < kK) sQ[tid] = a.q[std::size_t(hi) * kK + tid], sK[tid] = a.k[std::size_t(hi) * kK + tid];
  __syncthreads();
  for (int rep = 0; rep < a.repeat; ++rep) {
    if constexpr (kV3)
      rows_v3<replayssm::kern::fast::kStepRsChunk>(ck, (tid / 32) * kRPW, tid % 32, sQ, sK, sDq, sDk);
    else
      replayssm::kern::fast::step_rows_rs<C8, true, kK, kV, kV / kRows, replayssm::kern::fast::kStepRsChunk>(
          ck, (tid / 32) * kRPW, tid % 32, sQ, sK, sDq, sDk);
    asm volatile("" ::: "memory");  // every repeat reloads the staged rows
  }
  __syncthreads();
  if (tid < kV) a.dq[std::size_t(blockIdx.x) * kV + tid] = sDq[tid], a.dk[std::size_t(blockIdx.x) * kV + tid] = sDk[tid];
}

using replayssm::kern::fast::tc_e4m3x2_to_f16x2;  // v55's step kernel took v2 (fast_step_rows_tc.cuh)
using replayssm::kern::fast::tc_mma16816;

// v2: tensor cores. Warp w owns rows 16 w .. 16 w + 15 (one m16 tile), K = 128 in 8 k16 steps. The dot is a sum
// over K, so any bijection of K serves if A and B share it: thread (g = lane / 4, t = lane % 4) holds, at step s,
// the MMA's logical columns {2t, 2t + 1, 2t + 8, 2t + 9} as physical columns 32 t + 4 s + {0, 1, 2, 3}, so its A
// fragments are 32 contiguous bytes of rows g and g + 8 (two 16-byte loads per row, straight from global memory).
// B's 8 columns: q hi, k hi, q mid, k mid, q lo, k lo, 0, 0 (x 2^e, the power of two that puts max |x| in
// [2^14, 2^15)), built once per CTA into shared memory in the fragment order (one 8-byte load per step and lane).
__global__ void __launch_bounds__(kThreads) rowdot_v2(Args a) {
  __shared__ uint2 sB[8 * 4 * 8];  // [step][t][n]: b0, b1
  __shared__ float sPre[2][3];  // q, k: 2^e as two factors (each in range), and 2^-e
  const int hi = in_head(a), tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (warp < 2) {  // max |q| (warp 0), max |k| (warp 1), then the prescale e with max |x| 2^e in [2^14, 2^15)
    const float* x = (warp == 0 ? a.q : a.k) + std::size_t(hi) * kK;
    float m = 0.0f;
    for (int c = lane; c < kK; c += 32) m = fmaxf(m, fabsf(x[c]));
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    if (lane == 0) {
      const int e = m > 0.0f ? 14 - ilogbf(m) : 0, e1 = e / 2, e2 = e - e1;
      sPre[warp][0] = ldexpf(1.0f, e1), sPre[warp][1] = ldexpf(1.0f, e2);
      sPre[warp][2] = __fmul_rn(ldexpf(1.0f, -e1), ldexpf(1.0f, -e2));  // 0 only where 2^-e underflows (m >= 2^112)
    }
  }
  __syncthreads();
  {
    const int s = tid / 32, t = (tid / 8) % 4, n = tid % 8;  // one (step, t, n) per thread
    std::uint32_t b[2] = {0u, 0u};
    if (n < 6) {
      const int which = n % 2, term = n / 2;  // 0 q, 1 k; 0 hi, 1 mid, 2 lo
      const float4 x4 = *reinterpret_cast<const float4*>((which == 0 ? a.q : a.k) + std::size_t(hi) * kK + 32 * t + 4 * s);
      const float x[4] = {x4.x, x4.y, x4.z, x4.w}, f1 = sPre[which][0], f2 = sPre[which][1];
      __half h[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float r = __fmul_rn(__fmul_rn(x[i], f1), f2);  // exact: powers of two, |r| < 2^15
        __half part = __float2half_rn(r);
        for (int j = 0; j < term; ++j) {  // the remainder after the earlier terms (exact in FP32)
          r = __fsub_rn(r, __half2float(part));
          part = __float2half_rn(r);
        }
        h[i] = part;
      }
      b[0] = std::uint32_t(__half_as_ushort(h[0])) | (std::uint32_t(__half_as_ushort(h[1])) << 16);
      b[1] = std::uint32_t(__half_as_ushort(h[2])) | (std::uint32_t(__half_as_ushort(h[3])) << 16);
    }
    sB[tid] = make_uint2(b[0], b[1]);
  }
  __syncthreads();
  const int g = lane / 4, t = lane % 4, r0 = 16 * warp + g;
  const std::uint8_t* rowa = a.codes + (std::size_t(hi) * kV + r0) * kK + 32 * t;
  const uint4 A0 = reinterpret_cast<const uint4*>(rowa)[0], A1 = reinterpret_cast<const uint4*>(rowa)[1];
  const uint4 B0 = reinterpret_cast<const uint4*>(rowa + 8 * kK)[0],
              B1 = reinterpret_cast<const uint4*>(rowa + 8 * kK)[1];
  const std::uint32_t wa[8] = {A0.x, A0.y, A0.z, A0.w, A1.x, A1.y, A1.z, A1.w};
  const std::uint32_t wb[8] = {B0.x, B0.y, B0.z, B0.w, B1.x, B1.y, B1.z, B1.w};
  float d[4];
  for (int rep = 0; rep < a.repeat; ++rep) {
    d[0] = d[1] = d[2] = d[3] = 0.0f;
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      std::uint32_t x = wa[s], y = wb[s];
      asm volatile("" : "+r"(x), "+r"(y));  // every repeat converts the codes again
      const uint2 bb = sB[(s * 4 + t) * 8 + g];
      tc_mma16816(d, tc_e4m3x2_to_f16x2(x & 0xFFFFu), tc_e4m3x2_to_f16x2(y & 0xFFFFu), tc_e4m3x2_to_f16x2(x >> 16),
                  tc_e4m3x2_to_f16x2(y >> 16), bb.x, bb.y);
    }
    // d[0], d[1]: row r0, columns 2t, 2t + 1; d[2], d[3]: row r0 + 8. Lane t = 0 holds the hi terms (q, k), t = 1
    // mid, t = 2 lo, t = 3 zeros: (hi + mid) + lo by two shuffles.
#pragma unroll
    for (int i = 0; i < 4; ++i) d[i] = __fadd_rn(d[i], __shfl_xor_sync(0xFFFFFFFFu, d[i], 1));
#pragma unroll
    for (int i = 0; i < 4; ++i) d[i] = __fadd_rn(d[i], __shfl_xor_sync(0xFFFFFFFFu, d[i], 2));
    asm volatile("" ::: "memory");
  }
  if (t == 0) {
    const float uq = sPre[0][2], uk = sPre[1][2];
    const float* sc = a.scales + std::size_t(hi) * kV;
    const std::size_t o = std::size_t(blockIdx.x) * kV;
    a.dq[o + r0] = __fmul_rn(__fmul_rn(d[0], uq), sc[r0]);
    a.dk[o + r0] = __fmul_rn(__fmul_rn(d[1], uk), sc[r0]);
    a.dq[o + r0 + 8] = __fmul_rn(__fmul_rn(d[2], uq), sc[r0 + 8]);
    a.dk[o + r0 + 8] = __fmul_rn(__fmul_rn(d[3], uk), sc[r0 + 8]);
  }
}

template <class F>
float median_us(F launch, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.0f);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int H = argc > 1 ? std::atoi(argv[1]) : 8192;
  const int l2 = argc > 2 ? std::atoi(argv[2]) : 0;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 50;
  const int repeat = argc > 4 ? std::atoi(argv[4]) : 1;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("dev_rowdot_fp8: no CUDA device\n");
    return 3;
  }
  if (H <= 0 || l2 < 0 || reps <= 0 || repeat <= 0) {
    std::fprintf(stderr, "dev_rowdot_fp8: usage: dev_rowdot_fp8 [heads > 0] [l2_heads >= 0] [reps > 0] [repeat > 0]\n");
    return 2;
  }
  // Random inputs: codes of every finite E4M3 value, row scales over 2^-12..2^0, q and k with a 2^6 dynamic range.
  std::mt19937 rng(20261203);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  std::normal_distribution<float> nrm(0.0f, 1.0f);
  std::vector<std::uint8_t> codes(std::size_t(H) * kV * kK);
  for (auto& c : codes) {
    int v;
    do v = byte(rng);
    while ((v & 0x7F) == 0x7F);  // no NaN codes
    c = std::uint8_t(v);
  }
  std::vector<float> scales(std::size_t(H) * kV), q(std::size_t(H) * kK), k(std::size_t(H) * kK);
  for (auto& s : scales) s = std::ldexp(0.5f + u01(rng), -int(12 * u01(rng)));
  for (auto& x : q) x = std::ldexp(nrm(rng), -int(6 * u01(rng)));
  for (auto& x : k) x = std::ldexp(nrm(rng), -int(6 * u01(rng)));

  std::uint8_t* dc;
  float *ds, *dqv, *dkv, *oq, *ok;
  CK(cudaMalloc(&dc, codes.size()));
  CK(cudaMalloc(&ds, scales.size() * 4));
  CK(cudaMalloc(&dqv, q.size() * 4));
  CK(cudaMalloc(&dkv, k.size() * 4));
  CK(cudaMalloc(&oq, std::size_t(H) * kV * 4));
  CK(cudaMalloc(&ok, std::size_t(H) * kV * 4));
  CK(cudaMemcpy(dc, codes.data(), codes.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ds, scales.data(), scales.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dqv, q.data(), q.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dkv, k.data(), k.size() * 4, cudaMemcpyHostToDevice));
  const Args a{dc, ds, dqv, dkv, oq, ok, l2, repeat};
  const int smem1 = kV * kK + kV * 4 + 2 * kK * 4 + 2 * kV * 4;
  const int nin = l2 > 0 ? std::min(l2, H) : H;
  const double bytes = double(nin) * (kV * kK + kV * 4 + 2 * kK * 4) + double(H) * 2 * kV * 4;

  std::vector<float> gq(std::size_t(H) * kV), gk(std::size_t(H) * kV);
  std::printf("dev_rowdot_fp8: heads %d, input heads %d, %.1f MB per launch, row dots %d times per head\n", H, nin,
              bytes / 1e6, repeat);
  for (int v = 1; v <= 3; ++v) {
    auto launch = [&] {
      if (v == 1) rowdot_smem<false><<<H, kThreads, smem1>>>(a);
      else if (v == 2) rowdot_v2<<<H, kThreads>>>(a);
      else rowdot_smem<true><<<H, kThreads, smem1>>>(a);
    };
    const float us = median_us(launch, reps);
    CK(cudaMemcpy(gq.data(), oq, gq.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gk.data(), ok, gk.size() * 4, cudaMemcpyDeviceToHost));
    // Each row's dot against the FP64 dot of the exact decoded values, both divided by the row's sum |c s x|.
    std::vector<double> ref_n, got_n;
    ref_n.reserve(2 * gq.size()), got_n.reserve(2 * gq.size());
    for (int h = 0; h < H; ++h) {
      const int hi = l2 > 0 ? h % l2 : h;
      for (int r = 0; r < kV; ++r) {
        double rq = 0, rk = 0, aq = 0, ak = 0;
        const double s = scales[std::size_t(hi) * kV + r];
        for (int c = 0; c < kK; ++c) {
          const double x = double(replayssm::formats::e4m3_decode(codes[(std::size_t(hi) * kV + r) * kK + c])) * s;
          rq += x * q[std::size_t(hi) * kK + c], aq += std::fabs(x * q[std::size_t(hi) * kK + c]);
          rk += x * k[std::size_t(hi) * kK + c], ak += std::fabs(x * k[std::size_t(hi) * kK + c]);
        }
        const std::size_t o = std::size_t(h) * kV + r;
        ref_n.push_back(aq > 0 ? rq / aq : rq), got_n.push_back(aq > 0 ? gq[o] / aq : gq[o]);
        ref_n.push_back(ak > 0 ? rk / ak : rk), got_n.push_back(ak > 0 ? gk[o] / ak : gk[o]);
      }
    }
    const replayssm::Comparison cmp = replayssm::compare(ref_n, got_n, kDotTolerance);
    std::printf("v%d  %9.2f us  %7.1f GB/s  worst |err| / sum|c s x| = %.3g (%.2f x 2^-24)  %s\n", v, us,
                bytes / (us * 1e3), cmp.max_abs, cmp.max_abs / std::ldexp(1.0, -24), cmp.summary().c_str());
    if (!cmp.pass) {
      std::fprintf(stderr, "dev_rowdot_fp8: v%d: a row's error above the bound %.3g (K 2^-24) or not finite\n", v,
                   kDotBound);
      return 1;
    }
  }
  return 0;
}
