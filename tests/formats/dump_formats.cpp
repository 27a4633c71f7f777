// Dumps what src/formats computes, for tests/formats/check_ml_dtypes.py to recompute with ml_dtypes / numpy:
//   decode <fmt> <code> <float32 bits>           for every code of e4m3, e5m2, e2m1, e8m0, bf16, fp16, int8
//   encode <float32 bits> <e4m3> <e5m2> <e2m1> <bf16> <fp16> <int8> <int16> <bf16x2> <bf16x2 decoded float32 bits>
//                                                for a fixed set of tricky floats
//   mxscale <float32 bits> <e8m0 code for emax 8> <e8m0 code for emax 2>
// Tricky floats: every code value of each format, every midpoint between neighbours and the floats either side,
// signed zeros, float subnormals, the limits, Inf, NaN and a fixed pseudo-random set. Output goes to stdout.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "formats/minifloat.h"

using namespace replayssm::formats;

namespace {
uint32_t fb(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
void add_neighbourhood(std::vector<float>& xs, float lo, float hi) {
  if (std::isnan(lo) || std::isnan(hi) || std::isinf(lo) || std::isinf(hi)) return;
  const float mid = static_cast<float>((static_cast<double>(lo) + static_cast<double>(hi)) / 2);
  for (float v : {lo, mid, std::nextafter(mid, lo), std::nextafter(mid, hi)}) {
    xs.push_back(v);
    xs.push_back(-v);
  }
}
}  // namespace

int main() {
  for (uint32_t c = 0; c < 256; ++c) {
    const auto u8 = static_cast<uint8_t>(c);
    std::printf("decode e4m3 %u %08x\n", c, fb(e4m3_decode(u8)));
    std::printf("decode e5m2 %u %08x\n", c, fb(e5m2_decode(u8)));
    std::printf("decode e8m0 %u %08x\n", c, fb(e8m0_decode(u8)));
    std::printf("decode int8 %u %08x\n", c, fb(int8_decode(static_cast<int8_t>(u8))));
    if (c < 16) std::printf("decode e2m1 %u %08x\n", c, fb(e2m1_decode(u8)));
  }
  for (uint32_t c = 0; c < 65536; ++c) {
    std::printf("decode bf16 %u %08x\n", c, fb(bf16_decode(static_cast<uint16_t>(c))));
    std::printf("decode fp16 %u %08x\n", c, fb(fp16_decode(static_cast<uint16_t>(c))));
  }

  std::vector<float> xs;
  for (uint32_t c = 0; c < 0x7F; ++c) {
    add_neighbourhood(xs, e4m3_decode(static_cast<uint8_t>(c)), e4m3_decode(static_cast<uint8_t>(c + 1)));
    add_neighbourhood(xs, e5m2_decode(static_cast<uint8_t>(c)), e5m2_decode(static_cast<uint8_t>(c + 1)));
  }
  add_neighbourhood(xs, 448.0f, 512.0f);
  add_neighbourhood(xs, 57344.0f, 65536.0f);
  for (uint32_t c = 0; c < 8; ++c)
    add_neighbourhood(xs, e2m1_decode(static_cast<uint8_t>(c)), c < 7 ? e2m1_decode(static_cast<uint8_t>(c + 1)) : 8.0f);
  for (uint32_t c = 0; c < 0x7F80; c += (c < 0x0200 || c > 0x7E00) ? 1 : 61)
    add_neighbourhood(xs, bf16_decode(static_cast<uint16_t>(c)), bf16_decode(static_cast<uint16_t>(c + 1)));
  for (uint32_t c = 0; c < 0x7C00; c += (c < 0x0800 || c > 0x7800) ? 1 : 7)
    add_neighbourhood(xs, fp16_decode(static_cast<uint16_t>(c)), fp16_decode(static_cast<uint16_t>(c + 1)));
  for (int i = -130; i <= 130; ++i) add_neighbourhood(xs, static_cast<float>(i), static_cast<float>(i + 1));
  for (int i = 32760; i <= 32770; ++i) {  // int16's top, both signs, and a few integers between
    add_neighbourhood(xs, static_cast<float>(i), static_cast<float>(i + 1));
    add_neighbourhood(xs, static_cast<float>(-i - 1), static_cast<float>(-i));
    add_neighbourhood(xs, static_cast<float>(i - 16384), static_cast<float>(i - 16383));
  }
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            1e-40f, -1e-40f, 1e30f, 3.3895314e38f, 3.3961776e38f, 65519.99f, 65520.0f};
  for (float s : specials) xs.push_back(s);
  std::mt19937 rng(31337);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> ud(-70000.0f, 70000.0f);
  for (int i = 0; i < 20000; ++i) {
    uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, 4);
    xs.push_back(f);
    xs.push_back(ud(rng) * std::exp2(-static_cast<float>(i % 40)));
  }
  for (float x : xs)
    std::printf("encode %08x %u %u %u %u %u %d %d %u %u\n", fb(x), e4m3_encode(x), e5m2_encode(x), e2m1_encode(x),
                bf16_encode(x), fp16_encode(x), int8_encode(x), int16_encode(x), bf16x2_encode(x),
                fb(bf16x2_decode(bf16x2_encode(x))));
  for (float x : xs) {
    const float a = std::fabs(x);
    std::printf("mxscale %08x %u %u\n", fb(a), e8m0_from_amax(a, 8), e8m0_from_amax(a, 2));
  }
  return 0;
}
