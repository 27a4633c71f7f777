#pragma once
// The results file of a sweep (datasets/README.md, "Sweep results"): one group per run with per-position KL,
// NLL, top-1 agreement, binned KL, and per-layer output and state drift. Runs are written and read through these
// two functions only, so a resumed, sharded or merged sweep writes exactly the bytes of an uninterrupted one.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/h5.h"

namespace replayssm::sweep {

struct RunResult {
  std::string id;
  std::int64_t index = 0;
  std::map<std::string, std::string> attrs;  // model, text, format, scaling, rounding, policy, L, u_source, backend...
  std::vector<double> kl, nll, top1;          // [T]
  std::vector<double> kl_binned;              // [bins][4] mean, p50, p95, max
  // Token flips (metrics.h): per-bin rate and the first 0-based position where the argmax differs (-1: none).
  // Empty / -1 when read from a results file that has no `flip_rate_binned` (written by a tool version without it).
  std::vector<double> flip_rate_binned;       // [bins]
  std::int64_t first_flip = -1;
  // The stored format's bytes per state element, scales included (bytes_per_state / (V K) at the model's head
  // shape), and how many states fit in the memory of one FP32 state (4 / bytes_per_element). NaN when unknown.
  double bytes_per_element = std::numeric_limits<double>::quiet_NaN();
  double capacity_vs_fp32 = std::numeric_limits<double>::quiet_NaN();
  int layers = 0;
  std::vector<double> output_drift;           // [layers][T]
  std::vector<std::int64_t> flush_steps;      // [F] 1-based positions at which the state was compared
  std::vector<double> state_drift;            // [layers][F]
  double elapsed_s = 0;                       // informational (the only field allowed to differ between reruns)
};

void write_run(h5::File& f, const std::string& group, const RunResult& r);
// The part of write_run that needs no model head: output_drift, flush_steps, state_drift and the run's attrs (also
// the whole run group of an activation-dump sweep, which adds its own binned drift).
void write_drift_and_attrs(h5::File& f, const std::string& group, const RunResult& r);
RunResult read_run(const h5::File& f, const std::string& group);

// Per-model FP64 reference summary: NLL per position (bits/byte = mean / ln 2).
struct ReferenceSummary {
  std::string model;
  std::vector<double> nll;
};
void write_reference(h5::File& f, const ReferenceSummary& s);
ReferenceSummary read_reference(const h5::File& f, const std::string& model);

// Everything in a results file except the runs: the resolved sweep configuration (its hash tells shards of the
// same sweep apart from others), the bin edges, the full plan's run ids, and the FP64 reference per model.
struct SweepHeader {
  std::map<std::string, std::string> config;
  std::string config_hash;
  std::vector<std::int64_t> bins;
  std::vector<std::string> plan;
  std::vector<ReferenceSummary> references;
};
void write_header(h5::File& f, const SweepHeader& h);
SweepHeader read_header(const h5::File& f);
std::string hash_config(const std::map<std::string, std::string>& config);

}  // namespace replayssm::sweep
