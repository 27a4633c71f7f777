#pragma once
// Bit-exact element conversions float32 <-> {bf16, fp16, fp8 e4m3fn, fp8 e5m2, e2m1, int8, int16, e8m0}.
// Round to nearest even (as CUDA's cvt.rn[.satfinite]) or stochastic rounding with 32 caller-supplied random bits.
// All codes are sign-magnitude except int8 (two's complement). See src/formats/README.md for the NaN/Inf/-0 table.
#include <cstdint>

#include "formats/format_id.h"
#include "formats/hd.h"

namespace replayssm::formats {

namespace detail {

// Round |x| (float bits, sign cleared, finite) onto the grid of a binary format with MBITS stored mantissa bits
// and minimum normal exponent EMIN (unbiased; subnormals below it), returning the unsigned magnitude code
// (biased exponent << MBITS | mantissa) without any saturation: a value past the format's top binade gives a
// code past its largest finite code, and the caller saturates or maps to Inf.
//
// |x| = M * 2^E exactly (M < 2^24). The target's quantum in x's binade is 2^(max(e_x, EMIN) - MBITS); the s
// bits of M below it are the remainder R. RNE: up iff R > half or (R == half and the code is odd).
// SR: up iff rnd < floor(R / 2^s * 2^32), i.e. with probability (|x| - lo) / (hi - lo) to 32 bits.
//
// RNE is written branch-free (selects only, so that element loops vectorise): a float subnormal is taken as exponent
// field 1 (the same E = -149, and its binade is below EMIN either way), and shifts past 25 are clamped to 25 (M < 2^24
// is then below half: T = 0, no rounding up, as for any larger shift).
template <int MBITS, int EMIN>
REPLAYSSM_HD uint32_t round_magnitude_rne(uint32_t abits) {
  const uint32_t efield = abits >> 23;
  const uint32_t mant = abits & 0x7FFFFFu;
  const uint32_t M = efield == 0u ? mant : (mant | 0x800000u);
  const int32_t ef = efield == 0u ? 1 : static_cast<int32_t>(efield);
  const int32_t eb = ef - 127 > EMIN ? ef - 127 : EMIN;
  const int32_t s0 = (eb - MBITS) - (ef - 150);  // >= 13
  const uint32_t s = static_cast<uint32_t>(s0 < 25 ? s0 : 25);
  const uint32_t T = M >> s;
  const uint32_t R = M & ((1u << s) - 1u);
  const uint32_t half = 1u << (s - 1u);
  const uint32_t up = (R > half ? 1u : 0u) | ((R == half ? 1u : 0u) & T);
  return ((static_cast<uint32_t>(eb - EMIN) << MBITS) + T) + up;
}

template <int MBITS, int EMIN>
REPLAYSSM_HD uint32_t round_magnitude(uint32_t abits, Rounding r, uint32_t rnd) {
  if (r == Rounding::rne) return round_magnitude_rne<MBITS, EMIN>(abits);
  if (abits == 0u) return 0u;
  const uint32_t efield = abits >> 23;
  const uint32_t mant = abits & 0x7FFFFFu;
  uint32_t M;
  int E;
  int ex;
  if (efield == 0u) {  // float subnormal: below every EMIN used here (EMIN >= -126)
    M = mant;
    E = -149;
    ex = -127;
  } else {
    M = mant | 0x800000u;
    E = static_cast<int>(efield) - 150;
    ex = static_cast<int>(efield) - 127;
  }
  const int eb = ex > EMIN ? ex : EMIN;
  const int s = (eb - MBITS) - E;  // >= 23 - MBITS >= 13 for every format here
  uint32_t T;
  uint32_t R;
  uint32_t thr;  // SR threshold: R / 2^s as a 32-bit fixed-point fraction (floor)
  bool up;
  if (s >= 32) {
    T = 0u;
    R = M;
    thr = (s - 32 < 32) ? (M >> (s - 32)) : 0u;
    up = (r != Rounding::rne) ? (rnd < thr) : false;  // M < 2^24 <= 2^(s-1): below half
  } else {
    T = M >> s;
    R = M & ((1u << s) - 1u);
    const uint32_t half = 1u << (s - 1);
    if (r != Rounding::rne) {
      thr = R << (32 - s);
      up = rnd < thr;
    } else {
      up = (R > half) || (R == half && (T & 1u) != 0u);
    }
  }
  const uint32_t code = (static_cast<uint32_t>(eb - EMIN) << MBITS) + T;
  return up ? code + 1u : code;
}

// Value of an unsigned magnitude code of a (MBITS, EMIN) format with no special codes.
template <int MBITS, int EMIN>
REPLAYSSM_HD float magnitude_value(uint32_t code) {
  const uint32_t efield = code >> MBITS;
  const uint32_t mant = code & ((1u << MBITS) - 1u);
  // subnormal: mant * 2^(EMIN - MBITS), exact (2^(EMIN-MBITS) >= 2^-136 would be a float subnormal only for
  // bf16, whose subnormals are decoded by bit shifting instead). Both forms are computed and one selected (no branch:
  // element loops vectorise).
  const float sub =
      mul_rn(static_cast<float>(static_cast<int32_t>(mant)), bits_to_float(static_cast<uint32_t>(127 + EMIN - MBITS) << 23));
  const uint32_t fexp = static_cast<uint32_t>(static_cast<int>(efield) - 1 + EMIN + 127);
  const uint32_t normal = (fexp << 23) | (mant << (23 - MBITS));
  const uint32_t is_sub = 0u - static_cast<uint32_t>(efield == 0u);  // a mask, so that `sub` is not computed under a branch
  return bits_to_float((float_to_bits(sub) & is_sub) | (normal & ~is_sub));
}

}  // namespace detail

// ---- BF16: 1-8-7, bias 127. RNE; overflow -> Inf; NaN -> 0x7FFF (as __float2bfloat16_rn). ----
REPLAYSSM_HD uint16_t bf16_encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) {
  const uint32_t b = float_to_bits(x);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const uint32_t a = b & 0x7FFFFFFFu;
  const uint32_t af = a < 0x7F800000u ? a : 0u;  // NaN / Inf are selected below
  // RNE: bf16 shares float32's exponent, so round_magnitude<7, -126> keeps the top 16 bits of |x| and rounds the low
  // 16 to nearest even (subnormals and the carry into the exponent included): the classic add-and-shift, same bits.
  uint32_t c = r == Rounding::rne ? (af + 0x7FFFu + ((af >> 16) & 1u)) >> 16 : detail::round_magnitude<7, -126>(af, r, rnd);
  // past the largest finite value: SR takes the RNE result; either way at most Inf
  if (r != Rounding::rne && c > 0x7F7Fu) c = detail::round_magnitude_rne<7, -126>(af);
  c = c > 0x7F80u ? 0x7F80u : c;
  c = a == 0x7F800000u ? 0x7F80u : c;
  c = a > 0x7F800000u ? 0x7FFFu : (sign | c);
  return static_cast<uint16_t>(c);
}
REPLAYSSM_HD float bf16_decode(uint16_t c) { return bits_to_float(static_cast<uint32_t>(c) << 16); }

// ---- FP16: 1-5-10, bias 15. RNE; overflow (|x| >= 65520) -> Inf (as __float2half_rn); NaN -> 0x7FFF. ----
REPLAYSSM_HD uint16_t fp16_encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) {
  const uint32_t b = float_to_bits(x);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7FFFu;
  if (a == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
  uint32_t c = detail::round_magnitude<10, -14>(a, r, rnd);
  if (c > 0x7BFFu) {
    c = (r != Rounding::rne) ? detail::round_magnitude<10, -14>(a, Rounding::rne, 0) : c;
    if (c > 0x7C00u) c = 0x7C00u;
  }
  return static_cast<uint16_t>(sign | c);
}
REPLAYSSM_HD float fp16_decode(uint16_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x8000u) << 16;
  const uint32_t m = c & 0x7FFFu;
  if (m >= 0x7C00u) return bits_to_float(sign | (m == 0x7C00u ? 0x7F800000u : (0x7F800000u | ((m & 0x3FFu) << 13))));
  return bits_to_float(sign | float_to_bits(detail::magnitude_value<10, -14>(m)));
}

// ---- FP8 E4M3 "fn": 1-4-3, bias 7, max 448, no Inf, NaN = 0x7F/0xFF. satfinite: |x| > 448 and +-Inf -> +-448;
// NaN -> 0x7F (as __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)). ----
inline constexpr float kE4M3Max = 448.0f;
REPLAYSSM_HD uint8_t e4m3_encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) {
  const uint32_t b = float_to_bits(x);
  const uint32_t sign = (b >> 24) & 0x80u;
  const uint32_t a = b & 0x7FFFFFFFu;
  uint32_t c = detail::round_magnitude<3, -6>(a < 0x7F800000u ? a : 0u, r, rnd);
  c = c > 0x7Eu ? 0x7Eu : c;
  c = a == 0x7F800000u ? 0x7Eu : c;
  c = a > 0x7F800000u ? 0x7Fu : (sign | c);
  return static_cast<uint8_t>(c);
}
REPLAYSSM_HD float e4m3_decode(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  const uint32_t m = c & 0x7Fu;
  const uint32_t value = sign | float_to_bits(detail::magnitude_value<3, -6>(m));
  const uint32_t nan = 0u - static_cast<uint32_t>(m == 0x7Fu);  // a mask (no branch around the value)
  return bits_to_float((0x7FFFFFFFu & nan) | (value & ~nan));
}
// Four E4M3 codes of one word (code e in byte e) decoded and times the scale s with one multiplication each: a code's
// sign and 7 magnitude bits placed at FP32 bits 31 and 26..20 read as a float x are its value times 2^-120 exactly
// (an FP32 denormal for the E4M3 subnormals), so x * (s 2^120) is the exact value * s under one rounding, the bits
// of mul_rn(e4m3_decode(c), s). Returns false where that does not hold, out unspecified: a NaN code in the word, or
// s 2^120 not finite (|s| >= 2^8, Inf, NaN); the caller then decodes code by code. The kernels' hot decode (about
// 4 instructions per code instead of 10; kernels/PERF_NOTES.md). (The uint32 -> int32 conversion wraps and
// t >> 4 on a negative int32 is arithmetic: GCC, Clang and NVCC define both so, C++20 requires them.)
// Whether a word of four E4M3 codes holds a NaN code (0x7F / 0xFF): a byte's low 7 bits all set carry into its top bit.
REPLAYSSM_HD bool e4m3_word_has_nan(uint32_t w) { return (((w & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u) != 0u; }
REPLAYSSM_HD bool e4m3_decode4_scaled(uint32_t w, float s, float (&out)[4]) {
  const float s2 = mul_rn(s, 0x1p120f);
  if (e4m3_word_has_nan(w) || (float_to_bits(s2) & 0x7FFFFFFFu) >= 0x7F800000u) return false;
  for (int e = 0; e < 4; ++e) {
    const int32_t t = static_cast<int32_t>(w << (24 - 8 * e));  // code e in the top byte
    out[e] = mul_rn(bits_to_float(static_cast<uint32_t>(t >> 4) & 0x87F00000u), s2);
  }
  return true;
}

// ---- FP8 E5M2: 1-5-2, bias 15, max 57344, Inf 0x7C, NaN 0x7D-0x7F. satfinite: |x| > 57344 and +-Inf -> +-57344;
// NaN -> 0x7F (as __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)). ----
inline constexpr float kE5M2Max = 57344.0f;
REPLAYSSM_HD uint8_t e5m2_encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) {
  const uint32_t b = float_to_bits(x);
  const uint32_t sign = (b >> 24) & 0x80u;
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7Fu;
  uint32_t c = (a == 0x7F800000u) ? 0x7Bu : detail::round_magnitude<2, -14>(a, r, rnd);
  if (c > 0x7Bu) c = 0x7Bu;
  return static_cast<uint8_t>(sign | c);
}
REPLAYSSM_HD float e5m2_decode(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  const uint32_t m = c & 0x7Fu;
  if (m == 0x7Cu) return bits_to_float(sign | 0x7F800000u);
  if (m > 0x7Cu) return bits_to_float(0x7FFFFFFFu);
  return bits_to_float(sign | float_to_bits(detail::magnitude_value<2, -14>(m)));
}

// ---- E2M1 (FP4): 1-2-1, bias 1, values {0, .5, 1, 1.5, 2, 3, 4, 6}, no Inf/NaN. satfinite: |x| > 6 and +-Inf ->
// +-6; NaN -> +6 (0x7), as __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest). Code in the low 4 bits. ----
inline constexpr float kE2M1Max = 6.0f;
REPLAYSSM_HD uint8_t e2m1_encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) {
  const uint32_t b = float_to_bits(x);
  const uint32_t sign = (b >> 28) & 0x8u;
  const uint32_t a = b & 0x7FFFFFFFu;
  uint32_t c = detail::round_magnitude<1, 0>(a < 0x7F800000u ? a : 0u, r, rnd);
  c = c > 0x7u ? 0x7u : c;
  c = a == 0x7F800000u ? 0x7u : c;
  c = a > 0x7F800000u ? 0x7u : (sign | c);
  return static_cast<uint8_t>(c);
}
REPLAYSSM_HD float e2m1_decode(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x8u) << 28;
  return bits_to_float(sign | float_to_bits(detail::magnitude_value<1, 0>(c & 0x7u)));
}

namespace detail {
// Symmetric integer of P magnitude bits: rint(x) to nearest even (or SR), clamped to [-(2^P - 1), 2^P - 1]; NaN -> 0;
// +-Inf -> +-(2^P - 1). Integers are the grid of a format whose quantum is 1 in every binade below 2^P: MBITS = EMIN = P
// (for |x| < 2^P the binade exponent is max(e_x, P) = P and the quantum is 2^(P-P) = 1).
template <int P>
REPLAYSSM_HD int symmetric_int_encode(float x, Rounding r, uint32_t rnd) {
  constexpr uint32_t kTop = (1u << P) - 1u;
  const uint32_t b = float_to_bits(x);
  const bool neg = (b >> 31) != 0u;
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0;
  uint32_t t = a >= (static_cast<uint32_t>(127 + P) << 23) ? kTop : round_magnitude<P, P>(a, r, rnd);  // |x| >= 2^P
  if (t > kTop) t = kTop;
  const int v = static_cast<int>(t);
  return neg ? -v : v;
}
}  // namespace detail

// ---- INT8 symmetric: round(x) to nearest even integer (or SR), clamp to [-127, 127]; NaN -> 0 (as cvt.rni.sat.s8);
// +-Inf -> +-127. -128 is never produced. ----
inline constexpr float kInt8Max = 127.0f;
REPLAYSSM_HD int8_t int8_encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) {
  return static_cast<int8_t>(detail::symmetric_int_encode<7>(x, r, rnd));
}
REPLAYSSM_HD float int8_decode(int8_t c) { return static_cast<float>(c); }

// ---- BF16x2 (compensated, hi/lo): two bf16 words, hi = bf16(x) (RNE), lo = bf16(x - hi) (RNE; x - hi is exact);
// code = hi | lo << 16, value = hi + lo in FP32 (exact: lo is within half an ulp of hi and both have 8 bits). NaN ->
// hi 0x7FFF, lo 0; +-Inf -> hi +-Inf, lo 0; a finite x that bf16 rounds to Inf keeps hi = +-0x7F7F (the largest
// finite) and the rest in lo, and where lo's RNE would carry hi + lo past FLT_MAX lo is one code nearer zero, so a
// finite x decodes finite; lo = 0 carries hi's sign, so -0 decodes to -0. Decode of a
// NaN or Inf hi is hi alone (the bits of bf16_decode on the CPU and the GPU, not an FP32 addition's NaN). ----
REPLAYSSM_HD uint32_t bf16x2_encode(float x) {
  uint32_t hi = bf16_encode(x);
  if ((float_to_bits(x) & 0x7FFFFFFFu) >= 0x7F800000u) return hi;
  if ((hi & 0x7FFFu) == 0x7F80u) hi = (hi & 0x8000u) | 0x7F7Fu;
  const float r = x - bf16_decode(static_cast<uint16_t>(hi));
  uint32_t lo = r == 0.0f ? (hi & 0x8000u) : bf16_encode(r);
  // at the top of the range (|x| within half a bf16 ulp of FLT_MAX) lo's RNE can carry hi + lo past FLT_MAX: lo
  // then takes the neighbouring code toward zero, and the sum stays finite
  if (is_inf(bf16_decode(static_cast<uint16_t>(hi)) + bf16_decode(static_cast<uint16_t>(lo)))) lo -= 1u;
  return hi | (lo << 16);
}
REPLAYSSM_HD float bf16x2_decode(uint32_t c) {
  const float hi = bf16_decode(static_cast<uint16_t>(c & 0xFFFFu));
  if ((c & 0x7F80u) == 0x7F80u) return hi;  // NaN or Inf
  return hi + bf16_decode(static_cast<uint16_t>(c >> 16));
}

// ---- INT16 symmetric: the same rule on [-32767, 32767]; NaN -> 0; +-Inf and |x| >= 32768 -> +-32767; -32768 is
// never produced. ----
inline constexpr float kInt16Max = 32767.0f;
REPLAYSSM_HD int16_t int16_encode(float x, Rounding r = Rounding::rne, uint32_t rnd = 0) {
  return static_cast<int16_t>(detail::symmetric_int_encode<15>(x, r, rnd));
}
REPLAYSSM_HD float int16_decode(int16_t c) { return static_cast<float>(c); }

// ---- E8M0 (OCP MX v1.0 scale): 2^(c - 127), c = 0..254; 0xFF = NaN; no sign, no zero. ----
REPLAYSSM_HD float e8m0_decode(uint8_t c) {
  if (c == 0xFFu) return bits_to_float(0x7FFFFFFFu);
  if (c == 0u) return bits_to_float(0x00400000u);  // 2^-127 (a float subnormal)
  return bits_to_float(static_cast<uint32_t>(c) << 23);
}
// 2^(127 - c): the multiplier that divides by the scale exactly (c in 0..254).
REPLAYSSM_HD float e8m0_inverse(uint8_t c) {
  if (c == 0xFFu) return bits_to_float(0x7FFFFFFFu);
  if (c == 254u) return bits_to_float(0x00400000u);
  return bits_to_float(static_cast<uint32_t>(254u - c) << 23);
}
// OCP MX v1.0 shared scale: X = 2^(floor(log2(amax)) - emax_elem), clamped below at 2^-127 (so amax = 0 and
// subnormal amax give code 0); amax NaN or Inf -> 0xFF (NaN scale: the whole block decodes to NaN).
REPLAYSSM_HD uint8_t e8m0_from_amax(float amax, int emax_elem) {
  const uint32_t a = float_to_bits(amax) & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return 0xFFu;
  const int efield = static_cast<int>(a >> 23);  // floor(log2(amax)) = efield - 127 for normal amax
  if (efield == 0) return 0u;                    // zero or subnormal: floor(log2) - emax < -127
  const int biased = efield - emax_elem;         // (efield - 127 - emax) + 127
  return static_cast<uint8_t>(biased < 0 ? 0 : biased);
}

}  // namespace replayssm::formats
