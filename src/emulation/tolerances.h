#pragma once
// Tolerances of the decode kernels and their emulation. These are named constants: nothing (no option, no environment
// variable) loosens them, and NaN never passes (compare() counts any non-finite element as bad).
//  * tolerance_vs_mode_aware (the end of this file; reference/README.md): the pass criterion of every mode, against
//    the mode-aware FP64 reference -- the FP32 arithmetic floor plus a bounded fraction of flipped stored codes.
//  * tolerance_vs_fp64: the distance of a mode to the exact recurrence, derived from the format's unit roundoff
//    (kernels/README.md explains it); a measurement, too wide to tell formats apart.
//  * kEmulationTolerance / kMinIdenticalBytes / tc_dots_tolerance: a backend against the emulation.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/compare.h"
#include "emulation/decode_api.h"

namespace replayssm::emu {

// Unit roundoff u_F: half the relative spacing of the element format at 1 (float formats), or the error of one
// code step relative to the scale group's amax (int8: 1/(2*127) ~ 2^-8; int16: 1/(2*32767) ~ 2^-16). Scaled formats
// measure against the group amax, which the constants below absorb.
inline double unit_roundoff(formats::FormatId f) {
  switch (f) {
    case formats::FormatId::fp32: return std::ldexp(1.0, -24);
    case formats::FormatId::bf16: return std::ldexp(1.0, -8);
    case formats::FormatId::bf16x2: return std::ldexp(1.0, -16);  // lo = bf16(x - hi): 2^-8 of 2^-8 |x|
    case formats::FormatId::fp16: return std::ldexp(1.0, -11);
    case formats::FormatId::fp8_e4m3: return std::ldexp(1.0, -4);
    case formats::FormatId::fp8_e5m2: return std::ldexp(1.0, -3);
    case formats::FormatId::int8:
    case formats::FormatId::int8_ef: return std::ldexp(1.0, -8);  // reads see the INT8 value; the residual feeds stores
    case formats::FormatId::int16: return std::ldexp(1.0, -16);
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

// The backend (CUDA) against the emulation: the same formulas, the same reduction tree and no contraction, so they
// agree to the bit: every output and state element equal (a difference of 0), every stored byte identical.
inline constexpr Tolerance kEmulationTolerance{0.0, 0.0, 0.0};
inline constexpr double kMinIdenticalBytes = 1.0;

// The verify kernel's tensor-core form (the FP32 verify's row dots as 3xTF32: each product within ~3 x 2^-22 of exact, ~12
// u_32 on top of the accumulation's gamma_K, which the RMS bound's margin of ~sqrt(K) absorbs) is held to the same.
// The step kernel's form 2 (the plan override dots=tc: the 8-bit row dots S_c q, S_c k on the tensor cores) is not the
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
// INT16 likewise; a column group has the V elements of one state column.
inline double group_factor(const Mode& m, int V, int K) {
  if (m.format != formats::FormatId::int8 && m.format != formats::FormatId::int8_ef &&
      m.format != formats::FormatId::int16)
    return 1.0;
  const double n = m.scaling == formats::Scaling::head     ? double(V) * K
                   : m.scaling == formats::Scaling::row    ? K
                   : m.scaling == formats::Scaling::column ? V
                                                           : 32.0;
  return std::sqrt(2.0 * std::log(std::max(n, 3.0)));
}

// The effective memory of a case in tokens: committed tokens (+ 1 for the initial state), capped by the memory
// 1 / (1 - a_max) of its largest decay.
inline double effective_tokens(long n_tokens, double mem) {
  return std::max(1.0, std::min(double(n_tokens) + 1.0, mem));
}
// Stores of the state within the recurrence's memory T_eff (the n_q of tolerance_vs_fp64).
inline double stores_in_memory(const Mode& m, double T_eff) {
  if (m.policy == Policy::replay_shared) return std::max(1.0, T_eff / m.L) + 1.0;
  if (m.policy == Policy::replay_split && !(m.arch == Arch::gdn && m.usource == USource::lp)) return 1.0;
  return T_eff;  // conventional-shared, GDN split u=lp
}

// The FP32 arithmetic floor in relative RMS (the random-walk bound above): kFp32Coeff 2^-24 sqrt(K) sqrt(T_eff).
inline double fp32_floor(int K, double T_eff) {
  return kFp32Coeff * std::ldexp(1.0, -24) * std::sqrt(double(K)) * std::sqrt(T_eff);
}

// n_tokens: committed tokens; mem: effective memory 1 / (1 - a_max) of the case's decays.
// The distance of a mode to the exact (plain FP64) recurrence: a measurement since the mode-aware reference exists
// (its LP term is capped at kLpCap = 1, which an all-zero output meets); tolerance_vs_mode_aware is the criterion.
inline Tolerance tolerance_vs_fp64(const Mode& m, int V, int K, long n_tokens, double mem) {
  const double T_eff = std::max(1.0, std::min(double(n_tokens) + 1.0, mem));
  double rel = kFp32Coeff * std::ldexp(1.0, -24) * std::sqrt(double(K)) * std::sqrt(T_eff);
  if (m.format != formats::FormatId::fp32) {
    const double n_q = stores_in_memory(m, T_eff);
    double lp = kLpCoeff * unit_roundoff(m.format) * group_factor(m, V, K) * std::sqrt(n_q);
    if (m.rounding != formats::Rounding::rne) lp *= kSrFactor;
    rel += std::min(lp, kLpCap);
  }
  // BF16 records: every record vector rounded once; a window's errors reach the state at its flush
  if (m.bf16_records()) rel += kLpCoeff * unit_roundoff(formats::FormatId::bf16) * std::sqrt(std::max(1.0, T_eff / m.L));
  return Tolerance{kMaxAbsFactor * rel, rel, 0.0};
}

// ================================ against the mode-aware reference ================================
// The mode-aware FP64 reference (reference/mode_aware.h) applies the format's codec exactly where the mode stores,
// so a correct emulation or kernel differs from it only by FP32 arithmetic, plus the rare stored code that lands on
// the neighbouring value because its FP32 and FP64 states straddle a rounding boundary (a flip; run_mode_aware takes
// flips over into the reference, so they do not propagate, and counts them). Nothing of the format's rounding error
// is in these bounds: a wrong format, scaling, policy, flush point, u-source or SR counter fails them
// (tests/kernels/test_mode_mutations.cpp).

// Stored copies, element by element (y_e the backend's decoded value, y_r the reference's, M = max |y_r| over the
// head):
//   equal    |y_e - y_r| <= equal_rel * max(|y_e|, |y_r|) + equal_abs_rel * M
//            quantised formats: a scale a few ulps apart (equal_rel = kStoreEqualCoeff * fp32_floor, below a quarter
//            of the smallest relative code step); fp32 (no codes, nothing to flip): the FP32 arithmetic itself,
//            equal_rel = equal_abs_rel = kMaxAbsFactor * fp32_floor, as the state's max-abs bound
//   flip     otherwise (quantised formats only), if
//            |y_e - y_r| <= kFlipSlack * (step_rel * max(|y_e|, |y_r|) + floor_rel * M + floor_abs) + arith_abs_rel * M
//            -- one code step of the format: step_rel = 2 u_F relative (+ 2 u_E4M3 for NVFP4, whose E4M3 block scale
//            can flip too), floor_rel / floor_abs the step near zero (the subnormal or integer step, relative to the
//            scale group's amax <= M, or absolute for unscaled formats); or any code difference no larger than the
//            FP32 arithmetic (arith_abs_rel = kMaxAbsFactor * fp32_floor: an element near zero whose FP32 and FP64
//            values lie codes or signs apart)
//   illegal  otherwise, or non-finite.
// Quantised formats: the reference takes over every legal element of the backend's store (equal or flip), so that the
// two stores agree exactly from there on and no code difference propagates; fp32: nothing is taken over.
// The flips of a run may be at most max_flip_fraction of the stored elements (+ kFlipCountSlack elements):
//   max_flip_fraction = kFlipFractionCoeff * fp32_floor(K, T_eff) / u_F   (NVFP4: + the same over u_E4M3, its block
//                                                                          scales flipping with their 16 elements)
// the chance that a code boundary falls between the FP32 and the FP64 state: their distance (relative, the FP32
// floor, which itself has a margin of ~20 over the measured distance) over the code spacing (relative, >= u_F).
inline constexpr double kStoreEqualCoeff = 16.0;   // equal_rel = kStoreEqualCoeff * fp32_floor (capped, see above)
inline constexpr double kFlipSlack = 1.25;         // a flip may exceed one code step by a quarter (saturation, MX)
inline constexpr double kFlipFractionCoeff = 1.0;
inline constexpr double kFlipCountSlack = 32.0;    // flips allowed on top of the fraction: two NVFP4 block scales (16
                                                   // elements each) or one MX block (32) flipping in a short run

// BF16 records: a record element (k, u or dt x) whose FP32 value and the reference's FP64 value straddle a BF16
// rounding boundary (chance ~ fp32_floor / u_bf16) lands one BF16 step (2 u_bf16 of itself) away from the reference's.
// Records are not stores: nothing takes them over, so the step moves that window's outputs and, after the flush, the
// state. A fraction f = floor / u of the elements off by 2u each moves a dot product over them by ~sqrt(f) 2u of its
// magnitude in relative RMS: rel_rms += kRecordFlipCoeff * sqrt(fp32_floor * u_bf16). A missing or misplaced
// rounding moves every element by up to u_bf16 (rel-RMS ~ u_bf16 / sqrt(3), not sqrt(floor / u_bf16) of it) and
// fails it (tests/kernels/test_mode_mutations.cpp).
inline constexpr double kRecordFlipCoeff = 2.0;
inline double record_flip_term(const Mode& m, double floor) {
  return m.bf16_records() ? kRecordFlipCoeff * std::sqrt(floor * unit_roundoff(formats::FormatId::bf16)) : 0.0;
}

struct StoreTolerance {
  double equal_rel = 0.0, equal_abs_rel = 0.0;
  double step_rel = 0.0, floor_rel = 0.0, floor_abs = 0.0, arith_abs_rel = 0.0;
  double max_flip_fraction = 0.0;
  bool quantised = false;  // false for fp32: no flips, nothing taken over
};

struct ModeAwareTolerance {
  Tolerance out_state;  // outputs and final state against the mode-aware reference
  StoreTolerance store;
};

// One code step of a format near its top (relative) and near zero (relative to the scale group's amax, or absolute).
inline void code_step(const Mode& m, double& step_rel, double& floor_rel, double& floor_abs) {
  using formats::FormatId;
  step_rel = 2.0 * unit_roundoff(m.format);
  floor_rel = 0.0;
  floor_abs = 0.0;
  const bool scaled = m.scaling != formats::Scaling::none;
  switch (m.format) {
    case FormatId::fp32: step_rel = 0.0; break;                        // no codes: nothing may flip
    case FormatId::bf16:                                               // bf16's smallest subnormal (bf16x2: lo's)
    case FormatId::bf16x2: floor_abs = std::ldexp(1.0, -133); break;
    case FormatId::fp16: floor_abs = std::ldexp(1.0, -24); break;      // fp16's smallest subnormal
    case FormatId::fp8_e4m3:  // subnormal step 2^-9 of the unit scale (tile: of amax / 240, not amax / 448)
      (scaled ? floor_rel : floor_abs) =
          scaled ? std::ldexp(1.0, -9) / (m.scaling == formats::Scaling::tile ? 240.0 : 448.0) : std::ldexp(1.0, -9);
      break;
    case FormatId::fp8_e5m2:
      (scaled ? floor_rel : floor_abs) = scaled ? std::ldexp(1.0, -16) / 57344.0 : std::ldexp(1.0, -16);
      break;
    case FormatId::int8:                                              // one integer step of amax / 127
    case FormatId::int8_ef: floor_rel = 1.0 / 127.0; break;
    case FormatId::int16: floor_rel = 1.0 / 32767.0; break;           // one integer step of amax / 32767
    case FormatId::nvfp4:                                             // 0.5 of a block scale ~ amax_block / 6
      step_rel += 2.0 * unit_roundoff(FormatId::fp8_e4m3);
      floor_rel = 0.5 / 6.0 * (1.0 + std::ldexp(1.0, -4));
      break;
    case FormatId::mxfp8: floor_rel = std::ldexp(1.0, -9 - 8); break;  // 2^-9 x 2^(floor(log2 amax) - 8)
    case FormatId::mxfp4: floor_rel = 0.5 / 4.0; break;               // 0.5 x 2^(floor(log2 amax) - 2)
  }
}

// Against the mode-aware reference: n_tokens committed tokens, mem the effective memory of the case's decays.
// Outputs and state: the FP32 floor alone (BF16 records: plus record_flip_term, in every use of the floor below), rel_rms = fp32_floor(K, T_eff), max-abs kMaxAbsFactor times it (of max|ref|).
// Always far below 1: an all-zero output (rel-RMS 1) never passes.
inline ModeAwareTolerance tolerance_vs_mode_aware(const Mode& m, int V, int K, long n_tokens, double mem) {
  (void)V;
  // The distance between the backend's state and the reference's: the FP32 floor (+ BF16 records' flips)
  const double fp32 = fp32_floor(K, effective_tokens(n_tokens, mem));
  const double floor = fp32 + record_flip_term(m, fp32);
  ModeAwareTolerance t;
  t.out_state = Tolerance{kMaxAbsFactor * floor, floor, 0.0};
  StoreTolerance& s = t.store;
  code_step(m, s.step_rel, s.floor_rel, s.floor_abs);
  s.quantised = m.format != formats::FormatId::fp32;
  if (!s.quantised) {
    s.equal_rel = kMaxAbsFactor * floor;
    s.equal_abs_rel = kMaxAbsFactor * floor;
    s.max_flip_fraction = 0.0;
  } else {
    s.equal_rel = std::min(kStoreEqualCoeff * floor, 0.25 * unit_roundoff(m.format));
    s.arith_abs_rel = kMaxAbsFactor * floor;
    s.max_flip_fraction = kFlipFractionCoeff * floor / unit_roundoff(m.format);
    // NVFP4: an E4M3 block scale flips as an element code does (chance floor / u_E4M3) and moves its 16 elements
    if (m.format == formats::FormatId::nvfp4)
      s.max_flip_fraction += kFlipFractionCoeff * floor / unit_roundoff(formats::FormatId::fp8_e4m3);
  }
  return t;
}

// ================================ an outside kernel of a mode ================================
// `validate --external theirs.h5 --activations acts.h5 --mode M`: an outside kernel's outputs and final state against
// the mode-aware reference of M, per (layer, head). Their stores are not in the file, so nothing of theirs can be
// taken over: a code that flips in their store (their FP32 and the FP64 state straddling a rounding boundary) stays
// flipped and moves later outputs. How far that carries depends on the input, so it is bounded from measurements of
// this input, never from the format's error alone:
//   rel_rms <= max(fp32_floor, kExternalEmulationFactor * ours, mode_error / kExternalSeparation)
// - ours: our emulation's distance to the reference without takeover (the largest over the layer's heads, outputs and
//   state), an FP32 implementation of the mode whose every store passes run_mode_aware's code-by-code check: FP32
//   arithmetic plus the flips an FP32 kernel keeps on this input. Another summation order flips another set.
// - mode_error: the head's distance between the mode-aware reference and the plain FP64 recurrence, the effect of the
//   format where the mode stores it. A kept flip is one element's rounding landing one code the other way, a small
//   fraction of the rounding of every element that makes mode_error; a kernel of the mode must reproduce the mode's
//   result kExternalSeparation times more closely than the mode's own error. A store missing, misplaced or of
//   another format moves outputs by about the mode's error and fails.
// validate prints ours, mode_error and the separation mode_error / bound per row; below kExternalMinSeparation the
// input cannot tell a misplaced store from arithmetic for that head (e.g. a head whose decay is near 0).
inline constexpr double kExternalEmulationFactor = 8.0;
inline constexpr double kExternalSeparation = 16.0;
inline constexpr double kExternalMinSeparation = 4.0;

// Relative RMS per (layer, head); the element-wise bound is off (infinite), as for the plain --external check: an
// outside kernel is judged by the one documented number, and NaN/Inf still fail through compare().
inline Tolerance external_mode_tolerance(int K, long n_tokens, double mem, double ours, double mode_error) {
  const double rel = std::max({fp32_floor(K, effective_tokens(n_tokens, mem)), kExternalEmulationFactor * ours,
                               mode_error / kExternalSeparation});
  return Tolerance{std::numeric_limits<double>::infinity(), rel, 0.0};
}

}  // namespace replayssm::emu
