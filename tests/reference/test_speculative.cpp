// Speculative verify on single heads: ReplayHead (append T records, accept = pointer move) and ConventionalHead
// (T snapshots, restore one) against the recurrent spec of the accepted stream.
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "head_test_util.h"
#include "ref_test_util.h"
#include "reference/reference.h"

namespace {

using namespace replayssm::ref;
using namespace replayssm::ref::test;
using State = std::vector<double>;

constexpr int kK = 5, kV = 4;  // non-square on purpose

using Gdn = GdnHeads<kK, kV>;
using Mamba2 = Mamba2Heads<kK, kV>;

struct Counts {
  int scenarios = 0, early_flushes = 0;
};

// One scenario: s standard steps, optionally a verify of Tmax drafts all accepted (pushes n past L - 1), then
// the verify under test (T drafts, accept a), then L + 2 standard steps with fresh tokens.
template <class R>
void scenario(const typename R::In& pool, const State& s0, int L, int Tmax, int s, bool pre_verify, int T, int a,
              Counts& counts) {
  const std::string form = std::string(R::name);
  const Eigen::MatrixXd S0 = head_state(s0, 0, kV, kK);
  ReplayHead rh(R::rec_kind, kV, kK, L, Tmax, &S0);
  ConventionalHead ch(R::rec_kind, kV, kK, &S0);
  std::vector<int> accepted;  // pool indices of the accepted stream
  std::vector<double> got_r, got_c;  // outputs of the accepted stream, as each form produced them
  int next = 0;
  const auto standard_step = [&] {
    const HeadToken tok = R::token(pool, next);
    append(got_r, rh.step(tok));
    append(got_c, ch.step(tok));
    accepted.push_back(next++);
  };
  const auto draft = [&](int count, std::vector<int>& idx) {
    std::vector<HeadToken> d;
    for (int i = 0; i < count; ++i) {
      idx.push_back(next);
      d.push_back(R::token(pool, next++));
    }
    return d;
  };

  for (int i = 0; i < s; ++i) standard_step();
  if (pre_verify) {
    std::vector<int> idx;
    const auto d = draft(Tmax, idx);
    const auto vr = rh.verify(d);
    const auto vc = ch.verify(d);
    rh.accept(Tmax);
    ch.accept(Tmax);
    for (int i = 0; i < Tmax; ++i) {
      append(got_r, vr[std::size_t(i)]);
      append(got_c, vc[std::size_t(i)]);
      accepted.push_back(idx[std::size_t(i)]);
    }
  }

  // The verify under test.
  std::vector<int> idx;
  const auto d = draft(T, idx);
  const int n_before = rh.n();
  const long long flushes_before = rh.flush_count();
  const auto vr = rh.verify(d);
  const auto vc = ch.verify(d);
  const bool early = rh.flush_count() != flushes_before;
  REQUIRE(early == (n_before + T > L - 1 + Tmax));
  counts.early_flushes += early ? 1 : 0;
  ++counts.scenarios;
  {
    std::vector<int> with_drafts = accepted;
    with_drafts.insert(with_drafts.end(), idx.begin(), idx.end());
    const LayerOutputs truth = R::rec(select_steps(pool, with_drafts), &s0);
    std::vector<double> ref_d(truth.o.end() - std::ptrdiff_t(T * kV), truth.o.end());
    std::vector<double> got_vr, got_vc;
    for (int i = 0; i < T; ++i) {
      append(got_vr, vr[std::size_t(i)]);
      append(got_vc, vc[std::size_t(i)]);
    }
    REF_REQUIRE_CLOSE(form + " replay verify o", ref_d, got_vr);
    REF_REQUIRE_CLOSE(form + " conventional verify o", ref_d, got_vc);
  }
  rh.accept(a);
  ch.accept(a);
  for (int i = 0; i < a; ++i) {
    append(got_r, vr[std::size_t(i)]);
    append(got_c, vc[std::size_t(i)]);
    accepted.push_back(idx[std::size_t(i)]);
  }
  {
    const LayerOutputs truth = R::rec(select_steps(pool, accepted), &s0);
    REF_REQUIRE_CLOSE(form + " replay accept state", truth.final_state, flat(rh.materialize()));
    REF_REQUIRE_CLOSE(form + " conventional accept state", truth.final_state, flat(ch.state()));
  }

  // Fresh tokens after the rejected drafts overwrite their records; the window must flush normally.
  for (int i = 0; i < L + 2; ++i) standard_step();
  const LayerOutputs truth = R::rec(select_steps(pool, accepted), &s0);
  REF_REQUIRE_CLOSE(form + " replay verify stream o", truth.o, got_r);
  REF_REQUIRE_CLOSE(form + " conventional verify stream o", truth.o, got_c);
  REF_REQUIRE_CLOSE(form + " replay verify stream state", truth.final_state, flat(rh.materialize()));
  REF_REQUIRE_CLOSE(form + " conventional verify stream state", truth.final_state, flat(ch.state()));
}

template <class R>
Counts all_scenarios(std::uint64_t seed, DecayRange d) {
  Counts counts;
  for (int L : {8, 16}) {
    const auto pool = R::pool(seed * 31 + std::uint64_t(L), 3 * L + 32, d);
    const State s0 = random_vector(seed + 77, std::size_t(kV * kK));
    for (int T = 1; T <= 8; ++T)
      for (int Tmax : {T, 8}) {
        if (Tmax == 8 && T == 8) continue;  // already covered by Tmax = T
        for (int s : {0, 1, L / 2, L - 2, L - 1, L + 3})
          for (bool pre : {false, true})
            for (int a = 0; a <= T; ++a) {
              CAPTURE(L, T, Tmax, s, pre, a);
              scenario<R>(pool, s0, L, Tmax, s, pre, T, a, counts);
            }
      }
  }
  return counts;
}

}  // namespace

TEST_CASE("GDN speculative verify: every accepted length at every fill level", "[reference]") {
  for (DecayRange d : {kDecayWide, kDecayNearOne, kDecayNearZero}) {
    const Counts c = all_scenarios<Gdn>(1, d);
    CAPTURE(c.scenarios, c.early_flushes);
    REQUIRE(c.early_flushes > 0);                // the early-flush rule was exercised
    REQUIRE(c.early_flushes < c.scenarios / 2);  // and so were verifies without it
  }
}

TEST_CASE("Mamba-2 speculative verify: every accepted length at every fill level", "[reference]") {
  for (DecayRange d : {kDecayWide, kDecayNearOne, kDecayNearZero}) {
    const Counts c = all_scenarios<Mamba2>(2, d);
    REQUIRE(c.early_flushes > 0);
  }
}

TEST_CASE("decoder heads refuse misuse", "[reference]") {
  const GdnInputs pool = random_gdn(3, 4, 1, 1, kK, kV);
  ReplayHead rh(Recurrence::kGdn, kV, kK, 16, 4);
  ConventionalHead ch(Recurrence::kGdn, kV, kK);
  const std::vector<HeadToken> d = {gdn_head_token(pool, 0, 0), gdn_head_token(pool, 1, 0)};
  REQUIRE_THROWS_AS(rh.accept(0), std::logic_error);
  REQUIRE_THROWS_AS(ch.accept(0), std::logic_error);
  rh.verify(d);
  ch.verify(d);
  REQUIRE_THROWS_AS(rh.step(d[0]), std::logic_error);
  REQUIRE_THROWS_AS(ch.step(d[0]), std::logic_error);
  REQUIRE_THROWS_AS(rh.accept(3), std::invalid_argument);
  REQUIRE_THROWS_AS(ch.accept(3), std::invalid_argument);
  rh.accept(2);
  ch.accept(2);
  REQUIRE(rh.n() == 2);
  REQUIRE_THROWS_AS(rh.verify(std::vector<HeadToken>(5, d[0])), std::invalid_argument);  // T > Tmax
  REQUIRE_THROWS_AS(ReplayHead(Recurrence::kGdn, kV, kK, 0, 1), std::invalid_argument);
}
