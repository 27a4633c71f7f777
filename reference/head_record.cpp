#include "reference/head_record.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace replayssm::ref {
namespace {

Eigen::VectorXd slice(const std::vector<double>& a, std::size_t offset, int n) {
  return Eigen::Map<const Eigen::VectorXd>(a.data() + offset, n);
}

std::size_t idx(int t, int heads, int h, int dim) {
  return (std::size_t(t) * std::size_t(heads) + std::size_t(h)) * std::size_t(dim);
}

}  // namespace

HeadToken gdn_head_token(const GdnInputs& in, int t, int h) {
  const int hk = h / (in.Hv / in.Hk);
  HeadToken tok;
  tok.a = std::exp(in.g[idx(t, in.Hv, h, 1)]);
  tok.beta = in.beta[idx(t, in.Hv, h, 1)];
  tok.v = slice(in.v, idx(t, in.Hv, h, in.V), in.V);
  tok.k = slice(in.k, idx(t, in.Hk, hk, in.K), in.K);
  tok.q = in.scale * slice(in.q, idx(t, in.Hk, hk, in.K), in.K);
  return tok;
}

HeadToken mamba2_head_token(const Mamba2Inputs& in, int t, int h) {
  const int grp = h / (in.H / in.G);
  const double dt = in.dt[idx(t, in.H, h, 1)];
  const Eigen::VectorXd x = slice(in.x, idx(t, in.H, h, in.P), in.P);
  HeadToken tok;
  tok.a = std::exp(dt * in.A[std::size_t(h)]);
  tok.beta = 1.0;
  tok.v = dt * x;
  tok.k = slice(in.B, idx(t, in.G, grp, in.N), in.N);
  tok.q = slice(in.C, idx(t, in.G, grp, in.N), in.N);
  if (!in.D.empty()) tok.skip = in.D[std::size_t(h)] * x;
  return tok;
}

Eigen::VectorXd recurrent_step(Recurrence r, Eigen::MatrixXd& S, const HeadToken& tok) {
  S *= tok.a;
  if (r == Recurrence::kGdn) {
    const Eigen::VectorXd u = tok.beta * (tok.v - S * tok.k);
    S.noalias() += u * tok.k.transpose();
  } else {
    S.noalias() += tok.v * tok.k.transpose();
  }
  Eigen::VectorXd o = S * tok.q;
  if (tok.skip.size()) o += tok.skip;
  return o;
}

double window_decay(const std::vector<Record>& recs, int n) {
  double g = 1.0;
  for (int j = 0; j < n; ++j) g *= recs[std::size_t(j)].a;
  return g;
}

Eigen::MatrixXd window_state(const Eigen::MatrixXd& S_c, const std::vector<Record>& recs, int n) {
  // Walk the window backwards so gamma_{j+1:n} is a running product, never a quotient (a can underflow to 0).
  Eigen::MatrixXd S = Eigen::MatrixXd::Zero(S_c.rows(), S_c.cols());
  double gamma = 1.0;
  for (int j = n - 1; j >= 0; --j) {
    const Record& r = recs[std::size_t(j)];
    S.noalias() += (gamma * r.w) * r.k.transpose();
    gamma *= r.a;
  }
  S += gamma * S_c;
  return S;
}

Eigen::VectorXd window_apply(const Eigen::VectorXd& Sc_x, const std::vector<Record>& recs, int n,
                             const Eigen::VectorXd& x) {
  Eigen::VectorXd y = Eigen::VectorXd::Zero(Sc_x.size());
  double gamma = 1.0;
  for (int j = n - 1; j >= 0; --j) {
    const Record& r = recs[std::size_t(j)];
    y += (gamma * r.k.dot(x)) * r.w;
    gamma *= r.a;
  }
  y += gamma * Sc_x;
  return y;
}

std::vector<Eigen::VectorXd> gdn_chain_u(const std::vector<HeadToken>& toks, const std::vector<Eigen::VectorXd>& S0_k) {
  const std::size_t T = toks.size();
  if (S0_k.size() != T) throw std::invalid_argument("gdn_chain_u: S0_k must hold one vector per token");
  std::vector<Eigen::VectorXd> U(T);
  double Gamma = 1.0;  // gamma_{1:i}
  for (std::size_t i = 0; i < T; ++i) {
    const HeadToken& ti = toks[i];
    Gamma *= ti.a;
    // W_i, then subtract sum_{j<i} A_ij U_j with gamma_{j+1:i} accumulated backwards.
    Eigen::VectorXd u = ti.beta * (ti.v - Gamma * S0_k[i]);
    double gamma = ti.a;  // gamma_{j+1:i} for j = i - 1
    for (std::size_t jj = i; jj-- > 0;) {
      u -= (ti.beta * gamma * toks[jj].k.dot(ti.k)) * U[jj];
      gamma *= toks[jj].a;
    }
    U[i] = u;
  }
  return U;
}

}  // namespace replayssm::ref
