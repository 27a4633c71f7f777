// Number formats: every code, every tie, saturation, subnormals, -0, NaN/Inf, scales, stochastic rounding and
// head-state round trips. Reference values come from formulas written independently of src/formats (ldexp on
// the fields, a table for E2M1, the compiler's _Float16 for FP16, the add-bias trick for BF16).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "formats/format_id.h"
#include "formats/state_codec.h"

using namespace replayssm::formats;

namespace {

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

uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float ffrom(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || fbits(a) == fbits(b); }

// Independent value of a sign-magnitude binary minifloat code with ebits/mbits/bias and no specials.
double minifloat_value(uint32_t code, int ebits, int mbits, int bias) {
  const uint32_t sign = (code >> (ebits + mbits)) & 1u;
  const uint32_t e = (code >> mbits) & ((1u << ebits) - 1u);
  const uint32_t m = code & ((1u << mbits) - 1u);
  double v = (e == 0) ? std::ldexp(static_cast<double>(m), 1 - bias - mbits)
                      : std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mbits), static_cast<int>(e) - bias);
  return sign ? -v : v;
}

uint16_t ref_bf16(float f) {  // the classic add-bias rounding
  const uint32_t u = fbits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
uint16_t ref_fp16(float f) {
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
uint32_t enc_e4m3(float x) { return e4m3_encode(x); }
float dec_e4m3(uint32_t c) { return e4m3_decode(static_cast<uint8_t>(c)); }
uint32_t enc_e5m2(float x) { return e5m2_encode(x); }
float dec_e5m2(uint32_t c) { return e5m2_decode(static_cast<uint8_t>(c)); }
uint32_t enc_e2m1(float x) { return e2m1_encode(x); }
float dec_e2m1(uint32_t c) { return e2m1_decode(static_cast<uint8_t>(c)); }
uint32_t enc_bf16(float x) { return bf16_encode(x); }
float dec_bf16(uint32_t c) { return bf16_decode(static_cast<uint16_t>(c)); }
uint32_t enc_fp16(float x) { return fp16_encode(x); }
float dec_fp16(uint32_t c) { return fp16_decode(static_cast<uint16_t>(c)); }

const Fmt8 kFmts[] = {
    {"e4m3", 4, 3, 7, 8, 0x7E, enc_e4m3, dec_e4m3},      {"e5m2", 5, 2, 15, 8, 0x7B, enc_e5m2, dec_e5m2},
    {"e2m1", 2, 1, 1, 4, 0x7, enc_e2m1, dec_e2m1},       {"bf16", 8, 7, 127, 16, 0x7F7F, enc_bf16, dec_bf16},
    {"fp16", 5, 10, 15, 16, 0x7BFF, enc_fp16, dec_fp16},
};

std::vector<float> random_state(std::mt19937& rng, int V, int K, bool row_scales = true) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-6.0f, 3.0f);
  std::vector<float> x(static_cast<std::size_t>(V) * K);
  for (int v = 0; v < V; ++v) {
    const float rs = row_scales ? std::exp2(ud(rng)) : 1.0f;
    for (int k = 0; k < K; ++k) x[static_cast<std::size_t>(v) * K + k] = nd(rng) * rs;
  }
  return x;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ decode tables

TEST_CASE("every E4M3 code decodes to its value", "[formats][decode]") {
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = e4m3_decode(static_cast<uint8_t>(c));
    INFO("code " << c);
    if ((c & 0x7F) == 0x7F) {
      CHECK(std::isnan(v));
    } else {
      CHECK(static_cast<double>(v) == minifloat_value(c, 4, 3, 7));
    }
  }
  CHECK(e4m3_decode(0x7E) == 448.0f);
  CHECK(e4m3_decode(0xFE) == -448.0f);
  CHECK(e4m3_decode(0x01) == std::ldexp(1.0f, -9));
  CHECK(e4m3_decode(0x07) == 7 * std::ldexp(1.0f, -9));
  CHECK(e4m3_decode(0x08) == std::ldexp(1.0f, -6));
  CHECK(e4m3_decode(0x38) == 1.0f);
  CHECK(e4m3_decode(0x78) == 256.0f);
  CHECK(std::signbit(e4m3_decode(0x80)));
  CHECK(e4m3_decode(0x80) == 0.0f);
}

// The kernels' four-code decode (one multiplication per code) against e4m3_decode then mul_rn, bit for bit: every code
// in every byte position, beside random neighbours, over scales from the smallest denormal to just under 2^8 (where
// 2^120 s stops being finite), and the cases it must refuse (a NaN code anywhere in the word, |s| >= 2^8, Inf, NaN).
TEST_CASE("e4m3_decode4_scaled equals e4m3_decode times the scale for every code", "[formats][decode]") {
  std::mt19937 rng(20261129);
  std::vector<float> scales = {1.0f, 0.0f, -0.0f, 0x1p-149f, 0x1p-140f, 0x1.8p-127f, 0x1p-126f, 1.0f / 448.0f,
                               0x1p-20f, 3.0f, 255.0f, std::nextafter(256.0f, 0.0f), 0x1p-9f};
  std::uniform_real_distribution<float> expo(-149.0f, 8.0f);
  for (int i = 0; i < 200; ++i) scales.push_back(std::nextafter(std::exp2(expo(rng)), 0.0f));
  for (int i = 0; i < 20; ++i) scales.push_back(-scales[13 + i]);  // negative scales (never made by the codecs)
  scales.push_back(-3.0f);
  scales.push_back(-0x1p-149f);
  const float refuse[] = {256.0f, 0x1p100f, -256.0f, std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  const auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  uint64_t compared = 0, mismatched = 0, wrong_refusals = 0;
  for (uint32_t c = 0; c < 256; ++c) {
    for (int pos = 0; pos < 4; ++pos) {
      for (int trial = 0; trial < 4; ++trial) {
        uint32_t codes[4];
        for (auto& x : codes) {
          x = rng() & 0xFFu;
          if ((x & 0x7Fu) == 0x7Fu) x ^= 1u;  // neighbours are never NaN codes
        }
        codes[pos] = c;
        const uint32_t w = codes[0] | (codes[1] << 8) | (codes[2] << 16) | (codes[3] << 24);
        const bool has_nan = (c & 0x7Fu) == 0x7Fu;
        for (const float s : scales) {
          float out[4];
          const bool ok = e4m3_decode4_scaled(w, s, out);
          if (ok == has_nan) ++wrong_refusals;
          if (!ok) continue;
          for (int e = 0; e < 4; ++e) {
            ++compared;
            if (bits(out[e]) != bits(mul_rn(e4m3_decode(static_cast<uint8_t>(codes[e])), s))) ++mismatched;
          }
        }
        float out[4];
        for (const float s : refuse) wrong_refusals += e4m3_decode4_scaled(w, s, out) ? 1 : 0;
      }
    }
  }
  CHECK(compared == uint64_t{256 - 2} * 4 * 4 * scales.size() * 4);
  CHECK(mismatched == 0);
  CHECK(wrong_refusals == 0);
}

TEST_CASE("every E5M2 code decodes to its value", "[formats][decode]") {
  for (uint32_t c = 0; c < 256; ++c) {
    const float v = e5m2_decode(static_cast<uint8_t>(c));
    INFO("code " << c);
    const uint32_t m = c & 0x7F;
    if (m == 0x7C) {
      CHECK(std::isinf(v));
      CHECK(std::signbit(v) == (c >= 0x80));
    } else if (m > 0x7C) {
      CHECK(std::isnan(v));
    } else {
      CHECK(static_cast<double>(v) == minifloat_value(c, 5, 2, 15));
    }
  }
  CHECK(e5m2_decode(0x7B) == 57344.0f);
  CHECK(e5m2_decode(0x01) == std::ldexp(1.0f, -16));
  CHECK(e5m2_decode(0x04) == std::ldexp(1.0f, -14));
  CHECK(e5m2_decode(0x3C) == 1.0f);
}

TEST_CASE("every E2M1 code decodes to its value", "[formats][decode]") {
  const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint32_t c = 0; c < 16; ++c) {
    INFO("code " << c);
    const float v = e2m1_decode(static_cast<uint8_t>(c));
    CHECK(std::fabs(v) == table[c & 7]);
    CHECK(std::signbit(v) == (c >= 8));
    CHECK(static_cast<double>(v) == minifloat_value(c, 2, 1, 1));
  }
}

TEST_CASE("every E8M0 and INT8 code decodes to its value", "[formats][decode]") {
  for (uint32_t c = 0; c < 255; ++c) {
    INFO("code " << c);
    CHECK(static_cast<double>(e8m0_decode(static_cast<uint8_t>(c))) == std::ldexp(1.0, static_cast<int>(c) - 127));
    CHECK(static_cast<double>(e8m0_inverse(static_cast<uint8_t>(c))) == std::ldexp(1.0, 127 - static_cast<int>(c)));
  }
  CHECK(std::isnan(e8m0_decode(0xFF)));
  CHECK(e8m0_decode(127) == 1.0f);
  for (int c = -128; c < 128; ++c) CHECK(int8_decode(static_cast<int8_t>(c)) == static_cast<float>(c));
}

TEST_CASE("every BF16 and FP16 code decodes to its value", "[formats][decode]") {
  for (uint32_t c = 0; c < 65536; ++c) {
    const float b = bf16_decode(static_cast<uint16_t>(c));
    const uint32_t be = (c >> 7) & 0xFF;
    if (be == 0xFF) {
      REQUIRE(((c & 0x7F) == 0 ? std::isinf(b) : std::isnan(b)));
    } else {
      REQUIRE(static_cast<double>(b) == minifloat_value(c, 8, 7, 127));
    }
    const float h = fp16_decode(static_cast<uint16_t>(c));
    _Float16 hr;
    const uint16_t c16 = static_cast<uint16_t>(c);
    std::memcpy(&hr, &c16, 2);
    REQUIRE(same_float(h, static_cast<float>(hr)));
    if (((c >> 10) & 0x1F) != 0x1F) REQUIRE(static_cast<double>(h) == minifloat_value(c, 5, 10, 15));
  }
  CHECK(fp16_decode(0x7BFF) == 65504.0f);
  CHECK(fp16_decode(0x0001) == std::ldexp(1.0f, -24));
}

TEST_CASE("encode(decode(c)) == c for every non-NaN code", "[formats][roundtrip]") {
  for (const Fmt8& f : kFmts) {
    INFO(f.name);
    const uint32_t n = 1u << f.nbits;
    for (uint32_t c = 0; c < n; ++c) {
      const float v = f.dec(c);
      if (std::isnan(v)) continue;
      if (std::isinf(v) && (f.nbits == 8)) continue;  // E5M2 Inf saturates to 57344 (satfinite)
      INFO("code " << c);
      CHECK(f.enc(v) == c);
    }
  }
  for (int c = -127; c < 128; ++c) CHECK(int8_encode(static_cast<float>(c)) == c);
  CHECK(int8_encode(-128.0f) == -127);  // -128 is never produced (symmetric)
}

// ------------------------------------------------------------------------------------------------ rounding

TEST_CASE("every tie rounds to even, and nextafter on each side rounds to the nearer code", "[formats][rne]") {
  for (const Fmt8& f : kFmts) {
    INFO(f.name);
    const uint32_t smask = 1u << (f.nbits - 1);
    for (uint32_t sign : {0u, smask}) {
      for (uint32_t c = 0; c < f.max_code; ++c) {
        const float lo = f.dec(sign | c);
        const float hi = f.dec(sign | (c + 1));
        const double mid_d = (static_cast<double>(lo) + static_cast<double>(hi)) / 2;
        const float mid = static_cast<float>(mid_d);
        REQUIRE(static_cast<double>(mid) == mid_d);  // one more bit than the format: exact in float
        const uint32_t even = (c % 2 == 0) ? c : c + 1;
        INFO("code " << c << " sign " << sign << " mid " << mid);
        CHECK(f.enc(mid) == (sign | even));
        const float toward_hi = std::nextafter(mid, hi);
        const float toward_lo = std::nextafter(mid, lo);
        CHECK(f.enc(toward_hi) == (sign | (c + 1)));
        // -0 and +0 are both "the lower neighbour" of the first tie
        CHECK((f.enc(toward_lo) & (smask - 1)) == c);
      }
    }
  }
  // int8: x.5 ties to even
  for (int i = -127; i < 127; ++i) {
    const float mid = static_cast<float>(i) + 0.5f;
    const int even = (i % 2 == 0) ? i : i + 1;
    CHECK(int8_encode(mid) == even);
    CHECK(int8_encode(std::nextafter(mid, 1000.0f)) == i + 1);
    CHECK(int8_encode(std::nextafter(mid, -1000.0f)) == i);
  }
}

TEST_CASE("saturation at and past the maximum; NaN and Inf as documented", "[formats][saturate]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big[] = {448.0f, 449.0f, 464.0f, std::nextafter(464.0f, 0.0f), 465.0f, 480.0f, 1e6f, 3e38f, inf};
  for (float v : big) {
    INFO(v);
    CHECK(e4m3_encode(v) == 0x7E);
    CHECK(e4m3_encode(-v) == 0xFE);
  }
  CHECK(e4m3_encode(nan) == 0x7F);
  CHECK(e4m3_encode(-nan) == 0x7F);
  for (float v : {57344.0f, 59392.0f, 61440.0f, 1e9f, inf}) {
    CHECK(e5m2_encode(v) == 0x7B);
    CHECK(e5m2_encode(-v) == 0xFB);
  }
  CHECK(e5m2_encode(nan) == 0x7F);
  for (float v : {6.0f, 6.5f, 7.0f, 8.0f, 1e30f, inf}) {
    CHECK(e2m1_encode(v) == 0x7);
    CHECK(e2m1_encode(-v) == 0xF);
  }
  CHECK(e2m1_encode(nan) == 0x7);  // CUDA: NaN -> +6 (E2M1 has no NaN)
  CHECK(e2m1_encode(-nan) == 0x7);
  CHECK(int8_encode(127.49f) == 127);
  CHECK(int8_encode(127.5f) == 127);
  CHECK(int8_encode(1e9f) == 127);
  CHECK(int8_encode(-1e9f) == -127);
  CHECK(int8_encode(inf) == 127);
  CHECK(int8_encode(-inf) == -127);
  CHECK(int8_encode(nan) == 0);
  // bf16 / fp16: overflow goes to Inf (RNE, as __float2bfloat16_rn / __float2half_rn), NaN -> 0x7FFF
  CHECK(fp16_encode(65504.0f) == 0x7BFF);
  CHECK(fp16_encode(std::nextafter(65520.0f, 0.0f)) == 0x7BFF);
  CHECK(fp16_encode(65520.0f) == 0x7C00);
  CHECK(fp16_encode(-1e6f) == 0xFC00);
  CHECK(fp16_encode(inf) == 0x7C00);
  CHECK(fp16_encode(nan) == 0x7FFF);
  CHECK(bf16_encode(3.4e38f) == 0x7F80);
  CHECK(bf16_encode(3.3895e38f) == 0x7F7F);
  CHECK(bf16_encode(3.38e38f) == 0x7F7E);
  CHECK(bf16_encode(-inf) == 0xFF80);
  CHECK(bf16_encode(-nan) == 0x7FFF);
}

TEST_CASE("subnormals and -0", "[formats][subnormal]") {
  const float tiny = std::numeric_limits<float>::denorm_min();
  CHECK(e4m3_encode(std::ldexp(1.0f, -9)) == 0x01);
  CHECK(e4m3_encode(std::ldexp(1.0f, -10)) == 0x00);  // tie with 0 -> even (0)
  CHECK(e4m3_encode(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(e4m3_encode(-std::ldexp(1.0f, -10)) == 0x80);
  CHECK(e4m3_encode(std::ldexp(3.0f, -10)) == 0x02);  // 1.5 quanta: tie -> even
  CHECK(e4m3_encode(std::ldexp(15.0f, -10)) == 0x08);  // 7.5 quanta: up to the first normal 2^-6
  CHECK(e5m2_encode(std::ldexp(1.0f, -16)) == 0x01);
  CHECK(e5m2_encode(std::ldexp(1.0f, -17)) == 0x00);
  CHECK(e2m1_encode(0.25f) == 0x0);
  CHECK(e2m1_encode(0.26f) == 0x1);
  CHECK(e2m1_encode(0.75f) == 0x2);  // tie between .5 (odd) and 1 (even)
  CHECK(e2m1_encode(-0.1f) == 0x8);
  CHECK(fp16_encode(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(fp16_encode(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(fp16_encode(std::ldexp(3.0f, -25)) == 0x0002);
  CHECK(bf16_encode(tiny) == 0x0000);
  CHECK(bf16_encode(ffrom(0x00010000u)) == 0x0001);  // float subnormal that is a bf16 subnormal
  CHECK(bf16_encode(ffrom(0x00018000u)) == 0x0002);  // tie -> even
  // float subnormal inputs underflow to a signed zero
  for (float t : {tiny, -tiny, ffrom(0x007FFFFFu), -ffrom(0x007FFFFFu)}) {
    const bool neg = std::signbit(t);
    CHECK(e4m3_encode(t) == (neg ? 0x80 : 0x00));
    CHECK(e5m2_encode(t) == (neg ? 0x80 : 0x00));
    CHECK(e2m1_encode(t) == (neg ? 0x8 : 0x0));
    CHECK(fp16_encode(t) == (neg ? 0x8000 : 0x0000));
    CHECK(int8_encode(t) == 0);
  }
  // -0
  CHECK(e4m3_encode(-0.0f) == 0x80);
  CHECK(e5m2_encode(-0.0f) == 0x80);
  CHECK(e2m1_encode(-0.0f) == 0x8);
  CHECK(bf16_encode(-0.0f) == 0x8000);
  CHECK(fp16_encode(-0.0f) == 0x8000);
  CHECK(int8_encode(-0.0f) == 0);
  CHECK(std::signbit(e4m3_decode(0x80)));
  CHECK(std::signbit(e2m1_decode(0x8)));
  CHECK(std::signbit(fp16_decode(0x8000)));
}

TEST_CASE("BF16 and FP16 match bit-level references on many random floats", "[formats][random]") {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_int_distribution<uint32_t> near(0x33000000u, 0x47800000u);  // around the fp16 range
  for (int i = 0; i < 2000000; ++i) {
    const float a = ffrom(bits(rng));
    REQUIRE(bf16_encode(a) == ref_bf16(a));
    const uint16_t h = fp16_encode(a);
    const uint16_t hr = ref_fp16(a);
    if (std::isnan(a)) {
      REQUIRE(h == 0x7FFF);
    } else {
      REQUIRE(h == hr);
    }
    const float b = ffrom(near(rng) | (bits(rng) & 0x80000000u));
    REQUIRE(fp16_encode(b) == ref_fp16(b));
    // fp8/fp4 against "the nearest code, ties to even" searched in the decode table
  }
}

TEST_CASE("FP8/FP4/INT8 encoders pick the nearest representable value (search reference)", "[formats][random]") {
  std::mt19937 rng(777);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  struct F {
    uint32_t (*enc)(float);
    float (*dec)(uint32_t);
    uint32_t max_code, smask;
    float range;
  };
  const F fs[] = {{enc_e4m3, dec_e4m3, 0x7E, 0x80, 500.0f},
                  {enc_e5m2, dec_e5m2, 0x7B, 0x80, 60000.0f},
                  {enc_e2m1, dec_e2m1, 0x7, 0x8, 7.0f}};
  for (const F& f : fs) {
    for (int i = 0; i < 200000; ++i) {
      const float x = ud(rng) * f.range * std::exp2(-static_cast<float>(i % 12));
      // nearest by brute force; ties to the even code
      uint32_t best = 0;
      double bestd = 1e300;
      for (uint32_t c = 0; c <= f.max_code; ++c) {
        const double d = std::fabs(std::fabs(static_cast<double>(x)) - static_cast<double>(f.dec(c)));
        if (d < bestd || (d == bestd && (c % 2 == 0))) {
          bestd = d;
          best = c;
        }
      }
      const uint32_t want = (std::signbit(x) ? f.smask : 0u) | best;
      INFO(x);
      REQUIRE(f.enc(x) == want);
    }
  }
}

// ------------------------------------------------------------------------------------------------ stochastic

namespace {
template <class Enc, class Dec>
void check_sr_unbiased(const char* name, float x, float lo, float hi, Enc enc, Dec dec) {
  INFO(name << " x=" << x << " lo=" << lo << " hi=" << hi);
  const int n = 200000;
  double sum = 0;
  int nup = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t rb = sr_bits(42, 3, static_cast<uint32_t>(i / 1000), static_cast<uint32_t>(i % 1000), 7);
    const float y = dec(enc(x, Rounding::sr, rb));
    REQUIRE((y == lo || y == hi));  // only the two neighbours
    nup += (y == hi);
    sum += static_cast<double>(y) - static_cast<double>(x);
  }
  const double gap = static_cast<double>(hi) - static_cast<double>(lo);
  const double p = (static_cast<double>(x) - static_cast<double>(lo)) / gap;
  const double sigma = gap * std::sqrt(p * (1 - p));  // std of the rounding error of one draw
  const double mean = sum / n;
  // unbiased to 32-bit resolution of p: |E[err]| <= gap * 2^-32; sampling: 5 sigma / sqrt(n)
  CHECK(std::fabs(mean) <= 5 * sigma / std::sqrt(static_cast<double>(n)) + gap * 0x1p-32);
  CHECK(nup > 0);
  CHECK(nup < n);
}
}  // namespace

TEST_CASE("stochastic rounding is unbiased and only gives the two neighbours", "[formats][sr]") {
  auto e4 = [](float x, Rounding r, uint32_t b) { return e4m3_encode(x, r, b); };
  auto e4d = [](uint8_t c) { return e4m3_decode(c); };
  auto e5 = [](float x, Rounding r, uint32_t b) { return e5m2_encode(x, r, b); };
  auto e5d = [](uint8_t c) { return e5m2_decode(c); };
  auto f4 = [](float x, Rounding r, uint32_t b) { return e2m1_encode(x, r, b); };
  auto f4d = [](uint8_t c) { return e2m1_decode(c); };
  auto bf = [](float x, Rounding r, uint32_t b) { return bf16_encode(x, r, b); };
  auto bfd = [](uint16_t c) { return bf16_decode(c); };
  auto hf = [](float x, Rounding r, uint32_t b) { return fp16_encode(x, r, b); };
  auto hfd = [](uint16_t c) { return fp16_decode(c); };
  auto i8 = [](float x, Rounding r, uint32_t b) { return int8_encode(x, r, b); };
  auto i8d = [](int8_t c) { return int8_decode(c); };
  for (double frac : {0.1, 0.5, 0.77, 0.999}) {
    const auto at = [&](float lo, float hi) { return static_cast<float>(lo + frac * (hi - lo)); };
    check_sr_unbiased("e4m3", at(1.0f, 1.125f), 1.0f, 1.125f, e4, e4d);
    check_sr_unbiased("e4m3-", -at(256.0f, 288.0f), -288.0f, -256.0f, e4, e4d);
    check_sr_unbiased("e4m3 sub", at(0x1p-9f, 0x2p-9f), 0x1p-9f, 0x2p-9f, e4, e4d);
    check_sr_unbiased("e4m3 zero", at(0.0f, 0x1p-9f), 0.0f, 0x1p-9f, e4, e4d);
    check_sr_unbiased("e5m2", at(3.0f, 3.5f), 3.0f, 3.5f, e5, e5d);
    check_sr_unbiased("e2m1", at(4.0f, 6.0f), 4.0f, 6.0f, f4, f4d);
    check_sr_unbiased("e2m1 sub", -at(0.0f, 0.5f), -0.5f, -0.0f, f4, f4d);
    check_sr_unbiased("bf16", at(1.0f, 1.0078125f), 1.0f, 1.0078125f, bf, bfd);
    check_sr_unbiased("fp16", at(1000.0f, 1000.5f), 1000.0f, 1000.5f, hf, hfd);
    check_sr_unbiased("int8", at(-3.0f, -2.0f), -3.0f, -2.0f, i8, i8d);
  }
  // representable values never move; saturation is kept
  for (uint32_t rb : {0u, 1u, 0x80000000u, 0xFFFFFFFFu}) {
    CHECK(e4m3_encode(1.125f, Rounding::sr, rb) == 0x39);
    CHECK(e4m3_encode(1000.0f, Rounding::sr, rb) == 0x7E);
    CHECK(e2m1_encode(6.5f, Rounding::sr, rb) == 0x7);
    CHECK(int8_encode(127.9f, Rounding::sr, rb) == 127);
    CHECK(fp16_encode(65505.0f, Rounding::sr, rb) == 0x7BFF);  // past max: the RNE result
  }
}

TEST_CASE("stochastic rounding is reproducible for a fixed seed and varies with the counter", "[formats][sr]") {
  CHECK(sr_bits(1, 2, 3, 4, 5) == sr_bits(1, 2, 3, 4, 5));
  // regression values: the hash is part of the storage contract (CPU and GPU must agree)
  CHECK(splitmix64(0) == 0xE220A8397B1DCDAFull);
  const uint32_t a = sr_bits(0, 0, 0, 0, 0);
  int differ = 0;
  for (uint32_t i = 1; i < 64; ++i) {
    differ += sr_bits(i, 0, 0, 0, 0) != a;
    differ += sr_bits(0, i, 0, 0, 0) != a;
    differ += sr_bits(0, 0, i, 0, 0) != a;
    differ += sr_bits(0, 0, 0, i, 0) != a;
    differ += sr_bits(0, 0, 0, 0, i) != a;
  }
  CHECK(differ == 5 * 63);
  std::mt19937 rng(5);
  const int V = 16, K = 64;
  const auto x = random_state(rng, V, K);
  using C = StateCodec<FormatId::fp8_e4m3>;
  CodecParams p{Scaling::row, Rounding::sr, 99, 4, 17};
  std::vector<uint8_t> c1(C::code_bytes(V, K)), c2(c1.size()), c3(c1.size()), s(C::scale_bytes(V, K, p.scaling));
  C::encode_state(x.data(), V, K, p, c1.data(), s.data());
  C::encode_state(x.data(), V, K, p, c2.data(), s.data());
  CHECK(c1 == c2);
  p.step = 18;
  C::encode_state(x.data(), V, K, p, c3.data(), s.data());
  CHECK(c1 != c3);
  // uniformity of the bits: mean of 2^20 draws ~ 2^31, each bit set about half the time
  double mean = 0;
  for (uint32_t i = 0; i < (1u << 20); ++i) mean += sr_bits(7, 1, i >> 10, i & 1023, 3);
  mean /= (1u << 20);
  const double sd = 4294967296.0 / std::sqrt(12.0) / 1024.0;
  CHECK(std::fabs(mean - 2147483648.0) < 5 * sd);
}

// ------------------------------------------------------------------------------------------------ scales

TEST_CASE("FP8/INT8 scales from amax: zero, one huge value, Inf, NaN", "[formats][scales]") {
  using E4 = StateCodec<FormatId::fp8_e4m3>;
  using I8 = StateCodec<FormatId::int8>;
  CHECK(E4::scale_from_amax(0.0f) == 1.0f);
  CHECK(E4::scale_from_amax(448.0f) == 1.0f);
  CHECK(E4::scale_from_amax(1.0f) == 1.0f / 448.0f);
  CHECK(I8::scale_from_amax(127.0f) == 1.0f);
  CHECK(StateCodec<FormatId::fp8_e5m2>::scale_from_amax(57344.0f) == 1.0f);
  const int V = 2, K = 64;
  for (Scaling sc : {Scaling::head, Scaling::row, Scaling::block}) {
    INFO(scaling_name(sc));
    std::vector<float> x(V * K, 0.0f), y(V * K, 1.0f);
    std::vector<uint8_t> codes(E4::code_bytes(V, K)), scales(E4::scale_bytes(V, K, sc));
    CodecParams p{sc, Rounding::rne, 0, 0, 0};
    E4::encode_state(x.data(), V, K, p, codes.data(), scales.data());
    E4::decode_state(codes.data(), scales.data(), V, K, p, y.data());
    for (float v : y) CHECK(v == 0.0f);
    for (uint8_t c : codes) CHECK(c == 0);
    for (std::size_t j = 0; j < scales.size(); j += 4) CHECK(load_f32(&scales[j]) == 1.0f);
    // one huge value: it round-trips to 2^-4; values below 2^-10 of it flush to zero
    for (int i = 0; i < V * K; ++i) x[i] = 1e-3f * static_cast<float>(i % 7 + 1);
    x[5] = 1e30f;
    E4::encode_state(x.data(), V, K, p, codes.data(), scales.data());
    E4::decode_state(codes.data(), scales.data(), V, K, p, y.data());
    CHECK(std::fabs(y[5] - 1e30f) <= 1e30f * kE4M3Eps);
    CHECK(y[6] == 0.0f);  // same head/row/block as the huge value
    CHECK(std::fabs(y[V * K - 1] - x[V * K - 1]) <= (sc == Scaling::head ? 1e30f : 1.0f) * 1e-2f);
    // NaN elements stay NaN and do not poison the amax; an Inf makes its group NaN (documented)
    x[5] = std::numeric_limits<float>::quiet_NaN();
    E4::encode_state(x.data(), V, K, p, codes.data(), scales.data());
    E4::decode_state(codes.data(), scales.data(), V, K, p, y.data());
    CHECK(std::isnan(y[5]));
    CHECK(std::fabs(y[6] - x[6]) <= x[6] * kE4M3Eps * 1.001f);
    x[5] = std::numeric_limits<float>::infinity();
    E4::encode_state(x.data(), V, K, p, codes.data(), scales.data());
    E4::decode_state(codes.data(), scales.data(), V, K, p, y.data());
    CHECK(std::isnan(y[6]));
    CHECK(!std::isnan(y[V * K - 1]) == (sc != Scaling::head));
  }
}

TEST_CASE("MX E8M0 scales from amax (OCP MX v1.0)", "[formats][scales][mx]") {
  using M8 = StateCodec<FormatId::mxfp8>;
  using M4 = StateCodec<FormatId::mxfp4>;
  CHECK(M8::scale_code_from_amax(1.0f) == 127 - 8);
  CHECK(M4::scale_code_from_amax(1.0f) == 127 - 2);
  CHECK(M8::scale_code_from_amax(448.0f) == 127);      // floor(log2 448) = 8
  CHECK(M8::scale_code_from_amax(511.99f) == 127);
  CHECK(M8::scale_code_from_amax(512.0f) == 128);
  CHECK(M4::scale_code_from_amax(6.0f) == 127);        // floor(log2 6) = 2
  CHECK(M4::scale_code_from_amax(7.99f) == 127);       // elements up to 7.99 saturate to 6
  CHECK(M8::scale_code_from_amax(0.0f) == 0);          // amax 0 -> 2^-127 (clamped), elements 0
  CHECK(M8::scale_code_from_amax(1e-40f) == 0);        // subnormal amax -> clamped
  CHECK(M8::scale_code_from_amax(std::ldexp(1.0f, -119)) == 0);
  CHECK(M8::scale_code_from_amax(std::ldexp(1.0f, -118)) == 1);
  CHECK(M8::scale_code_from_amax(3e38f) == 127 + 127 - 8);  // floor(log2 3e38) = 127
  CHECK(M8::scale_code_from_amax(std::numeric_limits<float>::infinity()) == 0xFF);
  CHECK(M8::scale_code_from_amax(std::numeric_limits<float>::quiet_NaN()) == 0xFF);
  CHECK(M8::scale_from_amax(1.0f) == std::ldexp(1.0f, -8));
  for (int e = -126; e < 128; ++e) {  // floor(log2) at every binade, just below and at the power of two
    const float p2 = std::ldexp(1.0f, e);
    const int want = std::max(0, e - 8 + 127);
    CHECK(M8::scale_code_from_amax(p2) == want);
    CHECK(M8::scale_code_from_amax(std::nextafter(p2, 0.0f)) == std::max(0, e - 1 - 8 + 127));
  }
  const int V = 1, K = 64;
  std::vector<float> x(K, 0.0f), y(K, 1.0f);
  for (int k = 32; k < K; ++k) x[k] = 0.001f * static_cast<float>(k);
  x[40] = 1e30f;  // one huge value in block 1
  std::vector<uint8_t> codes(M8::code_bytes(V, K)), scales(M8::scale_bytes(V, K, Scaling::block));
  CodecParams p{Scaling::block, Rounding::rne, 0, 0, 0};
  M8::encode_state(x.data(), V, K, p, codes.data(), scales.data());
  M8::decode_state(codes.data(), scales.data(), V, K, p, y.data());
  CHECK(scales[0] == 0);
  for (int k = 0; k < 32; ++k) CHECK(y[k] == 0.0f);
  CHECK(std::fabs(y[40] - 1e30f) <= 1e30f * kE4M3Eps);
  CHECK(y[41] == 0.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  M4::encode_state(x.data(), V, K, p, codes.data(), scales.data());
  M4::decode_state(codes.data(), scales.data(), V, K, p, y.data());
  CHECK(scales[0] == 0xFF);
  for (int k = 0; k < 32; ++k) CHECK(std::isnan(y[k]));
  CHECK(!std::isnan(y[40]));
}

TEST_CASE("NVFP4 two-level scales: known answers, zero blocks, one huge value (TE semantics)", "[formats][scales][nvfp4]") {
  using N = StateCodec<FormatId::nvfp4>;
  CHECK(N::scale_from_amax(0.0f) == 1.0f);
  CHECK(N::scale_from_amax(6.0f) == 448.0f);
  CHECK(N::scale_from_amax(2688.0f) == 1.0f);
  CHECK(N::scale_from_amax(std::numeric_limits<float>::infinity()) == 1.0f);  // 2688/Inf = 0 -> 1
  CHECK(N::scale_from_amax(1e-45f) == std::numeric_limits<float>::max());     // 2688/amax overflows -> FLT_MAX
  CHECK(N::block_scale_code(6.0f, 448.0f) == 0x7E);   // 448
  CHECK(N::block_scale_code(0.0f, 448.0f) == 0x00);
  CHECK(N::block_scale_code(0.001f, 2688.0f) == 0x2E);  // 0.448 -> 0.4375
  CHECK(N::block_scale_code(1e30f, 2688.0f) == 0x7E);   // saturates
  CHECK(N::block_encode_multiplier(0x00, 448.0f) == std::numeric_limits<float>::max());  // all-zero block

  // head amax 6: S_enc = 448, a block with amax 6 has scale 448 and decodes with multiplier 1 exactly
  const int V = 2, K = 32;
  std::vector<float> x(V * K, 0.0f), y(V * K, 1.0f);
  const float vals[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int k = 0; k < 16; ++k) x[k] = (k % 2 ? -1.0f : 1.0f) * vals[k % 8];
  std::vector<uint8_t> codes(N::code_bytes(V, K)), scales(N::scale_bytes(V, K, Scaling::block));
  REQUIRE(scales.size() == 4 + 4);
  CodecParams p{Scaling::block, Rounding::rne, 0, 0, 0};
  N::encode_state(x.data(), V, K, p, codes.data(), scales.data());
  N::decode_state(codes.data(), scales.data(), V, K, p, y.data());
  CHECK(load_f32(scales.data()) == 6.0f);
  CHECK(scales[4] == 0x7E);
  CHECK(scales[5] == 0x00);  // all-zero block
  CHECK(scales[6] == 0x00);
  for (int k = 0; k < V * K; ++k) CHECK(y[k] == x[k]);
  // nibble order: element 0 in the low nibble of byte 0, element 1 in the high nibble
  CHECK((codes[0] & 0xF) == 0x0);
  CHECK((codes[0] >> 4) == 0x9);  // -0.5
  CHECK((codes[3] & 0xF) == 0x6);  // element 6: +4
  CHECK((codes[3] >> 4) == 0xF);   // element 7: -6
  // all-zero head state
  std::fill(x.begin(), x.end(), 0.0f);
  N::encode_state(x.data(), V, K, p, codes.data(), scales.data());
  N::decode_state(codes.data(), scales.data(), V, K, p, y.data());
  CHECK(load_f32(scales.data()) == 0.0f);
  for (float v : y) CHECK(v == 0.0f);
  for (uint8_t c : codes) CHECK(c == 0);
  // one huge value: its block keeps it within the E2M1/E4M3 bound; the other blocks underflow to zero scales
  for (int k = 0; k < V * K; ++k) x[k] = 0.01f * static_cast<float>(k + 1);
  x[20] = 1e20f;
  N::encode_state(x.data(), V, K, p, codes.data(), scales.data());
  N::decode_state(codes.data(), scales.data(), V, K, p, y.data());
  CHECK(std::fabs(y[20] - 1e20f) <= 1e20f * (1.0f / 6.0f));
  CHECK(y[0] == 0.0f);
  CHECK(scales[4] == 0);
}

TEST_CASE("NVFP4 two-level round trip stays within the derived bound", "[formats][nvfp4]") {
  using N = StateCodec<FormatId::nvfp4>;
  std::mt19937 rng(2024);
  const int V = 64, K = 128;
  for (int trial = 0; trial < 20; ++trial) {
    const auto x = random_state(rng, V, K, trial % 2 == 0);
    std::vector<uint8_t> codes(N::code_bytes(V, K)), scales(N::scale_bytes(V, K, Scaling::block));
    std::vector<float> y(x.size());
    CodecParams p{Scaling::block, trial % 3 == 0 ? Rounding::sr : Rounding::rne, 1234, 0, 0};
    N::encode_state(x.data(), V, K, p, codes.data(), scales.data());
    N::decode_state(codes.data(), scales.data(), V, K, p, y.data());
    const float head_amax = load_f32(scales.data());
    const float s_enc = N::scale_from_amax(head_amax);
    for (int v = 0; v < V; ++v)
      for (int b = 0; b < K / 16; ++b) {
        double bamax = 0;
        for (int k = b * 16; k < b * 16 + 16; ++k) bamax = std::max(bamax, std::fabs(double(x[v * K + k])));
        const uint8_t sc = scales[4 + v * (K / 16) + b];
        const double d = N::block_decode_multiplier(sc, head_amax);  // the decoded block scale
        // the E4M3 block scale is within its half-ulp of bamax * S_enc / 6 when that is normal in E4M3
        const double ideal = bamax * s_enc / 6.0;
        if (ideal >= 0x1p-6) CHECK(std::fabs(e4m3_decode(sc) - ideal) <= ideal * kE4M3Eps * (1 + 1e-6));
        for (int k = b * 16; k < b * 16 + 16; ++k) {
          const double xi = x[v * K + k];
          const double err = std::fabs(double(y[v * K + k]) - xi);
          // element grid step <= 2 (in units of d): RNE error <= 1*d, SR error < 2*d; past 6*d: saturation
          const double step = p.rounding == Rounding::sr ? 2.0 : 1.0;
          const double bound = d * step + std::max(0.0, std::fabs(xi) - 6 * d) + bamax * kFloatSlack;
          INFO("v=" << v << " k=" << k << " x=" << xi << " y=" << y[v * K + k] << " d=" << d);
          REQUIRE(err <= bound);
          // and relative to the block: |err| <= bamax * (1/6 (1 + eps) * step + eps) for normal block scales
          if (ideal >= 0x1p-6)
            REQUIRE(err <= bamax * ((1.0 / 6.0) * (1 + kE4M3Eps) * step + kE4M3Eps + kFloatSlack));
        }
      }
  }
}

// ------------------------------------------------------------------------------------------------ head state

TEST_CASE("encode_state/decode_state round trip within each format's epsilon", "[formats][state]") {
  std::mt19937 rng(99);
  const int V = 32, K = 96;  // K not a multiple of 64: exercises short rows of blocks? (96 = 3*32 = 6*16)
  for (int trial = 0; trial < 6; ++trial) {
    const auto x = random_state(rng, V, K);
    double gamax = 0;
    for (float v : x) gamax = std::max(gamax, std::fabs(double(v)));
    for (FormatId f : kAllFormats) {
      for (Scaling sc : kAllScalings) {
        if (!scaling_valid(f, sc)) continue;
        for (Rounding rd : {Rounding::rne, Rounding::sr, Rounding::philox}) {
          if (!rounding_valid(f, rd)) continue;
          INFO(format_name(f) << " " << scaling_name(sc) << " " << rounding_name(rd));
          dispatch_format(f, [&](auto codec) {
            using C = decltype(codec);
            CodecParams p{sc, rd, 7, 1, 2};
            std::vector<uint8_t> codes(C::code_bytes(V, K)), scales(C::scale_bytes(V, K, sc) + 1);
            REQUIRE(C::bytes_per_state(V, K, sc) == codes.size() + scales.size() - 1);
            std::vector<float> y(x.size());
            C::encode_state(x.data(), V, K, p, codes.data(), scales.data());
            C::decode_state(codes.data(), scales.data(), V, K, p, y.data());
            const double step = rd != Rounding::rne ? 2.0 : 1.0;  // SR error < 1 ulp, RNE <= 1/2 ulp
            for (int v = 0; v < V; ++v)
              for (int k = 0; k < K; ++k) {
                const double xi = x[v * K + k];
                const double yi = y[v * K + k];
                const double ax = std::fabs(xi);
                double scale = 1;  // the group's decode scale
                if constexpr (C::kFormat == FormatId::fp8_e4m3 || C::kFormat == FormatId::fp8_e5m2 ||
                              C::kFormat == FormatId::int8 || C::kFormat == FormatId::int16 ||
                              C::kFormat == FormatId::int8_ef) {
                  if (sc != Scaling::none) scale = load_f32(&scales[4 * C::scale_index(v, k, K, sc)]);
                }
                if constexpr (C::kFormat == FormatId::mxfp8 || C::kFormat == FormatId::mxfp4) {
                  scale = e8m0_decode(scales[v * (K / 32) + k / 32]);
                }
                double bound = 0;
                switch (C::kFormat) {
                  case FormatId::fp32: bound = 0; break;
                  case FormatId::bf16: bound = ax * kBf16Eps * step; break;
                  case FormatId::bf16x2: bound = ax * 0x1p-16 + 0x1p-134; break;  // lo's RNE (and its subnormals)
                  case FormatId::fp16: bound = ax * kFp16Eps * step + 0x1p-25 * step; break;
                  case FormatId::fp8_e4m3:
                  case FormatId::mxfp8:
                    bound = std::max(ax * kE4M3Eps, scale * kE4M3SubHalfQuantum) * step +
                            std::max(0.0, ax - 448 * scale) + ax * kFloatSlack;
                    break;
                  case FormatId::fp8_e5m2:
                    bound = std::max(ax * kE5M2Eps, scale * kE5M2SubHalfQuantum) * step + ax * kFloatSlack;
                    break;
                  case FormatId::int8:
                  case FormatId::int8_ef:  // a first store: the INT8 value of x (no residual yet)
                  case FormatId::int16: bound = 0.5 * scale * step + ax * kFloatSlack; break;
                  case FormatId::mxfp4:
                    bound = std::max(ax * kE2M1Eps, scale * kE2M1SubHalfQuantum) * step +
                            std::max(0.0, ax - 6 * scale) + ax * kFloatSlack;
                    break;
                  case FormatId::nvfp4: bound = gamax; break;  // its own test derives the tight bound
                }
                if (C::kFormat == FormatId::fp8_e4m3 && sc == Scaling::none) bound += 0x1p-10;  // unscaled subnormals
                if (C::kFormat == FormatId::fp8_e5m2 && sc == Scaling::none) bound += 0x1p-17;
                INFO("v=" << v << " k=" << k << " x=" << xi << " y=" << yi << " scale=" << scale);
                REQUIRE(std::fabs(yi - xi) <= bound);
              }
            return 0;
          });
        }
      }
    }
  }
}

TEST_CASE("bytes per state", "[formats][state]") {
  const int V = 128, K = 128;
  CHECK(bytes_per_state(FormatId::fp32, V, K, Scaling::none) == 65536);
  CHECK(bytes_per_state(FormatId::bf16, V, K, Scaling::none) == 32768);
  CHECK(bytes_per_state(FormatId::bf16x2, V, K, Scaling::none) == 65536);
  CHECK(bytes_per_state(FormatId::fp8_e4m3, V, K, Scaling::none) == 16384);
  CHECK(bytes_per_state(FormatId::fp8_e4m3, V, K, Scaling::head) == 16384 + 4);
  CHECK(bytes_per_state(FormatId::fp8_e5m2, V, K, Scaling::row) == 16384 + 512);
  CHECK(bytes_per_state(FormatId::int8, V, K, Scaling::block) == 16384 + 128 * 4 * 4);
  CHECK(bytes_per_state(FormatId::nvfp4, V, K, Scaling::block) == 8192 + 4 + 1024);
  CHECK(bytes_per_state(FormatId::mxfp8, V, K, Scaling::block) == 16384 + 512);
  CHECK(bytes_per_state(FormatId::mxfp4, V, K, Scaling::block) == 8192 + 512);
  CHECK(bytes_per_state(FormatId::int8, V, K, Scaling::column) == 16384 + 128 * 4);
  CHECK(bytes_per_state(FormatId::fp8_e4m3, V, K, Scaling::column) == 16384 + 128 * 4);
  CHECK(bytes_per_state(FormatId::int16, V, K, Scaling::column) == 32768 + 128 * 4);
  CHECK(bytes_per_state(FormatId::int8_ef, V, K, Scaling::column) == 16384 + 8192 + 128 * 4);  // codes, residuals
  CHECK(bytes_per_state(FormatId::int8_ef, V, K, Scaling::row) == 16384 + 8192 + 128 * 4);
  CHECK(StateCodec<FormatId::int8_ef>::bytes_per_state(3, 5, Scaling::head) == 15 + 8 + 4);  // an odd nibble count
  CHECK_THROWS_AS(bytes_per_state(FormatId::int8_ef, V, K, Scaling::none), std::invalid_argument);
  CHECK(bytes_per_state(FormatId::int16, V, K, Scaling::row) == 32768 + 128 * 4);
  CHECK(bytes_per_state(FormatId::fp8_e4m3, V, K, Scaling::tile) == 16384 + 4 * 4);
  CHECK(StateCodec<FormatId::fp8_e4m3>::bytes_per_state(33, 8, Scaling::tile) == 264 + 2 * 4);  // a short last tile
  CHECK_THROWS_AS(bytes_per_state(FormatId::int8, V, K, Scaling::tile), std::invalid_argument);
  CHECK_THROWS_AS(bytes_per_state(FormatId::fp8_e5m2, V, K, Scaling::tile), std::invalid_argument);
  CHECK(StateCodec<FormatId::int8>::bytes_per_state(3, 40, Scaling::column) == 120 + 40 * 4);  // one per column
  CHECK_THROWS_AS(bytes_per_state(FormatId::int16, V, K, Scaling::none), std::invalid_argument);
  CHECK_THROWS_AS(bytes_per_state(FormatId::bf16, V, K, Scaling::column), std::invalid_argument);
  CHECK(StateCodec<FormatId::mxfp4>::bytes_per_state(3, 40, Scaling::block) == 60 + 6);  // short last block
  CHECK_THROWS_AS(bytes_per_state(FormatId::nvfp4, V, K, Scaling::row), std::invalid_argument);
}

TEST_CASE("short last blocks and odd element counts", "[formats][state]") {
  std::mt19937 rng(3);
  const int V = 3, K = 21;  // 21 = 16 + 5 for nvfp4, < 32 for mx; V*K odd for the 4-bit packing
  const auto x = random_state(rng, V, K, false);
  for (FormatId f : {FormatId::nvfp4, FormatId::mxfp4, FormatId::mxfp8}) {
    dispatch_format(f, [&](auto codec) {
      using C = decltype(codec);
      std::vector<uint8_t> codes(C::code_bytes(V, K), 0xAB), scales(C::scale_bytes(V, K, Scaling::block));
      std::vector<float> y(x.size());
      CodecParams p{Scaling::block, Rounding::rne, 0, 0, 0};
      C::encode_state(x.data(), V, K, p, codes.data(), scales.data());
      C::decode_state(codes.data(), scales.data(), V, K, p, y.data());
      for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(y[i] - x[i]) <= 0.5 * std::fabs(x[i]) + 0.3);
      if (C::kBits == 4) CHECK((codes.back() >> 4) == 0xA);  // the unused high nibble is left alone
      return 0;
    });
  }
}

// ------------------------------------------------------------------------------------------------ names

TEST_CASE("format, scaling and rounding names; invalid combinations are rejected", "[formats][names]") {
  for (FormatId f : kAllFormats) CHECK(parse_format(format_name(f)) == f);
  for (Scaling s : kAllScalings) CHECK(parse_scaling(scaling_name(s)) == s);
  CHECK(parse_rounding("sr") == Rounding::sr);
  try {
    parse_format("fp6");
    FAIL("no throw");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "unknown format 'fp6' (expected one of: fp32, bf16, fp16, bf16x2, fp8_e4m3, fp8_e5m2, int8, int8_ef, int16, "
          "nvfp4, mxfp8, mxfp4)");
  }
  CHECK_THROWS_AS(parse_scaling("tensor"), std::invalid_argument);
  CHECK_THROWS_AS(parse_rounding("rtz"), std::invalid_argument);
  try {
    parse_format_spec("nvfp4", "row");
    FAIL("no throw");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "scaling 'row' is not valid for format 'nvfp4' (valid: block)");
  }
  CHECK_THROWS_AS(parse_format_spec("bf16", "head"), std::invalid_argument);
  CHECK_THROWS_AS(parse_format_spec("int8", "none"), std::invalid_argument);
  CHECK_THROWS_AS(parse_format_spec("fp32", "", "sr"), std::invalid_argument);
  CHECK(parse_format_spec("fp8_e4m3").scaling == Scaling::row);
  CHECK(parse_format_spec("mxfp4").scaling == Scaling::block);
  CHECK(parse_format_spec("fp8_e5m2", "none", "sr").rounding == Rounding::sr);
  CHECK(parse_format_spec("int16").scaling == Scaling::row);
  CHECK(parse_format_spec("int8", "column", "sr").scaling == Scaling::column);
  try {
    parse_scaling("tensor");
    FAIL("no throw");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "unknown scaling 'tensor' (expected one of: none, head, row, block, column, tile)");
  }
  int n = 0;
  for (FormatId f : kAllFormats)
    n += dispatch_format(f, [&](auto c) { return decltype(c)::kFormat == f ? 1 : 0; });
  CHECK(n == kFormatIdCount);
  CHECK(n == 12);
}

TEST_CASE("TE's S_dec = (float)(1.0 / (double)S_enc) equals the float division used here", "[formats][nvfp4]") {
  std::mt19937 rng(4);
  std::uniform_int_distribution<uint32_t> bits(0x00800000u, 0x7F7FFFFFu);  // positive normal floats
  for (int i = 0; i < 4000000; ++i) {
    const float s = ffrom(bits(rng));
    const float te = static_cast<float>(1.0 / static_cast<double>(s));
    REQUIRE(fbits(te) == fbits(1.0f / s));
  }
}

TEST_CASE("Philox-4x32: Random123's known-answer vectors; philox rounding draws its bits from it", "[formats][sr]") {
  struct Kat {
    int rounds;
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {10, {~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}, {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {10, {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
      {7, {~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}, {0x5207ddc2u, 0x45165e59u, 0x4d8ee751u, 0x8c52f662u}},
  };
  for (const Kat& k : kats) {
    const Philox4x32 o = philox4x32(Philox4x32{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}}, k.key[0], k.key[1], k.rounds);
    for (int i = 0; i < 4; ++i) CHECK(o.v[i] == k.out[i]);
  }
  CodecParams p;
  p.rounding = Rounding::philox;
  p.seed = 0x299f31d0a4093822ULL;
  p.head = 0x13198a2eu;
  p.step = 0x03707344u;
  CHECK(element_rand_bits(p, 0x85a308d3, 0x243f6a88) == 0xd16cfe09u);  // counter (k, v, head, step), key (seed lo, hi)
  p.philox_rounds = 7;
  CHECK(element_rand_bits(p, 0x85a308d3, 0x243f6a88) != 0xd16cfe09u);
  p.rounding = Rounding::sr;
  CHECK(element_rand_bits(p, 1, 2) == sr_bits(p.seed, p.head, 1, 2, p.step));
  CHECK(parse_rounding("philox") == Rounding::philox);
  CHECK_THROWS_AS(parse_format_spec("fp32", "", "philox"), std::invalid_argument);
  CHECK_THROWS_AS(parse_format_spec("bf16x2", "", "sr"), std::invalid_argument);
  CHECK_THROWS_AS(parse_format_spec("bf16x2", "", "philox"), std::invalid_argument);
  CHECK_THROWS_AS(parse_format_spec("int8_ef", "", "sr"), std::invalid_argument);
  CHECK_THROWS_AS(parse_format_spec("int8_ef", "column", "philox"), std::invalid_argument);
  CHECK(parse_format_spec("int8_ef").scaling == Scaling::column);
}
