// The store round trip of the mode-aware reference (mode_aware.h): FP64 state -> FP32 -> the format's codec -> FP64.
#include <stdexcept>
#include <vector>

#include "reference/mode_aware.h"

namespace replayssm::ref {

Eigen::MatrixXd store_round_trip(const StoreFn& store, const Eigen::MatrixXd& S, std::uint32_t step) {
  const int V = int(S.rows()), K = int(S.cols());
  if (!store) throw std::invalid_argument("store_round_trip: no store function");
  std::vector<float> x(std::size_t(V) * std::size_t(K)), y(x.size());
  // row-major [V][K], each element rounded to FP32 (nearest) as the emulation's FP32 state would hold it
  for (int r = 0; r < V; ++r)
    for (int c = 0; c < K; ++c) x[std::size_t(r) * std::size_t(K) + std::size_t(c)] = static_cast<float>(S(r, c));
  store(x.data(), step, y.data());
  Eigen::MatrixXd out(V, K);
  for (int r = 0; r < V; ++r)
    for (int c = 0; c < K; ++c) out(r, c) = static_cast<double>(y[std::size_t(r) * std::size_t(K) + std::size_t(c)]);
  return out;
}

}  // namespace replayssm::ref
