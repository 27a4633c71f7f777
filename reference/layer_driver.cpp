#include "reference/layer_driver.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "reference/replay_head.h"

namespace replayssm::ref::detail {
namespace {

Eigen::MatrixXd initial_head_state(const std::vector<double>* init, int h, int V, int K) {
  return init ? head_state(*init, h, V, K) : Eigen::MatrixXd::Zero(V, K);
}

void put_output(std::vector<double>& o, const LayerDims& d, int t, int h, const Eigen::VectorXd& y) {
  const std::size_t off = (std::size_t(t) * std::size_t(d.H) + std::size_t(h)) * std::size_t(d.V);
  std::copy(y.data(), y.data() + d.V, o.begin() + std::ptrdiff_t(off));
}

LayerOutputs empty_outputs(const LayerDims& d) {
  LayerOutputs out;
  out.o.assign(std::size_t(d.T) * std::size_t(d.H) * std::size_t(d.V), 0.0);
  out.final_state.assign(std::size_t(d.H) * std::size_t(d.V) * std::size_t(d.K), 0.0);
  return out;
}

}  // namespace

LayerOutputs recurrent_layer(Recurrence r, const LayerDims& d, const TokenFn& tok,
                             const std::vector<double>* initial_state) {
  LayerOutputs out = empty_outputs(d);
  for (int h = 0; h < d.H; ++h) {
    Eigen::MatrixXd S = initial_head_state(initial_state, h, d.V, d.K);
    for (int t = 0; t < d.T; ++t) put_output(out.o, d, t, h, recurrent_step(r, S, tok(t, h)));
    put_head_state(out.final_state, h, S);
  }
  return out;
}

LayerOutputs chunked_layer(const LayerDims& d, int chunk, const TokenFn& tok, const ChunkSolveFn& solve_w,
                           const std::vector<double>* initial_state) {
  if (chunk < 1) throw std::invalid_argument("chunk: must be >= 1, got " + std::to_string(chunk));
  LayerOutputs out = empty_outputs(d);
  for (int h = 0; h < d.H; ++h) {
    Eigen::MatrixXd S = initial_head_state(initial_state, h, d.V, d.K);
    for (int t0 = 0; t0 < d.T; t0 += chunk) {
      const int C = std::min(chunk, d.T - t0);
      std::vector<HeadToken> toks;
      toks.reserve(std::size_t(C));
      for (int i = 0; i < C; ++i) toks.push_back(tok(t0 + i, h));
      Eigen::MatrixXd Qc(C, d.K), Kc(C, d.K);
      for (int i = 0; i < C; ++i) {
        Qc.row(i) = toks[std::size_t(i)].q.transpose();
        Kc.row(i) = toks[std::size_t(i)].k.transpose();
      }
      // Decay mask by running products along each row (no log-space cumsum differences, no division).
      Eigen::MatrixXd D = Eigen::MatrixXd::Zero(C, C);
      Eigen::VectorXd Gamma(C);
      double G = 1.0;
      for (int i = 0; i < C; ++i) {
        G *= toks[std::size_t(i)].a;
        Gamma(i) = G;
        D(i, i) = 1.0;
        for (int j = i - 1; j >= 0; --j) D(i, j) = D(i, j + 1) * toks[std::size_t(j + 1)].a;
      }
      const Eigen::MatrixXd W = solve_w(toks, D, Gamma, S);  // C x V
      // Intra-chunk masked "attention" plus the inter-chunk term from the state entering the chunk.
      const Eigen::MatrixXd M = (Qc * Kc.transpose()).cwiseProduct(D);
      Eigen::MatrixXd O = M * W + Gamma.asDiagonal() * (Qc * S.transpose());
      for (int i = 0; i < C; ++i) {
        Eigen::VectorXd y = O.row(i).transpose();
        if (toks[std::size_t(i)].skip.size()) y += toks[std::size_t(i)].skip;
        put_output(out.o, d, t0 + i, h, y);
      }
      const Eigen::VectorXd last = D.row(C - 1).transpose();  // gamma_{j+1:C}
      S = Gamma(C - 1) * S + W.transpose() * last.asDiagonal() * Kc;
    }
    put_head_state(out.final_state, h, S);
  }
  return out;
}

LayerOutputs replay_layer(Recurrence r, const LayerDims& d, int L, const TokenFn& tok,
                          const std::vector<double>* initial_state,
                          std::vector<std::vector<double>>* flush_states) {
  if (L < 1) throw std::invalid_argument("L: must be >= 1, got " + std::to_string(L));
  LayerOutputs out = empty_outputs(d);
  std::vector<ReplayHead> heads;
  heads.reserve(std::size_t(d.H));
  for (int h = 0; h < d.H; ++h) {
    const Eigen::MatrixXd S0 = initial_head_state(initial_state, h, d.V, d.K);
    heads.emplace_back(r, d.V, d.K, L, 1, &S0);
  }
  if (flush_states) flush_states->clear();
  for (int t = 0; t < d.T; ++t) {
    bool flushed = false;
    for (int h = 0; h < d.H; ++h) {
      const long long before = heads[std::size_t(h)].flush_count();
      put_output(out.o, d, t, h, heads[std::size_t(h)].step(tok(t, h)));
      flushed = heads[std::size_t(h)].flush_count() != before;  // identical for every head
    }
    if (flushed && flush_states) {
      std::vector<double> s(out.final_state.size());
      for (int h = 0; h < d.H; ++h) put_head_state(s, h, heads[std::size_t(h)].checkpoint());
      flush_states->push_back(std::move(s));
    }
  }
  for (int h = 0; h < d.H; ++h) put_head_state(out.final_state, h, heads[std::size_t(h)].materialize());
  return out;
}

}  // namespace replayssm::ref::detail
