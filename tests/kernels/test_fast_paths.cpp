// The speed paths of the CPU emulation and the FP64 runtime give exactly the bits of the definitions they replace:
// the AVX2 32-lane dot vs decode_math.h's canonical_dot (NaN payloads aside, see same()), the row-wise window helpers vs window_sum /
// window_state_elem, the vectorised amax vs the sequential one, the emulation's head codecs (AVX2 build of the shared
// StateCodec) vs StateCodec compiled plainly, and runtime::recurrent_step_fast vs ref::recurrent_step.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/decode_math.h"
#include "emulation/fast_dot.h"
#include "formats/state_codec.h"
#include "reference/head_record.h"
#include "runtime/fast_recurrence.h"

using namespace replayssm;

namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
std::uint64_t bits(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
// Equal bits, or both NaN: which NaN an x86 FMA / add returns when several operands are NaN depends on the operand
// order the compiler picks (the scalar path differs between an -mfma and a libm build too, and the GPU returns its
// canonical NaN), so NaN payloads and signs are not part of the contract.
bool same(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

// Normal values of mixed magnitudes with some zeros, signed zeros, subnormals and (optionally) NaN / Inf.
std::vector<float> values(std::mt19937& g, std::size_t n, bool specials) {
  std::vector<float> x(n);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 30), ex(-20, 20);
  for (auto& e : x) {
    e = std::ldexp(nd(g), ex(g));
    const int k = kind(g);
    if (k == 0) e = 0.0f;
    if (k == 1) e = -0.0f;
    if (k == 2) e = std::numeric_limits<float>::denorm_min() * float(g() % 100);
    if (specials && k == 3) e = std::numeric_limits<float>::quiet_NaN();
    if (specials && k == 4) e = -std::numeric_limits<float>::infinity();
  }
  return x;
}

}  // namespace

TEST_CASE("fast paths: AVX2 canonical dot (plain and prepared) == canonical_dot", "[kernels]") {
  std::mt19937 g(1);
  const emu::DotFn dot = emu::canonical_dot_fn();
  const emu::PreparedDot pdot = emu::canonical_dot_prepared_fns();
  INFO("dot path " << emu::canonical_dot_path());
  for (int K : {4, 36, 128, 256, 384, 132}) {
    for (int trial = 0; trial < 300; ++trial) {
      const auto x = values(g, std::size_t(K), trial % 5 == 0), y = values(g, std::size_t(K), false);
      const float want = emu::canonical_dot(x.data(), y.data(), K);
      CHECK(same(dot(x.data(), y.data(), K), want));
      std::vector<float> prep(static_cast<std::size_t>(K));
      pdot.prepare(y.data(), K, prep.data());
      CHECK(same(pdot.dot_prepared(x.data(), prep.data(), K), want));
    }
  }
}

TEST_CASE("fast paths: row-wise window helpers == window_sum / window_state_elem", "[kernels]") {
  std::mt19937 g(2);
  for (int m : {0, 1, 5, 16, 23}) {
    const int V = 24, K = 40;
    const auto coef = values(g, std::size_t(m) + 1, false), w = values(g, std::size_t(m + 1) * V, false);
    const auto scx = values(g, std::size_t(V), false), sc = values(g, std::size_t(K), false);
    const auto kk = values(g, std::size_t(m + 1) * K, false);
    const float total = 0.75f;
    std::vector<float> y(static_cast<std::size_t>(V)), row(static_cast<std::size_t>(K));
    emu::window_sum_rows(total, scx.data(), coef.data(), w.data(), V, m, V, y.data());
    for (int r = 0; r < V; ++r)
      CHECK(bits(y[std::size_t(r)]) == bits(emu::window_sum(total, scx[std::size_t(r)], coef.data(), w.data(), V, r, m)));
    emu::window_state_row(total, sc.data(), coef.data(), kk.data(), K, m, K, row.data());
    for (int c = 0; c < K; ++c)
      CHECK(bits(row[std::size_t(c)]) == bits(emu::window_state_elem(total, sc[std::size_t(c)], coef.data(), kk.data() + c, K, m)));
  }
}

TEST_CASE("fast paths: vectorised amax == sequential amax_ignore_nan", "[formats]") {
  std::mt19937 g(3);
  for (int n : {0, 1, 7, 16, 33, 128}) {
    for (int trial = 0; trial < 100; ++trial) {
      const auto x = values(g, std::size_t(n), true);
      float m = 0.0f;
      for (float e : x) m = formats::amax_ignore_nan(m, e);
      CHECK(bits(formats::amax_ignore_nan_n(x.data(), n, 0.0f)) == bits(m));
    }
  }
}

TEST_CASE("fast paths: emulation head codecs == StateCodec", "[formats]") {
  std::mt19937 g(4);
  using formats::FormatId;
  for (FormatId f : formats::kAllFormats)
    for (formats::Scaling s : formats::kAllScalings)
      for (formats::Rounding r : {formats::Rounding::rne, formats::Rounding::sr, formats::Rounding::philox}) {
        if (!formats::scaling_valid(f, s) || !formats::rounding_valid(f, r)) continue;
        emu::Mode m;
        m.format = f;
        m.scaling = s;
        m.rounding = r;
        m.seed = 7;
        for (auto [V, K] : {std::pair{16, 128}, std::pair{3, 36}, std::pair{5, 20}}) {
          const auto x = values(g, std::size_t(V) * std::size_t(K), true);
          const emu::StoreLayout lay = emu::store_layout(m, V, K);
          std::vector<std::uint8_t> c1(lay.code_bytes), s1(lay.scale_bytes), c2(lay.code_bytes), s2(lay.scale_bytes);
          emu::encode_head(m, x.data(), V, K, 3, 11, c1.data(), s1.data());
          const formats::CodecParams p{s, r, m.seed, 3, 11};
          std::vector<float> y1(x.size()), y2(x.size());
          formats::dispatch_format(f, [&](auto codec) {
            decltype(codec)::encode_state(x.data(), V, K, p, c2.data(), s2.data());
            decltype(codec)::decode_state(c1.data(), s1.data(), V, K, p, y2.data());
          });
          emu::decode_head(m, c1.data(), s1.data(), V, K, y1.data());
          INFO(formats::format_name(f) << " " << formats::scaling_name(s) << " " << formats::rounding_name(r) << " " << V
                                       << "x" << K);
          CHECK(c1 == c2);
          CHECK(s1 == s2);
          CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * 4) == 0);
          // a second store in place after the first (int8_ef feeds the first one's residual in)
          const auto x2 = values(g, std::size_t(V) * std::size_t(K), true);
          emu::encode_head(m, x2.data(), V, K, 3, 12, c1.data(), s1.data(), c1.data(), s1.data());
          const formats::CodecParams p2{s, r, m.seed, 3, 12};
          formats::dispatch_format(f, [&](auto codec) {
            formats::encode_state_after<decltype(codec)>(x2.data(), V, K, p2, c2.data(), s2.data(), c2.data(),
                                                         s2.data());
          });
          CHECK(c1 == c2);
          CHECK(s1 == s2);
        }
      }
}

TEST_CASE("fast paths: recurrent_step_fast == ref::recurrent_step", "[runtime]") {
  std::mt19937 g(5);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(0.3, 1.0);
  for (bool gdn : {true, false})
    for (auto [V, K] : {std::pair{128, 128}, std::pair{64, 128}, std::pair{16, 32}, std::pair{20, 256}, std::pair{2, 4},
                        std::pair{33, 140}}) {
      if (!runtime::recurrent_step_fast_ok(V, K)) continue;
      Eigen::MatrixXd S = Eigen::MatrixXd::Zero(V, K), S2 = S;
      std::vector<double> o(static_cast<std::size_t>(V)), scratch(2 * static_cast<std::size_t>(V));
      for (int t = 0; t < 20; ++t) {
        ref::HeadToken tok;
        tok.a = ud(g);
        tok.beta = ud(g);
        tok.v = Eigen::VectorXd::NullaryExpr(V, [&] { return nd(g); });
        tok.k = Eigen::VectorXd::NullaryExpr(K, [&] { return nd(g) / std::sqrt(double(K)); });
        tok.q = Eigen::VectorXd::NullaryExpr(K, [&] { return nd(g); });
        if (!gdn && t % 2 == 0) tok.skip = Eigen::VectorXd::NullaryExpr(V, [&] { return nd(g); });
        const Eigen::VectorXd want = ref::recurrent_step(gdn ? ref::Recurrence::kGdn : ref::Recurrence::kMamba2, S, tok);
        const runtime::StepHead h{S2.data(), tok.a, tok.beta, tok.v.data(), tok.k.data(), tok.q.data(),
                                  tok.skip.size() ? tok.skip.data() : nullptr, o.data()};
        runtime::recurrent_step_fast(gdn, h, V, K, scratch.data());
        INFO((gdn ? "gdn " : "mamba2 ") << V << "x" << K << " t " << t);
        for (int i = 0; i < V; ++i) REQUIRE(bits(o[std::size_t(i)]) == bits(want[i]));
        for (Eigen::Index i = 0; i < S.size(); ++i) REQUIRE(bits(S2.data()[i]) == bits(S.data()[i]));
      }
    }
}
