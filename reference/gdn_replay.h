#pragma once
// GDN ReplaySSM standard decode over a whole sequence: one ReplayHead per value head, step() token by token
// (see replay_head.h for the window and flush convention).
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

// flush_states (optional): cleared, then one full state [Hv][V][K] per flush, i.e. the materialised state
// after 0-based step (i+1) L - 1 for flush i. final_state is the materialised state after the last step.
LayerOutputs gdn_replay_decode(const GdnInputs& in, int L, const std::vector<double>* initial_state = nullptr,
                               std::vector<std::vector<double>>* flush_states = nullptr);

}  // namespace replayssm::ref
