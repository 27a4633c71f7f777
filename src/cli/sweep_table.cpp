#include "cli/sweep_table.h"

#include <cmath>
#include <cstdio>

#include "sweep/metrics.h"

namespace replayssm::cli {
namespace {

std::vector<std::size_t> table_bins(const std::vector<std::int64_t>& edges) {
  // Every other bin from position 16 on, and the last: compact enough for a terminal.
  std::vector<std::size_t> cols;
  for (std::size_t b = 0; b + 1 < edges.size(); ++b)
    if (edges[b] >= 16 && (b % 2 == 0 || b + 2 == edges.size())) cols.push_back(b);
  return cols;
}

}  // namespace

RunSummary summarize(const sweep::RunResult& r) {
  RunSummary s;
  s.id = r.id;
  s.kl_binned = r.kl_binned;
  s.flip_rate_binned = r.flip_rate_binned;
  double kl = 0, top = 0, sd = 0;
  for (double x : r.kl) kl += x;
  for (double x : r.top1) top += x;
  for (double x : r.state_drift) sd += x;
  const auto n = static_cast<double>(r.kl.size());
  s.kl_mean = kl / n;
  s.top1_mean = top / n;
  // no state compared (a tree run, or fewer positions than L): NaN, printed as n/a
  s.state_drift_mean = r.state_drift.empty() ? std::nan("") : sd / static_cast<double>(r.state_drift.size());
  const auto div = r.attrs.find("diverged_at");
  if (div != r.attrs.end()) s.diverged_at = div->second;
  s.bytes_per_element = r.bytes_per_element;
  s.capacity_vs_fp32 = r.capacity_vs_fp32;
  s.first_flip = r.first_flip;
  return s;
}

void print_table(const std::vector<RunSummary>& runs, const std::vector<std::int64_t>& edges) {
  const auto cols = table_bins(edges);
  std::printf("\nmean KL(ref || mode) in nats by position bin\n%-52s", "run");
  for (auto b : cols) std::printf(" %9s", ("<" + std::to_string(edges[b + 1])).c_str());
  std::printf(" %9s %7s %9s\n", "all", "top1", "S drift");
  for (const auto& r : runs) {
    std::printf("%-52s", r.id.c_str());
    for (auto b : cols) std::printf(" %9.2e", r.kl_binned[b * sweep::kStats]);
    std::printf(" %9.2e %7.4f", r.kl_mean, r.top1_mean);
    if (std::isnan(r.state_drift_mean))
      std::printf(" %9s", "n/a");
    else
      std::printf(" %9.2e", r.state_drift_mean);
    if (!r.diverged_at.empty() && r.diverged_at != "-1") std::printf("  diverged at position %s", r.diverged_at.c_str());
    std::printf("\n");
  }
  // Token flips and what the format costs: a mode that keeps KL small can still change the greedy byte.
  std::printf("\ntoken-flip rate (1 - top-1 agreement) by position bin; bytes per state element (scales included)"
              " and states per FP32 state's memory\n%-52s %7s %6s", "run", "B/elem", "xFP32");
  for (auto b : cols) std::printf(" %8s", ("<" + std::to_string(edges[b + 1])).c_str());
  std::printf(" %10s\n", "first flip");
  for (const auto& r : runs) {
    std::printf("%-52s %7.3f %6.2f", r.id.c_str(), r.bytes_per_element, r.capacity_vs_fp32);
    for (auto b : cols) std::printf(" %8.4f", r.flip_rate_binned[b]);
    if (r.first_flip < 0)
      std::printf(" %10s\n", "none");
    else
      std::printf(" %10lld\n", static_cast<long long>(r.first_flip));
  }
}

}  // namespace replayssm::cli
