// Tree speculative verify on the GPU (the reference kernel's Op::tree and the path-accept kernel) against the CPU
// emulation, bit for bit (outputs, final state, stores, flushes), and against the mode-aware FP64 reference, on every
// tree shape: a chain (so a chain-shaped tree is the chain verify on the GPU too), a star, a full binary tree, an
// EAGLE-style sparse tree and random trees up to 64 nodes, with the overflow case's early flush.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/validation.h"
#include "reference/tree_verify.h"
#include "cuda_test_support.h"

using namespace replayssm;
using namespace replayssm::emu;
using namespace replayssm::cudatest;

namespace {

struct NamedTree {
  std::string label;
  std::vector<int> parents;
};

std::vector<int> random_tree(std::uint64_t seed, int T) {
  std::mt19937_64 rng(seed);
  std::vector<int> p;
  for (int i = 0; i < T; ++i) p.push_back(std::uniform_int_distribution<int>(-1, i - 1)(rng));
  return p;
}

bool same_bits(const CaseOutputs& a, const CaseOutputs& b) {
  return a.o == b.o && a.state == b.state && a.codes == b.codes && a.scales == b.scales && a.flushes == b.flushes &&
         a.n_tokens == b.n_tokens;
}

// The backend's tree ops ran the reference kernel's plan ("tree: reference (tree verify)").
bool ran_tree_plan(const DecodeBackend& be) {
  for (const std::string& line : be.launch_plans())
    if (line == "tree: reference (tree verify)") return true;
  return false;
}

void check_gpu_trees(Arch arch, const std::vector<NamedTree>& trees, bool main_formats) {
  DecodeBackend& dev = gpu();
  auto emu = make_emulated_backend();
  const Shape s = shapes_for("small", arch).at(0);
  std::uint64_t seed = 900;
  int runs = 0, identical = 0;
  for (const NamedTree& t : trees)
    for (const Case& c : tree_cases(16, t.parents, t.label)) {
      const CaseInputs in = make_inputs(s, c, seed++);
      const CaseOutputs fp64 = run_reference(in);
      for (const Mode& m0 : modes_for(arch, main_formats)) {
        const Mode m = tree_mode(m0, int(t.parents.size()));
        const CaseOutputs e = run_backend(*emu, m, in);
        const ModeAwareRun g = run_mode_aware(dev, m, c, in);
        const CheckRow r = check_vs_mode_aware(m, c, in, g, &fp64);
        INFO(arch_name(arch) << " " << m.name() << " " << c.name << "\n out: " << r.out.summary() << "\n "
                             << r.why);
        CHECK(same_bits(e, g.got));
        CHECK(r.pass);
        CHECK(ran_tree_plan(dev));
        ++runs;
        identical += same_bits(e, g.got) ? 1 : 0;
      }
    }
  std::printf("%s GPU tree verify, %zu trees, %s: %d of %d runs bit-identical to the emulation\n", arch_name(arch),
              trees.size(), main_formats ? "main formats" : "every format", identical, runs);
}

std::vector<NamedTree> all_trees() {
  return {{"chain:8", ref::DraftTree::chain(8).parent},   {"star:8", ref::DraftTree::star(8).parent},
          {"binary:3", ref::DraftTree::binary(3).parent}, {"4,2,2,1", ref::DraftTree::branching({4, 2, 2, 1}).parent},
          {"random:13", random_tree(5, 13)},              {"random:64", random_tree(6, 64)}};
}

}  // namespace

TEST_CASE("CUDA GDN tree verify: bits of the emulation, every tree shape, main formats", "[gpu][tree][gdn]") {
  check_gpu_trees(Arch::gdn, all_trees(), true);
}
TEST_CASE("CUDA Mamba-2 tree verify: bits of the emulation, every tree shape, main formats", "[gpu][tree][mamba2]") {
  check_gpu_trees(Arch::mamba2, all_trees(), true);
}
TEST_CASE("CUDA tree verify: bits of the emulation, every format, one sparse tree", "[gpu][tree]") {
  for (Arch a : {Arch::gdn, Arch::mamba2}) check_gpu_trees(a, {{"3,2,1", ref::DraftTree::branching({3, 2, 1}).parent}}, false);
}
