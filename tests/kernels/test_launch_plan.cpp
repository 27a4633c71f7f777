// The tuned kernels' launch plan (kernels/launch_plan.h) on the CPU: the override's parser, the plan at the bench's
// shapes (GDN Qwen3.5, Mamba-2 Nemotron-H) and the committed plan table. The rules the plan composes are checked one by
// one in test_launch_rules.cpp; this checks what they add up to at real shapes.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "emulation/device_backend.h"
#include "kernels/common/decode_kernel.h"
#include "kernels/common/replay_smem.h"
#include "kernels/common/tc_verify_layout.h"

namespace {
using namespace replayssm;
using kern::Hot;
using kern::Layout;
using kern::Flush;

// A problem at the bench's real shapes (GDN Qwen3.5, Mamba-2 Nemotron-H), L = 16, steady state, layouts fitting.
kern::Problem real_problem(emu::Arch arch, emu::Policy pol, formats::FormatId f, int B, int T = 0,
                           emu::USource u = emu::USource::lp) {
  emu::Mode m;
  m.arch = arch, m.policy = pol, m.usource = u, m.format = f, m.L = 16, m.max_drafts = 8;
  m.scaling = f == formats::FormatId::fp32 ? formats::Scaling::none : formats::Scaling::row;
  emu::Dims d;
  d.B = B;
  if (arch == emu::Arch::gdn) d.G = 16, d.H = 32, d.K = 128, d.V = 128;
  else d.G = 8, d.H = 128, d.K = 128, d.V = 64;
  const long long flushing = T == 0 && m.replay() ? (B + 15) / 16 : 0;
  kern::Problem p = kern::make_problem(m, d, T == 0 ? kern::Op::step : kern::Op::verify, T == 0 ? 1 : T, flushing, 0);
  kern::assume_layouts_fit(p);
  return p;
}
std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("plan override: parsed in one place, canonical text, unknown keys and values rejected", "[kernels]") {
  const kern::PlanOverride none = kern::parse_plan_override("");
  CHECK(none.text.empty());
  CHECK_FALSE(none.reference);
  const kern::PlanOverride o =
      kern::parse_plan_override(" dots=tc , layout=split,heads=2,slices=whole,hint=1,records=generic,pdl=off,step=slice,conv=lane");
  CHECK(o.layout == kern::PlanOverride::Layout::split);
  CHECK(o.heads == 2);
  CHECK(o.slices == kern::kWholeHead);
  CHECK(o.hint == 1);
  CHECK(o.generic_records);
  CHECK(o.tc_dots);
  CHECK(o.no_pdl);
  CHECK(o.step == kern::PlanOverride::Step::slice);
  CHECK(o.conv == kern::PlanOverride::Conv::lane);
  CHECK(o.text == "layout=split,heads=2,slices=whole,hint=1,records=generic,dots=tc,pdl=off,step=slice,conv=lane");
  CHECK(kern::parse_plan_override("conv=row8").conv == kern::PlanOverride::Conv::row8);
  CHECK(kern::parse_plan_override("conv=row8x4").text == "conv=row8x4");
  CHECK(kern::parse_plan_override(o.text).text == o.text);  // the canonical text parses to itself
  CHECK(kern::parse_plan_override("kernel=reference").reference);
  CHECK(kern::parse_plan_override("hint=unknown").hint == kern::kUnknownHint);
  CHECK(kern::parse_plan_override("layout=split,layout=auto").layout == kern::PlanOverride::Layout::automatic);
  for (const char* bad : {"lean=3", "layout=fast", "heads=-1", "heads=x", "slices=1.5", "hint=0", "dots=fast",
                          "records=fixed", "pdl=on", "step=rows", "conv=row4", "conv=row8x3", "kernel=tuned", "layout", "=split", "dots=tc,,heads=1"}) {
    INFO(bad);
    CHECK_THROWS_AS(kern::parse_plan_override(bad), std::invalid_argument);
  }
  try {
    kern::parse_plan_override("heads=2,layuot=split");
    FAIL("accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("layuot") != std::string::npos);  // the message names the key
  }
}

TEST_CASE("launch plan: the defaults at the bench's shapes", "[kernels]") {
  using emu::Arch;
  using emu::Policy;
  using formats::FormatId;
  const kern::Device h200;
  auto plan = [&](const kern::Problem& p, const std::string& o = "") {
    return kern::plan_launch(p, h200, kern::parse_plan_override(o));
  };
  // conventional decode: one kernel, every batch
  for (const int B : {1, 256})
    CHECK(plan(real_problem(Arch::gdn, Policy::conventional_shared, FormatId::fp32, B)).layout == Layout::conventional);
  // FP32 ReplaySSM step: head_step_kernel, with a CTA per row group where a GDN head's four groups and B H < the SM
  // count (B = 1, 4); the flush beside it in one slice per CTA where every sequence flushes (B = 1), half heads while
  // its slices are fewer than the SMs (GDN B <= 16: one flushing sequence), else whole heads in the fused grid; the
  // combined grid only for the u=recompute step
  for (const int B : {1, 4, 8, 16, 32, 64}) {
    INFO("B = " << B);
    const kern::LaunchPlan g = plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, B));
    CHECK(g.layout == (B <= 16 ? Layout::split : Layout::fused));
    CHECK(g.flush_slices == (B == 1 ? 1 : B <= 16 ? 2 : 4));
    CHECK(g.hot == (B * 32 < 132 ? Hot::slice_step : Hot::head_step));
  }
  CHECK(kern::fp32_flush_slices_rule(1, 1, 32, 4, 132) == 1);    // every sequence flushes
  CHECK(kern::fp32_flush_slices_rule(1, 16, 32, 4, 132) == 2);   // 128 slices < 132 SMs
  CHECK(kern::fp32_flush_slices_rule(2, 32, 32, 4, 132) == 4);   // 256 slices
  CHECK(kern::fp32_flush_slices_rule(1, 2, 128, 2, 132) == 2);   // Mamba-2: 256 slices
  CHECK(kern::fp32_flush_slices_rule(3, 64, 32, 1, 132) == 1);   // one slice per head
  // a flush count the caller does not know keeps the general rule (sized for every sequence flushing)
  kern::Problem unknown = real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 16);
  unknown.flushing = -1;
  CHECK(plan(unknown).flush_slices == kern::flush_slices_rule(16, 32, 4, 132));
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 1)).hot == Hot::head_step);
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 16)).hot == Hot::head_step);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 16), "step=head").hot == Hot::head_step);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 64), "step=slice").hot == Hot::slice_step);
  // step=slice keeps the split layout where the fused grid (whole heads) would run; 8-bit steps keep whole heads
  const kern::LaunchPlan s256 = plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 256), "step=slice");
  CHECK(s256.layout == Layout::split);
  CHECK(s256.hot == Hot::slice_step);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_split, FormatId::fp8_e4m3, 1), "step=slice").hot == Hot::head_step);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_split, FormatId::fp32, 16, 0, emu::USource::recompute)).layout ==
        Layout::combined);
  const kern::LaunchPlan g256 = plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 256));
  CHECK(g256.layout == Layout::fused);
  CHECK(g256.hot == Hot::head_step);
  CHECK(g256.flush == Flush::fold_shared);
  CHECK(g256.fixed_records);
  CHECK(g256.flush_slices == 4);  // whole heads
  CHECK(g256.fused_rows == 16);
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 1)).layout == Layout::split);
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 16)).layout == Layout::fused);
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 64)).layout == Layout::fused);
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 128)).layout == Layout::fused);
  // layout=split keeps the two kernels where the fused grid would run
  const kern::LaunchPlan two = plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 256), "layout=split");
  CHECK(two.layout == Layout::split);
  CHECK(two.pdl);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 256), "layout=split,pdl=off").pdl == false);
  // row-scaled FP8 steps: the split layout, head_step_kernel and the folded flush, at every batch
  for (const int B : {1, 16, 256}) {
    const kern::LaunchPlan f8 = plan(real_problem(Arch::gdn, Policy::replay_split, FormatId::fp8_e4m3, B));
    CHECK(f8.layout == Layout::split);
    CHECK(f8.hot == Hot::head_step);
    CHECK(f8.flush == Flush::fold_split);
    CHECK_FALSE(f8.tc_dots);
  }
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_split, FormatId::fp8_e4m3, 256), "dots=tc").tc_dots);
  CHECK_FALSE(plan(real_problem(Arch::mamba2, Policy::replay_split, FormatId::fp8_e4m3, 256), "dots=tc").tc_dots);
  // GDN split u=hp / u=recompute: not head_step_kernel; the u=recompute step in the combined layout
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_split, FormatId::fp8_e4m3, 256, 0, emu::USource::hp)).hot ==
        Hot::head);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_split, FormatId::fp8_e4m3, 256, 0, emu::USource::recompute))
            .layout == Layout::combined);
  // FP32 verify of 2..8 drafts: the grouped verify kernel; the tensor-core form from 4 (GDN) / 6 (Mamba-2) drafts
  for (int T = 1; T <= 8; ++T) {
    const kern::LaunchPlan v = plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 256, T), "dots=tc");
    INFO("T " << T);
    CHECK(v.layout == Layout::split);
    CHECK(v.group_heads == 2);
    CHECK(v.hot == (T >= 2 ? Hot::group_verify : Hot::group));
    CHECK(v.tc_dots == (T >= kern::tc_verify_min_drafts(true)));
    CHECK(v.flush == Flush::none);  // steady-state verify: no early flush
  }
  CHECK_FALSE(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 256, 5), "dots=tc").tc_dots);
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp32, 256, 6), "dots=tc").tc_dots);
  // the reference kernel: formats the tuned kernels lack, K > 128, the materialise op, and on request
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::bf16, 256)).engine == kern::Engine::reference);
  kern::Problem wide = real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 4);
  wide.K = 256;
  CHECK(plan(wide).engine == kern::Engine::reference);
  const kern::LaunchPlan ref = plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 4), "kernel=reference");
  CHECK(ref.engine == kern::Engine::reference);
  CHECK(kern::to_string(ref) == "reference (plan override kernel=reference)");
  // an early flush: one slice per flush CTA and the generic flush
  kern::Problem early = real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp8_e4m3, 256);
  early.early = 1;
  const kern::LaunchPlan ep = plan(early, "slices=whole");
  CHECK(ep.flush_slices == 1);
  CHECK(ep.flush == Flush::generic);
  // overrides reach the rules: heads per CTA for steps, slices, the generic records instantiation
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp8_e4m3, 4), "heads=16").group_heads == 16);
  CHECK(plan(real_problem(Arch::mamba2, Policy::replay_shared, FormatId::fp8_e4m3, 4), "heads=16").hot == Hot::group);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp8_e4m3, 4), "slices=2").flush_slices == 2);
  CHECK_FALSE(plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp8_e4m3, 4), "records=generic")
                  .fixed_records);
  CHECK(plan(real_problem(Arch::gdn, Policy::replay_shared, FormatId::fp32, 256), "layout=combined").layout ==
        Layout::combined);
  // BF16 records: the FP32 step and the FP32 verify without an early flush keep the plan of FP32 records (their kernels
  // keep BF16 records); every other op with BF16 records runs on the reference kernel, whatever the override
  const std::string ref_bf16 = "reference (BF16 records outside the FP32 step and verify kernels)";
  for (Arch a : {Arch::gdn, Arch::mamba2}) {
    for (int B : {1, 4, 16, 64, 256, 512}) {
      for (int T : {1, 2, 5, 8})
        for (const char* o : {"", "heads=1", "layout=split"}) {
          kern::Problem v = real_problem(a, Policy::replay_shared, FormatId::fp32, B, T);
          const kern::LaunchPlan fp32_records = plan(v, o);
          v.records = emu::Records::bf16;
          const kern::LaunchPlan bf16_records = plan(v, o);
          INFO(emu::arch_name(a) << " B=" << B << " verify T=" << T << " '" << o
                                 << "': " << kern::to_string(bf16_records));
          CHECK(kern::to_string(bf16_records) == kern::to_string(fp32_records));
          CHECK(kern::bf16_records_tuned(kern::Op::verify, bf16_records));
        }
      for (const char* o : {"", "layout=split", "records=generic", "step=slice", "step=head"})
        for (const bool none_flush : {false, true}) {
          kern::Problem rec = real_problem(a, Policy::replay_shared, FormatId::fp32, B);
          if (none_flush) rec.flushing = 0;
          const kern::LaunchPlan fp32_records = plan(rec, o);
          rec.records = emu::Records::bf16;
          const kern::LaunchPlan bf16_records = plan(rec, o);
          INFO(emu::arch_name(a) << " B=" << B << " override '" << o << "': " << kern::to_string(bf16_records));
          CHECK(kern::to_string(bf16_records) == kern::to_string(fp32_records));
          CHECK(kern::bf16_records_tuned(kern::Op::step, bf16_records));
        }
    }
    kern::Problem rec = real_problem(a, Policy::replay_shared, FormatId::fp32, 256);
    rec.records = emu::Records::bf16;
    CHECK(kern::to_string(plan(rec, "layout=combined")) == ref_bf16);
    kern::Problem rec_early = rec;  // an early flush: the generic flush
    rec_early.early = 1;
    CHECK(kern::to_string(plan(rec_early)) == ref_bf16);
    kern::Problem rec_unknown = rec;  // an unknown early-flush count: the generic flush
    rec_unknown.early = -1;
    CHECK(kern::to_string(plan(rec_unknown)) == ref_bf16);
    for (int T : {1, 2, 8}) {  // a verify with an early flush (the generic flush kernel), or in the tensor-core form
      kern::Problem v = real_problem(a, Policy::replay_shared, FormatId::fp32, 256, T);
      v.records = emu::Records::bf16;
      kern::Problem v_early = v;
      v_early.early = 1;
      v_early.flushing = 1;
      CHECK(kern::to_string(plan(v_early)) == ref_bf16);
      if (T >= kern::tc_verify_min_drafts(a == Arch::gdn)) CHECK(kern::to_string(plan(v, "dots=tc")) == ref_bf16);
    }
    kern::Problem f8 = real_problem(a, Policy::replay_shared, FormatId::fp8_e4m3, 256);
    f8.records = emu::Records::bf16;
    CHECK(kern::to_string(plan(f8)) == ref_bf16);
    kern::Problem small = rec;  // other head dims: the runtime-dims paths
    small.V = 32;
    CHECK(kern::to_string(plan(small)) == ref_bf16);
  }
}

TEST_CASE("launch plan: conventional decode of every instantiated format, its kernel form by the store's width",
          "[kernels]") {
  using emu::Arch;
  using emu::Policy;
  using formats::FormatId;
  const kern::Device dev;
  for (const Arch a : {Arch::gdn, Arch::mamba2})
    for (const FormatId f : {FormatId::fp32, FormatId::bf16, FormatId::fp16, FormatId::fp8_e4m3, FormatId::fp8_e5m2,
                             FormatId::int8})
      for (const int T : {0, 4}) {
        kern::Problem p = real_problem(a, Policy::conventional_shared, f, 256, T);
        if (f == FormatId::bf16 || f == FormatId::fp16) p.scaling = formats::Scaling::none;
        const int bits = f == FormatId::fp32 ? 32 : (f == FormatId::bf16 || f == FormatId::fp16) ? 16 : 8;
        INFO(emu::arch_name(a) << " " << formats::format_name(f) << " T=" << T);
        const kern::LaunchPlan d = kern::plan_launch(p, dev);
        CHECK(d.engine == kern::Engine::tuned);
        CHECK(d.layout == Layout::conventional);
        CHECK(d.conv_row8 == (bits < 32));  // B = 256: FP32 keeps conv_kernel
        // row8x4: a one-token step takes as many slices as the width allows, within the head's (GDN 4, Mamba-2 2)
        const int x4 = T > 0 || bits == 32 ? 1 : bits == 16 || a == Arch::mamba2 ? 2 : 4;
        // the automatic plan: as many, but one for INT8
        const int auto_groups = f == FormatId::int8 ? 1 : x4;
        CHECK(d.conv_groups == auto_groups);
        const std::string slices = auto_groups > 1 ? "x" + std::to_string(auto_groups) : "";
        CHECK(kern::to_string(d) ==
              (bits == 32 ? "layout=conventional real" : "layout=conventional row8" + slices + " real"));
        CHECK(kern::plan_launch(p, dev, kern::parse_plan_override("conv=row8")).conv_row8);
        CHECK(kern::plan_launch(p, dev, kern::parse_plan_override("conv=row8")).conv_groups == 1);
        const kern::LaunchPlan d4 = kern::plan_launch(p, dev, kern::parse_plan_override("conv=row8x4"));
        CHECK(d4.conv_groups == x4);
        CHECK(kern::to_string(d4) == (bits == 32   ? "layout=conventional row8 real"
                                      : x4 > 1      ? "layout=conventional row8x" + std::to_string(x4) + " real"
                                                    : "layout=conventional row8 real"));
        CHECK(kern::plan_launch(p, dev, kern::parse_plan_override("conv=row8x2")).conv_groups == std::min(x4, 2));
        CHECK_FALSE(kern::plan_launch(p, dev, kern::parse_plan_override("conv=lane")).conv_row8);
        // B = 1: an FP32 step takes conv_row8_kernel too (a grid of at most two CTAs per SM), an FP32 verify not
        kern::Problem one = real_problem(a, Policy::conventional_shared, f, 1, T);
        one.scaling = p.scaling;
        CHECK(kern::plan_launch(one, dev).conv_row8 == (bits < 32 || T == 0));
        // B = 1: 16-bit stores keep 2 slices; 8-bit ones only where the grid keeps half the SMs (Mamba-2's 128 heads)
        const int one_groups = T > 0 || bits == 32 || f == FormatId::int8 ? 1
                               : bits == 16                              ? 2
                               : a == Arch::mamba2                       ? 2
                                                                         : 1;
        CHECK(kern::plan_launch(one, dev).conv_groups == one_groups);
        // B = 16: FP32 keeps conv_kernel
        CHECK(kern::plan_launch(real_problem(a, Policy::conventional_shared, f, 16, T), dev).conv_row8 == (bits < 32));
        // ReplaySSM keeps the tuned kernels for FP32 and FP8 E4M3 only
        kern::Problem r = p;
        r.policy = Policy::replay_shared;
        const bool every_op = f == FormatId::fp32 || f == FormatId::fp8_e4m3;
        CHECK((kern::plan_launch(r, dev).engine == kern::Engine::tuned) == every_op);
        if (!every_op) CHECK(kern::to_string(kern::plan_launch(r, dev)) == "reference (format not instantiated in the tuned kernels)");
      }
  CHECK(kern::conv_row8_rule(32, true, 264, 132));
  CHECK_FALSE(kern::conv_row8_rule(32, true, 265, 132));
  CHECK_FALSE(kern::conv_row8_rule(32, false, 128, 132));
  CHECK(kern::conv_row8_rule(8, false, 1 << 20, 132));
  CHECK(kern::conv_slices_cap(8, 4, 4) == 4);
  CHECK(kern::conv_slices_cap(8, 2, 4) == 2);   // Mamba-2's head: two slices
  CHECK(kern::conv_slices_cap(8, 3, 4) == 2);   // a power of two within the head
  CHECK(kern::conv_slices_cap(16, 4, 4) == 2);  // 16-bit: at most 2
  CHECK(kern::conv_slices_cap(32, 4, 4) == 1);
  CHECK(kern::conv_slices_cap(8, 1, 2) == 1);
  CHECK(kern::conv_slices_rule(FormatId::fp8_e4m3, 4, 512, 132) == 4);  // GDN B = 16
  CHECK(kern::conv_slices_rule(FormatId::fp8_e4m3, 4, 66, 132) == 4);   // 66 CTAs: half the SMs
  CHECK(kern::conv_slices_rule(FormatId::fp8_e4m3, 4, 65, 132) == 2);   // 65 CTAs at 4 slices: fewer
  CHECK(kern::conv_slices_rule(FormatId::fp8_e5m2, 4, 32, 132) == 1);   // GDN B = 1
  CHECK(kern::conv_slices_rule(FormatId::fp8_e4m3, 2, 128, 132) == 2);  // Mamba-2 B = 1
  CHECK(kern::conv_slices_rule(FormatId::fp8_e4m3, 3, 33, 132) == 2);   // 3 slices: 2 CTAs of a head at 2 per CTA
  CHECK(kern::conv_slices_rule(FormatId::bf16, 4, 32, 132) == 2);       // 16-bit: at every batch
  CHECK(kern::conv_slices_rule(FormatId::fp16, 1, 1 << 20, 132) == 1);  // a head of one slice
  CHECK(kern::conv_slices_rule(FormatId::int8, 4, 1 << 20, 132) == 1);
  CHECK(kern::conv_slices_rule(FormatId::fp32, 4, 1 << 20, 132) == 1);
  // the formats no tuned kernel is instantiated for
  for (const FormatId f : {FormatId::nvfp4, FormatId::mxfp8, FormatId::int16, FormatId::bf16x2}) {
    kern::Problem p = real_problem(Arch::gdn, Policy::conventional_shared, f, 256);
    p.scaling = formats::Scaling::block;
    INFO(formats::format_name(f));
    CHECK(kern::plan_launch(p, dev).engine == kern::Engine::reference);
  }
}

TEST_CASE("launch plan: the printed table equals the committed one", "[kernels]") {
  // `replayssm bench --list-plans` prints this table; a change of any rule shows here as a diff of
  // tests/kernels/plan_table.txt (regenerate it with that command when the change is meant).
  const char* src = std::getenv("REPLAYSSM_SOURCE_DIR");
  REQUIRE(src != nullptr);
  const std::string want = read_file(std::string(src) + "/tests/kernels/plan_table.txt");
  REQUIRE_FALSE(want.empty());
  const std::string got = emu::plan_table("");
  if (got != want) {
    std::istringstream a(got), b(want);
    std::string la, lb;
    int line = 0;
    while (std::getline(a, la) && std::getline(b, lb)) {
      ++line;
      if (la != lb) {
        INFO("first difference at line " << line << "\n  now:       " << la << "\n  committed: " << lb);
        CHECK(la == lb);
        break;
      }
    }
  }
  CHECK(got == want);
}
