#include "runtime/fast_recurrence.h"

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace replayssm::runtime {
namespace {

// recurrent_step on an Eigen::MatrixXd S [V][K] (column-major) computes S *= a; [GDN: u = beta (v - S k)];
// S += w k^T; o = S q (+ skip). Its two S x products go through Eigen 3.4's column-major gemv
// (GeneralMatrixVector.h): the result starts at 0 and, per block of `block_cols` columns, gets
// c_i = sum over the block's columns j in increasing order of S_ij x_j (c from 0, c <- S_ij x_j + c, no FMA) added as
// r_i <- c_i + r_i. The outer product adds k_j w_i column by column. Every row runs the same formula whatever the
// SIMD width, so this reproduces it exactly with the same operations in the same order (the build has
// -ffp-contract=off). Only Eigen 3.4 without FMA packets (an FMA build would fuse pmadd) and V > 1 (V == 1 is a dot
// product in Eigen): anything else uses Eigen itself.
#if EIGEN_VERSION_AT_LEAST(3, 4, 0) && !EIGEN_VERSION_AT_LEAST(3, 4, 90) && !defined(EIGEN_VECTORIZE_FMA)
constexpr bool kEigenGemv34 = true;
#else
constexpr bool kEigenGemv34 = false;
#endif

int gemv_block_cols(int rows, int cols) {
  return cols < 128 ? cols : (static_cast<long>(rows) * static_cast<long>(sizeof(double)) < 32000 ? 16 : 4);
}

// Block [j2, jend) of GDN pass 1 for row i: S *= a, r += (block sum of S k).
inline void gdn_pass1_row(double* S, int V, int i, int j2, int jend, double a, const double* k, double* r) {
  double c = 0.0;
  for (int j = j2; j < jend; ++j) {
    double& s = S[std::size_t(j) * V + i];
    s = s * a;
    c = s * k[j] + c;
  }
  r[i] = c + r[i];
}

// Block [j2, jend) of pass 2 for row i: [Mamba-2: S *= a,] S += w k^T, o += (block sum of S q).
template <bool kGdn>
inline void pass2_row(double* S, int V, int i, int j2, int jend, double a, const double* k, const double* q,
                      const double* w, double* o) {
  double c = 0.0;
  for (int j = j2; j < jend; ++j) {
    double& s = S[std::size_t(j) * V + i];
    double x = kGdn ? s : s * a;
    x = x + k[j] * w[i];
    s = x;
    c = x * q[j] + c;
  }
  o[i] = c + o[i];
}

#if defined(__x86_64__) || defined(__i386__)
// The same per-element operations for 16 rows at once (4 x 4 doubles; mul and add separate, as above).
__attribute__((target("avx2"))) inline void gdn_pass1_x16(double* S, int V, int i0, int j2, int jend, double a,
                                                            const double* k, double* r) {
  __m256d c0 = _mm256_setzero_pd(), c1 = c0, c2 = c0, c3 = c0;
  const __m256d va = _mm256_set1_pd(a);
  for (int j = j2; j < jend; ++j) {
    double* col = S + std::size_t(j) * V + i0;
    const __m256d kj = _mm256_set1_pd(k[j]);
    const __m256d s0 = _mm256_mul_pd(_mm256_loadu_pd(col), va), s1 = _mm256_mul_pd(_mm256_loadu_pd(col + 4), va);
    const __m256d s2 = _mm256_mul_pd(_mm256_loadu_pd(col + 8), va), s3 = _mm256_mul_pd(_mm256_loadu_pd(col + 12), va);
    _mm256_storeu_pd(col, s0);
    _mm256_storeu_pd(col + 4, s1);
    _mm256_storeu_pd(col + 8, s2);
    _mm256_storeu_pd(col + 12, s3);
    c0 = _mm256_add_pd(_mm256_mul_pd(s0, kj), c0);
    c1 = _mm256_add_pd(_mm256_mul_pd(s1, kj), c1);
    c2 = _mm256_add_pd(_mm256_mul_pd(s2, kj), c2);
    c3 = _mm256_add_pd(_mm256_mul_pd(s3, kj), c3);
  }
  _mm256_storeu_pd(r + i0, _mm256_add_pd(c0, _mm256_loadu_pd(r + i0)));
  _mm256_storeu_pd(r + i0 + 4, _mm256_add_pd(c1, _mm256_loadu_pd(r + i0 + 4)));
  _mm256_storeu_pd(r + i0 + 8, _mm256_add_pd(c2, _mm256_loadu_pd(r + i0 + 8)));
  _mm256_storeu_pd(r + i0 + 12, _mm256_add_pd(c3, _mm256_loadu_pd(r + i0 + 12)));
}

template <bool kGdn>
__attribute__((target("avx2"))) inline void pass2_x16(double* S, int V, int i0, int j2, int jend, double a,
                                                        const double* k, const double* q, const double* w, double* o) {
  __m256d c[4], wv[4];
  for (int l = 0; l < 4; ++l) {
    c[l] = _mm256_setzero_pd();
    wv[l] = _mm256_loadu_pd(w + i0 + 4 * l);
  }
  const __m256d va = _mm256_set1_pd(a);
  for (int j = j2; j < jend; ++j) {
    double* col = S + std::size_t(j) * V + i0;
    const __m256d kj = _mm256_set1_pd(k[j]), qj = _mm256_set1_pd(q[j]);
    for (int l = 0; l < 4; ++l) {
      __m256d x = _mm256_loadu_pd(col + 4 * l);
      if (!kGdn) x = _mm256_mul_pd(x, va);
      x = _mm256_add_pd(x, _mm256_mul_pd(kj, wv[l]));
      _mm256_storeu_pd(col + 4 * l, x);
      c[l] = _mm256_add_pd(_mm256_mul_pd(x, qj), c[l]);
    }
  }
  for (int l = 0; l < 4; ++l) _mm256_storeu_pd(o + i0 + 4 * l, _mm256_add_pd(c[l], _mm256_loadu_pd(o + i0 + 4 * l)));
}
#endif

// One head's step; r, u: [V] scratch. x16 = the AVX2 tiles (rows past the last whole tile go row by row).
template <bool kGdn, bool kX16>
inline void shadow_head(const StepHead& h, int V, int K, int bc, double* r, double* u) {
  double* S = h.S;
  const double* w = h.v;  // Mamba-2: w = v
  const int vt = kX16 ? V / 16 * 16 : 0;
  if (kGdn) {
    for (int i = 0; i < V; ++i) r[i] = 0.0;
    for (int j2 = 0; j2 < K; j2 += bc) {
      const int jend = std::min(j2 + bc, K);
#if defined(__x86_64__) || defined(__i386__)
      for (int i0 = 0; i0 < vt; i0 += 16) gdn_pass1_x16(S, V, i0, j2, jend, h.a, h.k, r);
#endif
      for (int i = vt; i < V; ++i) gdn_pass1_row(S, V, i, j2, jend, h.a, h.k, r);
    }
    for (int i = 0; i < V; ++i) u[i] = h.beta * (h.v[i] - r[i]);
    w = u;
  }
  for (int i = 0; i < V; ++i) h.o[i] = 0.0;
  for (int j2 = 0; j2 < K; j2 += bc) {
    const int jend = std::min(j2 + bc, K);
#if defined(__x86_64__) || defined(__i386__)
    for (int i0 = 0; i0 < vt; i0 += 16) pass2_x16<kGdn>(S, V, i0, j2, jend, h.a, h.k, h.q, w, h.o);
#endif
    for (int i = vt; i < V; ++i) pass2_row<kGdn>(S, V, i, j2, jend, h.a, h.k, h.q, w, h.o);
  }
  if (h.skip)
    for (int i = 0; i < V; ++i) h.o[i] = h.o[i] + h.skip[i];
}

void shadow_portable(bool gdn, const StepHead& h, int V, int K, int bc, double* r, double* u) {
  if (gdn)
    shadow_head<true, false>(h, V, K, bc, r, u);
  else
    shadow_head<false, false>(h, V, K, bc, r, u);
}
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) void shadow_avx2(bool gdn, const StepHead& h, int V, int K, int bc, double* r,
                                                 double* u) {
  if (gdn)
    shadow_head<true, true>(h, V, K, bc, r, u);
  else
    shadow_head<false, true>(h, V, K, bc, r, u);
}
#endif
using StepFn = void (*)(bool, const StepHead&, int, int, int, double*, double*);
StepFn step_fn() {
#if defined(__x86_64__) || defined(__i386__)
  // REPLAYSSM_NO_AVX2 (any value) forces the portable path, to check that it gives the same bits.
  if (!std::getenv("REPLAYSSM_NO_AVX2") && __builtin_cpu_supports("avx2")) return shadow_avx2;
#endif
  return shadow_portable;
}

}  // namespace

int recurrent_step_block_cols(int V, int K) { return gemv_block_cols(V, K); }

bool recurrent_step_fast_ok(int V, int K) { return kEigenGemv34 && V > 1 && K >= 1; }

void recurrent_step_fast(bool gdn, const StepHead& h, int V, int K, double* scratch) {
  static const StepFn fn = step_fn();
  fn(gdn, h, V, K, gemv_block_cols(V, K), scratch, scratch + V);
}

}  // namespace replayssm::runtime
