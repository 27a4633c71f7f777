#include "cli/sweep_tree.h"

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "core/errors.h"
#include "sweep/metrics.h"

namespace replayssm::cli {

std::optional<TreeSweep> tree_option(const po::variables_map& vm) {
  if (!vm.count("tree")) return std::nullopt;
  TreeSweep t;
  t.text = vm["tree"].as<std::string>();
  try {
    t.shape = ref::tree_from_text(t.text, ref::kMaxTreeNodes);
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("--tree: ") + e.what());
  }
  if (vm.count("activations")) throw UserError("--tree: an activation-dump sweep has no model to draft trees with");
  if (vm.count("shard"))
    throw UserError("--tree: --shard is not supported (merge keeps no branch datasets); run the tree sweep whole");
  if (vm["backend"].as<std::string>() == "cuda")
    throw UserError("--tree: tree rounds run on the emulated backend (--backend auto or emulated)");
  return t;
}

double tree_reference_bytes(const std::optional<TreeSweep>& tree, int tokens) {
  if (!tree) return 0.0;
  const double rounds = double(tokens) / double(tree->shape.depth(tree->shape.size() - 1)) + 1.0;
  return rounds * double(tree->shape.size()) * 256.0 * sizeof(double);
}

void TreeSweep::prepare(const std::vector<std::string>& model_paths, const sweep::TextSlice& slice,
                        const std::vector<std::vector<double>>& logp_chain, bool quiet) {
  for (std::size_t m = 0; m < model_paths.size(); ++m) {
    models.push_back(runtime::TinyModel::load(model_paths[m]));
    rounds.push_back(sweep::plan_tree_rounds(shape, slice, logp_chain[m]));
    if (!quiet)
      std::cerr << "sweep: FP64 tree reference of " << model_paths[m] << " (" << rounds.back().size() << " rounds of "
                << text << ")\n";
    logp_ref.push_back(sweep::tree_reference_logp(models.back(), rounds.back()));
  }
}

sweep::RunResult TreeSweep::evaluate(const sweep::RunSpec& spec, std::size_t m, const sweep::TextSlice& slice,
                                     const std::vector<std::int64_t>& edges, std::size_t run,
                                     const sweep::RunCheckpointing* checkpoints) {
  sweep::TreeRunResult r =
      sweep::evaluate_tree_run(spec, models.at(m), slice, text, rounds.at(m), logp_ref.at(m), edges, checkpoints);
  branches.at(run) = std::move(r.branches);
  return std::move(r.run);
}

void print_tree_table(const std::vector<RunSummary>& runs, const std::vector<sweep::TreeBranches>& branches,
                      const std::vector<std::int64_t>& edges) {
  std::printf("\ntree rounds: mean KL(ref || mode) in nats by position bin, accepted path / rejected branches\n%-52s",
              "run");
  std::vector<std::size_t> cols;
  for (std::size_t b = 0; b + 1 < edges.size(); ++b)
    if (edges[b] >= 16 && (b % 2 == 0 || b + 2 == edges.size())) cols.push_back(b);
  for (auto b : cols) std::printf(" %19s", ("<" + std::to_string(edges[b + 1])).c_str());
  std::printf(" %19s %9s\n", "all", "branches");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const auto& br = branches[i];
    std::printf("%-52s", r.id.c_str());
    for (auto b : cols)
      std::printf(" %9.2e/%9.2e", r.kl_binned[b * sweep::kStats], br.kl_binned[b * sweep::kBranchStats]);
    double branch = 0;
    for (double x : br.kl) branch += x;
    std::printf(" %9.2e/%9.2e %9zu\n", r.kl_mean, br.kl.empty() ? 0.0 : branch / double(br.kl.size()), br.kl.size());
  }
}

}  // namespace replayssm::cli
