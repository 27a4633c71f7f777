#include "reference/gdn_recurrent.h"

#include "reference/head_record.h"
#include "reference/layer_driver.h"

namespace replayssm::ref {

LayerOutputs gdn_recurrent(const GdnInputs& in, const std::vector<double>* initial_state) {
  in.validate();
  validate_initial_state(initial_state, in.state_size());
  return detail::recurrent_layer(Recurrence::kGdn, {in.T, in.Hv, in.V, in.K},
                                 [&](int t, int h) { return gdn_head_token(in, t, h); }, initial_state);
}

}  // namespace replayssm::ref
