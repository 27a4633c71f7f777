#include "reference/mamba2_recurrent.h"

#include "reference/head_record.h"
#include "reference/layer_driver.h"

namespace replayssm::ref {

LayerOutputs mamba2_recurrent(const Mamba2Inputs& in, const std::vector<double>* initial_state) {
  in.validate();
  validate_initial_state(initial_state, in.state_size());
  return detail::recurrent_layer(Recurrence::kMamba2, {in.T, in.H, in.P, in.N},
                                 [&](int t, int h) { return mamba2_head_token(in, t, h); }, initial_state);
}

}  // namespace replayssm::ref
