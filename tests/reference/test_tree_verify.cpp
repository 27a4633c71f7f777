// Tree speculative verify on single heads: ReplayHead::verify_tree (checkpoint + window, masked GDN solve, path
// accept by copying records) and ConventionalHead::verify_tree (one state per node) against the recurrent spec of
// every node's root path, on every tree shape (chain, star, binary, branching lists, random trees up to 64 nodes),
// after committed steps; and the chain-shaped tree against the chain verify.
#include <algorithm>
#include <random>
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

constexpr int kK = 6, kV = 4;  // non-square on purpose

using Gdn = GdnHeads<kK, kV>;
using Mamba2 = Mamba2Heads<kK, kV>;

State concat(const std::vector<Eigen::VectorXd>& os) {
  State f;
  for (const auto& o : os) append(f, o);
  return f;
}

// Random topologically ordered trees: a parent drawn uniformly from -1..i-1, or (deep) i - 1 with probability 0.7.
DraftTree random_tree(std::mt19937_64& rng, int T, bool deep) {
  DraftTree t;
  std::bernoulli_distribution chain_link(0.7);
  for (int i = 0; i < T; ++i) {
    std::uniform_int_distribution<int> U(-1, i - 1);
    t.parent.push_back(deep && i > 0 && chain_link(rng) ? i - 1 : U(rng));
  }
  return t;
}

std::vector<DraftTree> all_shapes(std::uint64_t seed) {
  std::vector<DraftTree> ts = {DraftTree::chain(1),  DraftTree::chain(7),    DraftTree::chain(64),
                               DraftTree::star(1),   DraftTree::star(5),     DraftTree::star(64),
                               DraftTree::binary(1), DraftTree::binary(3),   DraftTree::binary(5),
                               DraftTree::branching({4, 2, 2, 1}), DraftTree::branching({1, 3, 1, 2}),
                               DraftTree::branching({2, 1, 1, 1, 1, 1})};
  std::mt19937_64 rng(seed);
  for (int T : {2, 9, 33, 64})
    for (bool deep : {false, true}) ts.push_back(random_tree(rng, T, deep));
  return ts;
}

// Nodes to accept: none, the first and the last node, the deepest node, and one at random.
std::vector<int> accept_choices(const DraftTree& t, std::mt19937_64& rng) {
  int deepest = 0;
  for (int i = 0; i < t.size(); ++i)
    if (t.depth(i) > t.depth(deepest)) deepest = i;
  std::uniform_int_distribution<int> U(0, t.size() - 1);
  std::vector<int> c = {-1, 0, t.size() - 1, deepest, U(rng)};
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

struct Counts {
  int scenarios = 0, early_flushes = 0, accepts = 0;
};

// s committed steps, optionally a binary(2) tree verify (a chain of Tmax drafts where Tmax < 6) accepted at its last
// node (pushes n past L - 1), then the tree
// under test: its node outputs against the recurrent spec of each path, every accept choice against stepping the path,
// and L + 2 fresh steps after it (rejected records overwritten, the window flushes as usual).
template <class R>
void scenario(const typename R::In& pool, const State& s0, const DraftTree& tree, int L, int Tmax, int s, bool pre,
              std::mt19937_64& rng, Counts& counts) {
  const std::string form = std::string(R::name) + " tree";
  const Eigen::MatrixXd S0 = head_state(s0, 0, kV, kK);
  ReplayHead rh(R::rec_kind, kV, kK, L, Tmax, &S0);
  ConventionalHead ch(R::rec_kind, kV, kK, &S0);
  Eigen::MatrixXd truth = S0;  // the committed state, stepped recurrently
  int next = 0;
  const auto draft = [&](int count) {
    std::vector<HeadToken> d;
    for (int i = 0; i < count; ++i) d.push_back(R::token(pool, next++));
    return d;
  };
  for (int i = 0; i < s; ++i) {
    const HeadToken tok = R::token(pool, next++);
    rh.step(tok);
    ch.step(tok);
    recurrent_step(R::rec_kind, truth, tok);
  }
  if (pre) {
    const DraftTree t2 = Tmax >= 6 ? DraftTree::binary(2) : DraftTree::chain(Tmax);
    const auto d = draft(t2.size());
    rh.verify_tree(d, t2);
    ch.verify_tree(d, t2);
    rh.accept_path(t2.size() - 1);
    ch.accept_path(t2.size() - 1);
    tree_node_recurrent(R::rec_kind, Eigen::MatrixXd(truth), d, t2, t2.size() - 1, &truth);
  }
  const auto drafts = draft(tree.size());
  const int n_before = rh.n();
  const long long flushes_before = rh.flush_count();
  const auto vr = rh.verify_tree(drafts, tree);
  const auto vc = ch.verify_tree(drafts, tree);
  const bool early = rh.flush_count() != flushes_before;
  REQUIRE(early == (n_before + tree.size() > rh.capacity()));
  counts.early_flushes += early ? 1 : 0;
  ++counts.scenarios;
  State ref_o;
  for (int i = 0; i < tree.size(); ++i) append(ref_o, tree_node_recurrent(R::rec_kind, truth, drafts, tree, i));
  REF_REQUIRE_CLOSE(form + " replay o", ref_o, concat(vr));
  REF_REQUIRE_CLOSE(form + " conventional o", ref_o, concat(vc));

  const auto after = draft(L + 2);
  for (int node : accept_choices(tree, rng)) {
    CAPTURE(node);
    ReplayHead r2 = rh;
    ConventionalHead c2 = ch;
    r2.accept_path(node);
    c2.accept_path(node);
    REQUIRE(r2.n() == (early ? 0 : n_before) + tree.depth(node));
    Eigen::MatrixXd S = truth;
    if (node >= 0) tree_node_recurrent(R::rec_kind, truth, drafts, tree, node, &S);
    REF_REQUIRE_CLOSE(form + " replay accepted state", flat(S), flat(r2.materialize()));
    REF_REQUIRE_CLOSE(form + " conventional accepted state", flat(S), flat(c2.state()));
    State ref_after, got_r, got_c;
    for (const HeadToken& tok : after) {
      append(ref_after, recurrent_step(R::rec_kind, S, tok));
      append(got_r, r2.step(tok));
      append(got_c, c2.step(tok));
    }
    REF_REQUIRE_CLOSE(form + " replay stream after accept", ref_after, got_r);
    REF_REQUIRE_CLOSE(form + " conventional stream after accept", ref_after, got_c);
    REF_REQUIRE_CLOSE(form + " replay state after accept", flat(S), flat(r2.materialize()));
    ++counts.accepts;
  }
}

template <class R>
Counts all_scenarios(std::uint64_t seed, DecayRange d) {
  Counts counts;
  std::mt19937_64 rng(seed);
  const int L = 16;
  const State s0 = random_vector(seed + 77, std::size_t(kV * kK));
  for (const DraftTree& tree : all_shapes(seed)) {
    const auto pool = R::pool(seed * 31 + std::uint64_t(tree.size()), 2 * L + 6 + tree.size() + L + 2, d);
    for (int Tmax : {tree.size(), kMaxTreeNodes})
      for (int s : {1, L / 2, L - 1, L + 3})
        for (bool pre : {false, true}) {
          CAPTURE(tree.size(), Tmax, s, pre);
          scenario<R>(pool, s0, tree, L, Tmax, s, pre, rng, counts);
        }
  }
  return counts;
}

}  // namespace

TEST_CASE("draft tree shapes and their validation", "[reference]") {
  REQUIRE(DraftTree::chain(4).parent == std::vector<int>{-1, 0, 1, 2});
  REQUIRE(DraftTree::star(3).parent == std::vector<int>{-1, -1, -1});
  REQUIRE(DraftTree::binary(2).parent == std::vector<int>{-1, -1, 0, 0, 1, 1});
  REQUIRE(DraftTree::binary(5).size() == 62);
  REQUIRE(DraftTree::branching({4, 2, 2, 1}).size() == 4 + 8 + 16 + 16);
  REQUIRE(DraftTree::branching({2, 1}).parent == std::vector<int>{-1, -1, 0, 1});
  REQUIRE(DraftTree::chain(5).is_chain());
  REQUIRE_FALSE(DraftTree::binary(1).is_chain());
  REQUIRE(DraftTree::binary(2).path(5) == std::vector<int>{1, 5});
  REQUIRE(DraftTree::binary(2).depth(-1) == 0);
  REQUIRE(tree_from_text("4,2,2,1").size() == 44);
  REQUIRE(tree_from_text("chain").size() == 8);
  REQUIRE(tree_from_text("chain:64").is_chain());
  REQUIRE(tree_from_text("binary:5").size() == 62);
  REQUIRE(tree_from_text("star:3").parent == std::vector<int>{-1, -1, -1});

  const auto throws_with = [](auto&& f, const std::string& what) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(what) != std::string::npos);
      return;
    }
    FAIL("no std::invalid_argument for " + what);
  };
  throws_with([] { DraftTree{}.validate(); }, "no nodes");
  throws_with([] { DraftTree{{-1, 1}}.validate(); }, "node 1 has parent 1");
  throws_with([] { DraftTree{{-1, -2}}.validate(); }, "node 1 has parent -2");
  throws_with([] { DraftTree::branching({2, 0}); }, "depth 2");
  throws_with([] { DraftTree::chain(0); }, "chain");
  throws_with([] { DraftTree::binary(2).path(6); }, "node 6");
  throws_with([] { tree_from_text("chain:65"); }, "at most 64");
  throws_with([] { tree_from_text("binary:6"); }, "126 nodes");
  throws_with([] { tree_from_text("4,,2"); }, "branching factor");
  throws_with([] { tree_from_text("bush"); }, "expected chain");
  throws_with([] { tree_from_text("star:x"); }, "star size");
}

TEST_CASE("GDN tree verify: replay and conventional forms agree with every path's recurrence", "[reference]") {
  for (DecayRange d : {kDecayWide, kDecayNearOne, kDecayNearZero}) {
    const Counts c = all_scenarios<Gdn>(1, d);
    CAPTURE(c.scenarios, c.early_flushes, c.accepts);
    REQUIRE(c.early_flushes > 0);                // the early-flush rule was exercised
    REQUIRE(c.early_flushes < c.scenarios / 2);  // and so were verifies without it
  }
}

TEST_CASE("Mamba-2 tree verify: replay and conventional forms agree with every path's recurrence", "[reference]") {
  for (DecayRange d : {kDecayWide, kDecayNearOne, kDecayNearZero}) {
    const Counts c = all_scenarios<Mamba2>(2, d);
    REQUIRE(c.early_flushes > 0);
  }
}

template <class R>
void chain_tree_is_chain_verify(std::uint64_t seed) {
  const int L = 8;
  const State s0 = random_vector(seed, std::size_t(kV * kK));
  const Eigen::MatrixXd S0 = head_state(s0, 0, kV, kK);
  for (int T = 1; T <= 12; ++T)
    for (int a = 0; a <= T; ++a) {
      CAPTURE(T, a);
      const auto pool = R::pool(seed + std::uint64_t(T), 2 * L + T, kDecayWide);
      ReplayHead chain(R::rec_kind, kV, kK, L, 12, &S0);
      for (int i = 0; i < L + 2; ++i) chain.step(R::token(pool, i));  // a non-empty window
      ReplayHead tree = chain;
      std::vector<HeadToken> d;
      for (int i = 0; i < T; ++i) d.push_back(R::token(pool, L + 2 + i));
      REF_REQUIRE_CLOSE(std::string(R::name) + " chain tree vs chain verify o", concat(chain.verify(d)),
                        concat(tree.verify_tree(d, DraftTree::chain(T))));
      chain.accept(a);
      tree.accept_path(a - 1);
      REQUIRE(tree.n() == chain.n());
      REF_REQUIRE_CLOSE(std::string(R::name) + " chain tree vs chain accept", flat(chain.materialize()),
                        flat(tree.materialize()));
    }
}

TEST_CASE("a chain-shaped tree is the chain verify", "[reference]") {
  chain_tree_is_chain_verify<Gdn>(11);
  chain_tree_is_chain_verify<Mamba2>(12);
}

template <class R>
void unmasked_verify_fails(std::uint64_t seed) {
  // The chain verify of a star's drafts (every earlier draft read as an ancestor) is not the tree's: the comparison
  // against the paths' recurrence must reject it.
  const Eigen::MatrixXd S0 = head_state(random_vector(seed, std::size_t(kV * kK)), 0, kV, kK);
  const auto pool = R::pool(seed, 4, kDecayWide);
  std::vector<HeadToken> d;
  for (int i = 0; i < 4; ++i) d.push_back(R::token(pool, i));
  const DraftTree star = DraftTree::star(4);
  State truth;
  for (int i = 0; i < 4; ++i) append(truth, tree_node_recurrent(R::rec_kind, S0, d, star, i));
  ReplayHead rh(R::rec_kind, kV, kK, 16, 4, &S0);
  const auto cmp = replayssm::compare(truth, concat(rh.verify(d)), replayssm::kFp64FormTolerance);
  INFO(cmp.summary());
  REQUIRE_FALSE(cmp.pass);
}

TEST_CASE("tree verify refuses misuse, and an unmasked verify fails the check", "[reference]") {
  unmasked_verify_fails<Gdn>(21);
  unmasked_verify_fails<Mamba2>(22);
  const GdnInputs pool = random_gdn(3, 4, 1, 1, kK, kV);
  const std::vector<HeadToken> d = {gdn_head_token(pool, 0, 0), gdn_head_token(pool, 1, 0)};
  ReplayHead rh(Recurrence::kGdn, kV, kK, 16, 2);
  ConventionalHead ch(Recurrence::kGdn, kV, kK);
  REQUIRE_THROWS_AS(rh.accept_path(0), std::logic_error);
  REQUIRE_THROWS_AS(ch.accept_path(0), std::logic_error);
  REQUIRE_THROWS_AS(rh.verify_tree(d, DraftTree::star(3)), std::invalid_argument);  // 2 drafts, 3 nodes
  REQUIRE_THROWS_AS(rh.verify_tree(std::vector<HeadToken>(3, d[0]), DraftTree::star(3)),
                    std::invalid_argument);  // T > Tmax
  rh.verify_tree(d, DraftTree::star(2));
  ch.verify_tree(d, DraftTree::star(2));
  REQUIRE_THROWS_AS(rh.accept(1), std::logic_error);  // a tree's verify is accepted by path
  REQUIRE_THROWS_AS(ch.accept(1), std::logic_error);
  REQUIRE_THROWS_AS(rh.step(d[0]), std::logic_error);
  REQUIRE_THROWS_AS(rh.accept_path(2), std::invalid_argument);
  REQUIRE_THROWS_AS(ch.accept_path(-2), std::invalid_argument);
  rh.accept_path(1);
  ch.accept_path(1);
  REQUIRE(rh.n() == 1);
}
