#pragma once
// Teacher-forced tree verification (`replayssm sweep --tree SHAPE`; math in reference/README.md, "Tree sweep"). The
// slice is covered in rounds: a round drafts a tree of the shape after the committed prefix, in which child 0 of every
// on-path node is the true next byte and the other children are the FP64 model's runner-up bytes; the whole model runs
// on the tree (runtime/tree_forward.h), once in FP64 and once per mode with each SSM layer's recurrence in a decode
// backend's verify_tree; accept_path of the deepest on-path node commits the true bytes. The accepted path gives a
// KL per text position (comparable with the chain sweep's); the rejected branches give KL binned by position.
#include <cstdint>
#include <string>
#include <vector>

#include "core/h5.h"
#include "emulation/decode_api.h"
#include "reference/tree_verify.h"
#include "runtime/model.h"
#include "sweep/results.h"
#include "sweep/run_checkpoint.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_runner.h"

namespace replayssm::sweep {

// One round: the shape's nodes (cut to the positions left in the slice), their bytes, and the path to accept.
struct TreeRound {
  std::int64_t start = 0;            // committed positions before the round; the on-path node of depth d is position
                                     // start + d - 1 (0-based) and predicts byte start + d
  std::vector<int> parents;          // parent pointers, -1 = the committed prefix
  std::vector<std::uint8_t> tokens;  // the byte each node feeds the model
  std::vector<int> depth;            // 1 for a child of the prefix
  std::vector<char> on_path;         // 1 for the nodes of the true text
  int accept = -1;                   // the deepest on-path node: its root path is committed
};

// The rounds that cover text (tokens positions). logp_ref: the FP64 chain log-probs [tokens][256] of the text, which
// rank the runner-up bytes: every child c >= 1 of a node of depth d - 1 feeds the c-th most likely byte other than the
// true byte at position start + d - 2 (the on-path node of that depth; for d = 1 the last committed position). The
// first byte has no distribution to rank alternatives by, so the first round verifies it alone.
std::vector<TreeRound> plan_tree_rounds(const ref::DraftTree& shape, const TextSlice& text,
                                        const std::vector<double>& logp_ref);

// The FP64 model's log-probs [T][256] of every round's nodes (runtime::TreeForward with the FP64 tree recurrence).
std::vector<std::vector<double>> tree_reference_logp(const runtime::TinyModel& model,
                                                     const std::vector<TreeRound>& rounds);

// The rejected branches of a run: one entry per off-path node, position = that of the on-path node of its depth (the
// same context length), top1 = whether the mode's argmax is the FP64 model's.
struct TreeBranches {
  std::string shape;  // the --tree text
  int nodes = 0, depth = 0;
  std::int64_t rounds = 0;
  std::vector<std::int64_t> position;  // [N] 0-based
  std::vector<double> kl, top1;        // [N]
  std::vector<double> kl_binned;       // [bins][2]: mean, max over the branches in the position bin (0 when none)
  std::vector<double> flip_rate_binned;  // [bins]: 1 - mean top1 (0 when none)
};
inline constexpr int kBranchStats = 2;  // mean, max

struct TreeRunResult {
  RunResult run;  // kl, nll, top1 [tokens] of the accepted path; no drift (layers = 0)
  TreeBranches branches;
};

// One run over all rounds. A mode whose outputs stop being finite is a result: the round where that happens and every
// later position are NaN, diverged_at is that round's first position. Deterministic.
// checkpoints (null: none): as evaluate_run's, written between rounds once `every` positions have been committed since
// the last one; a resumed run gives the same bits as an uninterrupted one.
TreeRunResult evaluate_tree_run(const RunSpec& spec, const runtime::TinyModel& model, const TextSlice& text,
                                const std::string& shape_text, const std::vector<TreeRound>& rounds,
                                const std::vector<std::vector<double>>& logp_ref_tree,
                                const std::vector<std::int64_t>& edges, const RunCheckpointing* checkpoints = nullptr);

// The tree datasets and attrs of a run group (datasets/README.md, "Sweep results"), beside write_run's.
void write_tree_branches(h5::File& f, const std::string& group, const TreeBranches& b);
TreeBranches read_tree_branches(const h5::File& f, const std::string& group);

}  // namespace replayssm::sweep
