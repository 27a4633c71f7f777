// Element codecs one code at a time: every code decodes to its value, every tie, saturation, subnormals, -0,
// NaN/Inf, and random floats against the bit-level and brute-force references of formats_test_support.h.
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
#include "formats_test_support.h"

using namespace replayssm::formats;
using namespace formats_test;

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
