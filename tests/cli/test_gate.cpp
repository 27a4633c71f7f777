// `replayssm gate` on small synthetic results files written through the sweep's own writer: verdicts (PASS and FAIL
// per bin, KL and top-1), exit codes (0 ok, 1 a required mode fails, 2 bad input naming file and field) and the
// verdict file. The CLI is the one CTest names in REPLAYSSM_CLI.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/h5.h"
#include "sweep/gate.h"
#include "sweep/metrics.h"
#include "sweep/results.h"

using namespace replayssm;
namespace fs = std::filesystem;

namespace {

constexpr int kPositions = 8;  // bins {1, 2, 4, 9}

sweep::RunResult make_run(const std::string& id, std::int64_t index, std::vector<double> kl, std::vector<double> top1,
                          bool with_flip_datasets = true) {
  sweep::RunResult r;
  r.id = id;
  r.index = index;
  const auto edges = sweep::power_of_two_edges(kPositions);
  r.kl = std::move(kl);
  r.nll.assign(kPositions, 1.0);
  r.top1 = std::move(top1);
  r.kl_binned = sweep::binned_stats(r.kl, edges);
  if (with_flip_datasets) {
    r.flip_rate_binned = sweep::binned_flip_rate(r.top1, edges);
    r.first_flip = sweep::first_flip(r.top1);
    r.bytes_per_element = 1.03125;
    r.capacity_vs_fp32 = 4.0 / r.bytes_per_element;
  }
  r.attrs = {{"model", "tiny"}, {"format", "fp8_e4m3"}, {"scaling", "row"}, {"rounding", "rne"},
             {"policy", "replay_split"}, {"L", "16"}, {"diverged_at", "-1"}};
  return r;
}

void write_results(const std::string& path, const std::vector<sweep::RunResult>& runs) {
  h5::AtomicOutput out(path);
  sweep::SweepHeader h;
  h.config = {{"tokens", std::to_string(kPositions)}};
  h.config_hash = sweep::hash_config(h.config);
  h.bins = sweep::power_of_two_edges(kPositions);
  for (const auto& r : runs) h.plan.push_back(r.id);
  sweep::write_header(out.file(), h);
  for (const auto& r : runs) sweep::write_run(out.file(), "/runs/" + r.id, r);
  out.commit();
}

struct CliResult {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliResult gate(const fs::path& dir, const std::string& args) {
  const char* cli = std::getenv("REPLAYSSM_CLI");
  REQUIRE(cli != nullptr);
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd = std::string("'") + cli + "' gate " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("replayssm_gate_test_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

const std::vector<double> kSmallKl(kPositions, 1e-5), kAgree(kPositions, 1.0);

}  // namespace

TEST_CASE("gate verdicts per bin: KL and top-1, worst bin, first flip", "[gate]") {
  const auto edges = sweep::power_of_two_edges(kPositions);
  const sweep::GateThresholds t;  // 1e-3 nats, 0.995
  SECTION("small KL everywhere and no flip passes") {
    const auto v = sweep::judge_run(make_run("a", 0, kSmallKl, kAgree), edges, t);
    CHECK(v.pass);
    CHECK(v.first_flip == -1);
    CHECK(v.worst_top1 == 1.0);
    CHECK(v.worst_kl == Approx(1e-5));
  }
  SECTION("one flip in the last bin fails on top-1 there") {
    auto top1 = kAgree;
    top1[6] = 0.0;
    const auto v = sweep::judge_run(make_run("a", 0, kSmallKl, top1), edges, t);
    CHECK_FALSE(v.pass);
    CHECK(v.first_flip == 6);
    CHECK(v.worst_top1 == Approx(0.8));
    CHECK(v.worst_top1_bin == 2);
  }
  SECTION("KL above the threshold in one bin fails; the mean over the run would not") {
    auto kl = kSmallKl;
    kl[1] = 5e-3;  // bin [2, 4) mean 2.5e-3; the run's mean is 6.3e-4
    const auto v = sweep::judge_run(make_run("a", 0, kl, kAgree), edges, t);
    CHECK_FALSE(v.pass);
    CHECK(v.worst_kl_bin == 1);
    CHECK(v.worst_kl == Approx(2.50000e-3 + 0.5e-5));
  }
  SECTION("a diverged run (NaN) fails with a NaN worst bin") {
    auto kl = kSmallKl;
    auto top1 = kAgree;
    kl[7] = top1[7] = std::nan("");
    const auto v = sweep::judge_run(make_run("a", 0, kl, top1), edges, t);
    CHECK_FALSE(v.pass);
    CHECK(std::isnan(v.worst_kl));
    CHECK(v.worst_kl_bin == 2);
  }
  SECTION("results without flip datasets: flips are derived from top1") {
    auto top1 = kAgree;
    top1[0] = 0.0;
    const auto v = sweep::judge_run(make_run("a", 0, kSmallKl, top1, false), edges, t);
    CHECK_FALSE(v.pass);
    CHECK(v.first_flip == 0);
    CHECK(v.worst_top1 == 0.0);
    CHECK(v.worst_top1_bin == 0);
  }
}

TEST_CASE("replayssm gate: table, exit codes and verdict file", "[gate][cli]") {
  TempDir tmp;
  const std::string results = (tmp.path / "results.h5").string(), verdicts = (tmp.path / "gate.h5").string();
  auto flipped = kAgree;
  flipped[5] = 0.0;
  write_results(results, {make_run("tiny.good", 0, kSmallKl, kAgree), make_run("tiny.flips", 1, kSmallKl, flipped)});
  const std::string base = "'" + results + "' --out '" + verdicts + "'";

  SECTION("no --require: the table, exit 0") {
    const auto r = gate(tmp.path, base);
    INFO(r.out << r.err);
    CHECK(r.code == 0);
    CHECK(r.out.find("tiny.good") != std::string::npos);
    CHECK(r.out.find("PASS") != std::string::npos);
    CHECK(r.out.find("FAIL") != std::string::npos);
    CHECK(r.out.find("1 of 2 mode(s) pass") != std::string::npos);
    const auto f = h5::File::open_read(verdicts);
    CHECK(f.read_strings("/gate/mode") == std::vector<std::string>{"tiny.good", "tiny.flips"});
    CHECK(f.read_u8("/gate/pass").data == std::vector<std::uint8_t>{1, 0});
    CHECK(f.read_i64("/gate/first_flip").data == std::vector<std::int64_t>{-1, 5});
    CHECK(f.attr_double("/gate", "max_kl") == 1e-3);
    CHECK(f.has_attr("/", "git_sha"));
    CHECK(f.has_attr("/", "option.min-top1"));
  }
  SECTION("a required mode that passes: exit 0") {
    const auto r = gate(tmp.path, base + " --require tiny.good");
    INFO(r.out << r.err);
    CHECK(r.code == 0);
  }
  SECTION("a required mode that fails: exit 1") {
    const auto r = gate(tmp.path, base + " --require tiny.good,tiny.flips");
    INFO(r.out << r.err);
    CHECK(r.code == 1);
    CHECK(r.out.find("required: 1 of 2 pass") != std::string::npos);
    CHECK(h5::File::open_read(verdicts).attr_int("/gate", "required_pass") == 0);
  }
  SECTION("--require all fails on the flipping mode; looser thresholds pass it") {
    CHECK(gate(tmp.path, base + " --require all").code == 1);
    const auto r = gate(tmp.path, base + " --require all --min-top1 0.75");
    INFO(r.out << r.err);
    CHECK(r.code == 0);
  }
  SECTION("an unknown mode in --require: exit 2, one line naming the file and /runs") {
    const auto r = gate(tmp.path, base + " --require tiny.nope");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(results) != std::string::npos);
    CHECK(r.err.find("/runs") != std::string::npos);
    CHECK(r.err.find("tiny.nope") != std::string::npos);
    CHECK_FALSE(fs::exists(verdicts));
  }
  SECTION("a missing results file: exit 2 naming it") {
    const std::string missing = (tmp.path / "none.h5").string();
    const auto r = gate(tmp.path, "'" + missing + "' --out '" + verdicts + "'");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(missing) != std::string::npos);
  }
  SECTION("a missing dataset: exit 2 naming the file and the dataset") {
    const std::string partial = (tmp.path / "partial.h5").string();
    {
      h5::AtomicOutput out(partial);
      sweep::SweepHeader h;
      h.config_hash = sweep::hash_config(h.config);
      h.bins = sweep::power_of_two_edges(kPositions);
      h.plan = {"tiny.cut"};
      sweep::write_header(out.file(), h);
      out.file().write("/runs/tiny.cut/kl", {kSmallKl.size()}, kSmallKl.data());
      out.file().write("/runs/tiny.cut/nll", {kSmallKl.size()}, kSmallKl.data());
      out.file().write("/runs/tiny.cut/top1", {kAgree.size()}, kAgree.data());
      out.commit();
    }
    const auto r = gate(tmp.path, "'" + partial + "' --out '" + verdicts + "'");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(partial) != std::string::npos);
    CHECK(r.err.find("/runs/tiny.cut/kl_binned") != std::string::npos);
  }
  SECTION("a threshold out of range: exit 2 naming the option") {
    const auto r = gate(tmp.path, base + " --min-top1 99.5");
    CHECK(r.code == 2);
    CHECK(r.err.find("--min-top1") != std::string::npos);
  }
}
