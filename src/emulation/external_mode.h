#pragma once
// `replayssm validate --external theirs.h5 --activations acts.h5 --mode MODE`: an outside kernel of one decode mode
// (a low-precision state stored where MODE stores) against the mode-aware FP64 reference of that mode on the same
// dump, per layer and head, with external_mode_tolerance (tolerances.h), which says why. Beside it: the same distance
// for our emulation ("ours"), and the mode's own error (the mode-aware reference against the plain FP64 recurrence),
// whose ratio to what FP32 arithmetic and kept flips explain is the separation.
// theirs: /layers/<i>/o [T, H, V], optional /layers/<i>/final_state [H, V, K] = the state the next token would start
// from (conventional: the stored state decoded; replay: the checkpoint advanced over the window; split: the HP state).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/compare.h"
#include "emulation/decode_api.h"

namespace replayssm::emu {

struct ExternalModeRow {
  std::string layer;
  int head = 0;
  Tolerance tol;
  Comparison out;                  // theirs vs the mode-aware reference
  std::optional<Comparison> state;
  double emu_out = 0.0, emu_state = 0.0;    // our emulation's rel-RMS against the same reference
  double mode_error = 0.0;  // the mode-aware reference against plain FP64: rel-RMS, the larger of outputs and state
  double arithmetic = 0.0;  // max(FP32 floor, 8 x ours): what FP32 arithmetic and kept flips explain
  double separation() const { return mode_error / arithmetic; }
  bool pass() const { return out.pass && (!state || state->pass); }
};

// What the check expects of theirs, for a user to diff against (`--save-expected out.h5`), per layer <i>:
// /layers/<i>/o, /layers/<i>/final_state: the mode-aware FP64 reference (through the backend interface, so in FP32);
// /layers/<i>/emulated_o, /layers/<i>/emulated_state: this tool's emulation of the mode (the CUDA kernels' bits);
// float64 datasets; root attributes: the provenance (command, options, version) and "mode", "dump".
struct ExpectedOutputs {
  std::string path;  // empty: nothing saved
  std::string command;
  std::map<std::string, std::string> options;
};

// Every (layer, head) row; bad input (a missing layer or field, a wrong shape, a mode that does not fit the dump)
// throws UserError naming the file or option.
std::vector<ExternalModeRow> validate_external_mode(const std::string& theirs_path, const std::string& dump_path,
                                                    const std::string& mode_name, const ExpectedOutputs& save = {});

// The whole command: validate_external_mode and its report; returns the exit code (0 pass, 1 any row failed).
int run_external_mode_validation(const std::string& theirs_path, const std::string& dump_path,
                                 const std::string& mode_name, const ExpectedOutputs& save = {});

}  // namespace replayssm::emu
