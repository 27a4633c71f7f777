#include "emulation/fast_dot.h"

#include <cstdlib>

#include "emulation/decode_math.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define REPLAYSSM_DOT_X86 1
#endif

namespace replayssm::emu {
namespace {

float dot_portable(const float* x, const float* y, int K) { return canonical_dot(x, y, K); }
void prepare_copy(const float* y, int K, float* prep) {
  for (int i = 0; i < K; ++i) prep[i] = y[i];
}

#ifdef REPLAYSSM_DOT_X86
// Lane l of the tree owns elements 4l..4l+3 of every 128-wide chunk. Four loads of 8 floats cover 8 lanes; a 4x4
// transpose inside each 128-bit half gives E_e = element e of those lanes, in vector positions
// [l0, l2, l4, l6 | l1, l3, l5, l7]. Each lane then runs the same fma chain as canonical_dot (increasing i), and the
// pairwise tree p_l += p_{l+16}, +8, +4, +2, +1 is done on those positions.
__attribute__((target("avx2,fma"))) inline void lanes8(const float* x, const float* y, __m256& acc) {
  const __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8), x2 = _mm256_loadu_ps(x + 16),
               x3 = _mm256_loadu_ps(x + 24);
  const __m256 y0 = _mm256_loadu_ps(y), y1 = _mm256_loadu_ps(y + 8), y2 = _mm256_loadu_ps(y + 16),
               y3 = _mm256_loadu_ps(y + 24);
  const __m256 xt0 = _mm256_unpacklo_ps(x0, x1), xt1 = _mm256_unpacklo_ps(x2, x3);
  const __m256 xt2 = _mm256_unpackhi_ps(x0, x1), xt3 = _mm256_unpackhi_ps(x2, x3);
  const __m256 yt0 = _mm256_unpacklo_ps(y0, y1), yt1 = _mm256_unpacklo_ps(y2, y3);
  const __m256 yt2 = _mm256_unpackhi_ps(y0, y1), yt3 = _mm256_unpackhi_ps(y2, y3);
  constexpr int kLo = _MM_SHUFFLE(1, 0, 1, 0), kHi = _MM_SHUFFLE(3, 2, 3, 2);
  acc = _mm256_fmadd_ps(_mm256_shuffle_ps(xt0, xt1, kLo), _mm256_shuffle_ps(yt0, yt1, kLo), acc);  // e = 0
  acc = _mm256_fmadd_ps(_mm256_shuffle_ps(xt0, xt1, kHi), _mm256_shuffle_ps(yt0, yt1, kHi), acc);  // e = 1
  acc = _mm256_fmadd_ps(_mm256_shuffle_ps(xt2, xt3, kLo), _mm256_shuffle_ps(yt2, yt3, kLo), acc);  // e = 2
  acc = _mm256_fmadd_ps(_mm256_shuffle_ps(xt2, xt3, kHi), _mm256_shuffle_ps(yt2, yt3, kHi), acc);  // e = 3
}

// The transposed lane vectors E_0..E_3 of 8 lanes (32 consecutive elements).
__attribute__((target("avx2,fma"))) inline void transpose8(const float* x, __m256 E[4]) {
  const __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8), x2 = _mm256_loadu_ps(x + 16),
               x3 = _mm256_loadu_ps(x + 24);
  const __m256 t0 = _mm256_unpacklo_ps(x0, x1), t1 = _mm256_unpacklo_ps(x2, x3);
  const __m256 t2 = _mm256_unpackhi_ps(x0, x1), t3 = _mm256_unpackhi_ps(x2, x3);
  constexpr int kLo = _MM_SHUFFLE(1, 0, 1, 0), kHi = _MM_SHUFFLE(3, 2, 3, 2);
  E[0] = _mm256_shuffle_ps(t0, t1, kLo);
  E[1] = _mm256_shuffle_ps(t0, t1, kHi);
  E[2] = _mm256_shuffle_ps(t2, t3, kLo);
  E[3] = _mm256_shuffle_ps(t2, t3, kHi);
}

// The pairwise tree over the four accumulators of lanes 0..7, 8..15, 16..23, 24..31 (positions as in lanes8).
__attribute__((target("avx2,fma"))) inline float tree(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 c = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));  // off 16, then off 8
  const __m256 d = _mm256_add_ps(c, _mm256_shuffle_ps(c, c, _MM_SHUFFLE(1, 0, 3, 2)));  // off 4
  const __m256 e = _mm256_add_ps(d, _mm256_shuffle_ps(d, d, _MM_SHUFFLE(2, 3, 0, 1)));  // off 2
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(e), _mm256_extractf128_ps(e, 1)));  // off 1
}

// prep[base + 32 g + 8 e ..] = E_e of lanes 8g..8g+7 of chunk `base` (K % 128 == 0; otherwise a plain copy).
__attribute__((target("avx2,fma"))) void prepare_avx2(const float* y, int K, float* prep) {
  if (K % (4 * kLanes) != 0) return prepare_copy(y, K, prep);
  for (int base = 0; base < K; base += 32) {
    __m256 E[4];
    transpose8(y + base, E);
    for (int e = 0; e < 4; ++e) _mm256_storeu_ps(prep + base + 8 * e, E[e]);
  }
}

__attribute__((target("avx2,fma"))) float dot_prepared_avx2(const float* x, const float* prep, int K) {
  if (K % (4 * kLanes) != 0) return canonical_dot(x, prep, K);
  __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int base = 0; base < K; base += 4 * kLanes)
    for (int g = 0; g < 4; ++g) {
      __m256 E[4];
      const int off = base + 32 * g;
      transpose8(x + off, E);
      for (int e = 0; e < 4; ++e) a[g] = _mm256_fmadd_ps(E[e], _mm256_loadu_ps(prep + off + 8 * e), a[g]);
    }
  return tree(a[0], a[1], a[2], a[3]);
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* x, const float* y, int K) {
  if (K % (4 * kLanes) != 0) return canonical_dot(x, y, K);
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  for (int base = 0; base < K; base += 4 * kLanes) {
    lanes8(x + base, y + base, a0);        // lanes 0..7
    lanes8(x + base + 32, y + base + 32, a1);  // lanes 8..15
    lanes8(x + base + 64, y + base + 64, a2);  // lanes 16..23
    lanes8(x + base + 96, y + base + 96, a3);  // lanes 24..31
  }
  const __m256 c = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));  // off 16, then off 8
  const __m256 d = _mm256_add_ps(c, _mm256_shuffle_ps(c, c, _MM_SHUFFLE(1, 0, 3, 2)));  // off 4: l0+l4 at 0, l1+l5 at 4
  const __m256 e = _mm256_add_ps(d, _mm256_shuffle_ps(d, d, _MM_SHUFFLE(2, 3, 0, 1)));  // off 2: at 0 and 4
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(e), _mm256_extractf128_ps(e, 1)));  // off 1
}

bool have_avx2_fma() {
  // REPLAYSSM_NO_AVX2 (any value) forces the portable paths, to check that they give the same bits.
  static const bool yes =
      std::getenv("REPLAYSSM_NO_AVX2") == nullptr && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#endif

}  // namespace

DotFn canonical_dot_fn() {
#ifdef REPLAYSSM_DOT_X86
  if (have_avx2_fma()) return dot_avx2;
#endif
  return dot_portable;
}

PreparedDot canonical_dot_prepared_fns() {
#ifdef REPLAYSSM_DOT_X86
  if (have_avx2_fma()) return PreparedDot{prepare_avx2, dot_prepared_avx2};
#endif
  return PreparedDot{prepare_copy, dot_portable};
}

const char* canonical_dot_path() { return canonical_dot_fn() == dot_portable ? "portable" : "avx2-fma"; }

}  // namespace replayssm::emu
