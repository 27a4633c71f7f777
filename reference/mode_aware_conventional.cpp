// Mode-aware reference, conventional-shared (mode_aware.h): the state is the store, re-quantised after every step.
// Mirrors EmulatedBackend::conv_chain / accept (src/emulation/emulated_backend.cpp) in FP64.
#include <stdexcept>
#include <string>
#include <utility>

#include "reference/mode_aware.h"

namespace replayssm::ref {
namespace {

class ConventionalStoredHead final : public ModeAwareHead {
 public:
  ConventionalStoredHead(const ModeAwareSpec& spec, const Eigen::MatrixXd& S0, StoreFn store)
      : spec_(spec), store_(std::move(store)) {
    if (S0.rows() != spec.V || S0.cols() != spec.K)
      throw std::invalid_argument("ConventionalStoredHead: initial state must be V x K");
    S_ = store_round_trip(store_, S0, kInitStoreStep);
  }

  // The step's output reads the updated state before it is re-quantised; then the state is stored.
  Eigen::VectorXd step(const HeadToken& tok, std::uint32_t tok_index) override {
    require_no_pending("step");
    Eigen::MatrixXd S = S_;
    Eigen::VectorXd o = recurrent_step(spec_.recurrence, S, tok);
    S_ = store_round_trip(store_, S, tok_index);
    ++stores_;
    return o;
  }

  // Drafts chain from the stored state without re-quantising between drafts (the emulation keeps its FP32 chain and
  // quantises each draft's state only into a snapshot); the snapshot of draft i is stored at accept (same values as
  // storing it now: the store is a function of the state, the step, the head and -- for a stateful format, int8_ef --
  // the committed store it replaces, which no draft changes).
  std::vector<Eigen::VectorXd> verify(const std::vector<HeadToken>& drafts, std::uint32_t tok0) override {
    require_no_pending("verify");
    std::vector<Eigen::VectorXd> out;
    Eigen::MatrixXd S = S_;
    snapshots_.clear();
    for (const HeadToken& t : drafts) {
      out.push_back(recurrent_step(spec_.recurrence, S, t));
      snapshots_.push_back(S);
    }
    tok0_ = tok0;
    pending_ = int(drafts.size());
    return out;
  }

  void accept(int a) override {
    if (pending_ < 0) throw std::logic_error("ConventionalStoredHead::accept: no verify pending");
    if (tree_.size()) throw std::logic_error("ConventionalStoredHead::accept: a tree verify is pending");
    if (a < 0 || a > pending_) throw std::invalid_argument("ConventionalStoredHead::accept: a = " + std::to_string(a));
    keep(a - 1, std::uint32_t(a - 1));
  }

  // Node i's state is its parent's (the stored state for a root child) stepped by draft i, in FP64, never stored
  // between nodes; the accepted node's state is stored at accept_path with its token index as the SR step.
  std::vector<Eigen::VectorXd> verify_tree(const std::vector<HeadToken>& drafts, const DraftTree& tree,
                                           std::uint32_t tok0) override {
    require_no_pending("verify_tree");
    tree.validate();
    if (int(drafts.size()) != tree.size()) throw std::invalid_argument("ConventionalStoredHead::verify_tree: T");
    std::vector<Eigen::VectorXd> out;
    snapshots_.clear();
    for (int i = 0; i < tree.size(); ++i) {
      const int p = tree.parent[std::size_t(i)];
      Eigen::MatrixXd S = p < 0 ? S_ : snapshots_[std::size_t(p)];
      out.push_back(recurrent_step(spec_.recurrence, S, drafts[std::size_t(i)]));
      snapshots_.push_back(std::move(S));
    }
    tok0_ = tok0;
    pending_ = tree.size();
    tree_ = tree;
    return out;
  }

  void accept_path(int node) override {
    if (pending_ < 0 || !tree_.size()) throw std::logic_error("ConventionalStoredHead::accept_path: no tree verify");
    const int depth = tree_.depth(node);  // throws for a node out of range
    tree_ = DraftTree{};
    keep(node, std::uint32_t(depth - 1));
  }

  Eigen::MatrixXd state() const override { return S_; }
  const Eigen::MatrixXd& stored() const override { return S_; }
  void set_stored(int r, int c, double value) override { S_(r, c) = value; }
  long stores() const override { return stores_; }
  long flushes() const override { return 0; }

 private:
  // Stores snapshot `slot` (none for -1) with SR step tok0 + offset and ends the pending verify.
  void keep(int slot, std::uint32_t offset) {
    if (slot >= 0) {
      S_ = store_round_trip(store_, snapshots_[std::size_t(slot)], tok0_ + offset);
      ++stores_;
    }
    snapshots_.clear();
    pending_ = -1;
  }

  void require_no_pending(const char* what) const {
    if (pending_ >= 0) throw std::logic_error(std::string("ConventionalStoredHead::") + what + ": accept() first");
  }
  ModeAwareSpec spec_;
  StoreFn store_;
  Eigen::MatrixXd S_;  // the stored state, decoded
  std::vector<Eigen::MatrixXd> snapshots_;  // per draft (chain) or per node (tree)
  DraftTree tree_;                          // the pending tree verify's tree (empty otherwise)
  std::uint32_t tok0_ = 0;
  int pending_ = -1;
  long stores_ = 0;
};

}  // namespace

std::unique_ptr<ModeAwareHead> make_conventional_stored_head(const ModeAwareSpec& spec, const Eigen::MatrixXd& S0,
                                                             StoreFn store) {
  return std::make_unique<ConventionalStoredHead>(spec, S0, std::move(store));
}

}  // namespace replayssm::ref
