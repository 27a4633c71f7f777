// Scaled codecs and head states: FP8/INT8, MX E8M0 and NVFP4 two-level scales, state round trips within each
// format's epsilon, bytes per state, short blocks, and the format/scaling/rounding names.
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

TEST_CASE("encode_rows / decode_rows over single rows in any order equal encode_state / decode_state, bit for bit",
          "[formats][state][rows]") {
  // The reference kernel runs a row per thread (decode_rows always; encode_rows where rows_apart, NVFP4 after the
  // head's amax): the rows must not depend on one another beyond the head amax.
  std::mt19937 rng(2024);
  const int shapes[][2] = {{1, 1}, {3, 31}, {5, 33}, {4, 64}, {7, 130}, {64, 128}};
  for (const auto& vk : shapes) {
    const int V = vk[0], K = vk[1];
    for (int trial = 0; trial < 3; ++trial) {
      auto x = random_state(rng, V, K);
      if (trial == 1) {  // a zero row, a NaN, an Inf, a huge value
        std::fill(x.begin(), x.begin() + K, 0.0f);
        x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
        if (V > 2) x[x.size() - 1] = std::numeric_limits<float>::infinity();
      }
      if (trial == 2) x[x.size() / 3] = 3.0e38f;
      for (FormatId f : kAllFormats)
        for (Scaling sc : kAllScalings) {
          if (!scaling_valid(f, sc)) continue;
          for (Rounding rd : {Rounding::rne, Rounding::philox}) {
            if (!rounding_valid(f, rd)) continue;
            INFO(format_name(f) << " " << scaling_name(sc) << " " << rounding_name(rd) << " V=" << V << " K=" << K
                                << " trial " << trial);
            dispatch_format(f, [&](auto codec) {
              using C = decltype(codec);
              if constexpr (C::kBlock != 0 && !C::kStateful) {
                const CodecParams p{sc, rd, 11, 3, 5};
                const std::size_t nc = C::code_bytes(V, K), ns = C::scale_bytes(V, K, sc);
                std::vector<uint8_t> c0(nc, 0xA5), s0(ns, 0xA5), c1(nc, 0xA5), s1(ns, 0xA5);
                C::encode_state(x.data(), V, K, p, c0.data(), s0.data());
                if (C::rows_apart(sc)) {
                  float amax = 0.0f;
                  if constexpr (C::kHeadAmax) {
                    for (std::size_t i = x.size(); i-- > 0;) amax = amax_ignore_nan(amax, x[i]);
                    C::store_head_amax(s1.data(), amax);
                  }
                  for (int v = V - 1; v >= 0; --v) C::encode_rows(x.data(), v, v + 1, K, p, amax, c1.data(), s1.data());
                  CHECK(c1 == c0);
                  CHECK(s1 == s0);
                }
                std::vector<float> y0(x.size()), y1(x.size(), -1.0f);
                C::decode_state(c0.data(), s0.data(), V, K, p, y0.data());
                for (int v = V - 1; v >= 0; --v) C::decode_rows(c0.data(), s0.data(), v, v + 1, K, p, y1.data());
                CHECK(std::memcmp(y0.data(), y1.data(), y0.size() * sizeof(float)) == 0);
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
