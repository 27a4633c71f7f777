#pragma once
// The mode-aware FP64 reference: the decode recurrence of one head in FP64, with the storage format applied exactly
// where a decode mode stores (and nowhere else). It is the spec the CPU emulation (src/emulation) and the CUDA kernels
// are judged against: they may differ from it only by FP32 arithmetic (and by the rare stored code that lands on the
// neighbouring value because the FP32 and FP64 states straddle a rounding boundary; see
// src/emulation/validation.h, run_mode_aware).
//
// What is stored, and what reads it (reference/README.md lists every rule with the emulation's code that does it):
//   conventional-shared  the state after every step is stored; a step's output reads the state BEFORE it is
//                        re-quantised; the next step starts from the stored (decoded) state. A verify chains its
//                        drafts from the stored state in FP64 without storing between drafts; accept(a > 0) stores the
//                        state after draft a (SR step = the token index of draft a), accept(0) keeps the old store.
//   replay-shared        the checkpoint is the store: the state materialised at a flush (from the decoded checkpoint
//                        and the window) is stored; the flush step's output reads the materialised state before it
//                        is re-quantised; non-flush outputs and GDN's u read the decoded checkpoint.
//   replay-split         the HP checkpoint (here FP64, in the emulation FP32) carries the recurrence and is never
//                        quantised; the stored copy is a read-only LP copy re-encoded from the materialised state at
//                        every flush. Non-flush outputs read the LP copy; the flush step's output reads the
//                        materialised (HP) state. GDN u of a record (appended by a step or a verify draft), by
//                        u-source: hp  from the HP checkpoint + window;
//                                  lp  from the LP copy + window, the flushing step's own record included, and the
//                                      flush materialises the HP state with those LP-based u's;
//                                  recompute  from the LP copy between flushes (outputs), and at a flush (and in
//                                      state()) every u of the window is recomputed in order from the HP checkpoint
//                                      before the state is materialised.
// Flush rule (every replay policy): a step appends its record and flushes when the window then holds >= L records; a
// step or a verify whose records would not fit in the capacity L - 1 + max_drafts first flushes the current window
// (early flush, no output of its own). A verify never flushes otherwise; accept(a) keeps a drafts (n += a).
// A store encodes the FP64 state rounded to FP32 (what the emulation's store would see), through the caller's StoreFn
// (the shared codecs of src/formats), and the reference continues from the decoded values.
#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "reference/head_record.h"
#include "reference/tree_verify.h"

namespace replayssm::ref {

enum class StorePolicy { kConventionalShared, kReplayShared, kReplaySplit };
enum class SplitUSource { kHp, kLp, kRecompute };  // GDN under kReplaySplit: which copy forms u

// The SR step of the store of the initial state (as emu::kInitStep).
inline constexpr std::uint32_t kInitStoreStep = 0xFFFFFFFFu;

// One store round trip: x is the state rounded to FP32, [V][K] row-major; step is the SR step index; writes the decoded
// stored values ([V][K] row-major). The caller binds format, scaling, rounding, seed and the head index.
using StoreFn = std::function<void(const float* x, std::uint32_t step, float* decoded)>;

struct ModeAwareSpec {
  Recurrence recurrence = Recurrence::kGdn;
  StorePolicy policy = StorePolicy::kConventionalShared;
  SplitUSource usource = SplitUSource::kHp;  // read only for GDN + kReplaySplit
  int V = 0, K = 0;
  // The record format: every element of a record vector (k, w, and v kept for recompute) is stored as
  // record_value(x) (the caller binds the format's codec, as for StoreFn); null = exact. The scalars a and beta stay
  // exact. Replay policies only.
  std::function<double(double)> record_value;
  int L = 16;
  int max_drafts = 8;
  int capacity() const { return L - 1 + max_drafts; }
};

class ModeAwareHead {
 public:
  virtual ~ModeAwareHead() = default;
  // One standard step; tok_index is the sequence's token index (the SR step of any store the step makes).
  virtual Eigen::VectorXd step(const HeadToken& tok, std::uint32_t tok_index) = 0;
  // A verify of drafts.size() drafts whose first has token index tok0; nothing is committed until accept().
  virtual std::vector<Eigen::VectorXd> verify(const std::vector<HeadToken>& drafts, std::uint32_t tok0) = 0;
  virtual void accept(int a) = 0;
  // A tree verify (tree_verify.h) of drafts.size() nodes; node i has token index tok0 + depth(i) - 1. Same stores as
  // verify: conventional chains every node from its parent's FP64 state without storing and stores the accepted
  // node's state at accept_path; replay appends the nodes' records (u from the window and the node's ancestors) and
  // accept_path copies the accepted root path's records behind the window. accept_path(-1) keeps nothing.
  virtual std::vector<Eigen::VectorXd> verify_tree(const std::vector<HeadToken>& drafts, const DraftTree& tree,
                                                   std::uint32_t tok0) = 0;
  virtual void accept_path(int node) = 0;
  // The current state: conventional the stored state; replay the recurrence checkpoint (HP under split) + window.
  virtual Eigen::MatrixXd state() const = 0;
  // The stored copy, decoded: conventional the state, replay-shared the checkpoint, replay-split the LP copy.
  virtual const Eigen::MatrixXd& stored() const = 0;
  // Sets element (r, c) of the stored copy (a code flip taken over from the checked backend's store; see
  // emu::run_mode_aware). Under split the HP checkpoint is left alone.
  virtual void set_stored(int r, int c, double value) = 0;
  virtual long stores() const = 0;   // stores made (the initial store excluded)
  virtual long flushes() const = 0;  // replay flushes (early ones included); 0 for conventional
};

// Conventional-shared (mode_aware_conventional.cpp) and the two replay policies (mode_aware_replay.cpp). S0 is the
// initial state (FP64; the emulation's is FP32, pass its values); it is stored once with kInitStoreStep.
std::unique_ptr<ModeAwareHead> make_conventional_stored_head(const ModeAwareSpec& spec, const Eigen::MatrixXd& S0,
                                                             StoreFn store);
std::unique_ptr<ModeAwareHead> make_replay_stored_head(const ModeAwareSpec& spec, const Eigen::MatrixXd& S0,
                                                       StoreFn store);
inline std::unique_ptr<ModeAwareHead> make_mode_aware_head(const ModeAwareSpec& spec, const Eigen::MatrixXd& S0,
                                                           StoreFn store) {
  return spec.policy == StorePolicy::kConventionalShared ? make_conventional_stored_head(spec, S0, std::move(store))
                                                         : make_replay_stored_head(spec, S0, std::move(store));
}

// The store round trip of an FP64 state: rounded to FP32 (row-major), through `store`, back to FP64.
Eigen::MatrixXd store_round_trip(const StoreFn& store, const Eigen::MatrixXd& S, std::uint32_t step);

}  // namespace replayssm::ref
