// Stochastic rounding: unbiased between the two neighbours, reproducible for a seed, varying with the counter;
// and the Philox-4x32 generator against Random123's known answers.
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
