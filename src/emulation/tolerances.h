#pragma once
// Tolerances of the decode kernels and their emulation, derived from each format's unit roundoff. These are
// named constants: nothing (no option, no environment variable) loosens them, and NaN never passes
// (compare() counts any non-finite element as bad). kernels/README.md explains the derivation.
#include <algorithm>
#include <cmath>

#include "core/compare.h"
#include "emulation/decode_api.h"

namespace replayssm::emu {

// Unit roundoff u_F: half the relative spacing of the element format at 1 (float formats), or the error of one
// code step relative to the scale group's amax (int8: 1/(2*127) ~ 2^-8). Scaled formats measure against the
// group amax, which the constants below absorb.
inline double unit_roundoff(formats::FormatId f) {
  switch (f) {
    case formats::FormatId::fp32: return std::ldexp(1.0, -24);
    case formats::FormatId::bf16: return std::ldexp(1.0, -8);
    case formats::FormatId::fp16: return std::ldexp(1.0, -11);
    case formats::FormatId::fp8_e4m3: return std::ldexp(1.0, -4);
    case formats::FormatId::fp8_e5m2: return std::ldexp(1.0, -3);
    case formats::FormatId::int8: return std::ldexp(1.0, -8);
    case formats::FormatId::nvfp4: return std::ldexp(1.0, -2);
    case formats::FormatId::mxfp8: return std::ldexp(1.0, -4);
    case formats::FormatId::mxfp4: return std::ldexp(1.0, -2);
  }
  return 1.0;
}

// FP32 arithmetic floor against FP64: every state element and output is a length-K dot product (error
// <= ~sqrt(K) u_32 in RMS for random signs), and errors of successive steps add like a random walk over the
// effective memory of the recurrence (tokens, capped by 1 / (1 - a_max)):
//   rel_rms <= kFp32Coeff * 2^-24 * sqrt(K) * sqrt(T_eff)
inline constexpr double kFp32Coeff = 2.0;
// One quantisation of the state to F costs <= u_F (x amax/rms of the group) in relative RMS; a policy
// re-quantises n_q times within the memory of the recurrence (conventional: every token; replay-shared: every L
// tokens; replay-split: once, the LP copy; GDN split u=lp: every token, through u):
//   rel_rms <= kLpCoeff * u_F * sqrt(n_q)  (SR: x kSrFactor; capped at kLpCap = 1, "no better than a zero output", reached only by 4-bit formats re-quantised every token; the backend-vs-emulation check (bit-exact) is what catches a wrong kernel there)
inline constexpr double kLpCoeff = 2.0;
inline constexpr double kSrFactor = 2.0;
inline constexpr double kLpCap = 1.0;
// Elementwise: |got - ref| <= kMaxAbsFactor * rel_rms_bound * max|ref| (outliers of the same error process).
inline constexpr double kMaxAbsFactor = 16.0;

// The backend (CUDA) against the emulation: the same formulas and the same reduction tree, so they agree to the
// bit; this bound leaves room only for a few ulps should a compiler reorder a sum (issue: <= 1e-6 relative).
inline constexpr Tolerance kEmulationTolerance{1e-5, 1e-6, 0.0};
// Fraction of identical stored bytes (quantised checkpoint) required of a backend against the emulation.
inline constexpr double kMinIdenticalBytes = 0.9999;

// v57: the verify kernel's form 2 (the FP32 verify's row dots as 3xTF32: each product within ~3 x 2^-22 of exact, ~12
// u_32 on top of the accumulation's gamma_K, which the RMS bound's margin of ~sqrt(K) absorbs) is held to the same.
// The step kernel's form 2 (kern::set_fast_step_form: the 8-bit row dots S_c q, S_c k on the tensor cores) is not the
// emulation's bits. Each of its row dots and the emulation's is within gamma_K = K u_32 of sum |c s x| of the exact dot
// (any summation order, the MMA's too), so they differ by <= 2 gamma_K of it. Where no flush has re-quantised the
// state since the dots differed (the ops before the first flush), the outputs differ by those dots times the decay
// total (and, GDN, through u): elementwise <= 2 gamma_K sqrt(K) of max |ref| (sum |terms| ~ sqrt(K) |dot| for random
// signs), and in relative RMS <= 2 gamma_K (rounding errors add like a random walk, ~sqrt(K) u_32 of sum |terms|, so
// this bound keeps a margin of ~sqrt(K) over the typical difference). After a flush a
// state element can round to the neighbouring code, so later ops are held to the FP64 tolerance alone
// (tolerance_vs_fp64), as every mode is. K is the head's (128 at the real dims).
inline Tolerance tc_dots_tolerance(int K) {
  const double gamma2 = 2.0 * double(K) * std::ldexp(1.0, -24);
  return Tolerance{gamma2 * std::sqrt(double(K)), gamma2, 0.0};
}

// INT8 has uniform absolute steps: its error relative to the RMS of the state grows with amax / rms of the scale
// group, ~ sqrt(2 ln n) for n Gaussian-like elements (n = V K per head, K per row, 32 per block).
inline double group_factor(const Mode& m, int V, int K) {
  if (m.format != formats::FormatId::int8) return 1.0;
  const double n = m.scaling == formats::Scaling::head ? double(V) * K : m.scaling == formats::Scaling::row ? K : 32.0;
  return std::sqrt(2.0 * std::log(std::max(n, 3.0)));
}

// n_tokens: committed tokens; mem: effective memory 1 / (1 - a_max) of the case's decays.
inline Tolerance tolerance_vs_fp64(const Mode& m, int V, int K, long n_tokens, double mem) {
  const double T_eff = std::max(1.0, std::min(double(n_tokens) + 1.0, mem));
  double rel = kFp32Coeff * std::ldexp(1.0, -24) * std::sqrt(double(K)) * std::sqrt(T_eff);
  if (m.format != formats::FormatId::fp32) {
    double n_q = T_eff;  // conventional-shared, GDN split u=lp
    if (m.policy == Policy::replay_shared) n_q = std::max(1.0, T_eff / m.L) + 1.0;
    if (m.policy == Policy::replay_split && !(m.arch == Arch::gdn && m.usource == USource::lp)) n_q = 1.0;
    double lp = kLpCoeff * unit_roundoff(m.format) * group_factor(m, V, K) * std::sqrt(n_q);
    if (m.rounding == formats::Rounding::sr) lp *= kSrFactor;
    rel += std::min(lp, kLpCap);
  }
  return Tolerance{kMaxAbsFactor * rel, rel, 0.0};
}

}  // namespace replayssm::emu
