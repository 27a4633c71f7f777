#pragma once
// Runs one layer's recurrence through a decode backend (emulated or CUDA) in one mode, token by token as a
// decoder would, and measures it against an FP64 shadow of the same recurrence on the same inputs:
//   output drift [T]: ||o_mode - o_fp64|| / ||o_fp64|| per position over all heads of the layer;
//   state drift [F]: ||S_mode - S_fp64||_F / ||S_fp64||_F every L steps (conventional too, for comparability),
//   where S_mode is the backend's materialised state (checkpoint + window; HP under split).
// Both drifts are layer-local: the shadow sees the mode's own inputs, so they isolate this layer's state error;
// the end-to-end effect shows in the sweep's output KL.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulation/decode_api.h"
#include "reference/layer_inputs.h"
#include "runtime/fp64_device.h"

namespace replayssm::sweep {

// Thrown when a mode's recurrence output stops being finite (a low-precision state that blew up): a result, not a
// bug. `position` is the first 0-based position whose output is NaN/Inf; every later position depends on it.
struct Diverged : std::runtime_error {
  explicit Diverged(std::int64_t pos)
      : std::runtime_error("recurrence output non-finite at position " + std::to_string(pos)), position(pos) {}
  std::int64_t position;
};

struct LayerDrift {
  std::vector<double> output;         // [T]
  std::vector<std::int64_t> steps;    // 1-based positions of the state comparisons (multiples of L)
  std::vector<double> state;          // [F]
};

// One layer of one sequence through a decode backend, fed in consecutive chunks (gdn / mamba2 with the next
// positions): the backend's state, the FP64 shadow and the position count carry from chunk to chunk, so outputs
// and drifts are bit for bit those of one call over the whole sequence. The backend belongs to this layer until
// the sequence ends (its first chunk init()s it); drift gets each chunk's positions appended.
//
// With an FP64 device (not owned) the shadow runs there, a block of tokens at a time after the backend has stepped
// through them (the backend sees the same calls in the same order); outputs and drifts are the same bits.
class ModeLayerStream {
 public:
  ModeLayerStream(emu::DecodeBackend& backend, const emu::Mode& mode, runtime::Fp64Device* device = nullptr);
  ~ModeLayerStream();
  ModeLayerStream(ModeLayerStream&&) noexcept;
  ref::LayerOutputs gdn(const ref::GdnInputs& in, LayerDrift* drift);
  ref::LayerOutputs mamba2(const ref::Mamba2Inputs& in, LayerDrift* drift);
  std::vector<double> state();  // the backend's materialised state [heads][V][K] after the positions so far
  // Checkpoints: the backend's blob, the FP64 shadow and the position count appended to `out`; load() restores them
  // into a stream built on a backend of the same mode (nothing run yet), and the next chunk continues bit for bit.
  // The drift vectors are the caller's. std::invalid_argument on a blob of another mode or shape.
  void save(std::vector<std::uint8_t>& out) const;
  void load(const std::uint8_t* blob, std::size_t size);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The whole sequence in one call (a ModeLayerStream of one chunk).
class ModeRecurrence {
 public:
  ModeRecurrence(emu::DecodeBackend& backend, const emu::Mode& mode) : be_(backend), mode_(mode) {}
  // Outputs [T][Hv][V] (GDN) / [T][H][P] with the D skip (Mamba-2), as doubles of the backend's FP32 results.
  ref::LayerOutputs run_gdn(const ref::GdnInputs& in, LayerDrift* drift);
  ref::LayerOutputs run_mamba2(const ref::Mamba2Inputs& in, LayerDrift* drift);

 private:
  emu::DecodeBackend& be_;
  emu::Mode mode_;
};

}  // namespace replayssm::sweep
