// `validate --external --mode`: the check an outside low-precision kernel gets (src/emulation/external_mode.h) must
// tell modes apart on the committed real-architecture dumps (datasets/external/: Qwen3.5 GDN, Nemotron-H Mamba-2).
// For every main mode of each arch, an "outside kernel" is our emulation run in a wrong mode -- another format, scaling,
// policy, rounding, GDN u-source, the flush point moved to L - 1 or L + 1, another SR seed -- or its outputs replaced by
// zeros or delayed by one step; written as the file `validate --external` reads, judged as the right mode, at least one
// (layer, head) row must FAIL wherever the mutation changes the mode's exact result on this input (visible(); under
// fp32 a policy or flush point does not). The right mode itself must pass. (An independent implementation, numpy, is
// checked by tests/external/external_fixtures_test.py.)
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/h5.h"
#include "emulation/decode_api.h"
#include "emulation/dump_cases.h"
#include "emulation/external_mode.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"

using namespace replayssm;
using namespace replayssm::emu;
using formats::FormatId;
using formats::Rounding;
using formats::Scaling;

namespace {

std::string fixture(const char* name) {
  const char* src = std::getenv("REPLAYSSM_SOURCE_DIR");
  REQUIRE(src != nullptr);
  return std::string(src) + "/datasets/external/" + name;
}

enum class OutputMut { none, zeros, delay };

struct Theirs {
  std::vector<CaseOutputs> layers;
};

// Every dump layer run through a backend in mode m (the emulation: an outside kernel; the mode-aware reference: the
// mode's exact result).
Theirs run_layers(DecodeBackend& be, const std::vector<DumpLayerCase>& layers, const Mode& m) {
  Theirs t;
  for (const DumpLayerCase& l : layers) {
    Mode mm = m;
    mm.arch = l.shape.arch;
    t.layers.push_back(run_backend(be, mm, dump_case_inputs(l, l.tokens.T)));
  }
  return t;
}

// Whether a mutation changes the mode's exact result on this input: the two modes' mode-aware references differ, in
// some layer (outputs or final state), by more than kVisible times the FP32 floor -- a level independent of the bound
// under test, so a bound too loose to see such a change fails this test instead of passing it vacuously.
constexpr double kVisible = 16.0;
bool visible(const std::vector<DumpLayerCase>& layers, const Theirs& a, const Theirs& b) {
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const DumpLayerCase& l = layers[i];
    const double floor = fp32_floor(l.shape.dims.K, effective_tokens(l.tokens.T, 1.0 / std::max(1e-12, 1.0 - l.a_max)));
    const double d = std::max(compare(a.layers[i].o, b.layers[i].o, Tolerance{inf, inf, 0.0}).rel_rms,
                              compare(a.layers[i].state, b.layers[i].state, Tolerance{inf, inf, 0.0}).rel_rms);
    if (d > kVisible * floor) return true;
  }
  return false;
}

void write_theirs(const std::string& path, const std::vector<DumpLayerCase>& layers, const Theirs& t, OutputMut mut) {
  h5::File f = h5::File::create(path);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Dims& d = layers[i].shape.dims;
    const std::size_t T = std::size_t(layers[i].tokens.T), per_t = std::size_t(d.H) * std::size_t(d.V);
    std::vector<double> o = t.layers[i].o;
    if (mut == OutputMut::zeros) o.assign(o.size(), 0.0);
    if (mut == OutputMut::delay) {  // position p shows position p - 1's output
      for (std::size_t p = T; p-- > 1;) std::copy_n(o.begin() + (p - 1) * per_t, per_t, o.begin() + p * per_t);
      std::fill_n(o.begin(), per_t, 0.0);
    }
    const std::string g = "/layers/" + layers[i].layer;
    f.write(g + "/o", {T, std::size_t(d.H), std::size_t(d.V)}, o.data());
    f.write(g + "/final_state", {std::size_t(d.H), std::size_t(d.V), std::size_t(d.K)}, t.layers[i].state.data());
  }
}

struct Mutation {
  std::string label;
  Mode mode;
  OutputMut out = OutputMut::none;
};

std::vector<Mutation> mutations_of(const Mode& m) {
  std::vector<Mutation> out;
  auto add = [&](const std::string& label, const Mode& b) { out.push_back({label, b, OutputMut::none}); };
  for (FormatId f : formats::kAllFormats) {
    if (f == m.format) continue;
    Mode b = m;
    b.format = f;
    b.scaling = formats::scaling_valid(f, m.scaling) ? m.scaling : formats::default_scaling(f);
    b.rounding = formats::rounding_valid(f, m.rounding) ? m.rounding : Rounding::rne;
    add(std::string("format ") + formats::format_name(f), b);
  }
  for (Scaling s : formats::kAllScalings) {
    if (s == m.scaling || !formats::scaling_valid(m.format, s)) continue;
    Mode b = m;
    b.scaling = s;
    add(std::string("scaling ") + formats::scaling_name(s), b);
  }
  for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split}) {
    if (p == m.policy) continue;
    Mode b = m;
    b.policy = p;
    b.usource = USource::hp;
    add(std::string("policy ") + policy_name(p), b);
  }
  for (int dl : {-1, +1}) {
    Mode b = m;
    b.L = m.L + dl;
    add("L = " + std::to_string(b.L), b);
  }
  if (m.arch == Arch::gdn && m.split())
    for (USource u : {USource::hp, USource::lp, USource::recompute}) {
      if (u == m.usource) continue;
      Mode b = m;
      b.usource = u;
      add(std::string("u=") + usource_name(u), b);
    }
  if (formats::rounding_valid(m.format, Rounding::sr)) {
    Mode b = m;
    b.rounding = m.rounding == Rounding::sr ? Rounding::rne : Rounding::sr;
    add(std::string("rounding ") + formats::rounding_name(b.rounding), b);
  }
  if (m.rounding == Rounding::sr) {
    Mode b = m;
    b.seed = m.seed + 1;
    add("SR seed + 1", b);
  }
  out.push_back({"out = 0", m, OutputMut::zeros});
  out.push_back({"out delayed", m, OutputMut::delay});
  return out;
}

std::string option_of(const Mode& m) {
  return m.name() + "/L=" + std::to_string(m.L) + "/seed=" + std::to_string(m.seed);
}

int failed_rows(const std::string& theirs, const std::string& dump, const Mode& m) {
  int n = 0;
  for (const ExternalModeRow& r : validate_external_mode(theirs, dump, option_of(m))) n += r.pass() ? 0 : 1;
  return n;
}

void check_dump(const char* name, Arch arch) {
  const std::string dump = fixture(name);
  const std::vector<DumpLayerCase> layers = load_dump_cases(dump);
  const std::string path = std::string("external_mode_") + arch_name(arch) + ".h5";
  const auto emulated = make_emulated_backend();
  const auto reference = make_mode_aware_reference();
  int undetected = 0, detected = 0, invisible = 0;
  for (Mode m : modes_for(arch, /*main_only=*/true)) {
    for (Rounding r : {Rounding::rne, Rounding::sr}) {
      if (!formats::rounding_valid(m.format, r)) continue;
      m.rounding = r;
      m.seed = 7;
      const Theirs right = run_layers(*emulated, layers, m);
      const Theirs right_ref = run_layers(*reference, layers, m);
      write_theirs(path, layers, right, OutputMut::none);
      INFO(name << " " << option_of(m));
      CHECK(failed_rows(path, dump, m) == 0);
      for (const Mutation& mu : mutations_of(m)) {
        const bool output_mut = mu.out != OutputMut::none;
        if (!output_mut && !visible(layers, run_layers(*reference, layers, mu.mode), right_ref)) {
          ++invisible;  // e.g. policy or flush point under fp32 (the store is exact), u=lp vs recompute on a short run
          continue;
        }
        write_theirs(path, layers, output_mut ? right : run_layers(*emulated, layers, mu.mode), mu.out);
        if (failed_rows(path, dump, m) == 0) {
          ++undetected;
          std::printf("  undetected: %s judged as %s: %s\n", name, option_of(m).c_str(), mu.label.c_str());
        } else {
          ++detected;
        }
      }
    }
  }
  std::remove(path.c_str());
  std::printf("external --mode mutations on %s: %d detected, %d undetected, %d not visible on this input\n", name,
              detected, undetected, invisible);
  CHECK(detected > 0);
  CHECK(undetected == 0);
}

}  // namespace

TEST_CASE("external --mode: every mutation of a GDN mode fails on the Qwen3.5 dump", "[external]") {
  check_dump("qwen3_5_tiny.h5", Arch::gdn);
}

TEST_CASE("external --mode: every mutation of a Mamba-2 mode fails on the Nemotron-H dump", "[external]") {
  check_dump("nemotron_h_tiny.h5", Arch::mamba2);
}

TEST_CASE("external --mode: the mode option parses its own names and refuses bad ones", "[external]") {
  for (Arch a : {Arch::gdn, Arch::mamba2})
    for (const Mode& m : modes_for(a, false)) {
      const Mode p = parse_mode(option_of(m), a);
      CHECK(p.name() == m.name());
      CHECK(p.L == m.L);
      CHECK(p.seed == m.seed);
      CHECK(parse_mode(m.name(), a).name() == m.name());
    }
  const Mode d = parse_mode("replay_shared/fp8_e4m3", Arch::gdn);
  CHECK(d.scaling == formats::default_scaling(FormatId::fp8_e4m3));
  CHECK(d.rounding == Rounding::rne);
  CHECK(d.L == 16);
  for (const char* bad : {"", "replay_shared", "replay_shared//bf16", "nope/bf16", "replay_shared/fp7",
                          "replay_shared/fp32/sr", "replay_shared/bf16/row", "replay_shared/bf16/L=0",
                          "replay_shared/bf16/L=x", "conventional_shared/bf16/u=hp", "replay_shared/bf16/rne/rne",
                          "replay_shared/bf16/seed=-1"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_mode(bad, Arch::gdn), std::invalid_argument);
  }
  CHECK_THROWS_AS(parse_mode("replay_split/bf16/u=lp", Arch::mamba2), std::invalid_argument);
}
