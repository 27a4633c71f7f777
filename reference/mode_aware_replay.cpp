// Mode-aware reference, replay-shared and replay-split (mode_aware.h): a checkpoint plus a window of records, the
// store written at flushes. Mirrors EmulatedBackend::step / verify / append / replay_output / materialise /
// flush_window (src/emulation/emulated_backend.cpp) in FP64, with the window algebra of head_record.h.
#include <stdexcept>
#include <string>
#include <utility>

#include "reference/mode_aware.h"

namespace replayssm::ref {
namespace {

class ReplayStoredHead final : public ModeAwareHead {
 public:
  ReplayStoredHead(const ModeAwareSpec& spec, const Eigen::MatrixXd& S0, StoreFn store)
      : spec_(spec), store_(std::move(store)) {
    if (spec.policy == StorePolicy::kConventionalShared)
      throw std::invalid_argument("ReplayStoredHead: a replay policy is required");
    if (spec.L < 1 || spec.max_drafts < 1) throw std::invalid_argument("ReplayStoredHead: L, max_drafts must be >= 1");
    if (S0.rows() != spec.V || S0.cols() != spec.K)
      throw std::invalid_argument("ReplayStoredHead: initial state must be V x K");
    if (split()) hp_ = S0;
    lp_ = store_round_trip(store_, S0, kInitStoreStep);
    const std::size_t cap = std::size_t(spec.capacity());
    recs_.assign(cap, Record{1.0, Eigen::VectorXd::Zero(spec.V), Eigen::VectorXd::Zero(spec.K)});
    beta_.assign(cap, 1.0);
    v_.assign(cap, Eigen::VectorXd::Zero(spec.V));
  }

  Eigen::VectorXd step(const HeadToken& tok, std::uint32_t tok_index) override {
    require_no_pending("step");
    if (n_ + 1 > spec_.capacity()) flush(n_, tok_index, nullptr);  // early flush (an accepted verify filled it)
    append(n_, tok);
    const int m = n_ + 1;
    if (m >= spec_.L) {
      Eigen::VectorXd o = flush(m, tok_index, &tok);
      return o;
    }
    n_ = m;
    return output(m, tok);
  }

  std::vector<Eigen::VectorXd> verify(const std::vector<HeadToken>& drafts, std::uint32_t tok0) override {
    require_no_pending("verify");
    const int T = int(drafts.size());
    if (T > spec_.max_drafts) throw std::invalid_argument("ReplayStoredHead::verify: T exceeds max_drafts");
    if (n_ + T > spec_.capacity()) flush(n_, tok0, nullptr);  // early flush; the drafts then start a new window
    std::vector<Eigen::VectorXd> out;
    for (int i = 0; i < T; ++i) {
      append(n_ + i, drafts[std::size_t(i)]);
      out.push_back(output(n_ + i + 1, drafts[std::size_t(i)]));
    }
    pending_ = T;
    return out;
  }

  void accept(int a) override {
    if (pending_ < 0) throw std::logic_error("ReplayStoredHead::accept: no verify pending");
    if (tree_.size()) throw std::logic_error("ReplayStoredHead::accept: a tree verify is pending");
    if (a < 0 || a > pending_) throw std::invalid_argument("ReplayStoredHead::accept: a = " + std::to_string(a));
    n_ += a;  // rejected records stay in their slots and are overwritten by the next append
    pending_ = -1;
  }

  // Node i's record goes to slot n + i; its u reads the window and its ancestors' records, its output the window and
  // its whole root path (gathered in path order).
  std::vector<Eigen::VectorXd> verify_tree(const std::vector<HeadToken>& drafts, const DraftTree& tree,
                                           std::uint32_t tok0) override {
    require_no_pending("verify_tree");
    tree.validate();
    const int T = tree.size();
    if (int(drafts.size()) != T || T > spec_.max_drafts)
      throw std::invalid_argument("ReplayStoredHead::verify_tree: T must match the tree and be <= max_drafts");
    if (n_ + T > spec_.capacity()) flush(n_, tok0, nullptr);  // early flush, as verify
    std::vector<Eigen::VectorXd> out;
    std::vector<Record> path_recs;
    for (int i = 0; i < T; ++i) {
      const HeadToken& t = drafts[std::size_t(i)];
      const std::size_t slot = std::size_t(n_ + i);
      recs_[slot].a = t.a;
      recs_[slot].k = rec(t.k);
      beta_[slot] = t.beta;
      v_[slot] = rec(t.v);
      path_recs.assign(recs_.begin(), recs_.begin() + n_);
      for (int j : tree.path(i)) path_recs.push_back(recs_[std::size_t(n_ + j)]);
      const int m = int(path_recs.size());
      if (gdn()) {
        const Eigen::MatrixXd& S = split() && spec_.usource == SplitUSource::kHp ? hp_ : lp_;
        recs_[slot].w = rec(gdn_u(S, path_recs, m - 1, t.beta, t.v));
      } else {
        recs_[slot].w = rec(t.v);
      }
      path_recs.back().w = recs_[slot].w;
      Eigen::VectorXd o = window_apply(lp_ * t.q, path_recs, m, t.q);
      if (t.skip.size()) o += t.skip;
      out.push_back(o);
    }
    pending_ = T;
    tree_ = tree;
    return out;
  }

  void accept_path(int node) override {
    if (pending_ < 0 || !tree_.size()) throw std::logic_error("ReplayStoredHead::accept_path: no tree verify");
    const std::vector<int> p = tree_.path(node);  // throws for a node out of range
    for (std::size_t d = 0; d < p.size(); ++d) {
      const std::size_t from = std::size_t(n_ + p[d]), to = std::size_t(n_) + d;
      recs_[to] = recs_[from];
      beta_[to] = beta_[from];
      v_[to] = v_[from];
    }
    n_ += int(p.size());
    pending_ = -1;
    tree_ = DraftTree{};
  }

  // What a flush now would write (recompute: on a copy of the records, later outputs are unchanged).
  Eigen::MatrixXd state() const override {
    std::vector<Record> recs = recs_;
    return materialise(n_, recs);
  }
  const Eigen::MatrixXd& stored() const override { return lp_; }
  void set_stored(int r, int c, double value) override { lp_(r, c) = value; }
  long stores() const override { return stores_; }
  long flushes() const override { return flushes_; }

 private:
  bool split() const { return spec_.policy == StorePolicy::kReplaySplit; }
  bool gdn() const { return spec_.recurrence == Recurrence::kGdn; }
  bool recompute() const { return gdn() && split() && spec_.usource == SplitUSource::kRecompute; }
  // The checkpoint that carries the recurrence: HP under split, the (decoded) store under shared.
  const Eigen::MatrixXd& rec_ckpt() const { return split() ? hp_ : lp_; }

  void require_no_pending(const char* what) const {
    if (pending_ >= 0) throw std::logic_error(std::string("ReplayStoredHead::") + what + ": accept() first");
  }

  // A record vector as the buffer holds it (spec_.record_value per element; exact without one).
  Eigen::VectorXd rec(const Eigen::VectorXd& x) const {
    if (!spec_.record_value) return x;
    Eigen::VectorXd y(x.size());
    for (Eigen::Index e = 0; e < x.size(); ++e) y[e] = spec_.record_value(x[e]);
    return y;
  }

  // u_i = beta_i (v_i - a_i S_{c+i} k_i), S_{c+i} k_i from checkpoint S and records 0..i-1 of recs (re-associated).
  Eigen::VectorXd gdn_u(const Eigen::MatrixXd& S, const std::vector<Record>& recs, int i, double beta,
                        const Eigen::VectorXd& v) const {
    const Record& r = recs[std::size_t(i)];
    const Eigen::VectorXd Sk = window_apply(S * r.k, recs, i, r.k);
    return beta * (v - r.a * Sk);
  }

  // Record i from token t. GDN's u: shared -> the store; split -> HP (u=hp) or the LP copy (u=lp, and u=recompute
  // between flushes).
  void append(int i, const HeadToken& t) {
    Record& r = recs_[std::size_t(i)];
    r.a = t.a;
    r.k = rec(t.k);
    beta_[std::size_t(i)] = t.beta;
    v_[std::size_t(i)] = rec(t.v);
    if (!gdn()) {
      r.w = rec(t.v);
      return;
    }
    const Eigen::MatrixXd& S = split() && spec_.usource == SplitUSource::kHp ? hp_ : lp_;
    r.w = rec(gdn_u(S, recs_, i, t.beta, t.v));
  }

  // Non-flush output over the first m records, from the stored copy (shared: the checkpoint; split: the LP copy).
  Eigen::VectorXd output(int m, const HeadToken& t) const {
    Eigen::VectorXd o = window_apply(lp_ * t.q, recs_, m, t.q);
    if (t.skip.size()) o += t.skip;
    return o;
  }

  // S_{c+m} from the recurrence checkpoint and the first m records of recs (recompute: every u re-derived from HP
  // first, in order, each from the re-derived u's before it).
  Eigen::MatrixXd materialise(int m, std::vector<Record>& recs) const {
    const Eigen::MatrixXd& S = rec_ckpt();
    if (recompute())
      for (int i = 0; i < m; ++i)
        recs[std::size_t(i)].w = rec(gdn_u(S, recs, i, beta_[std::size_t(i)], v_[std::size_t(i)]));
    return window_state(S, recs, m);
  }

  // Materialise m records, take the output of token t (if any) from that state (before it is stored), write the
  // checkpoint (split: HP = the state, LP = its store; shared: the store), clear the window.
  Eigen::VectorXd flush(int m, std::uint32_t tok_index, const HeadToken* t) {
    const Eigen::MatrixXd S = materialise(m, recs_);
    Eigen::VectorXd o;
    if (t) {
      o = S * t->q;
      if (t->skip.size()) o += t->skip;
    }
    if (split()) hp_ = S;
    lp_ = store_round_trip(store_, S, tok_index);
    ++stores_;
    ++flushes_;
    n_ = 0;
    return o;
  }

  ModeAwareSpec spec_;
  StoreFn store_;
  Eigen::MatrixXd hp_;  // split: the HP checkpoint (FP64 here)
  Eigen::MatrixXd lp_;  // the stored copy, decoded: shared's checkpoint, split's LP copy
  std::vector<Record> recs_;  // capacity() slots; the first n_ are the window
  std::vector<double> beta_;            // per record (recompute re-derives u from beta and v)
  std::vector<Eigen::VectorXd> v_;
  int n_ = 0;
  int pending_ = -1;
  DraftTree tree_;  // the pending tree verify's tree (empty otherwise)
  long stores_ = 0, flushes_ = 0;
};

}  // namespace

std::unique_ptr<ModeAwareHead> make_replay_stored_head(const ModeAwareSpec& spec, const Eigen::MatrixXd& S0,
                                                       StoreFn store) {
  return std::make_unique<ReplayStoredHead>(spec, S0, std::move(store));
}

}  // namespace replayssm::ref
