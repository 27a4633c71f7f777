#pragma once
// Single-head test helpers shared by the speculative verify tests (chain and tree): per-architecture traits over a
// K x V head (random pool of inputs, its head tokens, the recurrent spec) and flattening of states and outputs.
#include <Eigen/Core>

#include <cstdint>
#include <vector>

#include "ref_test_util.h"
#include "reference/reference.h"

namespace replayssm::ref::test {

template <int K, int V>
struct GdnHeads {
  using In = GdnInputs;
  static constexpr Recurrence rec_kind = Recurrence::kGdn;
  static constexpr const char* name = "gdn";
  static In pool(std::uint64_t seed, int T, DecayRange d) { return random_gdn(seed, T, 1, 1, K, V, d); }
  static HeadToken token(const In& in, int t) { return gdn_head_token(in, t, 0); }
  static LayerOutputs rec(const In& in, const std::vector<double>* s) { return gdn_recurrent(in, s); }
};

template <int K, int V>
struct Mamba2Heads {
  using In = Mamba2Inputs;
  static constexpr Recurrence rec_kind = Recurrence::kMamba2;
  static constexpr const char* name = "mamba2";
  static In pool(std::uint64_t seed, int T, DecayRange d) { return random_mamba2(seed, T, 1, 1, V, K, d); }
  static HeadToken token(const In& in, int t) { return mamba2_head_token(in, t, 0); }
  static LayerOutputs rec(const In& in, const std::vector<double>* s) { return mamba2_recurrent(in, s); }
};

inline std::vector<double> flat(const Eigen::MatrixXd& S) {
  std::vector<double> f(std::size_t(S.size()));
  put_head_state(f, 0, S);
  return f;
}

inline void append(std::vector<double>& dst, const Eigen::VectorXd& o) {
  dst.insert(dst.end(), o.data(), o.data() + o.size());
}

}  // namespace replayssm::ref::test
