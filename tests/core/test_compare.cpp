#include <cmath>
#include <limits>
#include <vector>

#include "catch.hpp"
#include "core/compare.h"

using replayssm::compare;
using replayssm::Tolerance;

TEST_CASE("compare: identical arrays pass with zero error", "[compare]") {
  std::vector<double> a{1.0, -2.0, 3.5};
  auto c = compare(a, a, Tolerance{1e-15, 1e-15});
  CHECK(c.pass);
  CHECK(c.max_abs == 0.0);
  CHECK(c.rel_rms == 0.0);
  CHECK(c.first_bad == -1);
}

TEST_CASE("compare: reports max-abs, rel-RMS and the first bad index", "[compare]") {
  std::vector<double> ref{1.0, 2.0, 2.0, 0.0};
  std::vector<float> got{1.0f, 2.0f, 2.5f, 0.25f};
  auto c = compare(ref, got, Tolerance{0.1, 1.0});
  CHECK(c.max_abs == 0.5);
  CHECK(c.ref_max_abs == 2.0);
  CHECK(c.first_bad == 2);  // bound = 0.1 * 2 = 0.2
  CHECK(c.n_bad == 2);
  CHECK(std::fabs(c.rel_rms - std::sqrt((0.25 + 0.0625) / 9.0)) < 1e-15);
  CHECK_FALSE(c.pass);
}

TEST_CASE("compare: NaN and Inf never pass, whatever the tolerance", "[compare]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> ref{1.0, 2.0};
  std::vector<double> g1{nan, 2.0}, g2{1.0, inf};
  for (const auto& g : {g1, g2}) {
    auto c = compare(ref, g, Tolerance{1e300, 1e300, 1e300});
    CHECK_FALSE(c.pass);
    CHECK(c.n_nonfinite == 1);
  }
  std::vector<double> rn{nan, 2.0};
  CHECK_FALSE(compare(rn, rn, Tolerance{1e300, 1e300}).pass);
}

TEST_CASE("compare: size mismatch fails", "[compare]") {
  std::vector<double> a{1.0, 2.0}, b{1.0};
  CHECK_FALSE(compare(a, b, Tolerance{1, 1}).pass);
}

TEST_CASE("compare: rel-RMS bound applies on its own", "[compare]") {
  std::vector<double> ref(100, 1.0), got(100, 1.0 + 1e-6);
  CHECK(compare(ref, got, Tolerance{1e-5, 1e-5}).pass);
  CHECK_FALSE(compare(ref, got, Tolerance{1e-5, 1e-7}).pass);
}
