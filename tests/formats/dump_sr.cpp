// Dumps what src/formats' stochastic rounding computes, for tests/formats/check_sr.py to recompute with its own
// numpy implementation of the counter hash (src/formats/README.md, "Stochastic rounding") and check statistically:
//   bits <seed> <head> <row> <col> <step> <bits>    element_rand_bits(params{sr, seed, head, step}, row, col), and
//                                                   sr_bits() itself past INT_MAX rows/columns (hex seed and bits)
//   rne_bits <bits>                                 element_rand_bits under RNE (documented: no random bits, 0)
//   philox <rounds> <counter x4> <key x2> <out x4>  philox4x32 (hex words; Random123 known-answer inputs first)
//   pbits <seed> <head> <row> <col> <step> <rounds> <bits>   element_rand_bits under Rounding::philox
//   config <name> <format> <scaling> <V> <K> <steps> <seed> <head> <step0> <rounding>
//   x <V*K float32 bits>                            the head state [V][K], row-major
//   dec <step> <V*K float32 bits>                   decode_state(encode_state(x, rounding, seed, head, step)), one line
//                                                   per step step0 .. step0 + steps - 1
// Every SR-capable format is run through its head-state codec (the path of the emulation and the kernels), unscaled
// where the format allows it (so that the oracle can place x on the format's own grid) and scaled as the sweep
// stores it. K = 160 crosses NVFP4's 128-element encode chunk, so the column index of the second chunk is covered.
// The column- and tile-scaled codecs run on [64][8] states (each column scale shared by 64 rows; two 32-row tiles).
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/state_codec.h"

using namespace replayssm::formats;

namespace {
uint32_t fb(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct Config {
  const char* name;
  FormatId format;
  Scaling scaling;
  double lo, hi;  // |x| log-uniform in [lo, hi]
  uint64_t seed;
  uint32_t head, step0;
  Rounding rounding;  // sr or philox
};

// Round-to-nearest value of x in the codec (a point on its grid: SR must return it unchanged).
template <class C>
float on_grid(float x) {
  return C::decode(C::encode(x, Rounding::rne, 0u));
}

template <class C>
void run(const Config& c, int V, int K, int steps, std::mt19937_64& rng) {
  check_combination(c.format, c.scaling, c.rounding);
  const std::size_t n = static_cast<std::size_t>(V) * K;
  std::vector<float> x(n);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double mag = c.lo * std::pow(c.hi / c.lo, u01(rng));
    float v = static_cast<float>(rng() & 1 ? -mag : mag);
    if (c.scaling == Scaling::none && i % 23 == 5) v = on_grid<C>(v);  // a few exact grid points
    x[i] = v;
  }
  if (c.scaling == Scaling::none) x[7] = 0.0f, x[8] = -0.0f;
  std::printf("config %s %s %s %d %d %d %016" PRIx64 " %u %u %s\n", c.name, format_name(c.format),
              scaling_name(c.scaling), V, K, steps, c.seed, c.head, c.step0, rounding_name(c.rounding));
  std::printf("x");
  for (float v : x) std::printf(" %08x", fb(v));
  std::printf("\n");
  std::vector<uint8_t> codes(C::code_bytes(V, K)), scales(C::scale_bytes(V, K, c.scaling) + 1);
  std::vector<float> out(n);
  for (int s = 0; s < steps; ++s) {
    CodecParams p;
    p.scaling = c.scaling;
    p.rounding = c.rounding;
    p.seed = c.seed;
    p.head = c.head;
    p.step = c.step0 + static_cast<uint32_t>(s);
    C::encode_state(x.data(), V, K, p, codes.data(), scales.data());
    C::decode_state(codes.data(), scales.data(), V, K, p, out.data());
    std::printf("dec %u", p.step);
    for (float v : out) std::printf(" %08x", fb(v));
    std::printf("\n");
  }
}
}  // namespace

int main() {
  std::mt19937_64 rng(0x5eed5eedULL);

  // The random bits alone: element_rand_bits (the codecs' one entry) on random and edge counters, and sr_bits past
  // the int range element_rand_bits takes for rows and columns.
  const uint64_t seeds[] = {0, 1, 0xFFFFFFFFFFFFFFFFULL, 0x9E3779B97F4A7C15ULL, 0x00000000FFFFFFFFULL};
  const uint32_t edges[] = {0u, 1u, 2u, 127u, 128u, 0x7FFFFFFFu};
  for (uint64_t seed : seeds)
    for (uint32_t e : edges) {
      CodecParams p;
      p.rounding = Rounding::sr;
      p.seed = seed;
      p.head = e;
      p.step = 0xFFFFFFFFu - e;
      const int row = static_cast<int>(e), col = static_cast<int>(e ^ 0x5Au);
      std::printf("bits %016" PRIx64 " %u %d %d %u %08x\n", seed, p.head, row, col, p.step, element_rand_bits(p, row, col));
    }
  for (int i = 0; i < 3000; ++i) {
    CodecParams p;
    p.rounding = Rounding::sr;
    p.seed = rng();
    p.head = static_cast<uint32_t>(rng() % (i % 3 == 0 ? 0x100000000ULL : 64));
    p.step = static_cast<uint32_t>(rng() % (i % 2 == 0 ? 0x100000000ULL : 4096));
    const int row = static_cast<int>(rng() % (i % 5 == 0 ? 0x80000000ULL : 256));
    const int col = static_cast<int>(rng() % (i % 7 == 0 ? 0x80000000ULL : 256));
    std::printf("bits %016" PRIx64 " %u %d %d %u %08x\n", p.seed, p.head, row, col, p.step, element_rand_bits(p, row, col));
  }
  for (int i = 0; i < 200; ++i) {
    const uint64_t seed = rng();
    const auto head = static_cast<uint32_t>(rng()), row = static_cast<uint32_t>(rng()), col = static_cast<uint32_t>(rng()),
               step = static_cast<uint32_t>(rng());
    std::printf("bits %016" PRIx64 " %u %u %u %u %08x\n", seed, head, row, col, step, sr_bits(seed, head, row, col, step));
  }
  {
    CodecParams p;
    p.rounding = Rounding::rne;
    p.seed = 12345;
    p.head = 3;
    p.step = 9;
    std::printf("rne_bits %08x\n", element_rand_bits(p, 4, 5));
  }

  // Philox-4x32: the generator on the Random123 known-answer inputs and random ones (7 and 10 rounds), and the bits of
  // element_rand_bits under Rounding::philox (default rounds, and 7).
  {
    const uint32_t kat[][6] = {{0, 0, 0, 0, 0, 0},
                               {~0u, ~0u, ~0u, ~0u, ~0u, ~0u},
                               {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u}};
    for (int rounds : {7, 10})
      for (int i = 0; i < 3 + 500; ++i) {
        uint32_t w[6];
        for (int j = 0; j < 6; ++j) w[j] = i < 3 ? kat[i][j] : static_cast<uint32_t>(rng());
        const Philox4x32 o = philox4x32(Philox4x32{{w[0], w[1], w[2], w[3]}}, w[4], w[5], rounds);
        std::printf("philox %d %08x %08x %08x %08x %08x %08x %08x %08x %08x %08x\n", rounds, w[0], w[1], w[2], w[3], w[4],
                    w[5], o.v[0], o.v[1], o.v[2], o.v[3]);
      }
    for (int i = 0; i < 1000; ++i) {
      CodecParams p;
      p.rounding = Rounding::philox;
      p.seed = rng();
      p.head = static_cast<uint32_t>(rng());
      p.step = static_cast<uint32_t>(rng());
      p.philox_rounds = i % 2 ? 7 : kPhiloxDefaultRounds;
      const int row = static_cast<int>(rng() % 0x80000000ULL), col = static_cast<int>(rng() % 0x80000000ULL);
      std::printf("pbits %016" PRIx64 " %u %d %d %u %d %08x\n", p.seed, p.head, row, col, p.step, p.philox_rounds,
                  element_rand_bits(p, row, col));
    }
  }

  // The codecs: unscaled on the format's own grid (subnormals included), and scaled as stored by the sweep.
  const int V = 3, K = 160, steps = 256;
  const Config configs[] = {
      {"bf16", FormatId::bf16, Scaling::none, 1e-40, 1e30, 0x0123456789ABCDEFULL, 5, 0, Rounding::sr},
      {"fp16", FormatId::fp16, Scaling::none, 1e-8, 6.0e4, 42, 0, 1000, Rounding::sr},
      {"e4m3", FormatId::fp8_e4m3, Scaling::none, 1e-3, 440.0, 0xFFFFFFFFFFFFFFFFULL, 31, 0xFFFFFE00u, Rounding::sr},
      {"e5m2", FormatId::fp8_e5m2, Scaling::none, 1e-6, 5.0e4, 7, 0xFFFFFFFFu, 77, Rounding::sr},
      {"e4m3_row", FormatId::fp8_e4m3, Scaling::row, 1e-3, 10.0, 99, 2, 123456, Rounding::sr},
      {"int8_row", FormatId::int8, Scaling::row, 1e-2, 3.0, 0xDEADBEEFULL, 17, 4, Rounding::sr},
      {"nvfp4", FormatId::nvfp4, Scaling::block, 1e-2, 5.0, 2024, 63, 1, Rounding::sr},
      {"mxfp8", FormatId::mxfp8, Scaling::block, 1e-3, 100.0, 8, 9, 65536, Rounding::sr},
      {"mxfp4", FormatId::mxfp4, Scaling::block, 1e-2, 2.0, 0xC0FFEEULL, 1, 300, Rounding::sr},
      {"bf16_philox", FormatId::bf16, Scaling::none, 1e-40, 1e30, 0xA5A5A5A5A5A5A5A5ULL, 6, 17, Rounding::philox},
      {"e4m3_row_philox", FormatId::fp8_e4m3, Scaling::row, 1e-3, 10.0, 1, 3, 0xFFFFFF00u, Rounding::philox},
  };
  for (const Config& c : configs)
    dispatch_format(c.format, [&](auto codec) { run<decltype(codec)>(c, V, K, steps, rng); });
  // Column scales: 64 rows share each column's scale (one maximum in 64 sits on the top code).
  const int Vc = 64, Kc = 8;
  const Config column_configs[] = {
      {"e4m3_column", FormatId::fp8_e4m3, Scaling::column, 1e-3, 10.0, 0xABCDEF12ULL, 5, 77, Rounding::sr},
      {"int8_column", FormatId::int8, Scaling::column, 1e-2, 3.0, 3, 0xFFFFFFFFu, 0xFFFFFF00u, Rounding::sr},
      {"int16_column", FormatId::int16, Scaling::column, 1e-4, 3.0, 0x0123456789ABCDEFULL, 12, 9, Rounding::sr},
      {"e4m3_tile", FormatId::fp8_e4m3, Scaling::tile, 1e-3, 10.0, 0x7117E, 2, 5, Rounding::sr},
      {"int8_column_philox", FormatId::int8, Scaling::column, 1e-2, 3.0, 0xFEEDULL, 4, 100, Rounding::philox},
  };
  for (const Config& c : column_configs)
    dispatch_format(c.format, [&](auto codec) { run<decltype(codec)>(c, Vc, Kc, steps, rng); });
  return 0;
}
