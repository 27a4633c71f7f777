// Dumps int8_ef stores for tests/formats/check_feedback.py, which replays them with numpy from the rule documented in
// src/formats/README.md ("Error-feedback INT8"), not from this code. One case:
//   case <name> <scaling> <V> <K> <stores>
// then per store (each replacing the previous one in place, the first with no previous state):
//   x <V*K float32 bits>            the value stored
//   codes <code bytes, hex>         int8 codes then the packed 4-bit residuals
//   scales <scale bytes, hex>
//   dec <V*K float32 bits>          decode_state of the stored state
// The stored values of a sequence are decay-free accumulations (x_t = decoded_{t-1} + an update) and fresh random
// states, with values near 0 (zeros, -0, subnormals), near FLT_MAX, NaN and Inf.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/state_codec.h"

using namespace replayssm::formats;
using Ef = StateCodec<FormatId::int8_ef>;

namespace {

uint32_t fb(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void put_floats(const char* tag, const std::vector<float>& v) {
  std::printf("%s", tag);
  for (float f : v) std::printf(" %08x", fb(f));
  std::printf("\n");
}
void put_bytes(const char* tag, const std::vector<uint8_t>& b) {
  std::printf("%s ", tag);
  for (uint8_t c : b) std::printf("%02x", c);
  std::printf("\n");
}

// kind: 0 accumulate small updates (below half a step: plain INT8 RNE would drop them), 1 accumulate updates of
// about a step, 2 fresh random states, 3 near-zero values, 4 near FLT_MAX, 5 NaN / Inf elements among random ones
void run_case(const char* name, Scaling s, int V, int K, int stores, int kind, std::mt19937& rng) {
  std::printf("case %s %s %d %d %d\n", name, scaling_name(s), V, K, stores);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-149, -120);
  const std::size_t n = static_cast<std::size_t>(V) * K;
  std::vector<uint8_t> codes(Ef::code_bytes(V, K), 0), scales(Ef::scale_bytes(V, K, s), 0);
  std::vector<float> x(n), dec(n, 0.0f);
  CodecParams p;
  p.scaling = s;
  for (int t = 0; t < stores; ++t) {
    for (std::size_t i = 0; i < n; ++i) {
      switch (kind) {
        case 0: x[i] = t == 0 ? nd(rng) : dec[i] + 0.001f * nd(rng); break;
        case 1: x[i] = t == 0 ? nd(rng) : dec[i] + 0.02f * nd(rng); break;
        case 2: x[i] = nd(rng) * std::exp2(static_cast<float>(static_cast<int>(i % 7) - 3)); break;
        case 3: x[i] = i % 5 == 0 ? (i % 2 ? -0.0f : 0.0f) : std::ldexp(nd(rng) > 0 ? 1.0f : -1.0f, ex(rng)); break;
        case 4: x[i] = (i % 3 == 0 ? 3.4028234e38f : 3.0e38f) * (nd(rng) > 0 ? 1.0f : -0.999f); break;
        default: x[i] = t == 0 ? nd(rng) : dec[i] + 0.01f * nd(rng); break;
      }
    }
    if (kind == 5) {
      x[static_cast<std::size_t>(t) % n] = std::nanf("");
      if (t == stores - 1) x[n - 1] = -INFINITY;  // the last store only: its group decodes to NaN (loud)
    }
    Ef::encode_state_after(x.data(), V, K, p, t == 0 ? nullptr : codes.data(), t == 0 ? nullptr : scales.data(),
                           codes.data(), scales.data());
    Ef::decode_state(codes.data(), scales.data(), V, K, p, dec.data());
    put_floats("x", x);
    put_bytes("codes", codes);
    put_bytes("scales", scales);
    put_floats("dec", dec);
  }
}

}  // namespace

int main() {
  std::mt19937 rng(20261205);
  const Scaling all[] = {Scaling::column, Scaling::row, Scaling::head, Scaling::block};
  for (Scaling s : all) {
    const std::string sn = scaling_name(s);
    run_case(("small_updates_" + sn).c_str(), s, 16, 40, 12, 0, rng);  // K = 40: a short last block; odd rows
    run_case(("step_updates_" + sn).c_str(), s, 9, 36, 8, 1, rng);
    run_case(("fresh_" + sn).c_str(), s, 8, 64, 5, 2, rng);
    run_case(("near_zero_" + sn).c_str(), s, 5, 33, 4, 3, rng);  // 165 elements: an odd nibble count
    run_case(("near_max_" + sn).c_str(), s, 4, 32, 4, 4, rng);
    run_case(("nan_inf_" + sn).c_str(), s, 6, 32, 5, 5, rng);
  }
  return 0;
}
