#include "sweep/mode_recurrence.h"

#include <cmath>
#include <stdexcept>

#include "reference/head_record.h"
#include "sweep/metrics.h"

namespace replayssm::sweep {
namespace {

// One token of every head in the backend's FP32 "head token" form; the FP64 shadow consumes the same values
// (rounded to FP32 first), so the drift measures the state arithmetic and storage, not the input rounding.
struct Step {
  emu::TokenData data;
  std::vector<ref::HeadToken> tokens;  // [H], doubles of the FP32 values
};

template <class TokenFn>
Step make_step(int G, int H, int V, int K, bool gdn, bool skip, TokenFn&& token_of) {
  Step s;
  s.data.B = 1;
  s.data.T = 1;
  s.data.a.resize(static_cast<std::size_t>(H));
  if (gdn) s.data.beta.resize(static_cast<std::size_t>(H));
  s.data.v.resize(static_cast<std::size_t>(H * V));
  s.data.k.assign(static_cast<std::size_t>(G * K), 0.0f);
  s.data.q.assign(static_cast<std::size_t>(G * K), 0.0f);
  if (skip) s.data.skip.resize(static_cast<std::size_t>(H * V));
  s.tokens.resize(static_cast<std::size_t>(H));
  const int per_group = H / G;
  for (int h = 0; h < H; ++h) {
    ref::HeadToken t = token_of(h);
    const auto hs = static_cast<std::size_t>(h);
    s.data.a[hs] = static_cast<float>(t.a);
    t.a = s.data.a[hs];
    if (gdn) {
      s.data.beta[hs] = static_cast<float>(t.beta);
      t.beta = s.data.beta[hs];
    }
    for (int i = 0; i < V; ++i) {
      const auto idx = hs * static_cast<std::size_t>(V) + static_cast<std::size_t>(i);
      s.data.v[idx] = static_cast<float>(t.v[i]);
      t.v[i] = s.data.v[idx];
      if (skip) {
        s.data.skip[idx] = static_cast<float>(t.skip[i]);
        t.skip[i] = s.data.skip[idx];
      }
    }
    const auto g = static_cast<std::size_t>(h / per_group);
    for (int i = 0; i < K; ++i) {
      const auto idx = g * static_cast<std::size_t>(K) + static_cast<std::size_t>(i);
      s.data.k[idx] = static_cast<float>(t.k[i]);
      s.data.q[idx] = static_cast<float>(t.q[i]);
      t.k[i] = s.data.k[idx];
      t.q[i] = s.data.q[idx];
    }
    s.tokens[hs] = std::move(t);
  }
  return s;
}

template <class TokenFn>
ref::LayerOutputs run_layer(emu::DecodeBackend& be, const emu::Mode& mode, int T, int G, int H, int V, int K,
                            bool skip, const std::vector<double>* init, TokenFn&& token_of, LayerDrift* drift) {
  emu::Dims d;
  d.B = 1;
  d.G = G;
  d.H = H;
  d.K = K;
  d.V = V;
  emu::check_mode(mode, d);
  const bool gdn = mode.arch == emu::Arch::gdn;
  const ref::Recurrence rec = gdn ? ref::Recurrence::kGdn : ref::Recurrence::kMamba2;
  std::vector<float> S0;
  if (init) S0.assign(init->begin(), init->end());
  be.init(d, mode, init ? S0.data() : nullptr);
  std::vector<Eigen::MatrixXd> shadow(static_cast<std::size_t>(H), Eigen::MatrixXd::Zero(V, K));
  if (init)
    for (int h = 0; h < H; ++h)
      for (int r = 0; r < V; ++r)
        for (int c = 0; c < K; ++c)
          shadow[static_cast<std::size_t>(h)](r, c) = S0[(static_cast<std::size_t>(h) * V + r) * K + c];
  const std::size_t out_per_t = static_cast<std::size_t>(H) * static_cast<std::size_t>(V);
  ref::LayerOutputs out;
  out.o.resize(static_cast<std::size_t>(T) * out_per_t);
  std::vector<float> o(out_per_t), S(static_cast<std::size_t>(H) * V * K);
  std::vector<double> o_ref(out_per_t), S_ref(S.size()), S_got(S.size());
  if (drift) {
    drift->output.assign(static_cast<std::size_t>(T), 0.0);
    drift->steps.clear();
    drift->state.clear();
  }
  for (int t = 0; t < T; ++t) {
    Step s = make_step(G, H, V, K, gdn, skip, [&](int h) { return token_of(t, h); });
    be.step(s.data.view(), o.data());
    double* dst = &out.o[static_cast<std::size_t>(t) * out_per_t];
    for (std::size_t i = 0; i < out_per_t; ++i) {
      if (!std::isfinite(o[i])) throw Diverged(t);
      dst[i] = o[i];
    }
    for (int h = 0; h < H; ++h) {
      Eigen::VectorXd r = ref::recurrent_step(rec, shadow[static_cast<std::size_t>(h)], s.tokens[static_cast<std::size_t>(h)]);
      for (int i = 0; i < V; ++i) o_ref[static_cast<std::size_t>(h * V + i)] = r[i];
    }
    if (!drift) continue;
    drift->output[static_cast<std::size_t>(t)] = relative_l2(o_ref.data(), dst, out_per_t);
    if ((t + 1) % mode.L == 0) {
      be.state(S.data());
      for (int h = 0; h < H; ++h)
        for (int r = 0; r < V; ++r)
          for (int c = 0; c < K; ++c) {
            const std::size_t idx = (static_cast<std::size_t>(h) * V + r) * K + c;
            S_ref[idx] = shadow[static_cast<std::size_t>(h)](r, c);
            S_got[idx] = S[idx];
          }
      drift->steps.push_back(t + 1);
      drift->state.push_back(relative_l2(S_ref.data(), S_got.data(), S.size()));
    }
  }
  out.final_state.resize(S.size());
  be.state(S.data());
  for (std::size_t i = 0; i < S.size(); ++i) out.final_state[i] = S[i];
  return out;
}

}  // namespace

ref::LayerOutputs ModeRecurrence::run_gdn(const ref::GdnInputs& in, LayerDrift* drift) {
  if (mode_.arch != emu::Arch::gdn) throw std::invalid_argument("ModeRecurrence: mode is not a GDN mode");
  return run_layer(be_, mode_, in.T, in.Hk, in.Hv, in.V, in.K, false, nullptr,
                   [&](int t, int h) { return ref::gdn_head_token(in, t, h); }, drift);
}

ref::LayerOutputs ModeRecurrence::run_mamba2(const ref::Mamba2Inputs& in, LayerDrift* drift) {
  if (mode_.arch != emu::Arch::mamba2) throw std::invalid_argument("ModeRecurrence: mode is not a Mamba-2 mode");
  return run_layer(be_, mode_, in.T, in.G, in.H, in.P, in.N, !in.D.empty(), nullptr,
                   [&](int t, int h) { return ref::mamba2_head_token(in, t, h); }, drift);
}

}  // namespace replayssm::sweep
