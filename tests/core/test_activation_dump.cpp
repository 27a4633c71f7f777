#include <unistd.h>

#include <cstdio>
#include <string>

#include "catch.hpp"
#include "core/activation_dump.h"
#include "core/errors.h"
#include "core/synthetic.h"

using namespace replayssm;

namespace {
std::string tmp_path(const std::string& name) {
  return "/tmp/replayssm_dump_" + std::to_string(::getpid()) + "_" + name;
}
}  // namespace

TEST_CASE("activation dump: write then read gives the same inputs", "[dump]") {
  const std::string p = tmp_path("rt.h5");
  auto gdn = random_gdn(5, 2, 4, 8, 6, 3);
  std::vector<double> init(static_cast<std::size_t>(gdn.state_size()), 0.25);
  {
    auto f = h5::File::create(p);
    write_dump_header(f, Arch::gdn, 0.5);
    write_gdn_layer(f, "0", gdn, false, &init);
    write_gdn_layer(f, "10", gdn, true);
    write_gdn_layer(f, "2", gdn, true);
  }
  auto d = read_activation_dump(p);
  REQUIRE(d.layers.size() == 3);
  CHECK(d.layers[1].name == "2");  // numeric order, not lexicographic
  CHECK(d.layers[2].name == "10");
  CHECK(d.layers[0].gdn.q == gdn.q);
  CHECK(d.layers[0].gdn.scale == 0.5);
  CHECK(d.layers[0].initial_state.has_value());
  CHECK_FALSE(d.layers[1].initial_state.has_value());
  CHECK(d.layers[1].gdn.v[7] == static_cast<double>(static_cast<float>(gdn.v[7])));
  std::remove(p.c_str());
}

TEST_CASE("activation dump: mamba2 grouping and range checks", "[dump][badinput]") {
  const std::string p = tmp_path("m2.h5");
  auto m = random_mamba2(4, 4, 2, 3, 5, 9);
  {
    auto f = h5::File::create(p);
    write_dump_header(f, Arch::mamba2, 0);
    write_mamba2_layer(f, "0", m, false);
  }
  auto d = read_activation_dump(p);
  CHECK(d.arch == Arch::mamba2);
  CHECK(d.layers[0].mamba2.D == m.D);
  m.A[1] = 0.5;  // growth, not decay
  {
    auto f = h5::File::create(p);
    write_dump_header(f, Arch::mamba2, 0);
    write_mamba2_layer(f, "0", m, false);
  }
  try {
    read_activation_dump(p);
    FAIL("positive A accepted");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("/layers/0/A") != std::string::npos);
    CHECK(e.code() == kExitBadInput);
  }
  std::remove(p.c_str());
}

TEST_CASE("synthetic inputs are seeded and unit-norm", "[dump]") {
  auto a = random_gdn(3, 1, 2, 16, 4, 42), b = random_gdn(3, 1, 2, 16, 4, 42), c = random_gdn(3, 1, 2, 16, 4, 43);
  CHECK(a.k == b.k);
  CHECK(a.k != c.k);
  double s = 0;
  for (int i = 0; i < 16; ++i) s += a.k[static_cast<std::size_t>(i)] * a.k[static_cast<std::size_t>(i)];
  CHECK(std::fabs(s - 1.0) < 1e-6);
  for (double g : a.g) CHECK(g < 0.0);
}
