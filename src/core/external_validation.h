#pragma once
// `replayssm validate --external theirs.h5 --activations acts.h5`: an outside kernel's recurrence outputs
// `/layers/<i>/o` (and `/layers/<i>/final_state` where present) against the FP64 recurrent reference of the same
// activation dump, per layer and head, with the one compare() of core/compare.h. (No activation_dump.h here: the
// validate command also sees emu::Arch, and the two Arch enums must not meet.)
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/compare.h"

namespace replayssm {

// The documented pass criterion: relative RMS <= rtol per layer and head (output over all positions; final state
// over the head's [V, K]). The element-wise max-abs bound of compare() is switched off (infinite) on purpose: an
// outside kernel is judged by the one documented number, while NaN/Inf still fail through compare()'s non-finite
// check. 1e-4 is 45-1200x above what FP32 recurrences reach on the captured fixtures (8e-8 token by token, up to
// 2.2e-6 for HF's chunked GDN; datasets/README.md) and 4-12x below a conventional bf16 state's output error there
// (a replay-split bf16 read copy, 5e-5..1e-4, sits at the bound: tighten --rtol to tell it from FP32).
inline constexpr double kExternalDefaultRtol = 1e-4;
inline Tolerance external_tolerance(double rtol) {
  return Tolerance{std::numeric_limits<double>::infinity(), rtol, 0.0};
}

// What an outside kernel wrote for one dump layer: /layers/<name>/o [T, H, V] and, where present,
// /layers/<name>/final_state [H, V, K] (H, V, K: value heads, rows and columns of a head's state; Mamba-2 H, P, N).
struct ExternalLayerShape {
  std::string name;
  std::size_t T, H, V, K;
};
struct ExternalOutputs {
  std::vector<double> o;
  std::optional<std::vector<double>> state;
};
// Reads every layer of theirs first, so that a bad file fails before minutes of reference work: a missing layer, a
// wrong shape or a non-numeric dataset is a UserError naming the file and the field (exit 2); NaN/Inf is read as it
// is (a failed comparison, not bad input). dump_path only names the dump in the message.
std::vector<ExternalOutputs> read_external_outputs(const std::string& theirs_path, const std::string& dump_path,
                                                   const std::vector<ExternalLayerShape>& layers);
// One head's slice of a [T][H][V] array, as a contiguous [T][V] array.
std::vector<double> external_head_rows(const std::vector<double>& o, const ExternalLayerShape& d, std::size_t h);

// The whole command: checks --rtol (finite, > 0), reads the dump, compares, prints. Returns the exit code (0 pass,
// 1 any row failed); bad input throws UserError (exit 2).
int run_external_validation(const std::string& theirs_path, const std::string& dump_path, double rtol);

}  // namespace replayssm
