#include "reference/replay_head.h"

#include <stdexcept>
#include <string>

namespace replayssm::ref {

ReplayHead::ReplayHead(Recurrence r, int V, int K, int L, int Tmax, const Eigen::MatrixXd* S0) : r_(r), L_(L) {
  if (V <= 0 || K <= 0) throw std::invalid_argument("ReplayHead: V and K must be > 0");
  if (L < 1) throw std::invalid_argument("ReplayHead: L must be >= 1, got " + std::to_string(L));
  if (Tmax < 1) throw std::invalid_argument("ReplayHead: Tmax must be >= 1, got " + std::to_string(Tmax));
  if (S0 && (S0->rows() != V || S0->cols() != K))
    throw std::invalid_argument("ReplayHead: initial state must be V x K");
  S_c_ = S0 ? *S0 : Eigen::MatrixXd::Zero(V, K);
  buf_.resize(std::size_t(L - 1 + Tmax), Record{1.0, Eigen::VectorXd::Zero(V), Eigen::VectorXd::Zero(K)});
}

void ReplayHead::require_no_pending(const char* what) const {
  if (pending()) throw std::logic_error(std::string("ReplayHead::") + what + ": verify() awaits accept()");
}

void ReplayHead::flush() {
  S_c_ = window_state(S_c_, buf_, n_);
  n_ = 0;
  ++flushes_;
}

Eigen::VectorXd ReplayHead::step(const HeadToken& tok) {
  require_no_pending("step");
  if (n_ + 1 > capacity()) flush();  // only after accepting a verify that filled the buffer
  // One pass over S_c for both mat-vecs (GDN needs S_c k_t for u_t, every step needs S_c q_t).
  Eigen::MatrixXd x(tok.k.size(), 2);
  x.col(0) = tok.k;
  x.col(1) = tok.q;
  const Eigen::MatrixXd Sc_x = S_c_ * x;
  Record& rec = buf_[std::size_t(n_)];
  rec.a = tok.a;
  rec.k = tok.k;
  if (r_ == Recurrence::kGdn) {
    const Eigen::VectorXd Sk = window_apply(Sc_x.col(0), buf_, n_, tok.k);  // S_{t-1} k_t
    rec.w = tok.beta * (tok.v - tok.a * Sk);
  } else {
    rec.w = tok.v;
  }
  ++n_;
  Eigen::VectorXd o;
  if (n_ >= L_) {
    flush();
    o = S_c_ * tok.q;
  } else {
    o = window_apply(Sc_x.col(1), buf_, n_, tok.q);
  }
  if (tok.skip.size()) o += tok.skip;
  return o;
}

int ReplayHead::begin_drafts(int T, const char* what) {
  require_no_pending(what);
  if (T > capacity() - (L_ - 1))
    throw std::invalid_argument(std::string("ReplayHead::") + what + ": T = " + std::to_string(T) +
                                " exceeds Tmax = " + std::to_string(capacity() - (L_ - 1)));
  if (n_ + T > capacity()) flush();  // early flush: the drafts would not fit behind the current window
  return n_;
}

void ReplayHead::append_drafts(const std::vector<HeadToken>& drafts, const DraftTree* tree) {
  const int T = int(drafts.size());
  std::vector<Eigen::VectorXd> U;
  if (r_ == Recurrence::kGdn) {
    // S_{c+n} k_i for every draft, then the chain (or the tree's masked) solve for the draft u's.
    std::vector<Eigen::VectorXd> Sn_k(static_cast<std::size_t>(T));
    for (int i = 0; i < T; ++i) {
      const HeadToken& d = drafts[std::size_t(i)];
      Sn_k[std::size_t(i)] = window_apply(S_c_ * d.k, buf_, n_, d.k);
    }
    U = tree ? gdn_tree_u(drafts, *tree, Sn_k) : gdn_chain_u(drafts, Sn_k);
  }
  for (int i = 0; i < T; ++i) {
    Record& rec = buf_[std::size_t(n_ + i)];
    const HeadToken& d = drafts[std::size_t(i)];
    rec.a = d.a;
    rec.k = d.k;
    rec.w = r_ == Recurrence::kGdn ? U[std::size_t(i)] : d.v;
  }
}

std::vector<Eigen::VectorXd> ReplayHead::verify(const std::vector<HeadToken>& drafts) {
  const int T = int(drafts.size());
  begin_drafts(T, "verify");
  append_drafts(drafts, nullptr);
  std::vector<Eigen::VectorXd> out(static_cast<std::size_t>(T));
  for (int i = 0; i < T; ++i) {
    const HeadToken& d = drafts[std::size_t(i)];
    Eigen::VectorXd o = window_apply(S_c_ * d.q, buf_, n_ + i + 1, d.q);
    if (d.skip.size()) o += d.skip;
    out[std::size_t(i)] = o;
  }
  pending_ = T;
  return out;
}

void ReplayHead::accept(int a) {
  if (!pending()) throw std::logic_error("ReplayHead::accept: no verify pending");
  if (tree_.size()) throw std::logic_error("ReplayHead::accept: the pending verify is a tree's (accept_path)");
  if (a < 0 || a > pending_)
    throw std::invalid_argument("ReplayHead::accept: a = " + std::to_string(a) + " outside 0.." +
                                std::to_string(pending_));
  n_ += a;
  pending_ = -1;
}

}  // namespace replayssm::ref
