#pragma once
// Internal: the per-head loops shared by the GDN and Mamba-2 layer functions. The recurrence-specific parts
// enter as a token function (how step t of head h looks) and, for the chunked form, a chunk u-solver.
#include <Eigen/Core>

#include <functional>
#include <vector>

#include "reference/head_record.h"
#include "reference/layer_inputs.h"

namespace replayssm::ref::detail {

struct LayerDims {
  int T, H, V, K;
};
using TokenFn = std::function<HeadToken(int t, int h)>;

// Given one chunk's tokens and the state S0 before it, returns the chunk's w's as rows (C x V).
using ChunkSolveFn = std::function<Eigen::MatrixXd(const std::vector<HeadToken>& toks, const Eigen::MatrixXd& D,
                                                   const Eigen::VectorXd& Gamma, const Eigen::MatrixXd& S0)>;

LayerOutputs recurrent_layer(Recurrence r, const LayerDims& d, const TokenFn& tok,
                             const std::vector<double>* initial_state);

// D (C x C) is the decay mask D_ij = gamma_{j+1:i} for j <= i (0 above the diagonal), Gamma_i = gamma_{1:i}.
LayerOutputs chunked_layer(const LayerDims& d, int chunk, const TokenFn& tok, const ChunkSolveFn& solve_w,
                           const std::vector<double>* initial_state);

LayerOutputs replay_layer(Recurrence r, const LayerDims& d, int L, const TokenFn& tok,
                          const std::vector<double>* initial_state,
                          std::vector<std::vector<double>>* flush_states);

}  // namespace replayssm::ref::detail
