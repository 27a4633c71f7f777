#include "sweep/sweep_plan.h"

#include <algorithm>
#include <array>
#include <set>
#include <sstream>

#include "core/errors.h"

namespace replayssm::sweep {

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  if (csv.find_first_not_of(" \t") == std::string::npos) return out;
  for (std::size_t start = 0;;) {
    const auto comma = csv.find(',', start);
    const std::string item = csv.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : item.substr(b, e - b + 1));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

FormatSpec parse_format_spec(const std::string& item) {
  const auto colon = item.find(':');
  const std::string fname = item.substr(0, colon);
  FormatSpec spec{};
  try {
    spec.format = formats::parse_format(fname);
    spec.scaling = colon == std::string::npos ? formats::default_scaling(spec.format)
                                              : formats::parse_scaling(item.substr(colon + 1));
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("--formats: ") + e.what());
  }
  if (!formats::scaling_valid(spec.format, spec.scaling))
    throw UserError("--formats: '" + item + "': scaling " + formats::scaling_name(spec.scaling) +
                    " is not valid for " + formats::format_name(spec.format));
  return spec;
}

std::string run_id(const std::string& model, const emu::Mode& m) {
  std::string id = model + "." + emu::policy_name(m.policy) + "." + formats::format_name(m.format) + "-" +
                   formats::scaling_name(m.scaling) + "." + formats::rounding_name(m.rounding) + ".L" +
                   std::to_string(m.L);
  if (m.recompute() || (m.arch == emu::Arch::gdn && m.split())) id += std::string(".u-") + emu::usource_name(m.usource);
  if (m.bf16_records()) id += ".rec-bf16";
  return id;
}

std::map<std::string, std::string> run_attrs(const RunSpec& spec, const std::string& text_id,
                                             std::int64_t diverged_at) {
  const emu::Mode& md = spec.mode;
  return {{"model", spec.model},
          {"text", text_id},
          {"format", formats::format_name(md.format)},
          {"scaling", formats::scaling_name(md.scaling)},
          {"rounding", formats::rounding_name(md.rounding)},
          {"policy", emu::policy_name(md.policy)},
          {"L", std::to_string(md.L)},
          {"u_source", md.arch == emu::Arch::gdn && md.split() ? emu::usource_name(md.usource) : "n/a"},
          {"records", emu::records_name(md.records)},
          {"seed", std::to_string(md.seed)},
          {"mode", md.name()},
          {"diverged_at", std::to_string(diverged_at)}};
}

std::vector<RunSpec> expand_plan(const std::vector<ModelRef>& models, const SweepAxes& axes) {
  std::vector<RunSpec> plan;
  std::set<std::string> seen;
  for (const auto& model : models)
    for (auto policy : axes.policies)
      for (const auto& fs : axes.formats)
        for (auto rounding : axes.roundings) {
          if (!formats::rounding_valid(fs.format, rounding)) continue;  // fp32 has nothing to round
          for (int L : axes.Ls) {
            const bool gdn_split = model.arch == emu::Arch::gdn && policy == emu::Policy::replay_split;
            const std::vector<emu::USource> us = gdn_split ? axes.usources : std::vector<emu::USource>{emu::USource::hp};
            for (auto u : us)
              for (auto rec : axes.records) {
                if (rec == emu::Records::bf16 && policy == emu::Policy::conventional_shared) continue;  // no records
                RunSpec r;
                r.model = model.name;
                r.model_path = model.path;
                r.mode.arch = model.arch;
                r.mode.policy = policy;
                r.mode.usource = u;
                r.mode.format = fs.format;
                r.mode.scaling = fs.scaling;
                r.mode.rounding = rounding;
                r.mode.seed = axes.seed;
                r.mode.records = rec;
                r.mode.L = L;
                r.mode.max_drafts = 1;  // teacher forcing decodes one token per step
                r.id = run_id(model.name, r.mode);
                if (!seen.insert(r.id).second) continue;
                r.index = static_cast<int>(plan.size());
                plan.push_back(r);
              }
          }
        }
  return plan;
}

std::vector<int> assign_shards(const std::vector<RunSpec>& plan, int n) {
  std::vector<int> shard(plan.size(), 0);
  if (n <= 1) return shard;
  // The axes in the order of their weight in the choice; a run's value on each axis as one comparable key.
  constexpr std::size_t kAxes = 6;
  auto keys = [](const RunSpec& r) {
    const emu::Mode& m = r.mode;
    return std::array<std::string, kAxes>{
        std::string(formats::format_name(m.format)) + ":" + formats::scaling_name(m.scaling),
        emu::policy_name(m.policy), r.model, formats::rounding_name(m.rounding), emu::usource_name(m.usource),
        std::to_string(m.L)};
  };
  // held[s][a][value]: runs of shard s whose axis a has that value.
  std::vector<std::array<std::map<std::string, int>, kAxes>> held(static_cast<std::size_t>(n));
  for (std::size_t start = 0; start < plan.size(); start += static_cast<std::size_t>(n)) {
    std::vector<char> dealt(static_cast<std::size_t>(n), 0);
    const std::size_t end = std::min(plan.size(), start + static_cast<std::size_t>(n));
    for (std::size_t k = start; k < end; ++k) {
      const auto key = keys(plan[k]);
      auto load = [&](std::size_t s) {
        std::array<int, kAxes> c{};
        for (std::size_t a = 0; a < kAxes; ++a) {
          const auto it = held[s][a].find(key[a]);
          c[a] = it == held[s][a].end() ? 0 : it->second;
        }
        return c;
      };
      std::size_t best = 0;
      bool found = false;
      std::array<int, kAxes> best_load{};
      for (std::size_t s = 0; s < static_cast<std::size_t>(n); ++s) {
        if (dealt[s]) continue;
        const auto l = load(s);
        if (!found || l < best_load) {
          best = s;
          best_load = l;
          found = true;
        }
      }
      dealt[best] = 1;
      shard[k] = static_cast<int>(best);
      for (std::size_t a = 0; a < kAxes; ++a) ++held[best][a][key[a]];
    }
  }
  return shard;
}

std::pair<int, int> parse_shard(const std::string& s) {
  const auto slash = s.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t p1 = 0, p2 = 0;
    const int i = std::stoi(s.substr(0, slash), &p1), n = std::stoi(s.substr(slash + 1), &p2);
    if (p1 != slash || p2 != s.size() - slash - 1 || n < 1 || i < 0 || i >= n) throw std::invalid_argument("range");
    return {i, n};
  } catch (const std::exception&) {
    throw UserError("--shard '" + s + "': expected i/n with 0 <= i < n");
  }
}

}  // namespace replayssm::sweep
