// Dumps every scaled codec (format x scaling x rounding) on head states whose magnitudes span the whole finite float
// range, for tests/formats/check_range.py (the ml_dtypes oracle and the range properties):
//   state <format> <scaling> <rounding> <V> <K>
//   x <float32 bits ...>         the input, row-major [V][K]
//   y <float32 bits ...>         decode_state(encode_state(x))
//   s <scale bytes as hex>       the stored scales
// Each state has two row magnitudes (rows 0, 2 and rows 1, 3), each drawn from the list below: the float limits,
// the thresholds where a scale or its reciprocal leaves the normal range (kMax * FLT_MIN, kMax / FLT_MAX, 2688 /
// FLT_MAX, FLT_MAX / 448) and a spread of powers of two. Rows hold signed values up to the magnitude, zeros and the
// magnitude itself; fixed seed.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "formats/state_codec.h"
#include "state_combos.h"

using namespace replayssm::formats;

namespace {
std::vector<float> magnitudes() {
  std::vector<float> m = {FLT_MAX, std::nextafter(FLT_MAX, 0.0f), FLT_MIN, std::nextafter(FLT_MIN, 0.0f),
                          std::ldexp(1.0f, -149), 1e-37f, 5e-39f, 448.0f * FLT_MIN, 127.0f * FLT_MIN,
                          57344.0f * FLT_MIN, 448.0f / FLT_MAX, 2688.0f / FLT_MAX, FLT_MAX / 448.0f, 7.6e35f,
                          FLT_MAX / 127.0f, 1.0f, 0.0f};
  for (int e = -148; e <= 127; e += 11) m.push_back(std::ldexp(1.37f, e));
  return m;
}

void fill_row(float* row, int K, float mag, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int k = 0; k < K; ++k) row[k] = static_cast<float>(u(rng) * static_cast<double>(mag));
  row[1] = 0.0f;
  row[K / 2] = -0.0f;
  row[K - 3] = mag;
  row[5] = -mag;
}

void dump(FormatId f, Scaling s, Rounding r, const std::vector<float>& x, int V, int K) {
  dispatch_format(f, [&](auto codec) {
    using C = decltype(codec);
    std::vector<uint8_t> codes(C::code_bytes(V, K)), scales(C::scale_bytes(V, K, s) + 1);
    std::vector<float> y(x.size());
    CodecParams p;
    p.scaling = s;
    p.rounding = r;
    p.seed = 7;
    C::encode_state(x.data(), V, K, p, codes.data(), scales.data());
    C::decode_state(codes.data(), scales.data(), V, K, p, y.data());
    std::printf("state %s %s %s %d %d\nx", format_name(f), scaling_name(s), rounding_name(r), V, K);
    for (float v : x) std::printf(" %08x", float_to_bits(v));
    std::printf("\ny");
    for (float v : y) std::printf(" %08x", float_to_bits(v));
    std::printf("\ns ");
    for (std::size_t i = 0; i + 1 < scales.size(); ++i) std::printf("%02x", scales[i]);
    std::printf("\n");
  });
}
}  // namespace

int main() {
  const int V = 4, K = 40;  // K: one whole 32-block (16-blocks for nvfp4) and a short one
  const auto mags = magnitudes();
  for (int idx = 0;; ++idx) {
    FormatId f;
    Scaling s;
    Rounding r;
    if (!combo_at(idx, f, s, r)) break;
    if (f == FormatId::fp32 || f == FormatId::bf16 || f == FormatId::fp16 || f == FormatId::bf16x2)
      continue;  // unscaled: their range behaviour is the element table's
    std::mt19937 rng(1234);
    for (std::size_t a = 0; a < mags.size(); ++a)
      for (float b : {mags[a], FLT_MAX, 1.0f, mags[(a * 7 + 3) % mags.size()]}) {
        std::vector<float> x(static_cast<std::size_t>(V) * K);
        for (int v = 0; v < V; ++v) fill_row(x.data() + static_cast<std::size_t>(v) * K, K, v % 2 ? b : mags[a], rng);
        dump(f, s, r, x, V, K);
      }
  }
  return 0;
}
