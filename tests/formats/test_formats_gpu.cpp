// GPU (label gpu; exits 77 without a device, 1 instead under REPLAYSSM_REQUIRE_GPU=1: no_device.h): >= 2^25 float32
// patterns through CUDA's device conversions (__float2bfloat16_rn, __float2half_rn, __nv_cvt_float_to_fp8
// satfinite, __nv_fp4_e2m1) give the bits of src/formats on the CPU; src/formats compiled for the GPU gives the
// CPU's bits (RNE and SR); every head-state codec gives the same packed codes, scales and decoded floats on the GPU
// as on the CPU; the kernels' hardware RNE pairs (src/formats/hw_convert.cuh) equal the software encode on all 2^32
// patterns, its E4M3 decode the codec on every word of four codes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda_oracle.h"
#include "formats/state_codec.h"
#include "no_device.h"
#include "state_combos.h"

using namespace replayssm::formats;
namespace co = replayssm::formats::cuda_oracle;

namespace {
void require_device() {
  std::string why;
  if (!co::device_available(why)) replayssm::testsupport::no_device_exit(why);  // 77, or 1 under REPLAYSSM_REQUIRE_GPU=1
}
float bf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST_CASE("device conversions and device codecs match the CPU codecs on 2^25 patterns", "[formats][gpu]") {
  require_device();
  const std::size_t n = std::size_t{1} << 25;
  std::vector<uint32_t> bits(n);
  for (uint32_t k = 0; k < (1u << 24); ++k) {
    bits[2 * k] = k << 8;
    bits[2 * k + 1] = (k << 8) | (static_cast<uint32_t>(splitmix64(k)) & 0xFFu) | 1u;
  }
  std::vector<uint32_t> out(n * co::kCols);
  co::device_sweep(bits.data(), n, out.data());
  const char* names[co::kCols] = {"bf16 hw",  "fp16 hw",  "e4m3 hw",  "e5m2 hw",  "e2m1 cuda", "bf16 dev", "fp16 dev",
                                  "e4m3 dev", "e5m2 dev", "e2m1 dev", "bf16 sr",  "fp16 sr",   "e4m3 sr",  "e5m2 sr",
                                  "e2m1 sr"};
  uint64_t bad[co::kCols] = {};
  for (std::size_t i = 0; i < n; ++i) {
    const float x = bf(bits[i]);
    const uint32_t rb = sr_bits(7, 1, 0, static_cast<uint32_t>(i), 3);
    const uint32_t cpu[co::kCols] = {bf16_encode(x), fp16_encode(x), e4m3_encode(x), e5m2_encode(x), e2m1_encode(x),
                                     bf16_encode(x), fp16_encode(x), e4m3_encode(x), e5m2_encode(x), e2m1_encode(x),
                                     bf16_encode(x, Rounding::sr, rb), fp16_encode(x, Rounding::sr, rb),
                                     e4m3_encode(x, Rounding::sr, rb), e5m2_encode(x, Rounding::sr, rb),
                                     e2m1_encode(x, Rounding::sr, rb)};
    for (int j = 0; j < co::kCols; ++j) {
      if (out[i * co::kCols + j] != cpu[j] && bad[j]++ < 5)
        FAIL_CHECK(names[j] << " x bits " << std::hex << bits[i] << ": gpu " << out[i * co::kCols + j] << " cpu "
                            << cpu[j]);
    }
  }
  for (int j = 0; j < co::kCols; ++j) {
    INFO(names[j]);
    CHECK(bad[j] == 0);
  }
}

TEST_CASE("the kernels' hardware RNE pairs equal the codecs on every float32 pattern", "[formats][gpu]") {
  require_device();
  unsigned long long bad[co::kHwPairFormats];
  uint32_t first[co::kHwPairFormats];
  co::device_hw_rne_pairs(bad, first);
  const char* names[co::kHwPairFormats] = {"bf16", "fp16", "e4m3", "e5m2"};
  for (int f = 0; f < co::kHwPairFormats; ++f) {
    INFO(names[f] << ": smallest bad pattern 0x" << std::hex << first[f]);
    CHECK(bad[f] == 0);
  }
}

TEST_CASE("the kernels' hardware E4M3 decode equals the codec on every word of four codes", "[formats][gpu]") {
  require_device();
  unsigned long long bad = 0;
  uint32_t first = 0;
  co::device_hw_e4m3_decode(bad, first);
  INFO("smallest bad word 0x" << std::hex << first);
  CHECK(bad == 0);
}

TEST_CASE("every head-state codec packs the same bytes on the GPU as on the CPU", "[formats][gpu]") {
  require_device();
  const int H = 8, V = 16, K = 80;  // K = 5*16 = 2.5*32: a short MX block at the end of each row
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(H) * V * K);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * std::exp2(static_cast<float>(static_cast<int>(i / K) % 13 - 6));
  x[3] = 0.0f;
  x[5] = -0.0f;
  for (int k = 0; k < 32; ++k) x[static_cast<std::size_t>(1) * V * K + K + k] = 0.0f;  // an all-zero block
  const std::size_t code_stride = static_cast<std::size_t>(V) * K * 4;
  const std::size_t scale_stride = 4 + static_cast<std::size_t>(V) * ((K + 15) / 16) * 4;
  const int nc = combo_count();
  // fp32 1, bf16 3, fp16 3, bf16x2 1, e4m3 18, e5m2 15, int8 12, int8_ef 4, int16 12, nvfp4 3, mxfp8 3, mxfp4 3
  REQUIRE(nc == 78);
  const std::size_t slots = static_cast<std::size_t>(nc) * H;
  std::vector<uint8_t> gcodes(slots * code_stride), gscales(slots * scale_stride);
  std::vector<float> gout(slots * V * K);
  co::device_state_codecs(x.data(), H, V, K, gcodes.data(), code_stride, gscales.data(), scale_stride, gout.data());
  for (int c = 0; c < nc; ++c) {
    FormatId f = FormatId::fp32;
    CodecParams p;
    REQUIRE(combo_at(c, f, p.scaling, p.rounding));
    INFO(format_name(f) << " " << scaling_name(p.scaling) << " " << rounding_name(p.rounding));
    dispatch_format(f, [&](auto codec) {
      using C = decltype(codec);
      for (int h = 0; h < H; ++h) {
        p.seed = 0x5EEDull;
        p.head = static_cast<uint32_t>(h);
        p.step = 11;
        std::vector<uint8_t> codes(code_stride, 0), scales(scale_stride, 0);
        std::vector<float> out(static_cast<std::size_t>(V) * K);
        const float* xh = x.data() + static_cast<std::size_t>(h) * V * K;
        C::encode_state(xh, V, K, p, codes.data(), scales.data());
        if constexpr (C::kStateful)  // as gpu_sweep.cu: a second store in place, after the first
          encode_state_after<C>(xh, V, K, p, codes.data(), scales.data(), codes.data(), scales.data());
        C::decode_state(codes.data(), scales.data(), V, K, p, out.data());
        const std::size_t slot = static_cast<std::size_t>(c) * H + h;
        REQUIRE(std::memcmp(codes.data(), &gcodes[slot * code_stride], code_stride) == 0);
        REQUIRE(std::memcmp(scales.data(), &gscales[slot * scale_stride], scale_stride) == 0);
        REQUIRE(std::memcmp(out.data(), &gout[slot * V * K], out.size() * sizeof(float)) == 0);
      }
      return 0;
    });
  }
}
