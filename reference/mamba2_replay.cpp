#include "reference/mamba2_replay.h"

#include "reference/head_record.h"
#include "reference/layer_driver.h"

namespace replayssm::ref {

LayerOutputs mamba2_replay_decode(const Mamba2Inputs& in, int L, const std::vector<double>* initial_state,
                                  std::vector<std::vector<double>>* flush_states) {
  in.validate();
  validate_initial_state(initial_state, in.state_size());
  return detail::replay_layer(Recurrence::kMamba2, {in.T, in.H, in.P, in.N}, L,
                              [&](int t, int h) { return mamba2_head_token(in, t, h); }, initial_state,
                              flush_states);
}

}  // namespace replayssm::ref
