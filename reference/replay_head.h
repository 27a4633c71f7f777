#pragma once
// ReplaySSM decode of one head (DESIGN.md sec. 3): a checkpoint S_c plus a buffer of records (a, w, k),
// w = v (Mamba-2) or u (GDN). The CPU emulation and the kernels mirror this class step for step.
//
// Window convention. n is the number of valid records; the current state is S_{c+n} = materialize().
//  - step(): appends the record of step t = c+n+1. If the buffer then holds >= L records the step is a
//    flush: S_t is materialised, becomes the new checkpoint, the buffer is cleared (n = 0), and the step
//    returns o_t = S_t q_t from that materialised state. Otherwise it writes nothing but the record and
//    returns o_t re-associated from S_c and the buffer. Either way o_t equals the recurrent o_t.
//    Article example, L = 16: checkpoint = state after step 100; steps 101..115 append (n = 1..15);
//    step 116 appends the 16th record and flushes; the next window starts at step 117 (n = 0 before it).
//  - verify(T drafts): appends T records at slots n..n+T-1 and returns their T outputs, all from the same
//    checkpoint and window (GDN: the draft u's from one T x T forward substitution). Never flushes, except
//    the early flush: if n + T > capacity = L - 1 + Tmax, the state S_{c+n} is first flushed (n = 0).
//  - accept(a): n += a. Rejected records stay in place and are overwritten by the next append. n may now
//    exceed L - 1; the next step() then flushes (after an early flush if the buffer is exactly full).
#include <Eigen/Core>

#include <vector>

#include "reference/head_record.h"
#include "reference/tree_verify.h"

namespace replayssm::ref {

class ReplayHead {
 public:
  // L >= 1 (L = 1 flushes every step: conventional decode), Tmax >= 1 the largest verify length.
  ReplayHead(Recurrence r, int V, int K, int L, int Tmax = 1, const Eigen::MatrixXd* S0 = nullptr);

  Eigen::VectorXd step(const HeadToken& tok);
  std::vector<Eigen::VectorXd> verify(const std::vector<HeadToken>& drafts);
  void accept(int a);

  // Tree verify (tree_replay.cpp): the T nodes' records go to slots n..n+T-1 in node order (early flush first where
  // n + T > capacity), GDN u's by the masked solve (gdn_tree_u); node i's output reads the checkpoint, the window and
  // the records of path(i). accept_path(node) copies the records of path(node) to slots n.. in path order and appends
  // them (node = -1 appends none).
  std::vector<Eigen::VectorXd> verify_tree(const std::vector<HeadToken>& drafts, const DraftTree& tree);
  void accept_path(int node);

  // S_{c+n}: the state after the last accepted step (pending drafts excluded).
  Eigen::MatrixXd materialize() const { return window_state(S_c_, buf_, n_); }
  // Materialise now and make it the checkpoint (what a flush does); counts as a flush.
  void flush();

  const Eigen::MatrixXd& checkpoint() const { return S_c_; }
  const std::vector<Record>& records() const { return buf_; }  // capacity() slots; the first n() are valid
  int n() const { return n_; }
  int L() const { return L_; }
  int capacity() const { return int(buf_.size()); }
  long long flush_count() const { return flushes_; }
  bool pending() const { return pending_ >= 0; }

 private:
  void require_no_pending(const char* what) const;
  int begin_drafts(int T, const char* what);  // checks T, flushes early where needed; returns n
  // Records of the drafts into slots n..n+T-1 (GDN u's by the chain solve, or the tree's masked one).
  void append_drafts(const std::vector<HeadToken>& drafts, const DraftTree* tree);
  Recurrence r_;
  int L_;
  Eigen::MatrixXd S_c_;
  std::vector<Record> buf_;
  int n_ = 0;
  int pending_ = -1;  // number of drafts awaiting accept(), -1 when none
  DraftTree tree_;    // the pending tree verify's tree (empty when the pending verify is a chain's)
  long long flushes_ = 0;
};

}  // namespace replayssm::ref
