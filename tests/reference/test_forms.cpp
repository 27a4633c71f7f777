// Every full-sequence form (chunked, replay standard decode) against the recurrent spec, both recurrences.
#include <string>
#include <vector>

#include "catch.hpp"
#include "ref_test_util.h"
#include "reference/reference.h"

namespace {

using namespace replayssm::ref;
using namespace replayssm::ref::test;
using State = std::vector<double>;

// The two recurrences behind one interface, so every test below runs on both. Grouped heads throughout
// (GDN Hk=2, Hv=4; Mamba-2 G=2, H=4) and non-square states (V=5 x K=6) to catch transposes.
struct Gdn {
  using In = GdnInputs;
  static constexpr const char* name = "gdn";
  static In make(std::uint64_t seed, int T, DecayRange d = kDecayWide) { return random_gdn(seed, T, 2, 4, 6, 5, d); }
  static LayerOutputs rec(const In& in, const State* s) { return gdn_recurrent(in, s); }
  static LayerOutputs chunked(const In& in, int c, const State* s) { return gdn_chunked(in, c, s); }
  static LayerOutputs replay(const In& in, int L, const State* s, std::vector<State>* f = nullptr) {
    return gdn_replay_decode(in, L, s, f);
  }
};
struct Mamba2 {
  using In = Mamba2Inputs;
  static constexpr const char* name = "mamba2";
  static In make(std::uint64_t seed, int T, DecayRange d = kDecayWide) { return random_mamba2(seed, T, 4, 2, 5, 6, d); }
  static LayerOutputs rec(const In& in, const State* s) { return mamba2_recurrent(in, s); }
  static LayerOutputs chunked(const In& in, int c, const State* s) { return mamba2_chunked(in, c, s); }
  static LayerOutputs replay(const In& in, int L, const State* s, std::vector<State>* f = nullptr) {
    return mamba2_replay_decode(in, L, s, f);
  }
};

template <class R>
void require_same(const std::string& form, const LayerOutputs& ref, const LayerOutputs& got) {
  const std::string f = std::string(R::name) + " " + form;
  REF_REQUIRE_CLOSE(f + " o", ref.o, got.o);
  REF_REQUIRE_CLOSE(f + " state", ref.final_state, got.final_state);
}

// Zero initial state for seed 1, a random non-zero one otherwise.
template <class R>
State initial_for(std::uint64_t seed, const typename R::In& in) {
  return seed == 1 ? State(std::size_t(in.state_size()), 0.0) : random_vector(seed + 1000, std::size_t(in.state_size()));
}

template <class R>
void replay_lengths() {
  for (std::uint64_t seed : {1u, 2u, 3u})
    for (int L : {8, 16, 32})
      for (int T : {1, L - 1, L, L + 1, 2 * L + 3}) {
        const auto in = R::make(seed * 100 + std::uint64_t(T), T);
        const State s0 = initial_for<R>(seed, in);
        CAPTURE(seed, L, T);
        require_same<R>("replay", R::rec(in, &s0), R::replay(in, L, &s0));
      }
}

template <class R>
void long_sequences() {
  const auto in = R::make(7, 1000);
  const State s0 = initial_for<R>(7, in);
  const LayerOutputs ref = R::rec(in, &s0);
  for (int L : {8, 16, 32}) {
    CAPTURE(L);
    require_same<R>("replay", ref, R::replay(in, L, &s0));
  }
  for (int chunk : {7, 64}) {
    CAPTURE(chunk);
    require_same<R>("chunked", ref, R::chunked(in, chunk, &s0));
  }
}

template <class R>
void chunk_sizes() {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto in = R::make(seed, 100);
    const State s0 = initial_for<R>(seed, in);
    const LayerOutputs ref = R::rec(in, &s0);
    for (int chunk : {1, 7, 16, 64, 100, 128}) {
      CAPTURE(seed, chunk);
      require_same<R>("chunked", ref, R::chunked(in, chunk, &s0));
    }
    for (int T : {1, 15, 16, 17}) {
      const auto small = R::make(seed * 10 + std::uint64_t(T), T);
      CAPTURE(seed, T);
      require_same<R>("chunked", R::rec(small, &s0), R::chunked(small, 16, &s0));
    }
  }
}

template <class R>
void decay_extremes() {
  for (DecayRange d : {kDecayNearOne, kDecayNearZero, kDecayWide}) {
    const auto in = R::make(11, 300, d);
    const State s0 = initial_for<R>(11, in);
    const LayerOutputs ref = R::rec(in, &s0);
    CAPTURE(d.mag_lo, d.mag_hi);
    require_same<R>("replay", ref, R::replay(in, 16, &s0));
    require_same<R>("chunked", ref, R::chunked(in, 7, &s0));
    require_same<R>("chunked", ref, R::chunked(in, 64, &s0));
  }
}

template <class R>
void flush_states() {
  const int L = 16, T = 100;
  const auto in = R::make(5, T);
  const State s0 = initial_for<R>(5, in);
  std::vector<State> flushes;
  R::replay(in, L, &s0, &flushes);
  REQUIRE(flushes.size() == std::size_t(T / L));
  for (std::size_t i = 0; i < flushes.size(); ++i) {
    std::vector<int> prefix;
    for (int t = 0; t < int(i + 1) * L; ++t) prefix.push_back(t);  // flush i is after step (i+1) L - 1
    CAPTURE(i);
    REF_REQUIRE_CLOSE(std::string(R::name) + " replay flush state", R::rec(select_steps(in, prefix), &s0).final_state,
                      flushes[i]);
  }
}

}  // namespace

TEST_CASE("replay decode equals the recurrent spec at T = 1, L-1, L, L+1, 2L+3 (L = 8, 16, 32)", "[reference]") {
  replay_lengths<Gdn>();
  replay_lengths<Mamba2>();
}

TEST_CASE("replay and chunked forms equal the recurrent spec over 1000 steps", "[reference]") {
  long_sequences<Gdn>();
  long_sequences<Mamba2>();
}

TEST_CASE("chunked forms: chunk sizes that do not divide T, chunk > T, chunk = 1", "[reference]") {
  chunk_sizes<Gdn>();
  chunk_sizes<Mamba2>();
}

TEST_CASE("all forms at decays near 1 (g = -1e-4) and near 0 (g = -10)", "[reference]") {
  decay_extremes<Gdn>();
  decay_extremes<Mamba2>();
}

TEST_CASE("replay decode exposes the materialised state at every flush", "[reference]") {
  flush_states<Gdn>();
  flush_states<Mamba2>();
}

TEST_CASE("grouped heads follow the repeat_interleave convention", "[reference]") {
  // Value head h must read key head h / (Hv / Hk): heads 0,1 -> key 0, heads 2,3 -> key 1. Build the same layer
  // as four independent single-head layers and compare.
  const GdnInputs in = random_gdn(21, 40, 2, 4, 6, 5);
  const LayerOutputs all = gdn_recurrent(in);
  for (int h = 0; h < 4; ++h) {
    GdnInputs one;
    one.T = in.T, one.Hk = 1, one.Hv = 1, one.K = in.K, one.V = in.V, one.scale = in.scale;
    std::vector<double> o_h;
    for (int t = 0; t < in.T; ++t) {
      const int kh = h / 2;
      one.q.insert(one.q.end(), in.q.begin() + (t * 2 + kh) * 6, in.q.begin() + (t * 2 + kh + 1) * 6);
      one.k.insert(one.k.end(), in.k.begin() + (t * 2 + kh) * 6, in.k.begin() + (t * 2 + kh + 1) * 6);
      one.v.insert(one.v.end(), in.v.begin() + (t * 4 + h) * 5, in.v.begin() + (t * 4 + h + 1) * 5);
      one.g.push_back(in.g[std::size_t(t * 4 + h)]);
      one.beta.push_back(in.beta[std::size_t(t * 4 + h)]);
      o_h.insert(o_h.end(), all.o.begin() + (t * 4 + h) * 5, all.o.begin() + (t * 4 + h + 1) * 5);
    }
    REF_REQUIRE_CLOSE("gdn grouping", gdn_recurrent(one).o, o_h);
  }
  const Mamba2Inputs m = random_mamba2(22, 40, 4, 2, 5, 6);
  const LayerOutputs mall = mamba2_recurrent(m);
  for (int h = 0; h < 4; ++h) {
    Mamba2Inputs one;
    one.T = m.T, one.H = 1, one.G = 1, one.P = m.P, one.N = m.N;
    one.A = {m.A[std::size_t(h)]};
    one.D = {m.D[std::size_t(h)]};
    std::vector<double> o_h;
    for (int t = 0; t < m.T; ++t) {
      const int gr = h / 2;
      one.x.insert(one.x.end(), m.x.begin() + (t * 4 + h) * 5, m.x.begin() + (t * 4 + h + 1) * 5);
      one.B.insert(one.B.end(), m.B.begin() + (t * 2 + gr) * 6, m.B.begin() + (t * 2 + gr + 1) * 6);
      one.C.insert(one.C.end(), m.C.begin() + (t * 2 + gr) * 6, m.C.begin() + (t * 2 + gr + 1) * 6);
      one.dt.push_back(m.dt[std::size_t(t * 4 + h)]);
      o_h.insert(o_h.end(), mall.o.begin() + (t * 4 + h) * 5, mall.o.begin() + (t * 4 + h + 1) * 5);
    }
    REF_REQUIRE_CLOSE("mamba2 grouping", mamba2_recurrent(one).o, o_h);
  }
}

TEST_CASE("batch wrappers run each sequence independently", "[reference]") {
  const std::vector<GdnInputs> g = {random_gdn(31, 20, 2, 4, 6, 5), random_gdn(32, 33, 2, 4, 6, 5)};
  const StateBatch gs = {{}, random_vector(33, std::size_t(g[1].state_size()))};
  const auto gr = gdn_recurrent_batch(g, &gs);
  const auto gc = gdn_chunked_batch(g, 7, &gs);
  const auto gp = gdn_replay_decode_batch(g, 16, &gs);
  REQUIRE(gr.size() == 2);
  REQUIRE(gr[0].o == gdn_recurrent(g[0]).o);
  REQUIRE(gr[1].final_state == gdn_recurrent(g[1], &gs[1]).final_state);
  for (std::size_t b = 0; b < 2; ++b) {
    require_same<Gdn>("chunked", gr[b], gc[b]);
    require_same<Gdn>("replay", gr[b], gp[b]);
  }
  const std::vector<Mamba2Inputs> m = {random_mamba2(34, 20, 4, 2, 5, 6), random_mamba2(35, 33, 4, 2, 5, 6)};
  const StateBatch ms = {random_vector(36, std::size_t(m[0].state_size())), {}};
  const auto mr = mamba2_recurrent_batch(m, &ms);
  const auto mc = mamba2_chunked_batch(m, 16, &ms);
  const auto mp = mamba2_replay_decode_batch(m, 8, &ms);
  REQUIRE(mr[1].o == mamba2_recurrent(m[1]).o);
  for (std::size_t b = 0; b < 2; ++b) {
    require_same<Mamba2>("chunked", mr[b], mc[b]);
    require_same<Mamba2>("replay", mr[b], mp[b]);
  }
}
