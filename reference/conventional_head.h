#pragma once
// Conventional decode of one head: the state itself is the cache. The baseline ReplayHead is measured against,
// and the spec of conventional speculative decoding (T snapshots written, one restored).
#include <Eigen/Core>

#include <vector>

#include "reference/head_record.h"
#include "reference/tree_verify.h"

namespace replayssm::ref {

class ConventionalHead {
 public:
  // S0 = nullptr starts from zero. S0 is [V x K].
  ConventionalHead(Recurrence r, int V, int K, const Eigen::MatrixXd* S0 = nullptr);

  // One decode step: S <- step(S), returns o_t (+ skip).
  Eigen::VectorXd step(const HeadToken& tok);

  // Runs T drafts recurrently from the current state, keeps the T snapshots S_1..S_T, returns the T outputs.
  // The state is left unchanged until accept().
  std::vector<Eigen::VectorXd> verify(const std::vector<HeadToken>& drafts);
  // Restores snapshot a (0 <= a <= T; a = 0 is the state before the verify) and drops the snapshots.
  void accept(int a);

  // Tree verify (tree_conventional.cpp): node i's snapshot is the current state stepped along path(i); returns the T
  // node outputs. accept_path(n) restores snapshot n (n = -1: the state before the verify).
  std::vector<Eigen::VectorXd> verify_tree(const std::vector<HeadToken>& drafts, const DraftTree& tree);
  void accept_path(int node);

  const Eigen::MatrixXd& state() const { return S_; }
  bool pending() const { return !snapshots_.empty() || pending_empty_verify_; }

 private:
  void require_no_pending(const char* what) const;
  Recurrence r_;
  Eigen::MatrixXd S_;
  std::vector<Eigen::MatrixXd> snapshots_;
  bool pending_empty_verify_ = false;
  bool pending_tree_ = false;  // the snapshots are a tree's (accept_path), not a chain's (accept)
};

}  // namespace replayssm::ref
