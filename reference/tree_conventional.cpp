// Tree verify of conventional decode (tree_verify.h): the recurrent spec along every root path, one state per node --
// the store-all baseline. Node i's snapshot is its parent's snapshot (the current state for a root child) stepped by
// token i; accept_path(n) restores snapshot n.
#include <stdexcept>
#include <string>

#include "reference/conventional_head.h"

namespace replayssm::ref {

std::vector<Eigen::VectorXd> ConventionalHead::verify_tree(const std::vector<HeadToken>& drafts,
                                                           const DraftTree& tree) {
  require_no_pending("verify_tree");
  tree.validate();
  if (int(drafts.size()) != tree.size())
    throw std::invalid_argument("ConventionalHead::verify_tree: " + std::to_string(drafts.size()) + " drafts for a " +
                                std::to_string(tree.size()) + "-node tree");
  std::vector<Eigen::VectorXd> out;
  out.reserve(drafts.size());
  for (int i = 0; i < tree.size(); ++i) {
    const int p = tree.parent[std::size_t(i)];
    Eigen::MatrixXd S = p < 0 ? S_ : snapshots_[std::size_t(p)];
    out.push_back(recurrent_step(r_, S, drafts[std::size_t(i)]));
    snapshots_.push_back(std::move(S));
  }
  pending_tree_ = true;
  return out;
}

void ConventionalHead::accept_path(int node) {
  if (!pending_tree_) throw std::logic_error("ConventionalHead::accept_path: no tree verify pending");
  if (node < -1 || node >= int(snapshots_.size()))
    throw std::invalid_argument("ConventionalHead::accept_path: node " + std::to_string(node) + " outside -1.." +
                                std::to_string(int(snapshots_.size()) - 1));
  if (node >= 0) S_ = snapshots_[std::size_t(node)];
  snapshots_.clear();
  pending_tree_ = false;
}

}  // namespace replayssm::ref
