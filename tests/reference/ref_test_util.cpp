#include "ref_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

namespace replayssm::ref::test {
namespace {

struct Summary {
  std::map<std::string, double> worst;
  ~Summary() {
    if (worst.empty()) return;
    std::printf("max rel_rms against the recurrent spec, per form:\n");
    for (const auto& [form, r] : worst) std::printf("  %-28s %.3e\n", form.c_str(), r);
  }
};
Summary& summary() {
  static Summary s;
  return s;
}

std::vector<double> normals(std::mt19937_64& rng, std::size_t n, double sd = 1.0) {
  std::normal_distribution<double> N(0.0, sd);
  std::vector<double> v(n);
  for (double& x : v) x = N(rng);
  return v;
}

void normalize_rows(std::vector<double>& a, int len) {
  for (std::size_t off = 0; off < a.size(); off += std::size_t(len)) {
    double ss = 0.0;
    for (int i = 0; i < len; ++i) ss += a[off + std::size_t(i)] * a[off + std::size_t(i)];
    const double inv = 1.0 / std::sqrt(ss);
    for (int i = 0; i < len; ++i) a[off + std::size_t(i)] *= inv;
  }
}

double log_decay(std::mt19937_64& rng, DecayRange d) {
  std::uniform_real_distribution<double> U(std::log(d.mag_lo), std::log(d.mag_hi));
  return -std::exp(d.mag_lo == d.mag_hi ? std::log(d.mag_lo) : U(rng));
}

template <class T>
void take(std::vector<T>& dst, const std::vector<T>& src, const std::vector<int>& steps, std::size_t per_step) {
  dst.clear();
  for (int t : steps)
    dst.insert(dst.end(), src.begin() + std::ptrdiff_t(std::size_t(t) * per_step),
               src.begin() + std::ptrdiff_t(std::size_t(t + 1) * per_step));
}

}  // namespace

std::vector<double> random_vector(std::uint64_t seed, std::size_t n, double sd) {
  std::mt19937_64 rng(seed);
  return normals(rng, n, sd);
}

GdnInputs random_gdn(std::uint64_t seed, int T, int Hk, int Hv, int K, int V, DecayRange d) {
  std::mt19937_64 rng(seed);
  GdnInputs in;
  in.T = T, in.Hk = Hk, in.Hv = Hv, in.K = K, in.V = V;
  in.scale = 1.0 / std::sqrt(double(K));
  in.q = normals(rng, std::size_t(T) * std::size_t(Hk * K));
  in.k = normals(rng, std::size_t(T) * std::size_t(Hk * K));
  normalize_rows(in.q, K);
  normalize_rows(in.k, K);
  in.v = normals(rng, std::size_t(T) * std::size_t(Hv * V));
  std::uniform_real_distribution<double> U01(0.02, 0.98);
  for (int i = 0; i < T * Hv; ++i) {
    in.g.push_back(log_decay(rng, d));
    in.beta.push_back(U01(rng));
  }
  return in;
}

Mamba2Inputs random_mamba2(std::uint64_t seed, int T, int H, int G, int P, int N, DecayRange d, bool with_D) {
  std::mt19937_64 rng(seed);
  Mamba2Inputs in;
  in.T = T, in.H = H, in.G = G, in.P = P, in.N = N;
  in.x = normals(rng, std::size_t(T) * std::size_t(H * P));
  in.B = normals(rng, std::size_t(T) * std::size_t(G * N));
  in.C = normals(rng, std::size_t(T) * std::size_t(G * N));
  std::uniform_real_distribution<double> Ulog(-1.0, 1.0);
  for (int h = 0; h < H; ++h) in.A.push_back(-std::exp(Ulog(rng)));
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) in.dt.push_back(log_decay(rng, d) / in.A[std::size_t(h)]);  // dt * A = g
  if (with_D) in.D = normals(rng, std::size_t(H));
  return in;
}

GdnInputs select_steps(const GdnInputs& in, const std::vector<int>& steps) {
  GdnInputs out = in;
  out.T = int(steps.size());
  take(out.q, in.q, steps, std::size_t(in.Hk * in.K));
  take(out.k, in.k, steps, std::size_t(in.Hk * in.K));
  take(out.v, in.v, steps, std::size_t(in.Hv * in.V));
  take(out.g, in.g, steps, std::size_t(in.Hv));
  take(out.beta, in.beta, steps, std::size_t(in.Hv));
  return out;
}

Mamba2Inputs select_steps(const Mamba2Inputs& in, const std::vector<int>& steps) {
  Mamba2Inputs out = in;
  out.T = int(steps.size());
  take(out.x, in.x, steps, std::size_t(in.H * in.P));
  take(out.B, in.B, steps, std::size_t(in.G * in.N));
  take(out.C, in.C, steps, std::size_t(in.G * in.N));
  take(out.dt, in.dt, steps, std::size_t(in.H));
  return out;
}

Comparison check_form(const std::string& form, const std::vector<double>& ref, const std::vector<double>& got) {
  const Comparison c = compare(ref, got, kFp64FormTolerance);
  double& w = summary().worst[form];
  w = std::max(w, c.rel_rms);
  return c;
}

}  // namespace replayssm::ref::test
