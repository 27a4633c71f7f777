#pragma once
// `replayssm sweep --activations acts.h5`: every configured mode on a captured activation dump, layer by layer.
// Each dump layer's recurrence runs through ModeRecurrence (the model sweep's own machinery, used read-only): the
// mode's decode backend token by token against an FP64 shadow fed the same inputs. Results use the model sweep's
// schema for what exists without a model head -- per-layer output drift by position and state drift every L steps
// (plus output drift binned by length); there is no KL, NLL or top-1 (a dump has no LM head), which the file says
// in its `metrics` attributes. --resume and --shard are refused (a dump sweep is layer-local and short).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emulation/decode_api.h"
#include "sweep/sweep_plan.h"

namespace replayssm::sweep {

inline constexpr const char* kActivationMetrics =
    "output_drift, output_drift_binned, state_drift (layer-local, against an FP64 shadow); no kl, nll or top1: "
    "an activation dump has no model head";

struct ActivationSweepJob {
  std::string dump_path, out_path;
  SweepAxes axes;
  int tokens = 0;  // first positions of every layer to use; 0 = all
  bool quiet = false;
  std::map<std::string, std::string> config;   // resolved sweep options for /config (volatile ones removed)
  std::map<std::string, std::string> options;  // every resolved option, for the provenance attributes
  std::string command, backend_name, device;
};

// Plans, runs (one worker thread per backend in `backends`), writes `out_path` atomically, prints a table of mean
// output drift by position bin. Bad dumps, modes that do not fit the dump's dims and unwritable outputs are
// UserErrors naming the file and field (exit 2). Deterministic: only the elapsed_s attributes differ between reruns.
int run_activation_sweep(const ActivationSweepJob& job, std::vector<std::unique_ptr<emu::DecodeBackend>>& backends);

}  // namespace replayssm::sweep
