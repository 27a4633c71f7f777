#pragma once
// Tree speculative verification: the draft tree and the masked GDN solve (reference/README.md, "Tree verify").
//
// A draft tree of T nodes is given by parent pointers in topological order: parent[i] < i, parent[i] = -1 means the
// committed state. Node i's state S_(i) is the committed state advanced along its root path p(i) = (p_1, ..., p_d = i)
// (depth d = |p(i)|). For GDN the nodes' u's solve (I + A) U = W with
//   A_ij = beta_i gamma_{j+1:i} (k_j . k_i)   only where j is a proper ancestor of i (else 0),
//   W_i  = beta_i (v_i - gamma_{1:i} S_0 k_i),
// gamma_{j+1:i} the product of the decays of the nodes strictly below j down to i on i's path, gamma_{1:i} that of the
// whole path; the chain is the tree in which every earlier node is an ancestor. Mamba-2 needs no solve (w = v).
// Accepting node n appends the records of p(n), in path order, to the window (a copy of records, never of states).
// ReplayHead::verify_tree / accept_path (tree_replay.cpp) and ConventionalHead::verify_tree / accept_path
// (tree_conventional.cpp, one state per node) are the two formulations; tests/reference holds them together.
#include <Eigen/Core>

#include <string>
#include <vector>

#include "reference/head_record.h"

namespace replayssm::ref {

// The most nodes the CLI and the validation cases accept in one tree (the formulations themselves take any T).
inline constexpr int kMaxTreeNodes = 64;

struct DraftTree {
  std::vector<int> parent;  // parent[i] in -1..i-1; -1 = the committed state

  int size() const { return int(parent.size()); }
  // Throws std::invalid_argument naming the problem: an empty tree, or a parent outside -1..i-1 (which names node i).
  void validate() const;
  // The nodes of the root path of `node`, root first, `node` last; empty for node = -1. Throws for a node out of range.
  std::vector<int> path(int node) const;
  // |path(node)|: 0 for -1, 1 for a child of the committed state.
  int depth(int node) const { return int(path(node).size()); }
  // True when node i's parent is i - 1 for every i (the chain verify's tree).
  bool is_chain() const;

  // A chain of T drafts (T >= 1).
  static DraftTree chain(int T);
  // The full binary tree of depth d >= 1 below the committed state: 2 + 4 + ... + 2^d nodes, level by level.
  static DraftTree binary(int depth);
  // T drafts that are all children of the committed state (T >= 1).
  static DraftTree star(int T);
  // EAGLE / Medusa-style tree from a branching list b_1..b_D (each >= 1): the committed state has b_1 children, every
  // node of depth d - 1 has b_d children; T = b_1 + b_1 b_2 + ... + b_1...b_D, nodes level by level.
  static DraftTree branching(const std::vector<int>& b);
};

// A tree from text: "chain[:T]" (T = 8), "binary[:D]" (D = 3), "star[:T]" (T = 8), or a branching list "4,2,2,1".
// Throws std::invalid_argument naming the bad part; also when the tree has more than max_nodes nodes.
DraftTree tree_from_text(const std::string& text, int max_nodes = kMaxTreeNodes);

// GDN u of every node of a tree after a state S_0, by forward substitution of the masked system above: node by node in
// index order (parents come first), each subtracting its ancestors' terms from the parent up. S0_k[i] = S_0 k_i.
// For a chain it performs gdn_chain_u's operations in gdn_chain_u's order.
std::vector<Eigen::VectorXd> gdn_tree_u(const std::vector<HeadToken>& toks, const DraftTree& tree,
                                        const std::vector<Eigen::VectorXd>& S0_k);

// Node i's output along its path, recurrently from S (the spec): S stepped through path(i), o = S_(i) q_i + skip.
Eigen::VectorXd tree_node_recurrent(Recurrence r, const Eigen::MatrixXd& S, const std::vector<HeadToken>& toks,
                                    const DraftTree& tree, int node, Eigen::MatrixXd* state_out = nullptr);

}  // namespace replayssm::ref
