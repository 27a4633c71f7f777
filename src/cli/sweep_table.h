#pragma once
// The terminal tables a model sweep ends with, drawn from a few numbers per run (RunSummary) so that a sweep never
// holds every run's per-position arrays at once.
#include <cstdint>
#include <string>
#include <vector>

#include "sweep/results.h"

namespace replayssm::cli {

struct RunSummary {
  std::string id, diverged_at;  // diverged_at: "" or "-1" when the run did not diverge
  std::vector<double> kl_binned, flip_rate_binned;
  double kl_mean = 0.0, top1_mean = 0.0, state_drift_mean = 0.0;
  double bytes_per_element = 0.0, capacity_vs_fp32 = 0.0;
  std::int64_t first_flip = -1;
};
RunSummary summarize(const sweep::RunResult& r);

void print_table(const std::vector<RunSummary>& runs, const std::vector<std::int64_t>& edges);

}  // namespace replayssm::cli
