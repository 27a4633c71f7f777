#include "catch.hpp"
#include "core/errors.h"
#include "sweep/sweep_plan.h"

using namespace replayssm;
using namespace replayssm::sweep;

TEST_CASE("plan: axes expand in a fixed order with stable ids", "[plan]") {
  SweepAxes ax;
  ax.formats = {parse_format_spec("fp32"), parse_format_spec("fp8_e4m3:row"), parse_format_spec("nvfp4")};
  ax.roundings = {formats::Rounding::rne, formats::Rounding::sr};
  ax.policies = {emu::Policy::conventional_shared, emu::Policy::replay_split};
  ax.Ls = {16};
  ax.usources = {emu::USource::hp, emu::USource::recompute};
  std::vector<ModelRef> models{{"gdn_tiny", "g.h5", emu::Arch::gdn}, {"mamba2_tiny", "m.h5", emu::Arch::mamba2}};
  auto plan = expand_plan(models, ax);
  // gdn: conventional 1+2+2 = 5, split 5 x 2 u-sources = 10; mamba2: 5 + 5
  CHECK(plan.size() == 25);
  CHECK(plan[0].id == "gdn_tiny.conventional_shared.fp32-none.rne.L16");
  for (std::size_t i = 0; i < plan.size(); ++i) CHECK(plan[i].index == static_cast<int>(i));
  CHECK(expand_plan(models, ax)[7].id == plan[7].id);
}

TEST_CASE("plan: bad names and shards are user errors", "[plan][badinput]") {
  CHECK_THROWS_AS(parse_format_spec("fp7"), UserError);
  CHECK_THROWS_AS(parse_format_spec("nvfp4:row"), UserError);
  CHECK_THROWS_AS(parse_shard("3/3"), UserError);
  CHECK_THROWS_AS(parse_shard("1"), UserError);
  CHECK_THROWS_AS(parse_shard("a/b"), UserError);
  CHECK(parse_shard("1/4") == std::make_pair(1, 4));
}
