// src/formats against CUDA's own conversion functions run on the host (cuda_fp8.h, cuda_fp4.h, cuda_bf16.h,
// cuda_fp16.h are __host__ __device__): every code decodes alike, and >= 2^25 float32 patterns (every top-24-bit
// prefix with a zero low byte, which contains every tie point of these formats, and with a random low byte)
// encode to identical bits.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "catch.hpp"
#include "cuda_oracle.h"
#include "formats/minifloat.h"
#include "formats/sr_hash.h"

using namespace replayssm::formats;
namespace co = replayssm::formats::cuda_oracle;

namespace {
uint32_t fb(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || fb(a) == fb(b); }
}  // namespace

TEST_CASE("every code decodes as CUDA decodes it", "[formats][cuda]") {
  for (uint32_t c = 0; c < 256; ++c) {
    const auto u = static_cast<uint8_t>(c);
    INFO("code " << c);
    CHECK(same(e4m3_decode(u), co::e4m3_decode(u)));
    CHECK(same(e5m2_decode(u), co::e5m2_decode(u)));
    CHECK(same(e8m0_decode(u), co::e8m0_decode(u)));
    if (c < 16) CHECK(same(e2m1_decode(u), co::e2m1_decode(u)));
  }
}

TEST_CASE("2^25 float32 patterns encode to CUDA's bits", "[formats][cuda]") {
  uint64_t bad[5] = {0, 0, 0, 0, 0};
  for (uint32_t k = 0; k < (1u << 24); ++k) {
    for (uint32_t low : {0u, (static_cast<uint32_t>(splitmix64(k)) & 0xFFu) | 1u}) {
      const float x = bf((k << 8) | low);
      if (bf16_encode(x) != co::bf16_rn(x) && bad[0]++ < 5) FAIL_CHECK("bf16 " << std::hex << fb(x));
      if (fp16_encode(x) != co::fp16_rn(x) && bad[1]++ < 5) FAIL_CHECK("fp16 " << std::hex << fb(x));
      if (e4m3_encode(x) != co::e4m3_satfinite(x) && bad[2]++ < 5) FAIL_CHECK("e4m3 " << std::hex << fb(x));
      if (e5m2_encode(x) != co::e5m2_satfinite(x) && bad[3]++ < 5) FAIL_CHECK("e5m2 " << std::hex << fb(x));
      if (e2m1_encode(x) != co::e2m1_rn(x) && bad[4]++ < 5) FAIL_CHECK("e2m1 " << std::hex << fb(x));
    }
  }
  for (uint64_t b : bad) CHECK(b == 0);
}
