#include "sweep/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace replayssm::sweep {

PositionMetrics compare_distributions(const std::vector<double>& logp_ref, const std::vector<double>& logp_mode,
                                      const std::vector<std::uint8_t>& targets, int T, int vocab) {
  const auto n = static_cast<std::size_t>(T) * static_cast<std::size_t>(vocab);
  if (logp_ref.size() < n || logp_mode.size() < n || targets.size() < static_cast<std::size_t>(T))
    throw std::invalid_argument("compare_distributions: arrays shorter than T x vocab");
  PositionMetrics m;
  m.kl.resize(static_cast<std::size_t>(T));
  m.nll.resize(static_cast<std::size_t>(T));
  m.top1.resize(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) {
    const double* r = &logp_ref[static_cast<std::size_t>(t) * static_cast<std::size_t>(vocab)];
    const double* p = &logp_mode[static_cast<std::size_t>(t) * static_cast<std::size_t>(vocab)];
    double kl = 0.0;
    int ar = 0, ap = 0;
    for (int i = 0; i < vocab; ++i) {
      kl += std::exp(r[i]) * (r[i] - p[i]);
      if (r[i] > r[ar]) ar = i;
      if (p[i] > p[ap]) ap = i;
    }
    // KL is >= 0; tiny negative values are rounding of two nearly equal distributions.
    m.kl[static_cast<std::size_t>(t)] = std::max(kl, 0.0);
    m.nll[static_cast<std::size_t>(t)] = -p[targets[static_cast<std::size_t>(t)]];
    m.top1[static_cast<std::size_t>(t)] = ar == ap ? 1.0 : 0.0;
  }
  return m;
}

std::vector<std::int64_t> power_of_two_edges(int T) {
  std::vector<std::int64_t> e{1};
  while (e.back() <= T) e.push_back(e.back() * 2);
  e.back() = std::min<std::int64_t>(e.back(), T + 1);
  // T a power of two would leave position T alone in a last bin [T, T+1): fold it into [T/2, T+1) instead.
  if (e.size() >= 4 && e[e.size() - 1] - e[e.size() - 2] == 1) e.erase(e.end() - 2);
  return e;
}

std::vector<double> binned_stats(const std::vector<double>& values, const std::vector<std::int64_t>& edges) {
  std::vector<double> out;
  for (std::size_t b = 0; b + 1 < edges.size(); ++b) {
    std::vector<double> v;
    for (std::int64_t pos = edges[b]; pos < edges[b + 1] && static_cast<std::size_t>(pos) <= values.size(); ++pos)
      v.push_back(values[static_cast<std::size_t>(pos - 1)]);
    if (v.empty()) {
      out.insert(out.end(), kStats, 0.0);
      continue;
    }
    if (std::any_of(v.begin(), v.end(), [](double x) { return !std::isfinite(x); })) {
      out.insert(out.end(), kStats, std::numeric_limits<double>::quiet_NaN());  // a diverged run: no statistics
      continue;
    }
    double sum = 0.0;
    for (double x : v) sum += x;
    std::sort(v.begin(), v.end());
    auto rank = [&](double q) {
      auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
      return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
    };
    out.push_back(sum / static_cast<double>(v.size()));
    out.push_back(rank(0.50));
    out.push_back(rank(0.95));
    out.push_back(v.back());
  }
  return out;
}

std::vector<double> binned_flip_rate(const std::vector<double>& top1, const std::vector<std::int64_t>& edges) {
  std::vector<double> out;
  for (std::size_t b = 0; b + 1 < edges.size(); ++b) {
    double agree = 0.0;
    std::size_t n = 0;
    bool finite = true;
    for (std::int64_t pos = edges[b]; pos < edges[b + 1] && static_cast<std::size_t>(pos) <= top1.size(); ++pos) {
      const double x = top1[static_cast<std::size_t>(pos - 1)];
      finite = finite && std::isfinite(x);
      agree += x;
      ++n;
    }
    if (n == 0)
      out.push_back(0.0);
    else if (!finite)
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    else
      out.push_back(1.0 - agree / static_cast<double>(n));
  }
  return out;
}

std::int64_t first_flip(const std::vector<double>& top1) {
  for (std::size_t t = 0; t < top1.size(); ++t)
    if (top1[t] == 0.0) return static_cast<std::int64_t>(t);
  return -1;
}

double relative_l2(const double* ref, const double* got, std::size_t n) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = got[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (den == 0.0) return std::sqrt(num);
  return std::sqrt(num / den);
}

}  // namespace replayssm::sweep
