#include "reference/gdn_replay.h"

#include "reference/head_record.h"
#include "reference/layer_driver.h"

namespace replayssm::ref {

LayerOutputs gdn_replay_decode(const GdnInputs& in, int L, const std::vector<double>* initial_state,
                               std::vector<std::vector<double>>* flush_states) {
  in.validate();
  validate_initial_state(initial_state, in.state_size());
  return detail::replay_layer(Recurrence::kGdn, {in.T, in.Hv, in.V, in.K}, L,
                              [&](int t, int h) { return gdn_head_token(in, t, h); }, initial_state, flush_states);
}

}  // namespace replayssm::ref
