#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "catch.hpp"
#include "core/errors.h"
#include "core/h5.h"

namespace h5 = replayssm::h5;
using replayssm::UserError;

namespace {
std::string tmp_path(const std::string& name) {
  return "/tmp/replayssm_test_" + std::to_string(::getpid()) + "_" + name;
}
bool exists(const std::string& p) { return std::ifstream(p).good(); }
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("h5: round trip of arrays, strings and attributes", "[h5]") {
  const std::string p = tmp_path("rt.h5");
  {
    auto f = h5::File::create(p);
    std::vector<double> d{1.5, -2.25, 3.0, 4.0, 5.0, 6.0};
    f.write("/a/b/d", {2, 3}, d.data());
    std::vector<float> s{0.5f, 1.5f};
    f.write("/s", {2}, s.data());
    f.write_strings("/names", {"x", "yz"});
    f.set_attr("/a", "label", "hello");
    f.set_attr("/", "pi", 3.25);
    f.set_attr("/", "n", std::int64_t{42});
  }
  auto f = h5::File::open_read(p);
  auto d = f.read_f64("/a/b/d");
  CHECK(d.shape == h5::Shape{2, 3});
  CHECK(d.data[1] == -2.25);
  CHECK(f.read_f32("/s").data[1] == 1.5f);
  CHECK(f.read_strings("/names") == std::vector<std::string>{"x", "yz"});
  CHECK(f.attr_string("/a", "label") == "hello");
  CHECK(f.attr_double("/", "pi") == 3.25);
  CHECK(f.attr_int("/", "n") == 42);
  CHECK(f.list("/a") == std::vector<std::string>{"b"});
  CHECK(f.exists("/a/b/d"));
  CHECK_FALSE(f.exists("/a/c/d"));
  std::remove(p.c_str());
}

TEST_CASE("h5: errors name the file and the field", "[h5][badinput]") {
  const std::string p = tmp_path("err.h5");
  {
    auto f = h5::File::create(p);
    std::vector<double> d{1.0, std::numeric_limits<double>::quiet_NaN()};
    f.write("/nan", {2}, d.data());
    f.write("/ok", {2}, d.data());
  }
  auto f = h5::File::open_read(p);
  auto m = message_of([&] { f.read_f64("/missing"); });
  CHECK(m.find(p) != std::string::npos);
  CHECK(m.find("/missing") != std::string::npos);
  m = message_of([&] { f.read_f64("/nan"); });
  CHECK(m.find("/nan") != std::string::npos);
  CHECK(m.find("NaN") != std::string::npos);
  m = message_of([&] { h5::require_shape(f, "/ok", f.shape("/ok"), {3}); });
  CHECK(m.find("expected shape") != std::string::npos);
  m = message_of([&] { f.attr_string("/", "nope"); });
  CHECK(m.find("@nope") != std::string::npos);
  CHECK(message_of([] { h5::File::open_read("/nonexistent/x.h5"); }).find("no such file") != std::string::npos);
  std::remove(p.c_str());
}

TEST_CASE("h5: truncated and non-HDF5 files are rejected in one line", "[h5][badinput]") {
  const std::string p = tmp_path("trunc.h5");
  {
    auto f = h5::File::create(p);
    std::vector<double> d(1000, 1.0);
    f.write("/d", {1000}, d.data());
  }
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), 1200);
  }
  bool threw = false;
  try {
    auto f = h5::File::open_read(p);
    f.read_f64("/d");
  } catch (const UserError& e) {
    threw = true;
    CHECK(std::string(e.what()).find(p) != std::string::npos);
  }
  CHECK(threw);
  {
    std::ofstream out(p, std::ios::trunc);
    out << "not hdf5 at all";
  }
  CHECK(message_of([&] { h5::File::open_read(p); }).find("not an HDF5 file") != std::string::npos);
  std::remove(p.c_str());
}

TEST_CASE("h5: atomic output appears only on commit", "[h5]") {
  const std::string p = tmp_path("atomic.h5");
  std::string temp;
  {
    h5::AtomicOutput out(p);
    temp = out.temp_path();
    double x = 1.0;
    out.file().write("/x", {1}, &x);
    CHECK(exists(temp));
    CHECK_FALSE(exists(p));
  }  // destroyed without commit: nothing left
  CHECK_FALSE(exists(p));
  CHECK_FALSE(exists(temp));
  {
    h5::AtomicOutput out(p);
    double x = 2.0;
    out.file().write("/x", {1}, &x);
    out.commit();
  }
  CHECK(h5::File::open_read(p).read_f64("/x").data[0] == 2.0);
  std::remove(p.c_str());
}

TEST_CASE("h5: file:dataset specs split at the last ':/'", "[h5]") {
  CHECK(h5::split_file_dataset("a.h5:/x/y") == std::make_pair(std::string("a.h5"), std::string("/x/y")));
  CHECK(h5::split_file_dataset("dir:1/a.h5:/x") == std::make_pair(std::string("dir:1/a.h5"), std::string("/x")));
  CHECK(h5::split_file_dataset("a.h5") == std::make_pair(std::string("a.h5"), std::string("")));
}
