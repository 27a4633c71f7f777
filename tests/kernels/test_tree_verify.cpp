// Tree speculative verify in the CPU emulation: against the mode-aware FP64 reference on every tree shape and mode
// (tolerance_vs_mode_aware, as the chain verify), a chain-shaped tree bit for bit the chain verify in every mode, and
// a backend that verifies the wrong tree fails the check.
#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"
#include "reference/tree_verify.h"

using namespace replayssm;
using namespace replayssm::emu;

namespace {

std::vector<int> random_parents(std::uint64_t seed, int T) {
  std::mt19937_64 rng(seed);
  std::vector<int> p;
  for (int i = 0; i < T; ++i) p.push_back(std::uniform_int_distribution<int>(-1, i - 1)(rng));
  return p;
}

struct NamedTree {
  std::string label;
  std::vector<int> parents;
};

std::vector<NamedTree> trees() {
  return {{"chain:8", ref::DraftTree::chain(8).parent},
          {"star:8", ref::DraftTree::star(8).parent},
          {"binary:3", ref::DraftTree::binary(3).parent},
          {"4,2,2,1", ref::DraftTree::branching({4, 2, 2, 1}).parent},
          {"random:13", random_parents(5, 13)},
          {"random:64", random_parents(6, 64)}};
}

struct Worst {
  double ratio = 0.0, flip_use = 0.0;
  int rows = 0, fails = 0;
};

Worst check_trees(Arch arch, const std::vector<NamedTree>& ts, bool main_formats) {
  Worst w;
  const Shape s = shapes_for("small", arch).at(0);
  auto be = make_emulated_backend();
  std::uint64_t seed = 300;
  for (const NamedTree& t : ts)
    for (const Case& c : tree_cases(16, t.parents, t.label)) {
      const CaseInputs in = make_inputs(s, c, seed++);
      const CaseOutputs fp64 = run_reference(in);
      for (const Mode& m0 : modes_for(arch, main_formats)) {
        const Mode m = tree_mode(m0, int(t.parents.size()));
        const ModeAwareRun run = run_mode_aware(*be, m, c, in);
        const CheckRow r = check_vs_mode_aware(m, c, in, run, &fp64);
        INFO(r.kernel << " " << r.mode << " " << r.case_name << "\n out: " << r.out.summary()
                      << "\n state: " << r.state.summary() << "\n flips " << r.stores.flips << " illegal "
                      << r.stores.illegal << "\n " << r.why);
        CHECK(r.pass);
        CHECK(r.kernel == std::string(arch_name(arch)) + ".tree");
        CHECK(r.tol.rel_rms < 1e-3);
        ++w.rows;
        w.fails += r.pass ? 0 : 1;
        w.ratio = std::max(w.ratio, std::max(r.out.rel_rms, r.state.rel_rms) / r.tol.rel_rms);
        w.flip_use = std::max(w.flip_use, double(r.stores.flips) / (r.max_flip_fraction * double(r.stores.elements) +
                                                                    kFlipCountSlack));
      }
    }
  std::printf("%s tree verify, %zu trees, %s: %d rows, worst rel-RMS / bound %.3f, worst flips / allowed %.3f\n",
              arch_name(arch), ts.size(), main_formats ? "main formats" : "every format", w.rows, w.ratio, w.flip_use);
  return w;
}

// The same case with every chain verify turned into a tree verify of a chain (accepting node a - 1 for a drafts).
Case as_chain_trees(Case c) {
  for (Op& op : c.ops)
    if (op.verify) {
      op.tree = ref::DraftTree::chain(op.T).parent;
      op.accept -= 1;
    }
  c.name += " (chain tree)";
  return c;
}

bool bits_equal(const CaseOutputs& a, const CaseOutputs& b) {
  return a.o == b.o && a.state == b.state && a.codes == b.codes && a.scales == b.scales && a.flushes == b.flushes &&
         a.n_tokens == b.n_tokens;
}

// A backend that verifies a star of the same size whatever tree it is given (every node read from the committed state).
class StarTreeBackend final : public DecodeBackend {
 public:
  std::string name() const override { return "star-tree"; }
  std::string device() const override { return "cpu"; }
  void init(const Dims& d, const Mode& m, const float* S0) override { be_->init(d, m, S0); }
  void step(const TokenBatch& in, float* o) override { be_->step(in, o); }
  void verify(const TokenBatch& in, float* o) override { be_->verify(in, o); }
  void accept(const int* a) override { be_->accept(a); }
  void verify_tree(const TokenBatch& in, const int*, float* o) override {
    star_.assign(std::size_t(in.T), -1);
    be_->verify_tree(in, star_.data(), o);
  }
  void accept_path(const int* node) override { be_->accept_path(node); }
  void state(float* S) override { be_->state(S); }
  void stored(std::vector<std::uint8_t>& c, std::vector<std::uint8_t>& s) override { be_->stored(c, s); }
  long flushes() const override { return be_->flushes(); }

 private:
  std::unique_ptr<DecodeBackend> be_ = make_emulated_backend();
  std::vector<int> star_;
};

}  // namespace

TEST_CASE("GDN tree verify: emulation vs the mode-aware reference, main formats, every tree shape", "[kernels]") {
  CHECK(check_trees(Arch::gdn, trees(), true).fails == 0);
}

TEST_CASE("Mamba-2 tree verify: emulation vs the mode-aware reference, main formats, every tree shape", "[kernels]") {
  CHECK(check_trees(Arch::mamba2, trees(), true).fails == 0);
}

TEST_CASE("tree verify: emulation vs the mode-aware reference, every format, one sparse tree", "[kernels]") {
  for (Arch arch : {Arch::gdn, Arch::mamba2})
    CHECK(check_trees(arch, {{"3,2,1", ref::DraftTree::branching({3, 2, 1}).parent}}, false).fails == 0);
}

TEST_CASE("a chain-shaped tree verify is bit for bit the chain verify in every mode", "[kernels]") {
  for (Arch arch : {Arch::gdn, Arch::mamba2}) {
    const Shape s = shapes_for("small", arch).at(0);
    std::vector<Case> cases;
    for (const Case& c : cases_for(16, 8, true, 40))
      if (std::any_of(c.ops.begin(), c.ops.end(), [](const Op& op) { return op.verify; })) cases.push_back(c);
    cases.push_back(two_early_flushes_case(16, 8));
    cases.push_back(step_at_capacity_case(16, 8));
    auto be = make_emulated_backend();
    int runs = 0, identical = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const CaseInputs in = make_inputs(s, cases[i], 700 + i);
      CaseInputs tin = in;
      tin.op_list = as_chain_trees(cases[i]).ops;
      for (const Mode& m : modes_for(arch, false)) {
        const CaseOutputs chain = run_backend(*be, m, in);
        const CaseOutputs tree = run_backend(*be, m, tin);
        INFO(arch_name(arch) << " " << m.name() << " " << cases[i].name);
        CHECK(bits_equal(chain, tree));
        ++runs;
        identical += bits_equal(chain, tree) ? 1 : 0;
      }
    }
    std::printf("%s chain-shaped tree vs chain verify: %d of %d mode x case runs bit-identical\n", arch_name(arch),
                identical, runs);
  }
}

TEST_CASE("a backend that verifies the wrong tree fails the mode-aware check", "[kernels]") {
  for (Arch arch : {Arch::gdn, Arch::mamba2}) {
    const Shape s = shapes_for("small", arch).at(0);
    const std::vector<int> parents = ref::DraftTree::binary(2).parent;
    const Case c = tree_cases(16, parents, "binary:2").at(0);
    const CaseInputs in = make_inputs(s, c, 17);
    StarTreeBackend wrong;
    auto right = make_emulated_backend();
    for (const Mode& m0 : modes_for(arch, true)) {
      const Mode m = tree_mode(m0, int(parents.size()));
      INFO(arch_name(arch) << " " << m.name());
      CHECK(check_vs_mode_aware(m, c, in, run_mode_aware(*right, m, c, in)).pass);
      CHECK_FALSE(check_vs_mode_aware(m, c, in, run_mode_aware(wrong, m, c, in)).pass);
    }
  }
}

TEST_CASE("tree verify refuses bad trees and misuse", "[kernels]") {
  const Shape s = shapes_for("small", Arch::gdn).at(0);
  Mode m;
  m.max_drafts = 4;
  const Case c = tree_cases(16, {-1, 0}, "chain:2").at(0);
  const CaseInputs in = make_inputs(s, c, 3);
  auto be = make_emulated_backend();
  be->init(s.dims, m, in.S0.data());
  std::vector<float> o(std::size_t(s.dims.B) * 2 * s.dims.H * s.dims.V);
  const std::size_t tree_op = std::size_t(std::find_if(c.ops.begin(), c.ops.end(), [](const Op& op) {
                                            return op.verify;
                                          }) - c.ops.begin());
  const TokenBatch two = in.ops[tree_op].view();
  const int bad[2] = {-1, 1};
  REQUIRE_THROWS_AS(be->verify_tree(two, bad, o.data()), std::invalid_argument);
  const int good[2] = {-1, 0};
  const int node[2] = {1, -1}, far[2] = {2, 0};
  REQUIRE_THROWS_AS(be->accept_path(node), std::logic_error);
  be->verify_tree(two, good, o.data());
  REQUIRE_THROWS_AS(be->accept(node), std::logic_error);
  REQUIRE_THROWS_AS(be->accept_path(far), std::invalid_argument);
  be->accept_path(node);
  REQUIRE_THROWS_AS(tree_cases(16, {0}, "bad"), std::invalid_argument);
  auto mar = make_mode_aware_reference();
  mar->init(s.dims, m, in.S0.data());
  REQUIRE_THROWS_AS(mar->verify_tree(two, bad, o.data()), std::invalid_argument);
}
