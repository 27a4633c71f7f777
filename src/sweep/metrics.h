#pragma once
// Per-position comparison of next-byte distributions and per-position binning by powers of two: the numbers a
// KL-vs-length curve is drawn from.
#include <cstdint>
#include <vector>

namespace replayssm::sweep {

// logp arrays are [T][vocab] natural-log probabilities (log-softmax of the logits), row-major.
struct PositionMetrics {
  std::vector<double> kl;    // [T] KL(p_ref || p_mode) in nats
  std::vector<double> nll;   // [T] -log p_mode(next byte) in nats
  std::vector<double> top1;  // [T] 1 if argmax p_mode == argmax p_ref, else 0
};

// targets[t] is the byte that follows position t (teacher forcing); positions without a target get nll = NaN-free 0
// and are excluded by the caller (we pass T = tokens - 1 in the sweep).
PositionMetrics compare_distributions(const std::vector<double>& logp_ref, const std::vector<double>& logp_mode,
                                      const std::vector<std::uint8_t>& targets, int T, int vocab);

// Bin edges over 1-based positions: [1, 2), [2, 4), [4, 8), ... up to T (the last bin ends at T + 1; a last bin
// that would hold position T alone is merged into the one before: T = 32768 ends with [16384, 32769)).
std::vector<std::int64_t> power_of_two_edges(int T);

// For each bin: mean, p50, p95, max of values[pos - 1] for pos in [edge_i, edge_{i+1}). [bins][4].
// Percentiles by nearest rank on the sorted values (deterministic, no interpolation).
std::vector<double> binned_stats(const std::vector<double>& values, const std::vector<std::int64_t>& edges);
inline constexpr int kStats = 4;  // mean, p50, p95, max

// Token flips: how often the mode's greedy next byte differs from the FP64 reference's. A state format can keep a
// small mean KL and still flip the argmax (close calls move), which is what a user of greedy decoding sees.
// For each bin: 1 - mean(top1[pos - 1]) over pos in [edge_i, edge_{i+1}); NaN when a position of the bin is not
// finite (a diverged run has no agreement to count), 0 for a bin past the end of top1. [bins].
std::vector<double> binned_flip_rate(const std::vector<double>& top1, const std::vector<std::int64_t>& edges);
// The first 0-based position t with top1[t] == 0, or -1 when the mode agrees everywhere. Non-finite positions (after
// a divergence, which diverged_at records) are not counted as flips.
std::int64_t first_flip(const std::vector<double>& top1);

// Relative L2 error ||got - ref|| / ||ref|| of one row (a position's layer output, or a state).
double relative_l2(const double* ref, const double* got, std::size_t n);

}  // namespace replayssm::sweep
