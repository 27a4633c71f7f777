#include "reference/gdn_chunked.h"

#include <Eigen/Dense>

#include "reference/head_record.h"
#include "reference/layer_driver.h"

namespace replayssm::ref {

LayerOutputs gdn_chunked(const GdnInputs& in, int chunk, const std::vector<double>* initial_state) {
  in.validate();
  validate_initial_state(initial_state, in.state_size());
  const auto solve_u = [&](const std::vector<HeadToken>& toks, const Eigen::MatrixXd& D, const Eigen::VectorXd& Gamma,
                           const Eigen::MatrixXd& S0) -> Eigen::MatrixXd {
    const int C = int(toks.size());
    Eigen::MatrixXd Kc(C, in.K), Vc(C, in.V);
    Eigen::VectorXd beta(C);
    for (int i = 0; i < C; ++i) {
      Kc.row(i) = toks[std::size_t(i)].k.transpose();
      Vc.row(i) = toks[std::size_t(i)].v.transpose();
      beta(i) = toks[std::size_t(i)].beta;
    }
    Eigen::MatrixXd A = beta.asDiagonal() * (Kc * Kc.transpose()).cwiseProduct(D);
    A.triangularView<Eigen::Upper>().setZero();  // strictly lower
    Eigen::MatrixXd Tinv = Eigen::MatrixXd::Identity(C, C);
    (Eigen::MatrixXd::Identity(C, C) + A).triangularView<Eigen::UnitLower>().solveInPlace(Tinv);
    const Eigen::MatrixXd Ucap = Tinv * (beta.asDiagonal() * Vc);
    const Eigen::MatrixXd Wk = Tinv * (beta.cwiseProduct(Gamma).asDiagonal() * Kc);
    return Ucap - Wk * S0.transpose();
  };
  return detail::chunked_layer({in.T, in.Hv, in.V, in.K}, chunk,
                               [&](int t, int h) { return gdn_head_token(in, t, h); }, solve_u, initial_state);
}

}  // namespace replayssm::ref
