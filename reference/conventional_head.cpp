#include "reference/conventional_head.h"

#include <stdexcept>
#include <string>

namespace replayssm::ref {

ConventionalHead::ConventionalHead(Recurrence r, int V, int K, const Eigen::MatrixXd* S0) : r_(r) {
  if (V <= 0 || K <= 0) throw std::invalid_argument("ConventionalHead: V and K must be > 0");
  if (S0 && (S0->rows() != V || S0->cols() != K))
    throw std::invalid_argument("ConventionalHead: initial state must be V x K");
  S_ = S0 ? *S0 : Eigen::MatrixXd::Zero(V, K);
}

void ConventionalHead::require_no_pending(const char* what) const {
  if (pending()) throw std::logic_error(std::string("ConventionalHead::") + what + ": verify() awaits accept()");
}

Eigen::VectorXd ConventionalHead::step(const HeadToken& tok) {
  require_no_pending("step");
  return recurrent_step(r_, S_, tok);
}

std::vector<Eigen::VectorXd> ConventionalHead::verify(const std::vector<HeadToken>& drafts) {
  require_no_pending("verify");
  std::vector<Eigen::VectorXd> out;
  out.reserve(drafts.size());
  Eigen::MatrixXd S = S_;
  for (const HeadToken& tok : drafts) {
    out.push_back(recurrent_step(r_, S, tok));
    snapshots_.push_back(S);
  }
  pending_empty_verify_ = drafts.empty();
  return out;
}

void ConventionalHead::accept(int a) {
  if (!pending()) throw std::logic_error("ConventionalHead::accept: no verify pending");
  if (pending_tree_) throw std::logic_error("ConventionalHead::accept: the pending verify is a tree's (accept_path)");
  if (a < 0 || a > int(snapshots_.size()))
    throw std::invalid_argument("ConventionalHead::accept: a = " + std::to_string(a) + " outside 0.." +
                                std::to_string(snapshots_.size()));
  if (a > 0) S_ = snapshots_[std::size_t(a - 1)];
  snapshots_.clear();
  pending_empty_verify_ = false;
}

}  // namespace replayssm::ref
