#include "sweep/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/errors.h"
#include "sweep/metrics.h"
#include "sweep/sweep_plan.h"

namespace replayssm::sweep {

namespace {

std::string attr_or(const RunResult& r, const char* key, const std::string& fallback) {
  const auto it = r.attrs.find(key);
  return it == r.attrs.end() ? fallback : it->second;
}

// The worst value so far: a NaN (a diverged bin) is the worst of all and stays.
template <class Worse>
void keep_worst(double value, std::size_t bin, double& worst, std::int64_t& worst_bin, Worse worse) {
  if (std::isnan(worst)) return;
  if (bin == 0 || std::isnan(value) || worse(value, worst)) {
    worst = value;
    worst_bin = static_cast<std::int64_t>(bin);
  }
}

// "512-1023": the 1-based positions of bin b, inclusive.
std::string bin_label(const std::vector<std::int64_t>& bins, std::int64_t b) {
  const auto i = static_cast<std::size_t>(b);
  return std::to_string(bins[i]) + "-" + std::to_string(bins[i + 1] - 1);
}

std::string number_or_dash(const char* fmt, double x) {
  if (!std::isfinite(x)) return std::isnan(x) ? "-" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

template <class... Args>
std::string formatted(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

ModeVerdict judge_run(const RunResult& r, const std::vector<std::int64_t>& bins, const GateThresholds& t) {
  ModeVerdict v;
  v.mode = r.id;
  v.model = attr_or(r, "model", "");
  v.format = attr_or(r, "format", "");
  v.scaling = attr_or(r, "scaling", "");
  v.rounding = attr_or(r, "rounding", "");
  v.policy = attr_or(r, "policy", "");
  v.bytes_per_element = r.bytes_per_element;
  v.capacity_vs_fp32 = r.capacity_vs_fp32;
  v.diverged_at = std::stoll(attr_or(r, "diverged_at", "-1"));
  const bool stored = !r.flip_rate_binned.empty();
  const std::vector<double> flips = stored ? r.flip_rate_binned : binned_flip_rate(r.top1, bins);
  v.first_flip = stored ? r.first_flip : first_flip(r.top1);
  const std::size_t nbins = bins.size() < 2 ? 0 : bins.size() - 1;
  v.pass = nbins > 0;
  for (std::size_t b = 0; b < nbins; ++b) {
    const double kl = r.kl_binned.at(b * kStats), top1 = 1.0 - flips.at(b);
    v.kl_mean_binned.push_back(kl);
    v.top1_binned.push_back(top1);
    // Written so that NaN fails: a diverged bin has no KL to accept.
    if (!(kl <= t.max_kl) || !(top1 >= t.min_top1)) v.pass = false;
    keep_worst(kl, b, v.worst_kl, v.worst_kl_bin, [](double a, double w) { return a > w; });
    keep_worst(top1, b, v.worst_top1, v.worst_top1_bin, [](double a, double w) { return a < w; });
  }
  return v;
}

GateReport judge_results(const h5::File& f, const GateThresholds& t) {
  GateReport g;
  g.results_path = f.path();
  g.thresholds = t;
  const SweepHeader h = read_header(f);
  g.config_hash = h.config_hash;
  g.bins = h.bins;
  if (g.bins.size() < 2 || g.bins.front() != 1)
    f.fail("/bins", "expected edges 1, 2, 4, ..., T + 1 (at least two)");
  for (std::size_t i = 1; i < g.bins.size(); ++i)
    if (g.bins[i] <= g.bins[i - 1]) f.fail("/bins", "edges must increase");
  if (f.has_attr("/", "source") && f.attr_text("/", "source") == "activations")
    f.fail("/runs", "an activation-dump sweep has no KL or top-1 (no model head): nothing to gate");
  if (!f.exists("/runs")) f.fail("/runs", "missing group (no runs to judge)");
  std::vector<std::pair<std::int64_t, ModeVerdict>> judged;
  const std::size_t nbins = g.bins.size() - 1;
  const auto positions = static_cast<std::size_t>(g.bins.back() - 1);
  for (const auto& name : f.list("/runs")) {
    const std::string group = "/runs/" + name;
    const RunResult r = read_run(f, group);
    if (r.kl_binned.size() != nbins * kStats)
      f.fail(group + "/kl_binned", "expected " + std::to_string(nbins) + " rows (one per bin of /bins), got " +
                                       std::to_string(r.kl_binned.size() / kStats));
    if (r.top1.size() != positions)
      f.fail(group + "/top1", "expected " + std::to_string(positions) + " positions (/bins ends at " +
                                  std::to_string(g.bins.back()) + "), got " + std::to_string(r.top1.size()));
    judged.emplace_back(r.index, judge_run(r, g.bins, t));
  }
  if (judged.empty()) f.fail("/runs", "no runs to judge");
  std::stable_sort(judged.begin(), judged.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [index, v] : judged) g.modes.push_back(std::move(v));
  return g;
}

std::vector<std::size_t> required_modes(const GateReport& report, const std::string& require) {
  std::vector<std::size_t> out;
  if (require.empty()) return out;
  if (require == "all") {
    for (std::size_t i = 0; i < report.modes.size(); ++i) out.push_back(i);
    return out;
  }
  for (const auto& item : split_list(require)) {
    if (item.empty()) throw UserError("--require: empty item in '" + require + "'");
    std::size_t i = 0;
    while (i < report.modes.size() && report.modes[i].mode != item) ++i;
    if (i == report.modes.size())
      throw UserError(report.results_path + ": /runs: no run '" + item +
                      "' (--require takes the mode names the gate table prints, or all)");
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  if (out.empty()) throw UserError("--require: empty list");
  return out;
}

std::string format_gate_table(const GateReport& g, const std::vector<std::size_t>& required) {
  int width = 4;
  for (const auto& v : g.modes) width = std::max(width, static_cast<int>(v.mode.size()));
  std::string out = formatted("gate: mean KL <= %.3g nats and top-1 agreement >= %.4g in every position bin of ",
                              g.thresholds.max_kl, g.thresholds.min_top1) +
                    g.results_path + "\n";
  out += formatted("%-*s %7s %6s %9s %-12s %8s %-12s %10s  %s\n", width, "mode", "B/elem", "xFP32", "worst KL",
                   "(positions)", "top1", "(positions)", "first flip", "verdict");
  for (std::size_t i = 0; i < g.modes.size(); ++i) {
    const auto& v = g.modes[i];
    std::string verdict = v.pass ? "PASS" : "FAIL";
    if (v.diverged_at >= 0) verdict += " (diverged at " + std::to_string(v.diverged_at) + ")";
    if (std::find(required.begin(), required.end(), i) != required.end()) verdict += " [required]";
    const std::string top1_bin = v.worst_top1 == 1.0 ? "-" : bin_label(g.bins, v.worst_top1_bin);
    const std::string flip = v.first_flip < 0 ? "none" : std::to_string(v.first_flip);
    out += formatted("%-*s %7s %6s %9s %-12s %8s %-12s %10s  ", width, v.mode.c_str(),
                     number_or_dash("%.3f", v.bytes_per_element).c_str(),
                     number_or_dash("%.2f", v.capacity_vs_fp32).c_str(), number_or_dash("%.2e", v.worst_kl).c_str(),
                     bin_label(g.bins, v.worst_kl_bin).c_str(), number_or_dash("%.4f", v.worst_top1).c_str(),
                     top1_bin.c_str(), flip.c_str()) +
           verdict + "\n";
  }
  return out;
}

void write_gate(h5::File& out, const GateReport& g, const std::string& require, bool required_pass) {
  const std::size_t n = g.modes.size(), nbins = g.bins.size() - 1;
  out.write("/bins", {g.bins.size()}, g.bins.data());
  out.set_attr("/bins", "meaning", "1-based position bin edges: bin i holds positions [bins[i], bins[i+1])");
  std::vector<std::string> mode, model, format, scaling, rounding, policy;
  std::vector<double> bpe, cap, worst_kl, worst_top1, kl_binned, top1_binned;
  std::vector<std::int64_t> worst_kl_bin, worst_top1_bin, flip, diverged;
  std::vector<std::uint8_t> pass;
  for (const auto& v : g.modes) {
    mode.push_back(v.mode);
    model.push_back(v.model);
    format.push_back(v.format);
    scaling.push_back(v.scaling);
    rounding.push_back(v.rounding);
    policy.push_back(v.policy);
    bpe.push_back(v.bytes_per_element);
    cap.push_back(v.capacity_vs_fp32);
    worst_kl.push_back(v.worst_kl);
    worst_top1.push_back(v.worst_top1);
    worst_kl_bin.push_back(v.worst_kl_bin);
    worst_top1_bin.push_back(v.worst_top1_bin);
    flip.push_back(v.first_flip);
    diverged.push_back(v.diverged_at);
    pass.push_back(v.pass ? 1 : 0);
    kl_binned.insert(kl_binned.end(), v.kl_mean_binned.begin(), v.kl_mean_binned.end());
    top1_binned.insert(top1_binned.end(), v.top1_binned.begin(), v.top1_binned.end());
  }
  out.write_strings("/gate/mode", mode);
  out.write_strings("/gate/model", model);
  out.write_strings("/gate/format", format);
  out.write_strings("/gate/scaling", scaling);
  out.write_strings("/gate/rounding", rounding);
  out.write_strings("/gate/policy", policy);
  out.write("/gate/pass", {n}, pass.data());
  out.write("/gate/bytes_per_element", {n}, bpe.data());
  out.write("/gate/capacity_vs_fp32", {n}, cap.data());
  out.write("/gate/worst_bin_kl", {n}, worst_kl.data());
  out.write("/gate/worst_kl_bin", {n}, worst_kl_bin.data());
  out.write("/gate/worst_bin_top1", {n}, worst_top1.data());
  out.write("/gate/worst_top1_bin", {n}, worst_top1_bin.data());
  out.write("/gate/first_flip", {n}, flip.data());
  out.write("/gate/diverged_at", {n}, diverged.data());
  out.write("/gate/kl_binned_mean", {n, nbins}, kl_binned.data());
  out.write("/gate/top1_binned", {n, nbins}, top1_binned.data());
  out.set_attr("/gate", "max_kl", g.thresholds.max_kl);
  out.set_attr("/gate", "min_top1", g.thresholds.min_top1);
  out.set_attr("/gate", "results", g.results_path);
  out.set_attr("/gate", "results_config_hash", g.config_hash);
  out.set_attr("/gate", "require", require.empty() ? "none" : require);
  out.set_attr("/gate", "required_pass", static_cast<std::int64_t>(required_pass ? 1 : 0));
}

}  // namespace replayssm::sweep
