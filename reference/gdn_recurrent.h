#pragma once
// The GDN spec: token by token, S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,
// o_t = S_t (scale q_t). Every other GDN form is checked against this one.
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

// initial_state: [Hv][V][K] or nullptr for zero. Throws std::invalid_argument on bad inputs.
LayerOutputs gdn_recurrent(const GdnInputs& in, const std::vector<double>* initial_state = nullptr);

}  // namespace replayssm::ref
