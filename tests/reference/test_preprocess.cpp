// Layer-side preprocessing against values worked out by hand.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "catch.hpp"
#include "reference/preprocess.h"

using namespace replayssm::ref;

namespace {
bool near(double got, double want, double rel = 1e-15) { return std::fabs(got - want) <= rel * std::fabs(want); }
}  // namespace

TEST_CASE("softplus and sigmoid follow torch", "[reference]") {
  REQUIRE(near(softplus(0.0), std::log(2.0)));
  REQUIRE(softplus(21.0) == 21.0);                      // above the threshold: x itself
  REQUIRE(softplus(20.0) == std::log1p(std::exp(20.0)));  // at the threshold: still log1p(exp(x))
  REQUIRE(softplus(20.0) > 20.0);
  REQUIRE(softplus(1000.0) == 1000.0);                  // no overflow
  REQUIRE(near(softplus(-40.0), 4.248354255291589e-18, 1e-14));  // exp(-40), not 0 from log(1 + tiny)
  REQUIRE(softplus(-1000.0) == 0.0);
  REQUIRE(sigmoid(0.0) == 0.5);
  REQUIRE(near(sigmoid(std::log(3.0)), 0.75));
  REQUIRE(near(sigmoid(-std::log(3.0)), 0.25));
  REQUIRE(sigmoid(-800.0) == 0.0);
  REQUIRE(sigmoid(800.0) == 1.0);
}

TEST_CASE("L2 norm puts eps inside the square root (FLA / HF l2norm)", "[reference]") {
  double x[2] = {3.0, 4.0};
  l2_normalize(x, 2, 0.0);
  REQUIRE(x[0] == 3.0 * (1.0 / 5.0));  // multiply by the reciprocal norm (rsqrt), as FLA and HF do
  REQUIRE(near(x[0], 0.6));
  REQUIRE(near(x[1], 0.8));
  double y[2] = {3.0, 4.0};
  l2_normalize(y, 2);  // 3 / sqrt(25 + 1e-6), not 3 / max(5, eps)
  REQUIRE(near(y[0], 3.0 / std::sqrt(25.000001)));
  REQUIRE(y[0] != 0.6);
  double z[3] = {0.0, 0.0, 0.0};
  l2_normalize(z, 3);  // a zero vector stays zero, no NaN
  REQUIRE(z[0] == 0.0);
}

TEST_CASE("decay, dt and A of the real models", "[reference]") {
  REQUIRE(near(gdn_log_decay(0.0, -1.0, 1.0), -std::log(2.0)));                // -exp(0) softplus(0)
  REQUIRE(near(gdn_log_decay(std::log(3.0), 30.0, -5.0), -75.0, 1e-15));       // -3 * 25 (softplus linear)
  REQUIRE(near(mamba2_dt(0.5, -0.5), std::log(2.0)));
  REQUIRE(mamba2_dt(-100.0, 0.0, 1e-3, 0.1) == 1e-3);
  REQUIRE(mamba2_dt(100.0, 0.0, 0.0, 0.1) == 0.1);
  REQUIRE(mamba2_A(0.0) == -1.0);
  REQUIRE(near(mamba2_A(std::log(4.0)), -4.0));
}

TEST_CASE("gdn_preprocess and mamba2_preprocess", "[reference]") {
  GdnRawInputs r;
  r.T = 1, r.Hk = 1, r.Hv = 2, r.K = 2, r.V = 1;
  r.q = {3, 4};
  r.k = {0, 2};
  r.v = {1, 2};
  r.a = {0, 30};
  r.b = {0, std::log(3.0)};
  r.A_log = {0, std::log(3.0)};
  r.dt_bias = {0, -5};
  const GdnInputs in = gdn_preprocess(r);
  REQUIRE(near(in.scale, 1.0 / std::sqrt(2.0)));
  REQUIRE(near(in.q[0], 3.0 / std::sqrt(25.000001)));
  REQUIRE(near(in.q[1], 4.0 / std::sqrt(25.000001)));
  REQUIRE(in.k[0] == 0.0);
  REQUIRE(near(in.k[1], 2.0 / std::sqrt(4.000001)));
  REQUIRE(near(in.g[0], -std::log(2.0)));
  REQUIRE(near(in.g[1], -75.0));
  REQUIRE(in.beta[0] == 0.5);
  REQUIRE(near(in.beta[1], 0.75));
  REQUIRE(gdn_preprocess(r, 0.25).scale == 0.25);
  r.A_log.pop_back();
  REQUIRE_THROWS_AS(gdn_preprocess(r), std::invalid_argument);

  Mamba2RawInputs m;
  m.T = 2, m.H = 2, m.G = 1, m.P = 1, m.N = 1;
  m.x = {1, 2, 3, 4};
  m.B = {1, 1};
  m.C = {1, 1};
  m.dt_raw = {0, 25, -1, 0};
  m.dt_bias = {0, -1};
  m.A_log = {0, std::log(4.0)};
  m.D = {1, 2};
  const Mamba2Inputs mi = mamba2_preprocess(m);
  REQUIRE(near(mi.dt[0], std::log(2.0)));
  REQUIRE(mi.dt[1] == 24.0);
  REQUIRE(near(mi.dt[2], std::log1p(std::exp(-1.0))));
  REQUIRE(near(mi.dt[3], std::log1p(std::exp(-1.0))));
  REQUIRE(mi.A[0] == -1.0);
  REQUIRE(near(mi.A[1], -4.0));
  REQUIRE(mi.D == m.D);
}
