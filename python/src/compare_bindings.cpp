// The one comparison (src/core/compare.h) and the named tolerances (src/emulation/tolerances.h).
#include <cmath>
#include <string>
#include <tuple>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "arrays.h"
#include "core/compare.h"
#include "emulation/decode_api.h"
#include "emulation/tolerances.h"

namespace replayssm::py {
namespace {

using namespace replayssm::emu;

nb::dict compare_arrays(const In<double>& expected, const In<double>& actual, double max_abs_rel, double rel_rms,
                        double abs_floor) {
  if (expected.size() != actual.size())
    throw std::invalid_argument("actual: " + std::to_string(actual.size()) + " elements, expected has " +
                                std::to_string(expected.size()));
  const Comparison c = compare(expected.data(), actual.data(), expected.size(), Tolerance{max_abs_rel, rel_rms, abs_floor});
  nb::dict d;
  d["n"] = c.n;
  d["max_abs"] = c.max_abs;
  d["ref_max_abs"] = c.ref_max_abs;
  d["rel_rms"] = c.rel_rms;
  d["first_bad"] = c.first_bad;
  d["n_bad"] = c.n_bad;
  d["n_nonfinite"] = c.n_nonfinite;
  d["passed"] = c.pass;
  d["summary"] = c.summary();
  return d;
}

// The bound of a mode: (max_abs_rel, rel_rms). tokens: committed tokens; memory: 1 / (1 - a_max) of the decays.
std::tuple<double, double> tolerance(const std::string& arch, const std::string& mode, int K, int V, long tokens,
                                     double memory, const std::string& against) {
  const Mode m = parse_mode(mode, parse_arch(arch));
  Tolerance t{};
  if (against == "fp64") {
    t = tolerance_vs_fp64(m, V, K, tokens, memory);
  } else if (against == "mode_aware") {
    t = tolerance_vs_mode_aware(m, V, K, tokens, memory).out_state;
  } else if (against == "emulation") {
    t = kEmulationTolerance;
  } else {
    throw std::invalid_argument("against: expected 'fp64', 'mode_aware' or 'emulation', got '" + against + "'");
  }
  return {t.max_abs_rel, t.rel_rms};
}

}  // namespace

void bind_compare(nb::module_& m) {
  m.def("compare", &compare_arrays, nb::arg("expected"), nb::arg("actual"), nb::arg("max_abs_rel"),
        nb::arg("rel_rms"), nb::arg("abs_floor"));
  m.def("tolerance", &tolerance, nb::arg("arch"), nb::arg("mode"), nb::arg("K"), nb::arg("V"), nb::arg("tokens"),
        nb::arg("memory"), nb::arg("against"));
  m.def("external_mode_rel_rms",
        [](int K, long tokens, double memory, double ours, double mode_error) {
          return external_mode_tolerance(K, tokens, memory, ours, mode_error).rel_rms;
        },
        nb::arg("K"), nb::arg("tokens"), nb::arg("memory"), nb::arg("ours"), nb::arg("mode_error"));
  m.def("fp32_floor", [](int K, long tokens, double memory) { return fp32_floor(K, effective_tokens(tokens, memory)); },
        nb::arg("K"), nb::arg("tokens"), nb::arg("memory"));
  m.attr("EXTERNAL_EMULATION_FACTOR") = kExternalEmulationFactor;
  m.attr("EXTERNAL_SEPARATION") = kExternalSeparation;
  m.attr("EXTERNAL_MIN_SEPARATION") = kExternalMinSeparation;
}

}  // namespace replayssm::py
