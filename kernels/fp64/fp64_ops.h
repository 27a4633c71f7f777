#pragma once
// The FP64 model's device arithmetic (runtime/fp64_device.h) as functions of one thread or one phase of a CTA, the
// same source for the GPU (fp64_device.cu launches them) and the host (the CPU tests run them over the same grid
// and compare with the CPU paths, so that their order of operations is checked on a machine without a GPU).
// - Projections: Y = X W^T, a 64 x 64 tile of Y per CTA of 16 x 16 threads, each thread 4 x 4 elements (rows
//   ty + 16 i, columns tx + 16 j), k staged 16 at a time. Every element is one fma chain over k in order from +0, as
//   runtime/gemm.h's; the chain stops at k (a padded fma(0, 0, s) would turn an s of -0, an underflowed product,
//   into +0).
// - Recurrence: one thread per row of a head's state, fast_recurrence.cpp's operations for that row: blocks of
//   `bc` columns, each block's sum from 0 (mul, then add: never fused) added to the row's total.
#include <cmath>
#include <cstddef>

#if defined(__CUDACC__)
#define REPLAYSSM_FP64_HD __host__ __device__ inline
#else
#define REPLAYSSM_FP64_HD inline
#endif

namespace replayssm::fp64dev {

REPLAYSSM_FP64_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;  // the host build has -ffp-contract=off
#endif
}
REPLAYSSM_FP64_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
REPLAYSSM_FP64_HD double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
REPLAYSSM_FP64_HD double fma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
// A read-only load shared by a warp (the token's k and q).
REPLAYSSM_FP64_HD double load_shared_ro(const double* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// ---- projections
constexpr int kTile = 64, kStepK = 16, kSide = 16, kPerThread = kTile / kSide;
using Stage = double[kStepK][kTile + 1];  // a k-step of X's (or W's) 64 rows, transposed; +1 spreads the banks

struct GemmArgs {
  const double* X;  // [m][k]
  const double* W;  // [n][k]
  double* Y;        // [m][n]
  int m, n, k;
};

struct Dim2 {
  unsigned x, y;
};
REPLAYSSM_FP64_HD Dim2 gemm_grid(int m, int n) {
  return {unsigned((n + kTile - 1) / kTile), unsigned((m + kTile - 1) / kTile)};
}

// Thread tid of CTA (bx, by) stages its share of the k-step at k0 (zeros outside the matrices).
REPLAYSSM_FP64_HD void gemm_stage(const GemmArgs& g, unsigned bx, unsigned by, int tid, int k0, Stage& xs, Stage& ws) {
  const int r0 = int(by) * kTile, c0 = int(bx) * kTile;
  for (int e = tid; e < kTile * kStepK; e += kSide * kSide) {
    const int r = e / kStepK, kk = e % kStepK;
    const bool in_k = k0 + kk < g.k;
    xs[kk][r] = (in_k && r0 + r < g.m) ? g.X[std::size_t(r0 + r) * std::size_t(g.k) + std::size_t(k0 + kk)] : 0.0;
    ws[kk][r] = (in_k && c0 + r < g.n) ? g.W[std::size_t(c0 + r) * std::size_t(g.k) + std::size_t(k0 + kk)] : 0.0;
  }
}

// Thread (tx, ty) adds the k-step's products to its elements, k in order, stopping at g.k.
REPLAYSSM_FP64_HD void gemm_accumulate(const GemmArgs& g, int tx, int ty, int k0, const Stage& xs, const Stage& ws,
                                       double (&acc)[kPerThread][kPerThread]) {
  const int kn = g.k - k0 < kStepK ? g.k - k0 : kStepK;
  for (int kk = 0; kk < kn; ++kk) {
    double a[kPerThread], b[kPerThread];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < kPerThread; ++i) a[i] = xs[kk][ty + kSide * i];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < kPerThread; ++j) b[j] = ws[kk][tx + kSide * j];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < kPerThread; ++i)
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int j = 0; j < kPerThread; ++j) acc[i][j] = fma_rn(a[i], b[j], acc[i][j]);
  }
}

REPLAYSSM_FP64_HD void gemm_store(const GemmArgs& g, unsigned bx, unsigned by, int tx, int ty,
                                  const double (&acc)[kPerThread][kPerThread]) {
  for (int i = 0; i < kPerThread; ++i) {
    const int r = int(by) * kTile + ty + kSide * i;
    if (r >= g.m) continue;
    for (int j = 0; j < kPerThread; ++j) {
      const int c = int(bx) * kTile + tx + kSide * j;
      if (c < g.n) g.Y[std::size_t(r) * std::size_t(g.n) + std::size_t(c)] = acc[i][j];
    }
  }
}

// ---- recurrence
constexpr int kRowsPerCta = 32;

struct RecurrenceArgs {
  int T, H, G, V, K, bc;
  const double *a, *beta, *v, *k, *q, *skip;  // runtime::RecurrenceJob's arrays
  double *state, *o;
  int snap_period, snap_offset;  // 0: no snapshots
  double* snaps;                 // [n][H][K][V]
};

REPLAYSSM_FP64_HD Dim2 recurrence_grid(int H, int V) {
  return {unsigned(H), unsigned((V + kRowsPerCta - 1) / kRowsPerCta)};
}
REPLAYSSM_FP64_HD int recurrence_row_of(unsigned by, int lane) { return int(by) * kRowsPerCta + lane; }

// Row `row` (< V) of head h through every token of the job. S: scratch for the row's K state elements, `stride`
// apart (shared memory on the GPU: the CTA's rows interleaved).
template <bool kGdn>
REPLAYSSM_FP64_HD void recurrence_row(const RecurrenceArgs& j, int h, int row, double* S, int stride) {
  const int K = j.K, bc = j.bc, grp = h / (j.H / j.G);
  double* state = j.state + (std::size_t(h) * std::size_t(j.V) + std::size_t(row)) * std::size_t(K);
  for (int c = 0; c < K; ++c) S[c * stride] = state[c];
  for (int t = 0; t < j.T; ++t) {
    const std::size_t th = std::size_t(t) * std::size_t(j.H) + std::size_t(h);
    const double a = j.a[th];
    const double* k = j.k + (std::size_t(t) * std::size_t(j.G) + std::size_t(grp)) * std::size_t(K);
    const double* q = j.q + (std::size_t(t) * std::size_t(j.G) + std::size_t(grp)) * std::size_t(K);
    double w = j.v[th * std::size_t(j.V) + std::size_t(row)];
    if (kGdn) {  // S *= a; u = beta (v - S k)
      double r = 0.0;
      for (int j2 = 0; j2 < K; j2 += bc) {
        const int jend = j2 + bc < K ? j2 + bc : K;
        double c = 0.0;
        for (int x = j2; x < jend; ++x) {
          const double s = mul(S[x * stride], a);
          S[x * stride] = s;
          c = add(mul(s, load_shared_ro(k + x)), c);
        }
        r = add(c, r);
      }
      w = mul(j.beta[th], sub(w, r));
    }
    double o = 0.0;  // [Mamba-2: S *= a;] S += w k^T; o = S q
    for (int j2 = 0; j2 < K; j2 += bc) {
      const int jend = j2 + bc < K ? j2 + bc : K;
      double c = 0.0;
      for (int x = j2; x < jend; ++x) {
        double s = S[x * stride];
        if (!kGdn) s = mul(s, a);
        s = add(s, mul(load_shared_ro(k + x), w));
        S[x * stride] = s;
        c = add(mul(s, load_shared_ro(q + x)), c);
      }
      o = add(c, o);
    }
    if (j.skip) o = add(o, j.skip[th * std::size_t(j.V) + std::size_t(row)]);
    j.o[th * std::size_t(j.V) + std::size_t(row)] = o;
    if (j.snap_period && (j.snap_offset + t + 1) % j.snap_period == 0) {
      const int n = (j.snap_offset % j.snap_period + t + 1) / j.snap_period - 1;
      double* dst = j.snaps + (std::size_t(n) * std::size_t(j.H) + std::size_t(h)) * std::size_t(K) * std::size_t(j.V) +
                    std::size_t(row);
      for (int c = 0; c < K; ++c) dst[std::size_t(c) * std::size_t(j.V)] = S[c * stride];
    }
  }
  for (int c = 0; c < K; ++c) state[c] = S[c * stride];
}

}  // namespace replayssm::fp64dev
