#include "reference/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace replayssm::ref {
namespace {

void check_size(const char* name, const std::vector<double>& a, long long expected) {
  if (static_cast<long long>(a.size()) != expected)
    throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(expected) + " elements, got " +
                                std::to_string(a.size()));
}

}  // namespace

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

double sigmoid(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

void l2_normalize(double* x, int n, double eps) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss + eps);
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

double gdn_log_decay(double A_log, double a_raw, double dt_bias) { return -std::exp(A_log) * softplus(a_raw + dt_bias); }

double mamba2_dt(double dt_raw, double dt_bias, double dt_min, double dt_max) {
  return std::min(std::max(softplus(dt_raw + dt_bias), dt_min), dt_max);
}

double mamba2_A(double A_log) { return -std::exp(A_log); }

GdnInputs gdn_preprocess(const GdnRawInputs& raw, double scale, double l2_eps) {
  if (raw.T < 0 || raw.Hk <= 0 || raw.Hv <= 0 || raw.K <= 0 || raw.V <= 0)
    throw std::invalid_argument("dims: T >= 0 and Hk, Hv, K, V > 0 required");
  using ll = long long;
  check_size("a", raw.a, ll(raw.T) * raw.Hv);
  check_size("b", raw.b, ll(raw.T) * raw.Hv);
  check_size("A_log", raw.A_log, raw.Hv);
  check_size("dt_bias", raw.dt_bias, raw.Hv);
  check_size("q", raw.q, ll(raw.T) * raw.Hk * raw.K);
  check_size("k", raw.k, ll(raw.T) * raw.Hk * raw.K);
  GdnInputs in;
  in.T = raw.T, in.Hk = raw.Hk, in.Hv = raw.Hv, in.K = raw.K, in.V = raw.V;
  in.scale = scale > 0.0 ? scale : 1.0 / std::sqrt(double(raw.K));
  in.q = raw.q;
  in.k = raw.k;
  in.v = raw.v;
  for (std::size_t off = 0; off < in.q.size(); off += std::size_t(raw.K)) {
    l2_normalize(in.q.data() + off, raw.K, l2_eps);
    l2_normalize(in.k.data() + off, raw.K, l2_eps);
  }
  in.g.resize(raw.a.size());
  in.beta.resize(raw.b.size());
  for (std::size_t i = 0; i < raw.a.size(); ++i) {
    const std::size_t h = i % std::size_t(raw.Hv);
    in.g[i] = gdn_log_decay(raw.A_log[h], raw.a[i], raw.dt_bias[h]);
    in.beta[i] = sigmoid(raw.b[i]);
  }
  in.validate();
  return in;
}

Mamba2Inputs mamba2_preprocess(const Mamba2RawInputs& raw) {
  if (raw.T < 0 || raw.H <= 0) throw std::invalid_argument("dims: T >= 0 and H > 0 required");
  check_size("dt_raw", raw.dt_raw, static_cast<long long>(raw.T) * raw.H);
  check_size("dt_bias", raw.dt_bias, raw.H);
  check_size("A_log", raw.A_log, raw.H);
  Mamba2Inputs in;
  in.T = raw.T, in.H = raw.H, in.G = raw.G, in.P = raw.P, in.N = raw.N;
  in.x = raw.x;
  in.B = raw.B;
  in.C = raw.C;
  in.D = raw.D;
  in.dt.resize(raw.dt_raw.size());
  for (std::size_t i = 0; i < raw.dt_raw.size(); ++i)
    in.dt[i] = mamba2_dt(raw.dt_raw[i], raw.dt_bias[i % std::size_t(raw.H)], raw.dt_min, raw.dt_max);
  in.A.resize(std::size_t(raw.H));
  for (std::size_t h = 0; h < in.A.size(); ++h) in.A[h] = mamba2_A(raw.A_log[h]);
  in.validate();
  return in;
}

}  // namespace replayssm::ref
