#include <algorithm>
#include <set>

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

TEST_CASE("plan: shards split the plan evenly and mix the formats", "[plan]") {
  // experiments/kl_vs_length.ini: 2 models x 3 policies x 4 formats, one rounding, one L (24 runs).
  SweepAxes ax;
  for (const char* f : {"fp32", "bf16", "fp8_e4m3:row", "nvfp4"}) ax.formats.push_back(parse_format_spec(f));
  ax.roundings = {formats::Rounding::rne};
  ax.policies = {emu::Policy::conventional_shared, emu::Policy::replay_shared, emu::Policy::replay_split};
  ax.Ls = {16};
  ax.usources = {emu::USource::hp};
  std::vector<ModelRef> models{{"gdn_tiny", "g.h5", emu::Arch::gdn}, {"mamba2_tiny", "m.h5", emu::Arch::mamba2}};
  const auto plan = expand_plan(models, ax);
  REQUIRE(plan.size() == 24);
  CHECK(assign_shards(plan, 1) == std::vector<int>(plan.size(), 0));
  for (int n : {2, 3, 4, 5, 8, 24, 30}) {
    const auto shard = assign_shards(plan, n);
    REQUIRE(shard.size() == plan.size());
    CHECK(assign_shards(plan, n) == shard);  // a function of the plan and n only
    std::vector<int> runs(static_cast<std::size_t>(n), 0);
    std::vector<std::set<formats::FormatId>> fmts(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < plan.size(); ++k) {
      REQUIRE(shard[k] >= 0);
      REQUIRE(shard[k] < n);
      ++runs[static_cast<std::size_t>(shard[k])];
      fmts[static_cast<std::size_t>(shard[k])].insert(plan[k].mode.format);
    }
    const int lo = static_cast<int>(plan.size()) / n, hi = lo + (static_cast<int>(plan.size()) % n ? 1 : 0);
    for (std::size_t s = 0; s < runs.size(); ++s) {
      INFO("n " << n << " shard " << s);
      CHECK(runs[s] >= lo);
      CHECK(runs[s] <= hi);
      // A plain index % n gives every shard a single format for n = 4 and 8.
      if (n <= 8) CHECK(fmts[s].size() >= std::min<std::size_t>(3, static_cast<std::size_t>(runs[s])));
    }
  }
}
