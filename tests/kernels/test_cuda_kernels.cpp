// The CUDA decode kernels against the emulation (bit-identical stores, outputs <= 1e-6 relative) and the FP64
// reference, for every kernel x mode on the awkward cases, and at the real head shapes at small batch; the tuned
// ReplaySSM op in each kernel layout (combined; split with a CTA per head; split with a CTA per group of heads).
// Exits 77 (skipped) when there is no CUDA device. The opt-in forms and the verify kernel's draft counts:
// test_cuda_forms.cpp (the same binary); shared helpers: cuda_test_support.h.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"
#include "kernels/common/decode_kernel.h"
#include "cuda_test_support.h"

using namespace replayssm;
using namespace replayssm::emu;
using namespace replayssm::cudatest;

namespace {

// The tuned kernel layouts each ReplaySSM case runs in, as launch-plan overrides (kernels/launch_plan.h): the combined
// kernel, the split kernels with a CTA per head (whole heads per flush CTA, two kernels), and the split kernels with
// every head of a group per CTA, the last claiming one flushing sequence where some flush, so that where several flush
// (the step flushes of the small shape's two sequences; the [overflow] cases' two early flushes at the real head dims)
// its flush CTAs stride through them. The [real-head] cases add two slices per flush CTA (a CTA's item starts at slice
// 2, which whole heads never reach), head_step_kernel's generic instantiation and its row-group form, and the fused
// step grid (told of every
// flushing sequence, and of one: one flush row strides through all).
// REPLAYSSM_TEST_LAYOUT=<name> keeps one (compute-sanitizer jobs, where the tripled GPU work takes too long under a sanitizer; a
// run with one layout covers only its kernel instantiations; tests that do not run that layout return before any
// assertion).
struct Layout {
  const char* name;
  const char* plan;
  bool split, grouped, fused;
  int slices;  // row slices per flush CTA it forces (0: the rule)
};
const std::string kGroupPlan = "layout=split,hint=1," + kAllHeads;
const Layout kLayouts[] = {{"combined", "layout=combined", false, false, false, 0},
                           {"split", "layout=split,heads=1,slices=whole,step=head", true, false, false, kern::kWholeHead},
                           {"group", kGroupPlan.c_str(), true, true, false, 0}};
const Layout kSlicePairs{"split-pairs", "layout=split,heads=1,slices=2", true, false, false, 2};
const Layout kSplitGeneric{"split-generic", "layout=split,heads=1,slices=whole,records=generic,step=head", true,
                           false, false, kern::kWholeHead};
// The FP32 step kernel with a CTA per row group (LaunchPlan hot=slice_step), which the rule picks at small batch.
const Layout kSplitSlice{"split-slice", "layout=split,heads=1,slices=whole,step=slice", true, false, false,
                         kern::kWholeHead};
// Conventional decode in every kernel form: conv_kernel (a warp's rows over all 32 lanes), conv_row8_kernel and the
// conv_row8_slices_kernel (2 or 4 slices per CTA where the shape has them), each forced by its override.
const Layout kConvLane{"conv-lane", "conv=lane", false, false, false, 0};
const Layout kConvRow8{"conv-row8", "conv=row8", false, false, false, 0};
const Layout kConvRow8x2{"conv-row8x2", "conv=row8x2", false, false, false, 0};
const Layout kConvRow8x4{"conv-row8x4", "conv=row8x4", false, false, false, 0};
const Layout kSplitFused{"split-fused", "layout=fused,heads=1,slices=whole", true, false, true, kern::kWholeHead};
const Layout kSplitFusedHint1{"split-fused-hint1", "layout=fused,heads=1,slices=whole,hint=1", true, false, true,
                              kern::kWholeHead};
std::vector<Layout> layouts_to_test(bool pairs, bool generic = false) {
  const char* e = std::getenv("REPLAYSSM_TEST_LAYOUT");
  const std::string v = e ? e : "";
  std::vector<Layout> all(std::begin(kLayouts), std::end(kLayouts));
  if (pairs) all.push_back(kSlicePairs);  // the caller passes pairs only where it differs from whole heads
  if (generic) {
    all.push_back(kSplitGeneric);
    all.push_back(kSplitSlice);
    all.push_back(kSplitFused);
    all.push_back(kSplitFusedHint1);
  }
  if (v.empty()) return all;
  for (const Layout& l : all)
    if (v == l.name) return {l};
  for (const Layout* l : {&kSlicePairs, &kSplitGeneric, &kSplitSlice, &kSplitFused, &kSplitFusedHint1})
    if (v == l->name) return {};  // a test without that layout: nothing to run
  std::printf("REPLAYSSM_TEST_LAYOUT: expected combined, split, group, split-pairs, split-generic, split-slice, "
              "split-fused or "
              "split-fused-hint1, got '%s'\n",
              v.c_str());
  std::exit(2);
}

// Whether a case's first ops are L steps (every case list here is built for L = 16): its L-th step flushes, which the
// split layout's flush kernel runs with whole-head CTAs where the test forces them. (step_at_capacity_case's
// flushing step has an early flush too, so its flush CTAs take one slice each: kern::step_flush_slices.)
bool has_step_flush(const Case& c) {
  constexpr int kL = 16;
  int steps = 0;
  while (steps < int(c.ops.size()) && !c.ops[steps].verify) ++steps;
  return steps >= kL;
}

bool has_step(const Case& c) {
  return std::any_of(c.ops.begin(), c.ops.end(), [](const auto& op) { return !op.verify; });
}

// The cases' groups, so that the long awkward list can run as several sanitizer processes: "steps", "long", and the
// verify cases in two halves, "verify-1" and "verify-2".
std::vector<std::string> case_groups(const std::vector<Case>& cases) {
  const auto is_verify = [](const Case& c) { return c.name.rfind("verify", 0) == 0; };
  const auto n_verify = std::count_if(cases.begin(), cases.end(), is_verify);
  std::vector<std::string> g;
  long seen = 0;
  for (const Case& c : cases) {
    if (is_verify(c)) g.push_back(2 * seen++ < n_verify ? "verify-1" : "verify-2");
    else g.push_back(c.name == "long" ? "long" : "steps");
  }
  return g;
}

// One policy per call, so that each (arch, policy) is its own test case: compute-sanitizer runs them as parallel
// processes (scripts/gpu_checks.sh), since one instrumented process over every mode takes too long.
// u: only GDN replay_split modes of that u source (the largest policy, split again for the sanitizer jobs).
// group: only the cases of that group (case_groups; "" = all); each case keeps the seed of its place in the list.
// pairs: the ReplaySSM runs add the split layout with two slices per flush CTA (kSlicePairs) where a head has more
// than two slices, and the split layout with head_step_kernel's generic instantiation (kSplitGeneric).
void check(const Shape& s, const std::vector<Case>& cases, bool main_formats, Policy policy, int u = -1,
           const std::string& group = "", bool pairs = false) {
  auto emu = make_emulated_backend();
  const std::vector<std::string> groups = case_groups(cases);
  // Conventional ops have no replay layouts: one run. ReplaySSM: every layout, and the grouped run must really group.
  const int nsplit = (s.dims.V + 31) / 32;  // 32-row slices per head
  const std::vector<Layout> settings = policy == Policy::conventional_shared
                                           ? std::vector<Layout>{kConvLane, kConvRow8, kConvRow8x2, kConvRow8x4}
                                           : layouts_to_test(pairs && nsplit > 2, pairs);
  if (settings.empty()) return;  // REPLAYSSM_TEST_LAYOUT names a layout this test does not run
  const bool forced_groups = policy != Policy::conventional_shared &&
                             std::any_of(settings.begin(), settings.end(), [](const Layout& l) { return l.grouped; });
  const bool forced_split = policy != Policy::conventional_shared &&
                            std::any_of(settings.begin(), settings.end(), [](const Layout& l) { return l.split; });
  // What the plans of the forced runs did (DecodeBackend::launch_plans), against what the plan rules lead to expect.
  int used = 0;  // the largest heads per CTA of the grouped runs
  std::vector<int> slices_used(settings.size(), 0);  // per layout: the largest row slices per flush CTA it ran
  bool step_flushes = false;  // some case flushes in a step (not u=recompute, whose step flush is per slice)
  bool split_ran = false, step_kernel_ran = false, fixed_ran = false, generic_step_ran = false, generic_fixed = false;
  bool verify_kernel_ran = false, fold_ran = false, fused_ran = false, unforced_fused = false;
  bool slice_ran = false, expect_slice = false;  // the FP32 step with a CTA per row group (kSplitSlice)
  bool expect_step_kernel = false, expect_generic_step = false, expect_verify_kernel = false;
  bool expect_flush_fold = false, expect_fused = false;
  bool row8_ran = false, lane_row8 = false;  // conventional: conv_row8_kernel ran under conv=row8, and only there
  bool slices_ran = false, expect_slices = false;  // conv_row8_slices_kernel under row8x2 / row8x4
  const bool real = s.dims.K == 128 && s.dims.V == (s.arch == Arch::gdn ? 128 : 64);  // the real head dims
  int n_modes = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!group.empty() && groups[i] != group) continue;
    const CaseInputs in = make_inputs(s, cases[i], 1000 + i);
    step_flushes = step_flushes || (has_step_flush(cases[i]) && u != int(USource::recompute));
    const CaseOutputs ref = run_reference(in);
    for (const Mode& m : modes_for(s.arch, main_formats)) {
      if (m.policy != policy || (u >= 0 && m.usource != USource(u))) continue;
      ++n_modes;
      const CaseOutputs e = run_backend(*emu, m, in);
      const bool other_u = m.split() && m.arch == Arch::gdn && m.usource != USource::lp;
      for (std::size_t li = 0; li < settings.size(); ++li) {
        const Layout& lay = settings[li];
        DecodeBackend& be = gpu(lay.plan);
        const CaseOutputs g = run_backend(be, m, in);
        if (policy == Policy::conventional_shared) {
          const bool row8 = std::string(lay.name) != kConvLane.name;
          row8_ran = row8_ran || (row8 && plan_has(be, "row8"));
          lane_row8 = lane_row8 || (!row8 && plan_has(be, "row8"));
          if (std::string(lay.name) == kConvRow8x2.name || std::string(lay.name) == kConvRow8x4.name) {
            slices_ran = slices_ran || plan_has(be, "row8x2") || plan_has(be, "row8x4");
            // a one-token step of a narrow store where the head has several slices (the tuned conventional formats)
            expect_slices = expect_slices || (real && has_step(cases[i]) && nsplit > 1 &&
                                              (m.format == formats::FormatId::bf16 ||
                                               m.format == formats::FormatId::fp8_e4m3));
          }
        }
        if (lay.split && !lay.grouped) {
          const bool expect = real && has_step(cases[i]) && !other_u &&
                              (m.format == formats::FormatId::fp32 ||
                               (m.format == formats::FormatId::fp8_e4m3 && m.scaling == formats::Scaling::row));
          if (std::string(lay.name) == kSplitGeneric.name) {
            generic_step_ran = generic_step_ran || plan_has(be, "hot=head_step");
            generic_fixed = generic_fixed || plan_has(be, "records=fixed");
            expect_generic_step = expect_generic_step || expect;
          } else if (std::string(lay.name) == kSplitSlice.name) {
            slice_ran = slice_ran || plan_has(be, "hot=slice_step");
            expect_slice = expect_slice || (expect && m.format == formats::FormatId::fp32);
          } else {
            step_kernel_ran = step_kernel_ran || plan_has(be, "hot=head_step");
            fixed_ran = fixed_ran || plan_has(be, "records=fixed");
            expect_step_kernel = expect_step_kernel || expect;
          }
        }
        if (lay.grouped) {
          used = std::max(used, plan_max(be, "heads"));
          verify_kernel_ran = verify_kernel_ran || plan_has(be, "hot=group_verify");
          const bool multi_draft = std::any_of(cases[i].ops.begin(), cases[i].ops.end(),
                                               [](const auto& op) { return op.verify && op.T >= 2 && op.T <= 8; });
          expect_verify_kernel = expect_verify_kernel || (real && multi_draft && s.dims.H % (2 * s.dims.G) == 0 &&
                                                          m.format == formats::FormatId::fp32 &&
                                                          !(m.split() && m.arch == Arch::gdn && m.usource == USource::hp));
        }
        if (lay.split) {
          split_ran = split_ran || plan_has(be, "layout=split") || plan_has(be, "layout=fused");
          fold_ran = fold_ran || plan_has(be, "flush=fold_shared") || plan_has(be, "flush=fold_split");
          const bool codes = m.format == formats::FormatId::fp32 ||
                             (m.format == formats::FormatId::fp8_e4m3 && m.scaling == formats::Scaling::row &&
                              m.rounding == formats::Rounding::rne);
          expect_flush_fold = expect_flush_fold || (real && has_step_flush(cases[i]) && codes && !other_u);
        }
        if (lay.fused) {
          fused_ran = fused_ran || plan_has(be, "layout=fused");
          expect_fused = expect_fused ||
                         (real && has_step_flush(cases[i]) && m.format == formats::FormatId::fp32 && !other_u);
        } else {
          unforced_fused = unforced_fused || plan_has(be, "layout=fused");
        }
        slices_used[li] = std::max(slices_used[li], plan_max(be, "slices", true));
        const CheckRow re = check_vs_emulation(m, cases[i], in, e, g);
        const CheckRow rr = check_vs_reference(m, cases[i], in, ref, g);
        std::string plans;
        for (const std::string& pl : be.launch_plans()) plans += "\n plan " + pl;
        INFO(s.name << " " << re.kernel << " " << re.mode << " " << re.case_name << ", layout " << lay.name << plans
                    << "\n vs emu out: " << re.out.summary() << "\n vs emu state: " << re.state.summary()
                    << "\n bits " << re.bits_identical << "\n vs fp64 out: " << rr.out.summary()
                    << "\n vs fp64 state: " << rr.state.summary());
        CHECK(re.pass);
        CHECK(rr.pass);
      }
    }
  }
  REQUIRE(n_modes > 0);  // a policy with no modes would pass vacuously
  // Every test shape has an even H / G, and the fp32 modes run the tuned kernel: forced, some launch must group.
  // (where the tuned kernels take the shape and replay_head's layout fits: else the reference kernel or the combined
  // layout runs every op, as the plan says)
  const bool tuned_shape = s.dims.K <= 128 && s.dims.V <= 256 && s.dims.V % 4 == 0;
  if (tuned_shape && forced_groups && s.dims.H % (2 * s.dims.G) == 0) REQUIRE(used > 1);
  if (tuned_shape && forced_split) REQUIRE(split_ran);
  if (tuned_shape && policy == Policy::conventional_shared) REQUIRE(row8_ran);
  REQUIRE_FALSE(lane_row8);  // and where they force the split kernels, some launch split
  if (expect_slices) REQUIRE(slices_ran);
  if (expect_step_kernel) REQUIRE(step_kernel_ran);  // the one-token step's own kernel ran
  if (expect_step_kernel) REQUIRE(fixed_ran);  // in its fixed-records form (the cases' L = 16)
  if (expect_generic_step) REQUIRE(generic_step_ran);  // and in its generic form where the test forces it
  REQUIRE_FALSE(generic_fixed);
  if (expect_slice) REQUIRE(slice_ran);  // the row-group form where the test forces it
  if (expect_verify_kernel) REQUIRE(verify_kernel_ran);  // the grouped FP32 verify's own kernel ran
  if (expect_flush_fold) REQUIRE(fold_ran);  // the folded step flush ran
  if (expect_fused) REQUIRE(fused_ran);  // the fused grid ran where the layout forces it
  REQUIRE_FALSE(unforced_fused);  // and not where a layout turns it off
  // Where a layout forces several slices per flush CTA and some step flushes, its step flushes ran exactly that many
  // (at most the head's): whole heads, or pairs starting at slices 0 and 2 (on a shape the tuned kernels take).
  for (std::size_t li = 0; li < settings.size(); ++li) {
    const int forced = settings[li].slices;
    if (policy == Policy::conventional_shared || forced <= 1 || !step_flushes || nsplit <= 1 || !tuned_shape) continue;
    INFO("layout " << settings[li].name);
    REQUIRE(slices_used[li] == std::min(forced, nsplit));
  }
}

std::vector<Case> sanitize_cases() {  // every kernel path once: a step, a flush, a long run, verifies, an early flush
  std::vector<Case> cases = cases_for(16, 8, false, 33);
  cases.push_back(cases_for(16, 8, true, 33).back());
  REQUIRE(cases.back().name == "verify overflow");
  return cases;
}


// The real head dims (several 32-row slices per head) at batch 2, for two_early_flushes_case: the split layout's flush
// kernel then runs the early flushes of two sequences in one op, each head's slices in different CTAs, and in the group
// layout (told of one flushing sequence) its CTAs stride from the first sequence's items to the second's; and for
// step_at_capacity_case: one step op whose flush kernel runs sequence 0's early flush (replay_flush) beside sequence
// 1's step flush (replay_lean), where the split layout forces whole heads per flush CTA and the launcher must fall
// back to one slice per CTA (an early flush is per slice).
Shape overflow_shape(Arch a) {
  Shape s = real_head_shape(a);
  s.name += ", batch 2";
  s.dims.B = 2;
  return s;
}

// The real head dims at batch 4: the fused step grid's layouts then map rows with a stride above 1 (split-fused-hint1:
// one flush row, k = 3), which batch 1 never does (k = 1).
Shape batch_head_shape(Arch a) {
  Shape s = real_head_shape(a);
  s.name += ", batch 4";
  s.dims.B = 4;
  return s;
}

// The small shape at K = 32: FP32 rows of 128 bytes take the non-flush ring's swizzle (head_ring_byte), as E4M3
// rows do at K = 128; no other test shape has them.
Shape k32_shape(Arch a) {
  Shape s = shapes_for("small", a).at(0);
  s.name += ", K = 32";
  s.dims.K = 32;
  return s;
}

// The shapes of test_emulation_coverage.cpp: V % 4 != 0, K > 128, K > 128 with V > 256 (outside the tuned engine's
// K <= 128, V <= 256: the reference kernel), non-power-of-two H / G, batch 256 with small heads.
std::vector<Shape> coverage_shapes(Arch a) {
  return {{"V=18", a, Dims{2, 2, 4, 32, 18}},   {"K=160", a, Dims{1, 1, 2, 160, 20}},
          {"K=192,V=272", a, Dims{1, 1, 1, 192, 272}}, {"G=3,H=9", a, Dims{1, 3, 9, 32, 16}},
          {"G=2,H=6", a, Dims{2, 2, 6, 32, 16}},  {"B=256", a, Dims{256, 1, 2, 16, 16}}};
}

}  // namespace

TEST_CASE("CUDA kernels at the coverage shapes (V % 4 != 0, K > 128, V > 256, H / G = 3, batch 256), main formats",
          "[gpu][coverage]") {
  (void)gpu();
  for (const Arch a : {Arch::gdn, Arch::mamba2})
    for (const Shape& s : coverage_shapes(a))
      for (const Policy pol : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split})
        check(s, cases_for(16, 8, false, 24), true, pol);
}

TEST_CASE("CUDA ReplaySSM kernels at K = 32 (128-byte FP32 ring rows), quick cases, main formats", "[gpu][k32]") {
  (void)gpu();
  for (const Arch a : {Arch::gdn, Arch::mamba2})
    for (const Policy pol : {Policy::replay_shared, Policy::replay_split})
      check(k32_shape(a), sanitize_cases(), true, pol);
}

// One shard = (arch, policy[, u source]); each shard has nine test cases: the awkward cases (small shape, every
// format) in four case groups, the quick [sanitize] cases, the real shape at batch 1, the real head dims at 4 heads
// (batch 1 and batch 4) and the two-sequence early flush at the real head dims (main formats). The tags
// name arch, policy, u source and group, so `"[awkward][gdn][replay-split]"` or `"[sanitize][mamba2]"` pick a subset.
#define REPLAYSSM_AWKWARD_GROUP(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME, POLICY_TAGS, U, GROUP, GROUP_TAGS)     \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels: every mode on the awkward " GROUP " cases (small shape)",     \
            "[gpu][awkward][" ARCH_TAG "]" POLICY_TAGS GROUP_TAGS) {                                                  \
    (void)gpu();                                                                                                     \
    check(shapes_for("small", ARCH).at(0), cases_for(16, 8, true, 120), false, POLICY, U, GROUP);                    \
  }
#define REPLAYSSM_SHARD(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME, POLICY_TAGS, U)                               \
  REPLAYSSM_AWKWARD_GROUP(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME, POLICY_TAGS, U, "steps", "[steps]")        \
  REPLAYSSM_AWKWARD_GROUP(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME, POLICY_TAGS, U, "long", "[long]")          \
  REPLAYSSM_AWKWARD_GROUP(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME, POLICY_TAGS, U, "verify-1",                \
                          "[verify][verify-1]")                                                                      \
  REPLAYSSM_AWKWARD_GROUP(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME, POLICY_TAGS, U, "verify-2",                \
                          "[verify][verify-2]")                                                                      \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels under compute-sanitizer: every mode on the quick cases",     \
            "[gpu][sanitize][" ARCH_TAG "]" POLICY_TAGS) {                                                            \
    (void)gpu();                                                                                                     \
    check(shapes_for("small", ARCH).at(0), sanitize_cases(), false, POLICY, U);                                      \
  }                                                                                                                  \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels at the real head shape, batch 1, main formats",              \
            "[gpu][real][" ARCH_TAG "]" POLICY_TAGS) {                                                                \
    (void)gpu();                                                                                                     \
    check(real_shape(ARCH), cases_for(16, 8, false, 24), true, POLICY, U);                                           \
  }                                                                                                                  \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels at the real head dims, 4 heads, main formats",               \
            "[gpu][real-head][" ARCH_TAG "]" POLICY_TAGS) {                                                           \
    (void)gpu();                                                                                                     \
    check(real_head_shape(ARCH), cases_for(16, 8, false, 24), true, POLICY, U, "", true);                            \
  }                                                                                                                  \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels at the real head dims, 4 heads, batch 4, main formats",      \
            "[gpu][real-head-batch][" ARCH_TAG "]" POLICY_TAGS) {                                                     \
    (void)gpu();                                                                                                     \
    check(batch_head_shape(ARCH), cases_for(16, 8, false, 24), true, POLICY, U, "", true);                           \
  }                                                                                                                  \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels: two sequences flush early in one op, real head dims",      \
            "[gpu][overflow][" ARCH_TAG "]" POLICY_TAGS) {                                                            \
    (void)gpu();                                                                                                     \
    check(overflow_shape(ARCH), {two_early_flushes_case(16, 8), step_at_capacity_case(16, 8)}, true, POLICY, U);     \
  }

REPLAYSSM_SHARD(Arch::gdn, "GDN", "gdn", Policy::conventional_shared, "conventional", "[conventional]", -1)
REPLAYSSM_SHARD(Arch::gdn, "GDN", "gdn", Policy::replay_shared, "replay-shared", "[replay-shared]", -1)
REPLAYSSM_SHARD(Arch::gdn, "GDN", "gdn", Policy::replay_split, "replay-split u=hp", "[replay-split][u-hp]",
                int(USource::hp))
REPLAYSSM_SHARD(Arch::gdn, "GDN", "gdn", Policy::replay_split, "replay-split u=lp", "[replay-split][u-lp]",
                int(USource::lp))
REPLAYSSM_SHARD(Arch::gdn, "GDN", "gdn", Policy::replay_split, "replay-split u=recompute",
                "[replay-split][u-recompute]", int(USource::recompute))
REPLAYSSM_SHARD(Arch::mamba2, "Mamba-2", "mamba2", Policy::conventional_shared, "conventional", "[conventional]", -1)
REPLAYSSM_SHARD(Arch::mamba2, "Mamba-2", "mamba2", Policy::replay_shared, "replay-shared", "[replay-shared]", -1)
REPLAYSSM_SHARD(Arch::mamba2, "Mamba-2", "mamba2", Policy::replay_split, "replay-split", "[replay-split]", -1)
