#pragma once
// The `sweep --tree SHAPE` part of `replayssm sweep` (sweep/tree_sweep.h): the option's checks, the per-model rounds
// and FP64 tree reference, the runs' branch results, and the terminal table of path vs branch KL.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/sweep_table.h"
#include "runtime/model.h"
#include "sweep/tree_sweep.h"

namespace replayssm::cli {

struct TreeSweep {
  std::string text;  // --tree as given
  ref::DraftTree shape;
  std::vector<runtime::TinyModel> models;                     // per sweep model, in its order
  std::vector<std::vector<sweep::TreeRound>> rounds;          // per model
  std::vector<std::vector<std::vector<double>>> logp_ref;     // per model, per round: [T][256]
  std::vector<sweep::TreeBranches> branches;                  // per run of this shard

  // The tree rounds and FP64 tree reference of every model (logp_chain[m]: its chain reference log-probs).
  void prepare(const std::vector<std::string>& model_paths, const sweep::TextSlice& slice,
               const std::vector<std::vector<double>>& logp_chain, bool quiet);
  // Run `run` of the shard (index into branches) on model m.
  sweep::RunResult evaluate(const sweep::RunSpec& spec, std::size_t m, const sweep::TextSlice& slice,
                            const std::vector<std::int64_t>& edges, std::size_t run,
                            const sweep::RunCheckpointing* checkpoints);
};

// The sweep's --tree, or none. UserError (exit 2) naming --tree for a bad shape (more than ref::kMaxTreeNodes nodes
// included) and for what does not combine with it: --activations, --shard (merge keeps no branch datasets), --backend
// cuda (tree rounds keep every layer's state at once, one emulated backend per layer).
std::optional<TreeSweep> tree_option(const po::variables_map& vm);

// Bytes the FP64 tree reference keeps per model: every round's [T][256] log-probs.
double tree_reference_bytes(const std::optional<TreeSweep>& tree, int tokens);

// Mean KL of the accepted path and of the rejected branches per position bin.
void print_tree_table(const std::vector<RunSummary>& runs, const std::vector<sweep::TreeBranches>& branches,
                      const std::vector<std::int64_t>& edges);

}  // namespace replayssm::cli
