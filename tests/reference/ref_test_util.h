#pragma once
// Shared helpers of the reference tests: seeded random layer inputs, stream selection, and the one
// comparison (core/compare.h) wrapped so every check also records the worst rel-RMS seen per form.
#include <cstdint>
#include <string>
#include <vector>

#include "core/compare.h"
#include "reference/layer_inputs.h"

namespace replayssm::ref::test {

// Log decay g (GDN g, Mamba-2 dt*A) drawn log-uniformly in magnitude from [mag_lo, mag_hi], negative.
struct DecayRange {
  double mag_lo = 1e-4;
  double mag_hi = 10.0;
};
inline constexpr DecayRange kDecayWide{1e-4, 10.0};
inline constexpr DecayRange kDecayNearOne{1e-4, 1e-4};
inline constexpr DecayRange kDecayNearZero{10.0, 10.0};

GdnInputs random_gdn(std::uint64_t seed, int T, int Hk, int Hv, int K, int V, DecayRange d = kDecayWide);
Mamba2Inputs random_mamba2(std::uint64_t seed, int T, int H, int G, int P, int N, DecayRange d = kDecayWide,
                           bool with_D = true);
std::vector<double> random_vector(std::uint64_t seed, std::size_t n, double sd = 1.0);

// The inputs at the given time steps, in that order (a speculative "accepted stream").
GdnInputs select_steps(const GdnInputs& in, const std::vector<int>& steps);
Mamba2Inputs select_steps(const Mamba2Inputs& in, const std::vector<int>& steps);

// compare(ref, got, kFp64FormTolerance); records rel_rms under `form` for the end-of-run summary.
Comparison check_form(const std::string& form, const std::vector<double>& ref, const std::vector<double>& got);

}  // namespace replayssm::ref::test

// REQUIRE that got matches ref within kFp64FormTolerance, printing the comparison on failure.
#define REF_REQUIRE_CLOSE(form_, ref_, got_)                                                    \
  do {                                                                                          \
    const ::replayssm::Comparison cmp_ = ::replayssm::ref::test::check_form(form_, ref_, got_); \
    INFO(std::string(form_) + ": " + cmp_.summary());                                           \
    REQUIRE(cmp_.pass);                                                                         \
  } while (0)
