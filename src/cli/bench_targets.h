#pragma once
// The issue-5 targets of `replayssm bench` (B=256, L=16), checked on a run's rows: measured value, threshold, and the
// value the byte model allows. Plain C++ (the rows are host structs), so it is tested without a GPU.
#include <string>
#include <vector>

#include "kernels/bench/bench_harness.h"

namespace replayssm::cli {

// model_bound: the value the byte model allows at equal bandwidth (100 for a % of roofline; for a speedup the ratio of
// modelled bytes; for verify the modelled bytes over the step's). A target beyond it needs the faster kernel to move
// its bytes faster than the kernel it is compared with, with the record layout the model counts (kernels/PERF_NOTES.md,
// "Byte model"); the best u-source's bound is that of the fastest row.
struct BenchTarget {
  std::string name, measured_row;
  double value = 0, threshold = 0, model_bound = 0;
  bool higher_better = true, present = false, met = false;
  bool beyond_model() const {
    return model_bound > 0 && (higher_better ? threshold > model_bound : threshold < model_bound);
  }
};

// "policy/format[:scaling][/u=source]" of a row.
std::string variant_label(const kbench::Row& r);
// Every target, in the order; a target whose row was not measured has present = false.
std::vector<BenchTarget> check_targets(const kbench::Result& res);
// One line: "[MET   ] name: value (>= threshold; byte model bound[, target beyond it])" or "[not measured] name".
std::string target_line(const BenchTarget& t);

}  // namespace replayssm::cli
