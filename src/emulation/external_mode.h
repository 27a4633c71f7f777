#pragma once
// `replayssm validate --external theirs.h5 --activations acts.h5 --mode MODE`: an outside kernel of one decode mode
// (a low-precision state stored where MODE stores) against the mode-aware FP64 reference of that mode on the same
// dump, per layer and head, with external_mode_tolerance (tolerances.h): the FP32 floor plus the flips their store
// may keep. Beside it, for scale: the same check of our emulation (the bound must hold it too), and the mode's own
// error (the mode-aware reference against the plain FP64 recurrence), whose ratio to the bound is the separation.
// theirs: /layers/<i>/o [T, H, V], optional /layers/<i>/final_state [H, V, K] = the state the next token would start
// from (conventional: the stored state decoded; replay: the checkpoint advanced over the window; split: the HP state).
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
  double mode_error = 0.0;                  // the mode-aware reference's output rel-RMS against plain FP64
  bool pass() const { return out.pass && (!state || state->pass); }
};

// Every (layer, head) row; bad input (a missing layer or field, a wrong shape, a mode that does not fit the dump)
// throws UserError naming the file or option.
std::vector<ExternalModeRow> validate_external_mode(const std::string& theirs_path, const std::string& dump_path,
                                                    const std::string& mode_name);

// The whole command: validate_external_mode and its report; returns the exit code (0 pass, 1 any row failed).
int run_external_mode_validation(const std::string& theirs_path, const std::string& dump_path,
                                 const std::string& mode_name);

}  // namespace replayssm::emu
