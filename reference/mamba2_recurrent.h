#pragma once
// The Mamba-2 spec: token by token, S_t = exp(dt_t A_h) S_{t-1} + (dt_t x_t) B_t^T, y_t = S_t C_t + D_h x_t.
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

// initial_state: [H][P][N] or nullptr for zero.
LayerOutputs mamba2_recurrent(const Mamba2Inputs& in, const std::vector<double>* initial_state = nullptr);

}  // namespace replayssm::ref
