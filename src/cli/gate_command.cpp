// `replayssm gate`: judges an existing sweep results file. Each mode (run) passes when every length bin keeps its
// mean KL and its top-1 agreement within the thresholds; the verdict table is printed and written to HDF5, and the
// exit status says whether the modes the user requires pass (a gate for CI or a release check).
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

  std::cout << sweep::format_gate_table(report, required);
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
