#pragma once
// The tiny model over a draft tree, as tree speculative verification runs it (reference/tree_verify.h): a committed
// prefix, then T draft nodes given by parent pointers. Every node is one row of the dense parts (projections, norms,
// gates, MLP, head: teacher_force's row-wise operations, runtime/rowwise.h); the causal conv of node i reads the
// inputs of its own root path, preceded by the committed tail; each SSM layer's recurrence runs the whole tree through
// a TreeRecurrence. Accepting a node commits its root path: its rows join the conv tails and the recurrence keeps that
// path's state. A node therefore gets exactly the values teacher forcing gives the sequence prefix + path(i): with the
// FP64 TreeReference, bit for bit (tests/runtime/test_tree_forward.cpp holds them together).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/head_record.h"
#include "runtime/model.h"

namespace replayssm::runtime {

// The SSM recurrence of every layer over draft trees, with the committed state of each layer kept between rounds.
class TreeRecurrence {
 public:
  virtual ~TreeRecurrence() = default;
  virtual std::string name() const = 0;
  // tokens[h][i]: head h's token of node i (ref::gdn_head_token / ref::mamba2_head_token of the node's row). Returns
  // the node outputs o [T][H][V]; nothing is committed.
  virtual std::vector<double> verify(int layer, const std::vector<std::vector<ref::HeadToken>>& tokens,
                                     const std::vector<int>& parents) = 0;
  // Every layer keeps the root path of `node` of its last verify (-1: none).
  virtual void accept_path(int node) = 0;
  // Checkpoints between rounds (no verify pending): every layer's committed state as a byte blob, restored into a
  // recurrence of the same model and mode. The base class throws std::runtime_error (a recurrence without them).
  virtual void save(std::vector<std::uint8_t>& out) const;
  virtual void load(const std::uint8_t* blob, std::size_t size);
};

// The FP64 spec along every root path (ref::recurrent_step from the parent's state, one state per node), starting
// from the zero state: the recurrence teacher_force's ReferenceBackend runs, node by node.
std::unique_ptr<TreeRecurrence> make_reference_tree_recurrence(const ModelConfig& cfg);

class TreeForward {
 public:
  // threads: for the projections, as ForwardOptions::threads (never changes a result).
  TreeForward(const TinyModel& m, TreeRecurrence& recurrence, int threads = 1);
  // Log-probs [T, 256] of the next byte after each node: node i reads the committed bytes, then the tokens of its root
  // path (parents[j] in -1..j-1, -1 = the committed prefix). Throws std::invalid_argument on a bad tree or a token
  // count that does not match it.
  Mat verify(const std::vector<std::uint8_t>& tokens, const std::vector<int>& parents);
  // Commits the root path of `node` of the last verify (-1: nothing); the next verify reads it as prefix.
  void accept_path(int node);
  // Bytes committed so far.
  std::int64_t committed() const { return committed_; }
  // Checkpoints between rounds: the committed count, every layer's conv tail and the recurrence's blob appended to
  // `out`; load() into a TreeForward of the same model and recurrence kind that has not verified yet, and the next
  // rounds give the same bits. std::logic_error with a verify pending; std::invalid_argument on a blob that does not
  // fit the model.
  void save(std::vector<std::uint8_t>& out) const;
  void load(const std::uint8_t* blob, std::size_t size);

 private:
  const TinyModel& m_;
  TreeRecurrence& rec_;
  int threads_;
  std::vector<Mat> tail_;     // per layer: the projected rows of the last conv_kernel - 1 committed bytes
  std::vector<Mat> pending_;  // per layer: the projected rows of the last verify's nodes
  std::vector<int> parents_;  // the last verify's tree (empty: none pending)
  std::int64_t committed_ = 0;
};

}  // namespace replayssm::runtime
