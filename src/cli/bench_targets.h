#pragma once
// The performance targets of `replayssm bench`, read from a data file (kernels/bench/targets.ini: one section per
// target, the format in its header) and checked on a run's rows: measured value, threshold, and the value the byte
// model allows. Plain C++ (the rows are host structs), so it is tested without a GPU.
#include <string>
#include <vector>

#include "bench/bench_api.h"

namespace replayssm::cli {

// Which bench row a target reads: every field must match; empty scaling / usource match any (the fastest row wins).
// Only rows of FP32 records match: the targets and their byte-model bounds are the FP32 records' (targets.ini).
struct TargetRow {
  std::string kernel, policy, format, scaling, usource, dots = "exact";
  int T = 0, B = 0, L = 0;
  bool matches(const std::string& arch, const kbench::Row& r) const;
  std::string label(const std::string& arch) const;  // "gdn decode replay_shared fp32 T=1 B=256 L=16[ dots=tc]..."
};

// One target of the file. metric: "pct_roofline" (no baseline), "speedup" (baseline time / row time) or "ratio" (row
// time / baseline time).
struct TargetSpec {
  std::string name, arch, metric;
  TargetRow row, baseline;
  bool has_baseline = false;
  double threshold = 0;
  bool higher_better = true;
};

// model_bound: the value the byte model allows at equal bandwidth (100 for a % of roofline; for a speedup the ratio of
// modelled bytes; for a ratio the modelled bytes of the row over the baseline's). A target beyond it needs the faster
// kernel to move its bytes faster than the kernel it is compared with, with the record layout the model counts
// (kernels/PERF_NOTES.md, "Byte model"); where several rows match, the bound is that of the fastest.
struct BenchTarget {
  std::string name, measured_row, metric;
  std::string missing;  // not present: the row or baseline that was not measured
  double value = 0, threshold = 0, model_bound = 0;
  bool higher_better = true, present = false, met = false;
  bool beyond_model() const {
    return model_bound > 0 && (higher_better ? threshold > model_bound : threshold < model_bound);
  }
};

// The targets file: $REPLAYSSM_BENCH_TARGETS, else kernels/bench/targets.ini of the source tree built from.
std::string targets_file();
// Parses a targets file. Throws UserError (exit 2) naming the file, the line and the field of the first problem.
std::vector<TargetSpec> load_targets(const std::string& path);

// "policy/format[:scaling][/u=source][/tc-dots]" of a row.
std::string variant_label(const kbench::Row& r);
// Every target in the file's order; a target whose row or baseline was not measured has present = false.
std::vector<BenchTarget> check_targets(const kbench::Result& res, const std::vector<TargetSpec>& specs);
// The same with load_targets(targets_file()).
std::vector<BenchTarget> check_targets(const kbench::Result& res);
// One line: "[MET   ] name: value (>= threshold; byte model bound[, target beyond it])" or
// "[not measured] name (no row ...)".
std::string target_line(const BenchTarget& t);

}  // namespace replayssm::cli
