// int8_ef (INT8 with an error-feedback residual): the store's statefulness, and that the feedback does what it is for.
// The bits are checked against the numpy oracle (check_feedback.py); these are the properties.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "catch.hpp"
#include "formats/state_codec.h"

using namespace replayssm::formats;
using Ef = StateCodec<FormatId::int8_ef>;
using I8 = StateCodec<FormatId::int8>;

namespace {

std::vector<float> random_state(std::mt19937& rng, int V, int K) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(V) * K);
  for (float& v : x) v = nd(rng);
  return x;
}

// Decay-free accumulation S_t = S_{t-1} + u_t through a store after every update, as a conventional step does (the
// next update reads the decoded store). Row 0 is pinned at 1 so each column's scale stays 1/127; the updates are
// ~0.4 of an INT8 step (most below half a step, which round-to-nearest alone drops). Returns the RMS error of the
// final decoded state against the exact sum (in FP64), relative to one INT8 step.
template <class C>
double accumulated_error(Scaling s, int stores, std::uint32_t seed) {
  const int V = 16, K = 32;
  const std::size_t n = static_cast<std::size_t>(V) * K;
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> exact(n);
  std::vector<float> x(n), dec(n);
  for (std::size_t i = 0; i < n; ++i) exact[i] = i < std::size_t(K) ? 1.0 : 0.25 * nd(rng);
  for (std::size_t i = 0; i < n; ++i) x[i] = float(exact[i]);
  std::vector<uint8_t> codes(C::code_bytes(V, K)), scales(C::scale_bytes(V, K, s));
  CodecParams p;
  p.scaling = s;
  const double step = 1.0 / 127.0;
  for (int t = 0; t < stores; ++t) {
    encode_state_after<C>(x.data(), V, K, p, t == 0 ? nullptr : codes.data(), t == 0 ? nullptr : scales.data(),
                          codes.data(), scales.data());
    C::decode_state(codes.data(), scales.data(), V, K, p, dec.data());
    for (std::size_t i = std::size_t(K); i < n; ++i) {
      const float u = float(0.4 * step * nd(rng));
      exact[i] += double(u);
      x[i] = dec[i] + u;
    }
    for (std::size_t i = 0; i < std::size_t(K); ++i) x[i] = dec[i];
  }
  double se = 0.0;
  for (std::size_t i = std::size_t(K); i < n; ++i) se += (double(dec[i]) - exact[i]) * (double(dec[i]) - exact[i]);
  // the last update is not stored yet: compare the state the last store saw
  return std::sqrt(se / double(n - std::size_t(K))) / step;
}

}  // namespace

TEST_CASE("int8_ef: error feedback bounds the error of a long decay-free accumulation; plain INT8 does not",
          "[formats][int8_ef]") {
  for (Scaling s : {Scaling::column, Scaling::row, Scaling::head, Scaling::block}) {
    INFO(scaling_name(s));
    const double plain = accumulated_error<I8>(s, 2000, 5);
    const double fed = accumulated_error<Ef>(s, 2000, 5);
    std::printf("%s: RMS error after 2000 stores, in INT8 steps: int8 %.3f, int8_ef %.3f\n", scaling_name(s), plain,
                fed);
    // The decoded state plus the stored residual is the exact sum but for the 4-bit rounding of each residual (an
    // unbiased 1/15 of a step: a random walk of ~0.02 sqrt(2000) ~ 0.9 steps) and the last residual (<= 1/2 step);
    // plain INT8 drops the updates below half a step and drifts like their random walk (~10 steps). A residual that
    // is not fed back, or is biased, fails here.
    CHECK(fed < 2.0);
    CHECK(plain > 4.0);
    CHECK(fed * 4.0 < plain);
  }
}

TEST_CASE("int8_ef: the first store is int8's; a store in place equals one from a separate previous state",
          "[formats][int8_ef]") {
  std::mt19937 rng(11);
  const int V = 7, K = 45;  // an odd element count (the last residual byte half used) and a short last block
  for (Scaling s : {Scaling::column, Scaling::row, Scaling::head, Scaling::block}) {
    INFO(scaling_name(s));
    CodecParams p;
    p.scaling = s;
    const auto x0 = random_state(rng, V, K), x1 = random_state(rng, V, K);
    std::vector<uint8_t> c0(Ef::code_bytes(V, K)), s0(Ef::scale_bytes(V, K, s));
    std::vector<uint8_t> ci(I8::code_bytes(V, K)), si(I8::scale_bytes(V, K, s));
    Ef::encode_state(x0.data(), V, K, p, c0.data(), s0.data());
    I8::encode_state(x0.data(), V, K, p, ci.data(), si.data());
    // the INT8 part and the scales of a first store are int8's: no residual was added
    CHECK(std::equal(ci.begin(), ci.end(), c0.begin()));
    CHECK(si == s0);
    std::vector<float> d0(x0.size()), di(x0.size());
    Ef::decode_state(c0.data(), s0.data(), V, K, p, d0.data());
    I8::decode_state(ci.data(), si.data(), V, K, p, di.data());
    CHECK(d0 == di);
    // a second store: into separate buffers, and in place over the first
    std::vector<uint8_t> c1(c0.size()), s1(s0.size()), cin = c0, sin = s0;
    encode_state_after<Ef>(x1.data(), V, K, p, c0.data(), s0.data(), c1.data(), s1.data());
    encode_state_after<Ef>(x1.data(), V, K, p, cin.data(), sin.data(), cin.data(), sin.data());
    CHECK(c1 == cin);
    CHECK(s1 == sin);
    // and it differs from a first store of x1 (the residual of x0's store was fed in)
    std::vector<uint8_t> cf(c0.size()), sf(s0.size());
    Ef::encode_state(x1.data(), V, K, p, cf.data(), sf.data());
    CHECK(cf != c1);
  }
}

TEST_CASE("int8_ef: residual codes stay in [-8, 7]; NaN stores 0 / 0; an Inf group decodes to NaN",
          "[formats][int8_ef]") {
  std::mt19937 rng(12);
  const int V = 8, K = 32;
  CodecParams p;
  p.scaling = Scaling::row;
  auto x = random_state(rng, V, K);
  std::vector<uint8_t> c(Ef::code_bytes(V, K)), s(Ef::scale_bytes(V, K, Scaling::row));
  Ef::encode_state(x.data(), V, K, p, c.data(), s.data());
  x[3] = std::nanf("");
  x[K + 1] = INFINITY;
  encode_state_after<Ef>(x.data(), V, K, p, c.data(), s.data(), c.data(), s.data());
  const std::size_t n = std::size_t(V) * K;
  for (std::size_t i = 0; i < n; ++i) {
    const int r = Ef::load_residual(c.data(), n, i);
    CHECK(r >= -8);
    CHECK(r <= 7);
  }
  CHECK(c[3] == 0);
  CHECK(Ef::load_residual(c.data(), n, 3) == 0);
  std::vector<float> y(n);
  Ef::decode_state(c.data(), s.data(), V, K, p, y.data());
  for (int k = 0; k < K; ++k) CHECK(std::isnan(y[std::size_t(K) + k]));  // row 1 holds the Inf: loud
  CHECK(std::isfinite(y[0]));
  CHECK(is_stateful(FormatId::int8_ef));
  CHECK(!is_stateful(FormatId::int8));
}
