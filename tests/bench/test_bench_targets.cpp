// The target check of `replayssm bench` on synthetic rows (no GPU), with the committed targets file
// (kernels/bench/targets.ini): which row each target reads (the fastest u-source, the B and L the file names), MET /
// MISSED at the threshold, the byte-model bound, the printed line; and malformed files rejected, naming the field.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli/bench_targets.h"
#include "core/errors.h"

using replayssm::UserError;
using replayssm::cli::BenchTarget;
using replayssm::cli::check_targets;
using replayssm::cli::load_targets;
using replayssm::cli::target_line;
using replayssm::cli::targets_file;
using replayssm::cli::TargetSpec;
using replayssm::kbench::Result;
using replayssm::kbench::Row;

namespace {

std::string committed_targets() {
  const char* s = std::getenv("REPLAYSSM_SOURCE_DIR");
  return std::string(s ? s : REPLAYSSM_SOURCE_DIR) + "/kernels/bench/targets.ini";
}

Row row(const std::string& arch, const std::string& kernel, const std::string& policy, const std::string& format, int T,
        double us, double mb, const std::string& usource = "-", int B = 256, int L = 16) {
  Row r;
  r.arch = arch, r.kernel = kernel, r.policy = policy, r.format = format, r.usource = usource;
  r.scaling = format == "fp32" ? "none" : "row";
  r.B = B, r.L = L, r.T = T;
  r.median_us = us;
  r.model_bytes = mb * 1e6;
  r.pct_roofline = 100.0 * (r.model_bytes / (us * 1e-6)) / 4.2e12;
  return r;
}

const BenchTarget& named(const std::vector<BenchTarget>& t, const std::string& name) {
  for (const auto& x : t)
    if (x.name == name) return x;
  FAIL("no target " << name);
  return t.front();
}

// A targets file under /tmp with the given text; removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text)
      : path("/tmp/replayssm_targets_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++) + ".ini") {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  static int& counter() {
    static int n = 0;
    return n;
  }
};

// The message of the UserError that loading TEXT throws ("" if none).
std::string load_error(const std::string& text, int* code = nullptr) {
  TempFile f(text);
  try {
    load_targets(f.path);
  } catch (const UserError& e) {
    if (code) *code = e.code();
    const std::string msg = e.what();
    CHECK(msg.rfind(f.path + ":", 0) == 0);  // names the file first
    CHECK(msg.find('\n') == std::string::npos);  // one line
    return msg;
  }
  return "";
}

const char* kGood =
    "# a comment\n"
    "[replay-gdn-fp32-speedup]\n"
    "arch = gdn\n"
    "row = kernel=decode policy=replay_shared format=fp32 T=1 B=256 L=16 dots=exact\n"
    "baseline = kernel=decode policy=conventional_shared format=fp32 T=1 B=256 L=16\n"
    "metric = speedup\n"
    "threshold = 1.70  # inline comment\n"
    "direction = higher\n";

}  // namespace

TEST_CASE("the committed targets file parses: unique names, no issue numbers", "[bench][targets]") {
  const std::vector<TargetSpec> specs = load_targets(committed_targets());
  REQUIRE(specs.size() == 15);
  std::set<std::string> names;
  for (const TargetSpec& s : specs) {
    CHECK(names.insert(s.name).second);
    CHECK(s.name.find("issue") == std::string::npos);
    CHECK(s.has_baseline == (s.metric != "pct_roofline"));
  }
  CHECK(specs.front().name == "conv-gdn-fp32-roofline");
}

TEST_CASE("bench targets read the right rows, thresholds and byte-model bounds", "[bench][targets]") {
  Result res;
  // GDN: conventional 270 us / 1086 MB (96.1% of 4.2 TB/s), replay 224 us / 655 MB, split u=lp faster than u=hp.
  res.rows.push_back(row("gdn", "decode", "conventional_shared", "fp32", 1, 270.0, 1086.0));
  res.rows.push_back(row("gdn", "decode", "replay_shared", "fp32", 1, 224.0, 655.0));
  res.rows.push_back(row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 400.0, 793.0, "hp"));
  res.rows.push_back(row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 70.0, 298.0, "lp"));
  res.rows.push_back(row("gdn", "decode", "replay_shared", "fp32", 1, 100.0, 655.0, "-", 64));  // other batch
  Row tc = row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 60.0, 298.0, "lp");  // tensor-core row dots
  tc.dots = "tc";
  res.rows.push_back(tc);
  res.rows.push_back(row("gdn", "verify", "replay_shared", "fp32", 8, 250.0, 769.0));
  Row vt = row("gdn", "verify", "replay_shared", "fp32", 8, 200.0, 769.0);  // tensor-core verify dots
  vt.dots = "tc";
  res.rows.push_back(vt);
  // Mamba-2: the conventional row and a verify row, but no replay decode row (so no own step).
  res.rows.push_back(row("mamba2", "decode", "conventional_shared", "fp32", 1, 600.0, 2175.0));
  res.rows.push_back(row("mamba2", "verify", "replay_shared", "fp32", 8, 1100.0, 1686.0));

  const std::vector<BenchTarget> t = check_targets(res, load_targets(committed_targets()));
  REQUIRE(t.size() == 15);

  const BenchTarget& conv = named(t, "conv-gdn-fp32-roofline");
  CHECK(conv.present);
  CHECK(conv.value == Approx(100.0 * 1086e6 / 270e-6 / 4.2e12));
  CHECK(conv.met);  // 95.8% >= 95
  CHECK(conv.model_bound == 100.0);
  CHECK_FALSE(named(t, "conv-mamba2-fp32-roofline").met);  // 86% < 90

  const BenchTarget& rep = named(t, "replay-gdn-fp32-speedup");
  CHECK(rep.value == Approx(270.0 / 224.0));  // B=256's row, not B=64's faster one
  CHECK_FALSE(rep.met);
  CHECK(rep.model_bound == Approx(1086.0 / 655.0));
  CHECK(rep.beyond_model());  // 1.70 > 1.658
  CHECK(target_line(rep).find("[MISSED] replay-gdn-fp32-speedup: 1.205") == 0);
  CHECK(target_line(rep).find("byte model 1.66, target beyond it") != std::string::npos);

  const BenchTarget& split = named(t, "split-gdn-fp8-speedup");
  CHECK(split.measured_row.find("u=lp") != std::string::npos);  // the fastest u-source
  CHECK(split.value == Approx(270.0 / 70.0));
  CHECK(split.met);
  CHECK(split.model_bound == Approx(1086.0 / 298.0));
  CHECK_FALSE(split.beyond_model());  // 3.5 < 3.64
  CHECK(target_line(split).find("[MET   ]") == 0);
  CHECK(split.measured_row.find("tc-dots") == std::string::npos);  // dots=exact reads the exact form only
  const BenchTarget& tcs = named(t, "split-gdn-fp8-tc-speedup");
  CHECK(tcs.value == Approx(270.0 / 60.0));
  CHECK(tcs.measured_row.find("u=lp/tc-dots") != std::string::npos);

  const BenchTarget& own = named(t, "verify-gdn-t8-own-step");
  CHECK(own.value == Approx(250.0 / 224.0));
  CHECK_FALSE(own.met);  // 1.116 > 1.10
  CHECK(own.model_bound == Approx(769.0 / 655.0));
  CHECK(own.beyond_model());  // lower is better: 1.10 < 1.17
  CHECK(own.measured_row.find("tc-dots") == std::string::npos);  // the exact row, though the tc row is faster
  const BenchTarget& vtc = named(t, "verify-gdn-t8-tc-own-step");
  CHECK(vtc.value == Approx(200.0 / 224.0));
  CHECK(vtc.met);  // 0.89 <= 1.10
  CHECK(vtc.model_bound == Approx(769.0 / 655.0));  // the same bytes as the exact verify over the same step
  CHECK(vtc.measured_row.find("/tc-dots") != std::string::npos);
  CHECK_FALSE(named(t, "verify-mamba2-t8-tc-own-step").present);  // no such row
  const BenchTarget& vtcc = named(t, "verify-gdn-t8-tc-conv-step");
  CHECK(vtcc.value == Approx(200.0 / 270.0));
  CHECK(vtcc.met);  // 0.74 <= 1.10
  CHECK(vtcc.model_bound == Approx(769.0 / 1086.0));
  CHECK(vtcc.measured_row.find("/tc-dots") != std::string::npos);
  CHECK_FALSE(named(t, "verify-mamba2-t8-tc-conv-step").present);
  const BenchTarget& vc = named(t, "verify-gdn-t8-conv-step");
  CHECK(vc.met);
  CHECK(vc.model_bound == Approx(769.0 / 1086.0));
  CHECK_FALSE(vc.beyond_model());

  const BenchTarget& m2 = named(t, "replay-mamba2-fp32-speedup");
  CHECK_FALSE(m2.present);
  CHECK(target_line(m2) ==
        "[not measured] replay-mamba2-fp32-speedup (no row mamba2 decode replay_shared fp32 T=1 B=256 L=16)");
  const BenchTarget& m2own = named(t, "verify-mamba2-t8-own-step");
  CHECK_FALSE(m2own.present);  // its step row is missing: no value to compare
  CHECK(target_line(m2own) == "[not measured] verify-mamba2-t8-own-step (no baseline row mamba2 decode replay_shared "
                              "fp32 T=1 B=256 L=16)");
  const BenchTarget& m2conv = named(t, "verify-mamba2-t8-conv-step");
  CHECK(m2conv.value == Approx(1100.0 / 600.0));
  CHECK(m2conv.model_bound == Approx(1686.0 / 2175.0));
  CHECK(target_line(m2conv) ==
        "[MISSED] verify-mamba2-t8-conv-step: 1.833 (<= 1.10; byte model 0.78)");
}

TEST_CASE("a target file's optional filters: scaling, u-source", "[bench][targets]") {
  TempFile f(
      "[lp-only]\n"
      "arch = gdn\n"
      "row = kernel=decode policy=replay-split format=fp8_e4m3:row T=1 B=256 L=16 u=hp\n"
      "baseline = kernel=decode policy=conventional_shared format=fp32 T=1 B=256 L=16\n"
      "metric = speedup\n"
      "threshold = 2\n"
      "direction = higher\n");
  Result res;
  res.rows.push_back(row("gdn", "decode", "conventional_shared", "fp32", 1, 270.0, 1086.0));
  res.rows.push_back(row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 400.0, 793.0, "hp"));
  res.rows.push_back(row("gdn", "decode", "replay_split", "fp8_e4m3", 1, 70.0, 298.0, "lp"));
  const std::vector<BenchTarget> t = check_targets(res, load_targets(f.path));
  REQUIRE(t.size() == 1);
  CHECK(t[0].value == Approx(270.0 / 400.0));  // u=hp, though u=lp is faster
  CHECK(t[0].measured_row.find("u=hp") != std::string::npos);
  CHECK_FALSE(t[0].met);
}

TEST_CASE("targets_file: REPLAYSSM_BENCH_TARGETS, else the source tree's", "[bench][targets]") {
  const char* old = std::getenv("REPLAYSSM_BENCH_TARGETS");
  const std::string saved = old ? old : "";
  unsetenv("REPLAYSSM_BENCH_TARGETS");
  CHECK(targets_file() == std::string(REPLAYSSM_SOURCE_DIR) + "/kernels/bench/targets.ini");
  setenv("REPLAYSSM_BENCH_TARGETS", "/elsewhere/t.ini", 1);
  CHECK(targets_file() == "/elsewhere/t.ini");
  if (old)
    setenv("REPLAYSSM_BENCH_TARGETS", saved.c_str(), 1);
  else
    unsetenv("REPLAYSSM_BENCH_TARGETS");
}

TEST_CASE("a malformed targets file is rejected with exit 2, naming the line and the field", "[bench][targets]") {
  CHECK(load_error(kGood).empty());

  auto with = [](const std::string& from, const std::string& to) {
    std::string s = kGood;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  int code = 0;
  std::string e = load_error(with("threshold = 1.70", "threshold = fast"), &code);
  CHECK(code == 2);
  CHECK(e.find(":7: replay-gdn-fp32-speedup.threshold: expected a number > 0, got 'fast'") != std::string::npos);

  e = load_error(with(" T=1 B=256 L=16 dots=exact", " B=256 L=16 dots=exact"));
  CHECK(e.find(":4: replay-gdn-fp32-speedup.row.T: missing") != std::string::npos);
  e = load_error(with("T=1 B=256 L=16 dots=exact", "T=one B=256 L=16 dots=exact"));
  CHECK(e.find("replay-gdn-fp32-speedup.row.T: expected a positive integer, got 'one'") != std::string::npos);
  e = load_error(with("dots=exact", "dots=fast"));
  CHECK(e.find("replay-gdn-fp32-speedup.row.dots: expected exact or tc") != std::string::npos);
  e = load_error(with("policy=conventional_shared", "policy=shared"));
  CHECK(e.find(":5: replay-gdn-fp32-speedup.baseline.policy: unknown policy 'shared'") != std::string::npos);
  e = load_error(with("format=fp32 T=1 B=256 L=16 dots", "format=fp31 T=1 B=256 L=16 dots"));
  CHECK(e.find("replay-gdn-fp32-speedup.row.format: unknown format 'fp31'") != std::string::npos);
  e = load_error(with("metric = speedup", "metric = fastness"));
  CHECK(e.find(":6: replay-gdn-fp32-speedup.metric: expected pct_roofline, speedup or ratio") != std::string::npos);
  e = load_error(with("direction = higher\n", ""));
  CHECK(e.find(":2: replay-gdn-fp32-speedup.direction: missing") != std::string::npos);
  e = load_error(with("direction = higher", "direction = up"));
  CHECK(e.find("replay-gdn-fp32-speedup.direction: expected higher or lower, got 'up'") != std::string::npos);
  e = load_error(with("baseline = kernel=decode policy=conventional_shared format=fp32 T=1 B=256 L=16\n", ""));
  CHECK(e.find("replay-gdn-fp32-speedup.baseline: missing") != std::string::npos);
  e = load_error(with("metric = speedup", "metric = pct_roofline"));
  CHECK(e.find("replay-gdn-fp32-speedup.baseline: not used by metric pct_roofline") != std::string::npos);
  e = load_error(with("arch = gdn\n", "arch = gdn\nspeed = 3\n"));
  CHECK(e.find(":4: replay-gdn-fp32-speedup.speed: unknown field") != std::string::npos);
  e = load_error(with("arch = gdn\n", "arch = gdn\narch = mamba2\n"));
  CHECK(e.find(":4: replay-gdn-fp32-speedup.arch: given twice") != std::string::npos);
  e = load_error(with("arch = gdn", "arch = rwkv"));
  CHECK(e.find(":3: replay-gdn-fp32-speedup.arch: expected gdn or mamba2, got 'rwkv'") != std::string::npos);
  e = load_error(with("[replay-gdn-fp32-speedup]", "[Replay GDN]"));
  CHECK(e.find(":2: section: target name 'Replay GDN'") != std::string::npos);
  e = load_error(std::string(kGood) + kGood);
  CHECK(e.find(":10: section: target 'replay-gdn-fp32-speedup' defined twice (line 2)") != std::string::npos);
  e = load_error(with("# a comment\n[replay-gdn-fp32-speedup]\n", "arch = gdn\n"));
  CHECK(e.find(":1: arch: before the first [name] section") != std::string::npos);
  e = load_error("# nothing\n");
  CHECK(e.find(": sections: no target") != std::string::npos);
  e = load_error(with("direction = higher", "direction higher"));
  CHECK(e.find(":8: replay-gdn-fp32-speedup.line: expected key = value") != std::string::npos);

  try {
    load_targets("/nonexistent/targets.ini");
    FAIL("no error for a missing file");
  } catch (const UserError& ex) {
    CHECK(ex.code() == 2);
    CHECK(std::string(ex.what()).rfind("/nonexistent/targets.ini: cannot read", 0) == 0);
  }
}
