// The issue-5 target check of `replayssm bench` on synthetic rows (no GPU): which row each target reads (the fastest
// u-source, B=256 and L=16 only), MET / MISSED at the threshold, the byte-model bound, and the printed line.
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli/bench_targets.h"

using replayssm::cli::BenchTarget;
using replayssm::cli::check_targets;
using replayssm::cli::target_line;
using replayssm::kbench::Result;
using replayssm::kbench::Row;

namespace {

Row row(const std::string& arch, const std::string& kernel, const std::string& policy, const std::string& format, int T,
        double us, double mb, double conv_us, const std::string& usource = "-", int B = 256, int L = 16) {
  Row r;
  r.arch = arch, r.kernel = kernel, r.policy = policy, r.format = format, r.usource = usource;
  r.scaling = format == "fp32" ? "none" : "row";
  r.B = B, r.L = L, r.T = T;
  r.median_us = us;
  r.model_bytes = mb * 1e6;
  r.pct_roofline = 100.0 * (r.model_bytes / (us * 1e-6)) / 4.2e12;
  r.speedup_vs_conv = kernel == "decode" ? conv_us / us : 0;
  return r;
}

const BenchTarget& named(const std::vector<BenchTarget>& t, const std::string& prefix) {
  for (const auto& x : t)
    if (x.name.rfind(prefix, 0) == 0) return x;
  FAIL("no target " << prefix);
  return t.front();
}

}  // namespace

TEST_CASE("bench targets read the right rows, thresholds and byte-model bounds", "[bench][targets]") {
  Result res;
  // GDN: conventional 270 us / 1086 MB (96.1% of 4.2 TB/s), replay 224 us / 655 MB, split u=lp faster than u=hp.
  res.rows.push_back(row("gdn", "decode", "conventional_shared", "fp32", 1, 270.0, 1086.0, 270.0));
  res.rows.push_back(row("gdn", "decode", "replay_shared", "fp32", 1, 224.0, 655.0, 270.0));
  res.rows.push_back(row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 400.0, 793.0, 270.0, "hp"));
  res.rows.push_back(row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 70.0, 298.0, 270.0, "lp"));
  res.rows.push_back(row("gdn", "decode", "replay_shared", "fp32", 1, 100.0, 655.0, 270.0, "-", 64));  // other batch
  Row tc = row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 60.0, 298.0, 270.0, "lp");  // v55: tensor-core dots
  tc.dots = "tc";
  res.rows.push_back(tc);
  Row v = row("gdn", "verify", "replay_shared", "fp32", 8, 250.0, 769.0, 270.0);
  v.vs_own_step = 250.0 / 224.0, v.vs_conv_step = 250.0 / 270.0;
  res.rows.push_back(v);
  Row vt = row("gdn", "verify", "replay_shared", "fp32", 8, 200.0, 769.0, 270.0);  // v57: tensor-core verify dots
  vt.dots = "tc", vt.vs_own_step = 200.0 / 224.0, vt.vs_conv_step = 200.0 / 270.0;
  res.rows.push_back(vt);
  // Mamba-2: the conventional row and a verify row, but no replay decode row (so no own-step bound).
  res.rows.push_back(row("mamba2", "decode", "conventional_shared", "fp32", 1, 600.0, 2175.0, 600.0));
  Row mv = row("mamba2", "verify", "replay_shared", "fp32", 8, 1100.0, 1686.0, 600.0);
  mv.vs_own_step = 2.5, mv.vs_conv_step = 1100.0 / 600.0;
  res.rows.push_back(mv);

  const std::vector<BenchTarget> t = check_targets(res);
  REQUIRE(t.size() == 15);

  const BenchTarget& conv = named(t, "GDN conventional");
  CHECK(conv.present);
  CHECK(conv.value == Approx(100.0 * 1086e6 / 270e-6 / 4.2e12));
  CHECK(conv.met);  // 95.8% >= 95
  CHECK(conv.model_bound == 100.0);
  CHECK_FALSE(named(t, "Mamba-2 conventional").met);  // 86% < 90

  const BenchTarget& rep = named(t, "GDN ReplaySSM fp32");
  CHECK(rep.value == Approx(270.0 / 224.0));  // B=256's row, not B=64's faster one
  CHECK_FALSE(rep.met);
  CHECK(rep.model_bound == Approx(1086.0 / 655.0));
  CHECK(rep.beyond_model());  // 1.70 > 1.658
  CHECK(target_line(rep).find("[MISSED]") == 0);
  CHECK(target_line(rep).find("byte model 1.66, target beyond it") != std::string::npos);

  const BenchTarget& split = named(t, "GDN replay-split");
  CHECK(split.measured_row.find("u=lp") != std::string::npos);  // the fastest u-source
  CHECK(split.value == Approx(270.0 / 70.0));
  CHECK(split.met);
  CHECK(split.model_bound == Approx(1086.0 / 298.0));
  CHECK_FALSE(split.beyond_model());  // 3.5 < 3.64
  CHECK(target_line(split).find("[MET   ]") == 0);
  CHECK(split.measured_row.find("tc-dots") == std::string::npos);  // the target reads the exact form only
  const BenchTarget& tcs = named(t, "GDN replay-split fp8_e4m3 with tensor-core");
  CHECK(tcs.value == Approx(270.0 / 60.0));
  CHECK(tcs.measured_row.find("u=lp/tc-dots") != std::string::npos);

  const BenchTarget& own = named(t, "gdn ReplaySSM verify T=8 / its own");
  CHECK(own.value == Approx(250.0 / 224.0));
  CHECK_FALSE(own.met);  // 1.116 > 1.10
  CHECK(own.model_bound == Approx(769.0 / 655.0));
  CHECK(own.beyond_model());  // lower is better: 1.10 < 1.17
  CHECK(own.measured_row.find("tc-dots") == std::string::npos);  // the exact row, though the tc row is faster
  const BenchTarget& vtc = named(t, "gdn ReplaySSM verify T=8 with tensor-core");
  CHECK(vtc.value == Approx(200.0 / 224.0));
  CHECK(vtc.met);  // 0.89 <= 1.10
  CHECK(vtc.model_bound == Approx(769.0 / 655.0));  // the same bytes as the exact verify over the same step
  CHECK(vtc.measured_row.find("/tc-dots") != std::string::npos);
  CHECK_FALSE(named(t, "mamba2 ReplaySSM verify T=8 with tensor-core").present);  // no such row
  const BenchTarget& vtcc = named(t, "gdn ReplaySSM verify T=8 with tensor-core row dots / conventional");
  CHECK(vtcc.value == Approx(200.0 / 270.0));
  CHECK(vtcc.met);  // 0.74 <= 1.10
  CHECK(vtcc.model_bound == Approx(769.0 / 1086.0));
  CHECK(vtcc.measured_row.find("/tc-dots") != std::string::npos);
  CHECK_FALSE(named(t, "mamba2 ReplaySSM verify T=8 with tensor-core row dots / conventional").present);
  const BenchTarget& vc = named(t, "gdn ReplaySSM verify T=8 / conventional");
  CHECK(vc.met);
  CHECK(vc.model_bound == Approx(769.0 / 1086.0));
  CHECK_FALSE(vc.beyond_model());

  const BenchTarget& m2 = named(t, "Mamba-2 ReplaySSM");
  CHECK_FALSE(m2.present);
  CHECK(target_line(m2) == "[not measured] Mamba-2 ReplaySSM fp32 speedup over conventional");
  const BenchTarget& m2own = named(t, "mamba2 ReplaySSM verify T=8 / its own");
  CHECK(m2own.present);
  CHECK(m2own.model_bound == 0);  // its step row is missing
  CHECK_FALSE(m2own.beyond_model());
  CHECK(target_line(m2own) == "[MISSED] mamba2 ReplaySSM verify T=8 / its own standard step: 2.500 (<= 1.10; byte model -)");
  CHECK(named(t, "mamba2 ReplaySSM verify T=8 / conventional").model_bound == Approx(1686.0 / 2175.0));
}
