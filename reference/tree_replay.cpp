// Tree verify of ReplaySSM (tree_verify.h): checkpoint + window, the T nodes' records appended in node order, GDN u's
// by the masked forward substitution, every node's output read through its own root path; accepting a node copies its
// path's records behind the window (records, never states).
#include <stdexcept>
#include <string>

#include "reference/replay_head.h"

namespace replayssm::ref {

std::vector<Eigen::VectorXd> ReplayHead::verify_tree(const std::vector<HeadToken>& drafts, const DraftTree& tree) {
  tree.validate();
  const int T = tree.size();
  if (int(drafts.size()) != T)
    throw std::invalid_argument("ReplayHead::verify_tree: " + std::to_string(drafts.size()) + " drafts for a " +
                                std::to_string(T) + "-node tree");
  const int n = begin_drafts(T, "verify_tree");
  append_drafts(drafts, &tree);
  // Node i reads the window and then the records of its path: S_(i) q_i by the re-associated window product.
  std::vector<Record> path_recs(buf_.begin(), buf_.begin() + n);
  std::vector<Eigen::VectorXd> out(static_cast<std::size_t>(T));
  for (int i = 0; i < T; ++i) {
    path_recs.resize(std::size_t(n));
    for (int j : tree.path(i)) path_recs.push_back(buf_[std::size_t(n + j)]);
    const HeadToken& d = drafts[std::size_t(i)];
    Eigen::VectorXd o = window_apply(S_c_ * d.q, path_recs, int(path_recs.size()), d.q);
    if (d.skip.size()) o += d.skip;
    out[std::size_t(i)] = o;
  }
  pending_ = T;
  tree_ = tree;
  return out;
}

void ReplayHead::accept_path(int node) {
  if (!pending() || !tree_.size()) throw std::logic_error("ReplayHead::accept_path: no tree verify pending");
  const std::vector<int> p = tree_.path(node);  // throws for a node out of range
  // Path nodes increase and p[d] >= d, so copying slot n + p[d] to slot n + d in increasing d never overwrites a
  // record still to be copied.
  for (std::size_t d = 0; d < p.size(); ++d)
    if (p[d] != int(d)) buf_[std::size_t(n_) + d] = buf_[std::size_t(n_ + p[d])];
  n_ += int(p.size());
  pending_ = -1;
  tree_ = DraftTree{};
}

}  // namespace replayssm::ref
