#pragma once
// What a sweep runs: the cross product of the configured axes, expanded into an ordered list of runs with stable
// ids. The order and ids depend only on the options, so shards, resumes and merges all agree on them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "emulation/decode_api.h"

namespace replayssm::sweep {

struct FormatSpec {
  formats::FormatId format;
  formats::Scaling scaling;
  bool operator==(const FormatSpec& o) const { return format == o.format && scaling == o.scaling; }
};

struct SweepAxes {
  std::vector<FormatSpec> formats;
  std::vector<formats::Rounding> roundings;
  std::vector<emu::Policy> policies;
  std::vector<int> Ls;
  std::vector<emu::USource> usources;  // GDN under replay_split only
  std::vector<emu::Records> records = {emu::Records::fp32};  // bf16: the replay policies only
  std::uint64_t seed = 0;              // stochastic rounding seed
};

struct RunSpec {
  int index = 0;           // position in the full (unsharded) plan
  std::string model;       // model name (file stem)
  std::string model_path;
  emu::Mode mode;
  std::string id;          // e.g. "gdn.replay_split.fp8_e4m3-row.rne.L16.u-hp"
};

struct ModelRef {
  std::string name, path;
  emu::Arch arch;
};

// "fp8_e4m3:row" or "nvfp4" (the format's default scaling). Throws UserError naming the bad item.
FormatSpec parse_format_spec(const std::string& item);
// The items of a comma list, trimmed; an empty item ("a,,b", "a,") stays as "" so that the caller refuses it
// instead of dropping it; a blank list gives no items.
std::vector<std::string> split_list(const std::string& csv);

// The plan: for each model, policies x formats x roundings x L (x u-source for GDN split), invalid format/rounding
// pairs rejected with a UserError; duplicates removed, order deterministic.
std::vector<RunSpec> expand_plan(const std::vector<ModelRef>& models, const SweepAxes& axes);

std::string run_id(const std::string& model, const emu::Mode& m);

// The settings of a run as its group attrs (model, text, format, scaling, rounding, policy, L, u_source, seed, mode,
// diverged_at: -1 when the run stayed finite); shared by the model sweep and the activation-dump sweep.
std::map<std::string, std::string> run_attrs(const RunSpec& spec, const std::string& text_id,
                                             std::int64_t diverged_at);

// "i/n" -> (i, n), 0 <= i < n.
std::pair<int, int> parse_shard(const std::string& s);

// The shard (0..n-1) of every run of the plan, indexed like the plan. The runs are dealt in plan order, n at a
// time: each run of such a round goes to a different shard, namely the one of the shards not yet dealt to in this
// round that so far holds the fewest runs of the run's format (with scaling), then of its policy, model, rounding,
// u-source and L; ties go to the lowest shard. So every shard gets floor(runs/n) or ceil(runs/n) runs, and a
// kind of run that recurs with the period of the shard count is still spread over the shards (a plain index % n
// gives every shard a single format on experiments/kl_vs_length.ini with 4 or 8 shards). Depends only on the plan
// and n, so every shard, a resumed one and merge agree on it; an unsharded sweep (n = 1) is unaffected.
std::vector<int> assign_shards(const std::vector<RunSpec>& plan, int n);

}  // namespace replayssm::sweep
