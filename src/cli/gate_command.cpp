// `replayssm gate`: judges an existing sweep results file. Each mode (run) passes when every length bin keeps its
// mean KL and its top-1 agreement within the thresholds; the verdict table is printed and written to HDF5, and the
// exit status says whether the modes the user requires pass (a gate for CI or a release check).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "core/errors.h"
#include "sweep/gate.h"

namespace replayssm::cli {
namespace {

void add_options(po::options_description& d) {
  d.add_options()
    ("results", po::value<std::string>()->default_value("out/results.h5"),
     "sweep results file to judge (positional; what `replayssm sweep` or `merge` wrote)")
    ("out", po::value<std::string>()->default_value("out/gate.h5"), "verdict table (.h5, written atomically)")
    ("max-kl", po::value<double>()->default_value(1e-3), "largest mean KL(ref || mode) in nats allowed in any bin")
    ("min-top1", po::value<double>()->default_value(0.995),
     "smallest top-1 agreement (a fraction in [0, 1]) allowed in any bin")
    ("require", po::value<std::string>(),
     "modes that must pass (comma list of the mode names the table prints, or all): exit 1 when one fails");
}

// "512-1023": the 1-based positions of bin b, inclusive.
std::string bin_label(const std::vector<std::int64_t>& bins, std::int64_t b) {
  const auto i = static_cast<std::size_t>(b);
  return std::to_string(bins[i]) + "-" + std::to_string(bins[i + 1] - 1);
}

std::string number_or_dash(const char* fmt, double x) {
  if (!std::isfinite(x)) return std::isnan(x) ? "-" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

void print_table(const sweep::GateReport& g, const std::vector<std::size_t>& required) {
  int width = 4;
  for (const auto& v : g.modes) width = std::max(width, static_cast<int>(v.mode.size()));
  std::printf("gate: mean KL <= %.3g nats and top-1 agreement >= %.4g in every position bin of %s\n",
              g.thresholds.max_kl, g.thresholds.min_top1, g.results_path.c_str());
  std::printf("%-*s %7s %6s %9s %-12s %8s %-12s %10s  %s\n", width, "mode", "B/elem", "xFP32", "worst KL", "(positions)",
              "top1", "(positions)", "first flip", "verdict");
  for (std::size_t i = 0; i < g.modes.size(); ++i) {
    const auto& v = g.modes[i];
    const bool req = std::find(required.begin(), required.end(), i) != required.end();
    std::string verdict = v.pass ? "PASS" : "FAIL";
    if (v.diverged_at >= 0) verdict += " (diverged at " + std::to_string(v.diverged_at) + ")";
    if (req) verdict += " [required]";
    std::printf("%-*s %7s %6s %9s %-12s %8s %-12s %10s  %s\n", width, v.mode.c_str(),
                number_or_dash("%.3f", v.bytes_per_element).c_str(), number_or_dash("%.2f", v.capacity_vs_fp32).c_str(),
                number_or_dash("%.2e", v.worst_kl).c_str(), bin_label(g.bins, v.worst_kl_bin).c_str(),
                number_or_dash("%.4f", v.worst_top1).c_str(),
                v.worst_top1 == 1.0 ? "-" : bin_label(g.bins, v.worst_top1_bin).c_str(),
                v.first_flip < 0 ? "none" : std::to_string(v.first_flip).c_str(), verdict.c_str());
  }
}

int run(const po::variables_map& vm) {
  const std::string results_path = vm["results"].as<std::string>(), out_path = vm["out"].as<std::string>();
  sweep::GateThresholds t;
  t.max_kl = vm["max-kl"].as<double>();
  t.min_top1 = vm["min-top1"].as<double>();
  if (t.max_kl < 0) throw UserError("--max-kl: must be >= 0 (nats)");
  if (t.min_top1 < 0 || t.min_top1 > 1)
    throw UserError("--min-top1: must be a fraction in [0, 1] (99.5% is 0.995)");
  const std::string require = vm.count("require") ? vm["require"].as<std::string>() : "";
  if (vm.count("require") && require.find_first_not_of(" \t") == std::string::npos)
    throw UserError("--require: empty list");
  h5::refuse_output_over_input(out_path, {results_path});  // before any work: an unwritable or clobbering --out

  sweep::GateReport report;
  {
    const auto f = h5::File::open_read(results_path);
    report = sweep::judge_results(f, t);
  }
  const auto required = sweep::required_modes(report, require);
  bool required_pass = true;
  std::size_t passed = 0, required_passed = 0;
  for (std::size_t i = 0; i < report.modes.size(); ++i) passed += report.modes[i].pass ? 1 : 0;
  for (auto i : required) {
    required_pass = required_pass && report.modes[i].pass;
    required_passed += report.modes[i].pass ? 1 : 0;
  }

  h5::AtomicOutput out(out_path);
  sweep::write_gate(out.file(), report, require, required_pass);
  h5::write_provenance(out.file(), command_line(), resolved_options(vm), "n/a (gate)");
  out.commit();

  print_table(report, required);
  std::cout << "gate: " << passed << " of " << report.modes.size() << " mode(s) pass";
  if (!required.empty())
    std::cout << "; required: " << required_passed << " of " << required.size() << " pass"
              << (required_pass ? "" : " -> FAILED");
  std::cout << " -> " << out_path << "\n";
  return required_pass ? kExitOk : kExitValidationFailed;
}

const Registrar reg{{"gate", "PASS / FAIL of every mode of a sweep results file (per-bin KL and top-1 thresholds)",
                     add_options, run,
                     "replayssm gate out/results.h5 --max-kl 1e-3 --min-top1 0.995 "
                     "--require tiny_gdn.replay_split.fp8_e4m3-row.rne.L16.u-hp --out out/gate.h5",
                     "results"}};

}  // namespace
}  // namespace replayssm::cli
