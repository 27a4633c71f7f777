#pragma once
// One definition for the host and the device: every function of src/formats is REPLAYSSM_HD.
// Plain C++17: `inline`. Under nvcc: `__host__ __device__ inline`.
// Float arithmetic goes through mul_rn/div_rn so that nvcc can never contract or approximate it
// (the host build uses -ffp-contract=off and no fast-math; the device uses the _rn intrinsics).
#include <cstdint>

#if defined(__CUDACC__)
#define REPLAYSSM_HD __host__ __device__ inline
#else
#define REPLAYSSM_HD inline
#endif

namespace replayssm::formats {

REPLAYSSM_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
#endif
}

REPLAYSSM_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
#endif
}

REPLAYSSM_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

REPLAYSSM_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

REPLAYSSM_HD bool is_nan(float x) { return (float_to_bits(x) & 0x7FFFFFFFu) > 0x7F800000u; }
REPLAYSSM_HD bool is_inf(float x) { return (float_to_bits(x) & 0x7FFFFFFFu) == 0x7F800000u; }
REPLAYSSM_HD float abs_f(float x) { return bits_to_float(float_to_bits(x) & 0x7FFFFFFFu); }

// fmaxf(acc, |x|) as the CUDA kernels compute a block amax (Transformer Engine): NaN is ignored.
REPLAYSSM_HD float amax_ignore_nan(float acc, float x) {
  const float a = abs_f(x);
  return (a > acc) ? a : acc;
}
// amax_ignore_nan over x[0..n) starting from acc (+0 or a previous amax). The maximum is order-free, and on non-NaN
// magnitudes the float order is the unsigned order of their bits, so it is taken as an integer max reduction (a
// vectorisable loop) with NaN mapped to 0: the same value as the sequential loop.
REPLAYSSM_HD float amax_ignore_nan_n(const float* x, int n, float acc) {
  uint32_t m = float_to_bits(acc);
  for (int k = 0; k < n; ++k) {
    uint32_t a = float_to_bits(x[k]) & 0x7FFFFFFFu;
    a &= 0u - static_cast<uint32_t>(a <= 0x7F800000u);  // NaN -> 0 (as a mask: GCC vectorises this form)
    m = m > a ? m : a;
  }
  return bits_to_float(m);
}
// max(acc, |x|) where a NaN anywhere makes the result NaN (OCP MX: a NaN in a block makes its scale NaN).
REPLAYSSM_HD float amax_propagate_nan(float acc, float x) {
  const float a = abs_f(x);
  if (is_nan(a) || is_nan(acc)) return bits_to_float(0x7FFFFFFFu);
  return (a > acc) ? a : acc;
}
// fminf(x, FLT_MAX): a NaN or +Inf becomes FLT_MAX (as fminf does).
REPLAYSSM_HD float fmin_flt_max(float x) {
  const float m = bits_to_float(0x7F7FFFFFu);
  return (x < m) ? x : m;
}

// The largest float below a finite positive x (x > 0 normal or subnormal): one ulp down, bit arithmetic only.
REPLAYSSM_HD float next_below(float x) { return bits_to_float(float_to_bits(x) - 1u); }

}  // namespace replayssm::formats
