#include "runtime/gemm.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define REPLAYSSM_GEMM_X86 1
#endif

namespace replayssm::runtime {
namespace {

constexpr std::size_t kPanel = 8;   // columns of Y per packed panel of W
constexpr std::size_t kRows = 6;    // rows of Y per micro-tile (6 x 8: twelve accumulators, enough to hide FMA latency)
constexpr std::size_t kTile = 120;  // rows of X per thread work item (kept in cache while all panels pass)

// W [n, k] -> panels [n/8][k][8] (zero padded).
std::vector<double> pack(const double* W, std::size_t n, std::size_t k) {
  const std::size_t np = (n + kPanel - 1) / kPanel;
  std::vector<double> p(np * k * kPanel, 0.0);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t kk = 0; kk < k; ++kk) p[(j / kPanel) * k * kPanel + kk * kPanel + j % kPanel] = W[j * k + kk];
  return p;
}

// acc[r][c] = fma chain over kk of x[r][kk] * panel[kk][c].
void micro_scalar(const double* const* x, std::size_t rows, const double* panel, std::size_t k,
                  double acc[kRows][kPanel]) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < kPanel; ++c) {
      double s = 0.0;
      for (std::size_t kk = 0; kk < k; ++kk) s = std::fma(x[r][kk], panel[kk * kPanel + c], s);
      acc[r][c] = s;
    }
}

#ifdef REPLAYSSM_GEMM_X86
// Always computes kRows rows: the caller repeats the last row pointer for a short tile and keeps only its rows. Each
// element is the same fma chain over kk as micro_scalar.
__attribute__((target("avx2,fma"))) void micro_avx2(const double* const* x, std::size_t /*rows*/, const double* panel,
                                                    std::size_t k, double acc[kRows][kPanel]) {
  __m256d a00 = _mm256_setzero_pd(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00;
  __m256d a30 = a00, a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00;
  const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
  for (std::size_t kk = 0; kk < k; ++kk) {
    const __m256d b0 = _mm256_loadu_pd(panel + kk * kPanel), b1 = _mm256_loadu_pd(panel + kk * kPanel + 4);
    __m256d v = _mm256_broadcast_sd(x0 + kk);
    a00 = _mm256_fmadd_pd(v, b0, a00);
    a01 = _mm256_fmadd_pd(v, b1, a01);
    v = _mm256_broadcast_sd(x1 + kk);
    a10 = _mm256_fmadd_pd(v, b0, a10);
    a11 = _mm256_fmadd_pd(v, b1, a11);
    v = _mm256_broadcast_sd(x2 + kk);
    a20 = _mm256_fmadd_pd(v, b0, a20);
    a21 = _mm256_fmadd_pd(v, b1, a21);
    v = _mm256_broadcast_sd(x3 + kk);
    a30 = _mm256_fmadd_pd(v, b0, a30);
    a31 = _mm256_fmadd_pd(v, b1, a31);
    v = _mm256_broadcast_sd(x4 + kk);
    a40 = _mm256_fmadd_pd(v, b0, a40);
    a41 = _mm256_fmadd_pd(v, b1, a41);
    v = _mm256_broadcast_sd(x5 + kk);
    a50 = _mm256_fmadd_pd(v, b0, a50);
    a51 = _mm256_fmadd_pd(v, b1, a51);
  }
  _mm256_storeu_pd(acc[0], a00);
  _mm256_storeu_pd(acc[0] + 4, a01);
  _mm256_storeu_pd(acc[1], a10);
  _mm256_storeu_pd(acc[1] + 4, a11);
  _mm256_storeu_pd(acc[2], a20);
  _mm256_storeu_pd(acc[2] + 4, a21);
  _mm256_storeu_pd(acc[3], a30);
  _mm256_storeu_pd(acc[3] + 4, a31);
  _mm256_storeu_pd(acc[4], a40);
  _mm256_storeu_pd(acc[4] + 4, a41);
  _mm256_storeu_pd(acc[5], a50);
  _mm256_storeu_pd(acc[5] + 4, a51);
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#else
bool have_avx2() { return false; }
#endif

using Micro = void (*)(const double* const*, std::size_t, const double*, std::size_t, double[kRows][kPanel]);

Micro micro() {
#ifdef REPLAYSSM_GEMM_X86
  if (have_avx2()) return micro_avx2;
#endif
  return micro_scalar;
}

}  // namespace

const char* gemm_path() { return have_avx2() ? "avx2-fma" : "scalar-fma"; }

void gemm_nt(const double* X, const double* W, double* Y, std::size_t m, std::size_t n, std::size_t k, int threads) {
  if (m == 0 || n == 0) return;
  const std::vector<double> P = pack(W, n, k);
  const std::size_t np = (n + kPanel - 1) / kPanel, ntiles = (m + kTile - 1) / kTile;
  const Micro mk = micro();
  const std::size_t nt = std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(std::max(1, threads)), ntiles));
  auto work = [&](std::size_t tid) {
    double acc[kRows][kPanel];
    for (std::size_t tile = tid; tile < ntiles; tile += nt) {
      const std::size_t r0 = tile * kTile, r1 = std::min(m, r0 + kTile);
      for (std::size_t p = 0; p < np; ++p) {
        const double* panel = P.data() + p * k * kPanel;
        const std::size_t c0 = p * kPanel, cols = std::min(kPanel, n - c0);
        for (std::size_t r = r0; r < r1; r += kRows) {
          const std::size_t rows = std::min(kRows, r1 - r);
          const double* xr[kRows];
          for (std::size_t i = 0; i < kRows; ++i) xr[i] = X + (r + std::min(i, rows - 1)) * k;
          mk(xr, rows, panel, k, acc);
          for (std::size_t i = 0; i < rows; ++i) std::copy(acc[i], acc[i] + cols, Y + (r + i) * n + c0);
        }
      }
    }
  };
  if (nt == 1) {
    work(0);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(nt);
  for (std::size_t i = 1; i < nt; ++i)
    pool.emplace_back([&, i] {
      try {
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  try {
    work(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace replayssm::runtime
