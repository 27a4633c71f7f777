#include <cmath>
#include <vector>

#include "catch.hpp"
#include "sweep/metrics.h"

using namespace replayssm::sweep;

TEST_CASE("KL, NLL and top-1 of next-byte distributions", "[metrics]") {
  // Two positions over a vocabulary of 3, values worked out by hand.
  const double l2 = std::log(0.5), l4 = std::log(0.25);
  std::vector<double> ref{l2, l4, l4, l2, l4, l4};
  std::vector<double> mode{l4, l2, l4, l2, l4, l4};
  std::vector<std::uint8_t> next{1, 0};
  auto m = compare_distributions(ref, mode, next, 2, 3);
  // KL(p||q) = 0.5 ln(0.5/0.25) + 0.25 ln(0.25/0.5) + 0 = 0.25 ln 2
  CHECK(std::fabs(m.kl[0] - 0.25 * std::log(2.0)) < 1e-15);
  CHECK(m.kl[1] == 0.0);
  CHECK(std::fabs(m.nll[0] - std::log(2.0)) < 1e-15);
  CHECK(std::fabs(m.nll[1] - std::log(2.0)) < 1e-15);
  CHECK(m.top1[0] == 0.0);
  CHECK(m.top1[1] == 1.0);
}

TEST_CASE("power-of-two bins cover every position once", "[metrics]") {
  CHECK(power_of_two_edges(1) == std::vector<std::int64_t>{1, 2});
  CHECK(power_of_two_edges(2) == std::vector<std::int64_t>{1, 2, 3});
  CHECK(power_of_two_edges(8) == std::vector<std::int64_t>{1, 2, 4, 9});  // no one-position last bin [8, 9)
  CHECK(power_of_two_edges(9) == std::vector<std::int64_t>{1, 2, 4, 8, 10});
  CHECK(power_of_two_edges(10) == std::vector<std::int64_t>{1, 2, 4, 8, 11});
  auto e = power_of_two_edges(32768);
  CHECK(e.front() == 1);
  CHECK(e.back() == 32769);
  CHECK(e.size() == 16);
  CHECK(e[e.size() - 2] == 16384);
}

TEST_CASE("binned stats: mean, nearest-rank p50 and p95, max", "[metrics]") {
  std::vector<double> v;
  for (int i = 1; i <= 20; ++i) v.push_back(i);
  auto e = power_of_two_edges(20);  // {1,2,4,8,16,21}
  auto s = binned_stats(v, e);
  REQUIRE(s.size() == 5 * kStats);
  CHECK(s[0] == 1.0);  // bin [1,2): {1}
  CHECK(s[3] == 1.0);
  // bin [16, 21): {16..20}: mean 18, p50 = 3rd of 5 = 18, p95 = 5th = 20, max 20
  CHECK(s[4 * kStats + 0] == 18.0);
  CHECK(s[4 * kStats + 1] == 18.0);
  CHECK(s[4 * kStats + 2] == 20.0);
  CHECK(s[4 * kStats + 3] == 20.0);
}

TEST_CASE("relative L2", "[metrics]") {
  std::vector<double> a{3, 4}, b{3, 4.5};
  CHECK(std::fabs(relative_l2(a.data(), b.data(), 2) - 0.1) < 1e-15);
}

TEST_CASE("token-flip rate per bin and the first flip", "[metrics][flips]") {
  const auto e = power_of_two_edges(8);  // {1, 2, 4, 9}: bins of 1, 2 and 5 positions
  SECTION("a mode that never flips") {
    const std::vector<double> top1(8, 1.0);
    CHECK(binned_flip_rate(top1, e) == std::vector<double>{0.0, 0.0, 0.0});
    CHECK(first_flip(top1) == -1);
  }
  SECTION("a flip at position 0 fills the first bin and is the first flip") {
    std::vector<double> top1(8, 1.0);
    top1[0] = 0.0;
    CHECK(binned_flip_rate(top1, e) == std::vector<double>{1.0, 0.0, 0.0});
    CHECK(first_flip(top1) == 0);
  }
  SECTION("flips later in the run: rate per bin, the earliest counts") {
    std::vector<double> top1(8, 1.0);
    top1[2] = 0.0;  // position 3 (1-based): bin [2, 4)
    top1[4] = 0.0;  // positions 5 and 8: bin [4, 9)
    top1[7] = 0.0;
    const auto r = binned_flip_rate(top1, e);
    REQUIRE(r.size() == 3);
    CHECK(r[0] == 0.0);
    CHECK(r[1] == 0.5);
    CHECK(std::fabs(r[2] - 0.4) < 1e-15);
    CHECK(first_flip(top1) == 2);
  }
  SECTION("a diverged run: NaN positions make the bin NaN and are not flips") {
    std::vector<double> top1(8, 1.0);
    for (std::size_t t = 5; t < 8; ++t) top1[t] = std::nan("");
    const auto r = binned_flip_rate(top1, e);
    CHECK(r[0] == 0.0);
    CHECK(r[1] == 0.0);
    CHECK(std::isnan(r[2]));
    CHECK(first_flip(top1) == -1);
  }
  SECTION("bins past the end of the values are 0, like binned_stats") {
    const std::vector<double> top1{1.0, 0.0};
    CHECK(binned_flip_rate(top1, e) == std::vector<double>{0.0, 1.0, 0.0});
  }
}
