#include "reference/mamba2_chunked.h"

#include "reference/head_record.h"
#include "reference/layer_driver.h"

namespace replayssm::ref {

LayerOutputs mamba2_chunked(const Mamba2Inputs& in, int chunk, const std::vector<double>* initial_state) {
  in.validate();
  validate_initial_state(initial_state, in.state_size());
  const auto values = [&](const std::vector<HeadToken>& toks, const Eigen::MatrixXd&, const Eigen::VectorXd&,
                          const Eigen::MatrixXd&) -> Eigen::MatrixXd {
    Eigen::MatrixXd W(Eigen::Index(toks.size()), in.P);
    for (std::size_t i = 0; i < toks.size(); ++i) W.row(Eigen::Index(i)) = toks[i].v.transpose();
    return W;
  };
  return detail::chunked_layer({in.T, in.H, in.P, in.N}, chunk,
                               [&](int t, int h) { return mamba2_head_token(in, t, h); }, values, initial_state);
}

}  // namespace replayssm::ref
