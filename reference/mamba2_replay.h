#pragma once
// Mamba-2 ReplaySSM standard decode over a whole sequence: one ReplayHead per head (see replay_head.h).
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

// flush_states (optional): cleared, then one full state [H][P][N] per flush (after 0-based step (i+1) L - 1).
LayerOutputs mamba2_replay_decode(const Mamba2Inputs& in, int L, const std::vector<double>* initial_state = nullptr,
                                  std::vector<std::vector<double>>* flush_states = nullptr);

}  // namespace replayssm::ref
