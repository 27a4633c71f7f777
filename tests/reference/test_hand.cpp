// Hand-computed cases (exact in binary, worked on paper), input validation, and proof that the checks can fail.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ref_test_util.h"
#include "reference/reference.h"

namespace {

using namespace replayssm::ref;
using namespace replayssm::ref::test;
using replayssm::compare;
using replayssm::kFp64FormTolerance;
using State = std::vector<double>;

// exp(log(0.5)) may differ from 0.5 in the last bit; everything else below is exact.
constexpr replayssm::Tolerance kHand{1e-15, 1e-15, 0.0};

void require_hand(const std::string& what, const std::vector<double>& expected, const std::vector<double>& got) {
  const replayssm::Comparison c = compare(expected, got, kHand);
  INFO(what + ": " + c.summary());
  REQUIRE(c.pass);
}

// GDN, K = V = 2, T = 2, scale 1, S0 = [[1, 2], [3, 4]] (rows = value index).
//  t=1: alpha 1, beta 1/2, k = (1,0), v = (2,4), q = (1,1):
//       S0 k = (1,3); u = (1/2)((2,4) - (1,3)) = (1/2, 1/2); S1 = S0 + u k^T = [[1.5, 2], [3.5, 4]];
//       o1 = S1 q = (3.5, 7.5).
//  t=2: alpha 1/2, beta 1, k = (0,1), v = (3,-1), q = (2,1):
//       S1 k = (2,4); u = (3,-1) - (1/2)(2,4) = (2,-3); S2 = S1/2 + u k^T = [[0.75, 3], [1.75, -1]];
//       o2 = S2 q = (4.5, 2.5).   Check: alpha S1 (I - k k^T) + v k^T gives the same S2.
GdnInputs hand_gdn() {
  GdnInputs in;
  in.T = 2, in.Hk = 1, in.Hv = 1, in.K = 2, in.V = 2, in.scale = 1.0;
  in.q = {1, 1, 2, 1};
  in.k = {1, 0, 0, 1};
  in.v = {2, 4, 3, -1};
  in.g = {0.0, std::log(0.5)};
  in.beta = {0.5, 1.0};
  return in;
}
const State kGdnS0 = {1, 2, 3, 4};
const State kGdnO = {3.5, 7.5, 4.5, 2.5};
const State kGdnS1 = {1.5, 2, 3.5, 4};
const State kGdnS2 = {0.75, 3, 1.75, -1};

// Mamba-2, P = N = 2, T = 2, S0 = 0, A = 2 log(1/2), dt = 1/2 (so a = 1/2), D = 1.
//  t=1: x = (2,4) -> v = (1,2), B = (1,0), C = (1,1): S1 = [[1,0],[2,0]], y1 = (1,2) + (2,4) = (3,6).
//  t=2: x = (2,-2) -> v = (1,-1), B = (0,1), C = (2,1): S2 = S1/2 + v B^T = [[0.5,1],[1,-1]],
//       y2 = (2,1) + (2,-2) = (4,-1).
Mamba2Inputs hand_mamba2() {
  Mamba2Inputs in;
  in.T = 2, in.H = 1, in.G = 1, in.P = 2, in.N = 2;
  in.x = {2, 4, 2, -2};
  in.B = {1, 0, 0, 1};
  in.C = {1, 1, 2, 1};
  in.dt = {0.5, 0.5};
  in.A = {2.0 * std::log(0.5)};
  in.D = {1.0};
  return in;
}
const State kMambaO = {3, 6, 4, -1};
const State kMambaS1 = {1, 0, 2, 0};
const State kMambaS2 = {0.5, 1, 1, -1};

std::vector<double> flat(const Eigen::MatrixXd& S) {
  std::vector<double> f(std::size_t(S.size()));
  put_head_state(f, 0, S);
  return f;
}

template <class Fn>
std::string what_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST_CASE("hand-computed GDN case, every form", "[reference]") {
  const GdnInputs in = hand_gdn();
  for (const LayerOutputs& r : {gdn_recurrent(in, &kGdnS0), gdn_chunked(in, 1, &kGdnS0), gdn_chunked(in, 2, &kGdnS0),
                                gdn_chunked(in, 5, &kGdnS0), gdn_replay_decode(in, 1, &kGdnS0),
                                gdn_replay_decode(in, 2, &kGdnS0), gdn_replay_decode(in, 16, &kGdnS0)}) {
    require_hand("gdn o", kGdnO, r.o);
    require_hand("gdn S2", kGdnS2, r.final_state);
  }
  const Eigen::MatrixXd S0 = head_state(kGdnS0, 0, 2, 2);
  ReplayHead rh(Recurrence::kGdn, 2, 2, 16, 2, &S0);
  ConventionalHead ch(Recurrence::kGdn, 2, 2, &S0);
  const std::vector<HeadToken> d = {gdn_head_token(in, 0, 0), gdn_head_token(in, 1, 0)};
  for (const auto& v : {rh.verify(d), ch.verify(d)}) require_hand("gdn verify o", kGdnO, {v[0](0), v[0](1), v[1](0), v[1](1)});
  rh.accept(1);
  ch.accept(1);
  require_hand("gdn replay accept(1)", kGdnS1, flat(rh.materialize()));
  require_hand("gdn conventional accept(1)", kGdnS1, flat(ch.state()));
}

TEST_CASE("hand-computed Mamba-2 case, every form", "[reference]") {
  const Mamba2Inputs in = hand_mamba2();
  for (const LayerOutputs& r : {mamba2_recurrent(in), mamba2_chunked(in, 1), mamba2_chunked(in, 2), mamba2_chunked(in, 3),
                                mamba2_replay_decode(in, 1), mamba2_replay_decode(in, 2), mamba2_replay_decode(in, 16)}) {
    require_hand("mamba2 y", kMambaO, r.o);
    require_hand("mamba2 S2", kMambaS2, r.final_state);
  }
  ReplayHead rh(Recurrence::kMamba2, 2, 2, 16, 2);
  const std::vector<HeadToken> d = {mamba2_head_token(in, 0, 0), mamba2_head_token(in, 1, 0)};
  const auto v = rh.verify(d);
  require_hand("mamba2 verify y", kMambaO, {v[0](0), v[0](1), v[1](0), v[1](1)});
  rh.accept(1);
  require_hand("mamba2 accept(1)", kMambaS1, flat(rh.materialize()));
}

TEST_CASE("the flush step follows the article's window (L = 16)", "[reference]") {
  // Checkpoint = state after step 100; steps 101..115 append; step 116 fills slot 16 and flushes, returning
  // the recurrent o_116; the next window starts at step 117. (Steps are 1-based here, pool index = step - 1.)
  const GdnInputs in = random_gdn(41, 120, 1, 1, 4, 3);
  const auto steps = [](int first, int last) {
    std::vector<int> s;
    for (int t = first; t <= last; ++t) s.push_back(t - 1);
    return s;
  };
  const Eigen::MatrixXd S100 = head_state(gdn_recurrent(select_steps(in, steps(1, 100))).final_state, 0, 3, 4);
  const LayerOutputs ref = gdn_recurrent(select_steps(in, steps(1, 117)));
  ReplayHead w(Recurrence::kGdn, 3, 4, 16, 1, &S100);
  std::vector<double> o;
  for (int t = 101; t <= 117; ++t) {
    const Eigen::VectorXd y = w.step(gdn_head_token(in, t - 1, 0));
    o.insert(o.end(), y.data(), y.data() + y.size());
    if (t <= 115) {
      REQUIRE(w.n() == t - 100);
      REQUIRE(w.flush_count() == 0);
    } else if (t == 116) {
      REQUIRE(w.n() == 0);
      REQUIRE(w.flush_count() == 1);
      REF_REQUIRE_CLOSE("gdn replay flush state", gdn_recurrent(select_steps(in, steps(1, 116))).final_state,
                        flat(w.checkpoint()));
    } else {
      REQUIRE(w.n() == 1);
    }
  }
  REF_REQUIRE_CLOSE("gdn replay o", std::vector<double>(ref.o.end() - 17 * 3, ref.o.end()), o);
}

TEST_CASE("the comparisons can fail", "[reference]") {
  const GdnInputs in = random_gdn(51, 1000, 2, 4, 6, 5);
  const LayerOutputs ref = gdn_recurrent(in);
  REQUIRE(compare(ref.o, gdn_replay_decode(in, 16).o, kFp64FormTolerance).pass);
  GdnInputs bumped = in;
  bumped.v[500 * 4 * 5 + 7] += 1e-9;  // one element of one step
  CHECK_FALSE(compare(ref.o, gdn_replay_decode(bumped, 16).o, kFp64FormTolerance).pass);
  CHECK_FALSE(compare(ref.o, gdn_chunked(bumped, 64).o, kFp64FormTolerance).pass);
  GdnInputs decayed = in;
  decayed.g[123] *= 1.0 + 1e-9;
  CHECK_FALSE(compare(ref.o, gdn_recurrent(decayed).o, kFp64FormTolerance).pass);
  // The wrong recurrence on the right inputs: a GDN stream replayed as Mamba-2 (v cached instead of u).
  ReplayHead wrong(Recurrence::kMamba2, 5, 6, 16);
  std::vector<double> o;
  for (int t = 0; t < 40; ++t) {
    const Eigen::VectorXd y = wrong.step(gdn_head_token(in, t, 0));
    o.insert(o.end(), y.data(), y.data() + y.size());
  }
  std::vector<int> first40;
  for (int t = 0; t < 40; ++t) first40.push_back(t);
  const LayerOutputs r40 = gdn_recurrent(select_steps(in, first40));
  std::vector<double> ref0;  // value head 0 of [T][4][5]
  for (int t = 0; t < 40; ++t) ref0.insert(ref0.end(), r40.o.begin() + t * 20, r40.o.begin() + t * 20 + 5);
  CHECK_FALSE(compare(ref0, o, kFp64FormTolerance).pass);
  const Mamba2Inputs m = random_mamba2(52, 200, 4, 2, 5, 6);
  Mamba2Inputs mb = m;
  mb.x[1000] += 1e-9;
  CHECK_FALSE(compare(mamba2_recurrent(m).o, mamba2_chunked(mb, 16).o, kFp64FormTolerance).pass);
}

TEST_CASE("inputs are validated with the field named", "[reference]") {
  GdnInputs g = random_gdn(61, 3, 2, 4, 6, 5);
  REQUIRE_NOTHROW(g.validate());
  GdnInputs bad = g;
  bad.beta.pop_back();
  REQUIRE(what_of([&] { gdn_recurrent(bad); }).find("beta") == 0);
  bad = g;
  bad.Hv = 3;
  REQUIRE(what_of([&] { bad.validate(); }).find("Hv") == 0);
  bad = g;
  bad.k[4] = std::nan("");
  REQUIRE(what_of([&] { gdn_chunked(bad, 4); }).find("k: non-finite") == 0);
  bad = g;
  bad.scale = 0.0;
  REQUIRE(what_of([&] { bad.validate(); }).find("scale") == 0);
  const State wrong(7, 0.0);
  REQUIRE(what_of([&] { gdn_replay_decode(g, 16, &wrong); }).find("initial_state") == 0);
  REQUIRE(what_of([&] { gdn_chunked(g, 0); }).find("chunk") == 0);
  REQUIRE(what_of([&] { gdn_replay_decode(g, 0); }).find("L") == 0);

  Mamba2Inputs m = random_mamba2(62, 3, 4, 2, 5, 6);
  REQUIRE_NOTHROW(m.validate());
  Mamba2Inputs mbad = m;
  mbad.D.pop_back();
  REQUIRE(what_of([&] { mamba2_recurrent(mbad); }).find("D") == 0);
  mbad = m;
  mbad.D.clear();
  REQUIRE_NOTHROW(mbad.validate());
  mbad = m;
  mbad.G = 3;
  REQUIRE(what_of([&] { mamba2_replay_decode(mbad, 16); }).find("H") == 0);
  mbad = m;
  mbad.C.resize(5);
  REQUIRE(what_of([&] { mamba2_chunked(mbad, 4); }).find("C") == 0);
  mbad = m;
  mbad.P = 0;
  REQUIRE(what_of([&] { mbad.validate(); }).find("P") == 0);
}

TEST_CASE("T = 0 gives empty outputs and the initial state back", "[reference]") {
  GdnInputs g = random_gdn(71, 0, 2, 4, 6, 5);
  const State s0 = random_vector(72, std::size_t(g.state_size()));
  for (const LayerOutputs& r : {gdn_recurrent(g, &s0), gdn_chunked(g, 8, &s0), gdn_replay_decode(g, 16, &s0)}) {
    REQUIRE(r.o.empty());
    REQUIRE(r.final_state == s0);
  }
}
