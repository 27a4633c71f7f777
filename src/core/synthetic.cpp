#include "core/synthetic.h"

#include <cmath>
#include <random>

namespace replayssm {
namespace {

std::size_t n_of(int a, int b, int c = 1) {
  return static_cast<std::size_t>(a) * static_cast<std::size_t>(b) * static_cast<std::size_t>(c);
}

void fill_normal(std::vector<double>& v, std::size_t n, std::mt19937_64& rng, double sd) {
  std::normal_distribution<double> nd(0.0, sd);
  v.resize(n);
  for (auto& x : v) x = nd(rng);
}

// L2-normalise each contiguous row of length d, as the models do for q and k before the recurrence.
void normalise_rows(std::vector<double>& v, int d) {
  for (std::size_t r = 0; r < v.size() / static_cast<std::size_t>(d); ++r) {
    double s = 0;
    for (int i = 0; i < d; ++i) s += v[r * static_cast<std::size_t>(d) + static_cast<std::size_t>(i)] *
                                     v[r * static_cast<std::size_t>(d) + static_cast<std::size_t>(i)];
    const double inv = 1.0 / std::sqrt(s + 1e-6);
    for (int i = 0; i < d; ++i) v[r * static_cast<std::size_t>(d) + static_cast<std::size_t>(i)] *= inv;
  }
}

double log_uniform_decay(std::mt19937_64& rng, const DecayRange& r) {
  std::uniform_real_distribution<double> u(r.log_min, r.log_max);
  return -std::exp(u(rng));
}

}  // namespace

ref::GdnInputs random_gdn(int T, int Hk, int Hv, int K, int V, std::uint64_t seed, DecayRange decay) {
  std::mt19937_64 rng(seed);
  ref::GdnInputs in;
  in.T = T;
  in.Hk = Hk;
  in.Hv = Hv;
  in.K = K;
  in.V = V;
  in.scale = 1.0 / std::sqrt(static_cast<double>(K));
  fill_normal(in.q, n_of(T, Hk, K), rng, 1.0);
  fill_normal(in.k, n_of(T, Hk, K), rng, 1.0);
  normalise_rows(in.q, K);
  normalise_rows(in.k, K);
  fill_normal(in.v, n_of(T, Hv, V), rng, 1.0);
  in.g.resize(n_of(T, Hv));
  in.beta.resize(n_of(T, Hv));
  std::uniform_real_distribution<double> ub(-3.0, 3.0);
  for (auto& g : in.g) g = log_uniform_decay(rng, decay);
  for (auto& b : in.beta) b = 1.0 / (1.0 + std::exp(-ub(rng)));
  return in;
}

ref::Mamba2Inputs random_mamba2(int T, int H, int G, int P, int N, std::uint64_t seed, DecayRange decay) {
  std::mt19937_64 rng(seed);
  ref::Mamba2Inputs in;
  in.T = T;
  in.H = H;
  in.G = G;
  in.P = P;
  in.N = N;
  fill_normal(in.x, n_of(T, H, P), rng, 1.0);
  fill_normal(in.B, n_of(T, G, N), rng, 1.0 / std::sqrt(static_cast<double>(N)));
  fill_normal(in.C, n_of(T, G, N), rng, 1.0 / std::sqrt(static_cast<double>(N)));
  in.A.resize(static_cast<std::size_t>(H));
  std::uniform_real_distribution<double> ua(std::log(1.0), std::log(16.0));  // Mamba-2's A_init_range (1, 16)
  for (auto& a : in.A) a = -std::exp(ua(rng));
  // dt*A spans the decay range: pick the log-decay, then dt = g / A (dt > 0 as after softplus).
  in.dt.resize(n_of(T, H));
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      in.dt[n_of(t, H) + static_cast<std::size_t>(h)] = log_uniform_decay(rng, decay) / in.A[static_cast<std::size_t>(h)];
  in.D.resize(static_cast<std::size_t>(H));
  std::uniform_real_distribution<double> ud(0.5, 1.5);
  for (auto& d : in.D) d = ud(rng);
  return in;
}

}  // namespace replayssm
