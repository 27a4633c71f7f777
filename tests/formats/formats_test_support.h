// Shared by the number-format test files: each element format's error constants, bit helpers, independent
// reference values (ldexp on the fields, the compiler's _Float16, the add-bias trick for BF16), the table of
// small formats the exhaustive tests walk, and random head states with per-row magnitudes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "formats/format_id.h"
#include "formats/state_codec.h"

namespace formats_test {

using namespace replayssm::formats;

// Relative half-ulp of each element format (normal range), and the absolute half-quantum of its subnormals
// relative to its unit scale.
constexpr double kBf16Eps = 0x1p-8;   // 7 mantissa bits
constexpr double kFp16Eps = 0x1p-11;  // 10 mantissa bits
constexpr double kE4M3Eps = 0x1p-4;   // 3 mantissa bits
constexpr double kE5M2Eps = 0x1p-3;   // 2 mantissa bits
constexpr double kE2M1Eps = 0x1p-2;   // 1 mantissa bit
constexpr double kE4M3SubHalfQuantum = 0x1p-10;
constexpr double kE5M2SubHalfQuantum = 0x1p-17;
constexpr double kE2M1SubHalfQuantum = 0.25;
constexpr double kFloatSlack = 0x1p-21;  // a few float32 roundings in the scale arithmetic

inline uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float ffrom(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || fbits(a) == fbits(b); }

// Independent value of a sign-magnitude binary minifloat code with ebits/mbits/bias and no specials.
inline double minifloat_value(uint32_t code, int ebits, int mbits, int bias) {
  const uint32_t sign = (code >> (ebits + mbits)) & 1u;
  const uint32_t e = (code >> mbits) & ((1u << ebits) - 1u);
  const uint32_t m = code & ((1u << mbits) - 1u);
  double v = (e == 0) ? std::ldexp(static_cast<double>(m), 1 - bias - mbits)
                      : std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mbits), static_cast<int>(e) - bias);
  return sign ? -v : v;
}

inline uint16_t ref_bf16(float f) {  // the classic add-bias rounding
  const uint32_t u = fbits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline uint16_t ref_fp16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

struct Fmt8 {
  const char* name;
  int ebits, mbits, bias;
  uint32_t nbits;
  uint32_t max_code;  // largest finite magnitude code
  uint32_t (*enc)(float);
  float (*dec)(uint32_t);
};
inline uint32_t enc_e4m3(float x) { return e4m3_encode(x); }
inline float dec_e4m3(uint32_t c) { return e4m3_decode(static_cast<uint8_t>(c)); }
inline uint32_t enc_e5m2(float x) { return e5m2_encode(x); }
inline float dec_e5m2(uint32_t c) { return e5m2_decode(static_cast<uint8_t>(c)); }
inline uint32_t enc_e2m1(float x) { return e2m1_encode(x); }
inline float dec_e2m1(uint32_t c) { return e2m1_decode(static_cast<uint8_t>(c)); }
inline uint32_t enc_bf16(float x) { return bf16_encode(x); }
inline float dec_bf16(uint32_t c) { return bf16_decode(static_cast<uint16_t>(c)); }
inline uint32_t enc_fp16(float x) { return fp16_encode(x); }
inline float dec_fp16(uint32_t c) { return fp16_decode(static_cast<uint16_t>(c)); }

inline const Fmt8 kFmts[] = {
    {"e4m3", 4, 3, 7, 8, 0x7E, enc_e4m3, dec_e4m3},      {"e5m2", 5, 2, 15, 8, 0x7B, enc_e5m2, dec_e5m2},
    {"e2m1", 2, 1, 1, 4, 0x7, enc_e2m1, dec_e2m1},       {"bf16", 8, 7, 127, 16, 0x7F7F, enc_bf16, dec_bf16},
    {"fp16", 5, 10, 15, 16, 0x7BFF, enc_fp16, dec_fp16},
};

inline std::vector<float> random_state(std::mt19937& rng, int V, int K, bool row_scales = true) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-6.0f, 3.0f);
  std::vector<float> x(static_cast<std::size_t>(V) * K);
  for (int v = 0; v < V; ++v) {
    const float rs = row_scales ? std::exp2(ud(rng)) : 1.0f;
    for (int k = 0; k < K; ++k) x[static_cast<std::size_t>(v) * K + k] = nd(rng) * rs;
  }
  return x;
}


}  // namespace formats_test
