// `replayssm merge`: combines the shards of one sweep (`sweep --shard i/n`) into the file the unsharded sweep
// would have written (same datasets, bit for bit).
#include <algorithm>
#include <iostream>
#include <set>

#include "cli/command.h"
#include "core/errors.h"
#include "sweep/results.h"

namespace replayssm::cli {
namespace {

void add_options(po::options_description& d) {
  d.add_options()
    ("out", po::value<std::string>()->required(), "merged results file")
    ("inputs", po::value<std::vector<std::string>>()->multitoken()->required(), "shard files (positional)")
    ("allow-partial", po::bool_switch(), "write even if some runs of the plan are missing from the shards");
}

int run(const po::variables_map& vm) {
  const auto inputs = vm["inputs"].as<std::vector<std::string>>();
  const std::string out_path = vm["out"].as<std::string>();
  h5::refuse_output_over_input(out_path, inputs);
  sweep::SweepHeader header;
  std::vector<std::pair<std::int64_t, sweep::RunResult>> runs;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto f = h5::File::open_read(inputs[i]);
    auto h = sweep::read_header(f);
    if (i == 0) {
      header = h;
    } else if (h.config_hash != header.config_hash) {
      f.fail("/config@config_hash", "shard of a different sweep (" + h.config_hash + " vs " + header.config_hash +
                                        " in " + inputs[0] + ")");
    }
    if (!f.exists("/runs")) continue;
    for (const auto& name : f.list("/runs")) {
      auto r = sweep::read_run(f, "/runs/" + name);
      if (!ids.insert(r.id).second) f.fail("/runs/" + name, "run also present in another shard");
      runs.emplace_back(r.index, std::move(r));
    }
  }
  std::vector<std::string> missing;
  for (const auto& id : header.plan)
    if (!ids.count(id)) missing.push_back(id);
  if (!missing.empty() && !vm["allow-partial"].as<bool>())
    throw UserError("merge: " + std::to_string(missing.size()) + " run(s) of the plan missing from the shards, e.g. " +
                    missing.front() + " (use --allow-partial to write anyway)");
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  h5::AtomicOutput out(out_path);
  sweep::write_header(out.file(), header);
  for (const auto& [index, r] : runs) sweep::write_run(out.file(), "/runs/" + r.id, r);
  auto opts = resolved_options(vm);
  h5::write_provenance(out.file(), command_line(), opts, "n/a (merge)");
  out.file().set_attr("/", "shard", "merged");
  out.commit();
  std::cout << "merge: " << runs.size() << " run(s) from " << inputs.size() << " shard(s) -> " << out_path << "\n";
  return kExitOk;
}

const Registrar reg{{"merge", "combine sweep shards (--shard i/n) into one results file", add_options, run,
                     "replayssm merge --out results.h5 results.0.h5 results.1.h5", "inputs"}};

}  // namespace
}  // namespace replayssm::cli
