#pragma once
// The accuracy gate of a sweep's results (`replayssm gate`): each run (a mode of one model) passes when every
// length bin keeps its mean KL and its top-1 agreement within thresholds. The defaults are the gate people use to
// accept a cheaper state format (mean KL <= 1e-3 nats, top-1 agreement >= 99.5%): judged per bin, not over the whole
// run, so a format whose error grows with length fails at the length where it grows.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/h5.h"
#include "sweep/results.h"

namespace replayssm::sweep {

struct GateThresholds {
  double max_kl = 1e-3;     // mean KL(ref || mode) per bin, nats
  double min_top1 = 0.995;  // top-1 agreement per bin, a fraction
};

struct ModeVerdict {
  std::string mode;  // the run id (`<model>.<policy>.<format>-<scaling>.<rounding>.L<L>[.u-<source>]`)
  std::string model, format, scaling, rounding, policy;
  // NaN when the results file does not record them.
  double bytes_per_element = std::numeric_limits<double>::quiet_NaN(), capacity_vs_fp32 = bytes_per_element;
  std::vector<double> kl_mean_binned;                  // [bins] mean KL per bin
  std::vector<double> top1_binned;                     // [bins] top-1 agreement per bin (1 - flip rate)
  // The worst bin (NaN: a diverged run, which fails) and its index.
  double worst_kl = 0, worst_top1 = 1;
  std::int64_t worst_kl_bin = 0, worst_top1_bin = 0;
  std::int64_t first_flip = -1, diverged_at = -1;
  bool pass = false;
};

// Judges one run against the thresholds. `bins` are the results file's edges; the run's flip rates are taken from
// flip_rate_binned, or derived from top1 where the file has none. A comparison with NaN fails.
ModeVerdict judge_run(const RunResult& run, const std::vector<std::int64_t>& bins, const GateThresholds& t);

struct GateReport {
  std::string results_path, config_hash;
  std::vector<std::int64_t> bins;
  GateThresholds thresholds;
  std::vector<ModeVerdict> modes;  // in the plan's order
};

// Every run of a sweep results file. A missing group, dataset or attribute is a UserError naming the file and the
// field (exit 2); so is a file with no runs, or one without KL (an activation-dump sweep has no model head).
GateReport judge_results(const h5::File& results, const GateThresholds& t);

// The modes that --require names ("all" or a comma list of run ids); an unknown name is a UserError naming the
// results file and /runs.
std::vector<std::size_t> required_modes(const GateReport& report, const std::string& require);

// The table `replayssm gate` prints: mode, bytes per element, capacity vs FP32, worst-bin KL and top-1 with their
// positions, first flip, verdict (marked [required] for the modes in `required`).
std::string format_gate_table(const GateReport& report, const std::vector<std::size_t>& required);

// The verdict table (/bins, /gate/*; datasets/README.md "Gate verdicts"); the caller adds provenance.
void write_gate(h5::File& out, const GateReport& report, const std::string& require, bool required_pass);

}  // namespace replayssm::sweep
