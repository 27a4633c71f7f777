#include <cmath>

#include "catch.hpp"
#include "core/synthetic.h"
#include "reference/gdn_recurrent.h"
#include "reference/mamba2_recurrent.h"
#include "sweep/mode_recurrence.h"

using namespace replayssm;
using namespace replayssm::sweep;

namespace {
emu::Mode make_mode(emu::Arch a, emu::Policy p, formats::FormatId f) {
  emu::Mode m;
  m.arch = a;
  m.policy = p;
  m.format = f;
  m.scaling = formats::default_scaling(f);
  m.L = 16;
  m.max_drafts = 1;
  return m;
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
}  // namespace

TEST_CASE("mode recurrence: FP32 modes track the FP64 spec on the same inputs", "[sweep]") {
  auto in = random_gdn(70, 1, 2, 32, 16, 5, DecayRange{-4.0, 0.0});
  auto spec = ref::gdn_recurrent(in);
  auto be = emu::make_emulated_backend();
  for (auto p : {emu::Policy::conventional_shared, emu::Policy::replay_shared, emu::Policy::replay_split}) {
    ModeRecurrence mr(*be, make_mode(emu::Arch::gdn, p, formats::FormatId::fp32));
    LayerDrift d;
    auto out = mr.run_gdn(in, &d);
    REQUIRE(out.o.size() == spec.o.size());
    CHECK(d.steps == std::vector<std::int64_t>{16, 32, 48, 64});
    // FP32 arithmetic on FP32-rounded inputs: errors of order 2^-24 times a modest growth factor.
    for (double x : d.output) CHECK(x < 1e-5);
    for (double x : d.state) CHECK(x < 1e-5);
  }
}

TEST_CASE("mode recurrence: split beats shared beats conventional in low precision", "[sweep]") {
  auto in = random_mamba2(256, 2, 1, 16, 32, 11, DecayRange{-6.0, -2.0});  // slow decay: errors accumulate
  auto be = emu::make_emulated_backend();
  double drift[3];
  int i = 0;
  for (auto p : {emu::Policy::conventional_shared, emu::Policy::replay_shared, emu::Policy::replay_split}) {
    ModeRecurrence mr(*be, make_mode(emu::Arch::mamba2, p, formats::FormatId::fp8_e4m3));
    LayerDrift d;
    mr.run_mamba2(in, &d);
    drift[i++] = mean(d.state);
  }
  CHECK(drift[0] > 1.5 * drift[1]);
  CHECK(drift[2] < 1e-5);  // split: the HP checkpoint carries the recurrence
  CHECK(drift[1] > 1e-4);  // the format's error is really there
}

TEST_CASE("mode recurrence: a state that overflows FP32 is reported as a divergence at its first position", "[sweep]") {
  auto in = random_mamba2(40, 2, 1, 8, 16, 3, DecayRange{-12.0, -10.0});  // decay ~1: the state only grows
  for (std::size_t i = static_cast<std::size_t>(20 * 2 * 8); i < in.x.size(); ++i) in.x[i] *= 1e44;  // from t = 20 dt*x passes FP32 max
  auto be = emu::make_emulated_backend();
  ModeRecurrence mr(*be, make_mode(emu::Arch::mamba2, emu::Policy::conventional_shared, formats::FormatId::fp32));
  LayerDrift d;
  std::int64_t at = -1;
  try {
    mr.run_mamba2(in, &d);
  } catch (const Diverged& e) {
    at = e.position;
  }
  CHECK(at >= 20);
  CHECK(at < 40);
}
