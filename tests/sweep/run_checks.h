#pragma once
// What the streamed-run tests share: bit-for-bit comparisons of runs, and the FP64 reference held
// in memory as evaluate_run reads it. Include after catch.hpp.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "source_paths.h"
#include "sweep/sweep_runner.h"

namespace replayssm::testing {

using sweep::ReferenceRows;
using sweep::RunResult;

// Equal bits, NaN included (operator== would call two NaN different).
inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

inline void check_same_run(const RunResult& a, const RunResult& b) {
  CHECK(same_bits(a.kl, b.kl));
  CHECK(same_bits(a.nll, b.nll));
  CHECK(same_bits(a.top1, b.top1));
  CHECK(same_bits(a.kl_binned, b.kl_binned));
  CHECK(same_bits(a.flip_rate_binned, b.flip_rate_binned));
  CHECK(same_bits(a.output_drift, b.output_drift));
  CHECK(same_bits(a.state_drift, b.state_drift));
  CHECK(a.flush_steps == b.flush_steps);
  CHECK(a.first_flip == b.first_flip);
  CHECK(a.layers == b.layers);
  CHECK(a.attrs == b.attrs);
}

// The whole reference in memory, as evaluate_run reads it.
inline ReferenceRows in_memory(const std::vector<double>& logp) {
  return [&logp](std::int64_t first, std::size_t n) {
    const auto b = logp.begin() + static_cast<std::ptrdiff_t>(first) * 256;
    return std::vector<double>(b, b + static_cast<std::ptrdiff_t>(n) * 256);
  };
}

}  // namespace replayssm::testing
