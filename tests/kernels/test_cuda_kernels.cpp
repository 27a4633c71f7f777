// The CUDA decode kernels against the emulation (bit-identical stores, outputs <= 1e-6 relative) and the FP64
// reference, for every kernel x mode on the awkward cases, and at the real head shapes at small batch.
// Exits 77 (skipped) when there is no CUDA device.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/validation.h"
#include "kernels/cuda_backend.h"

using namespace replayssm;
using namespace replayssm::emu;

namespace {

std::unique_ptr<DecodeBackend>& gpu() {
  static std::unique_ptr<DecodeBackend> be = [] {
    std::string why;
    auto b = kern::make_cuda_backend(&why);
    if (!b) {
      std::printf("SKIPPED: %s\n", why.c_str());
      std::exit(77);
    }
    return b;
  }();
  return be;
}

// One policy per call, so that each (arch, policy) is its own test case: compute-sanitizer runs them as parallel
// processes (scripts/gpu_checks.sh), since one instrumented process over every mode outlasts a device call.
// u: only GDN replay_split modes of that u source (the largest policy, split again for the sanitizer jobs).
void check(const Shape& s, const std::vector<Case>& cases, bool main_formats, Policy policy, int u = -1) {
  auto emu = make_emulated_backend();
  int n_modes = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseInputs in = make_inputs(s, cases[i], 1000 + i);
    const CaseOutputs ref = run_reference(in);
    for (const Mode& m : modes_for(s.arch, main_formats)) {
      if (m.policy != policy || (u >= 0 && m.usource != USource(u))) continue;
      ++n_modes;
      const CaseOutputs e = run_backend(*emu, m, in);
      const CaseOutputs g = run_backend(*gpu(), m, in);
      const CheckRow re = check_vs_emulation(m, cases[i], in, e, g);
      const CheckRow rr = check_vs_reference(m, cases[i], in, ref, g);
      INFO(s.name << " " << re.kernel << " " << re.mode << " " << re.case_name << "\n vs emu out: " << re.out.summary()
                  << "\n vs emu state: " << re.state.summary() << "\n bits " << re.bits_identical
                  << "\n vs fp64 out: " << rr.out.summary() << "\n vs fp64 state: " << rr.state.summary());
      CHECK(re.pass);
      CHECK(rr.pass);
    }
  }
  REQUIRE(n_modes > 0);  // a policy with no modes would pass vacuously
}

std::vector<Case> sanitize_cases() {  // every kernel path once: a step, a flush, a long run, verifies, an early flush
  std::vector<Case> cases = cases_for(16, 8, false, 33);
  cases.push_back(cases_for(16, 8, true, 33).back());
  REQUIRE(cases.back().name == "verify overflow");
  return cases;
}

}  // namespace

#define REPLAYSSM_POLICY_CASES(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME)                                        \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels: every mode on every awkward case (small shape)",             \
            "[gpu][awkward][" ARCH_TAG "][" POLICY_NAME "]") {                                                        \
    (void)gpu();                                                                                                     \
    check(shapes_for("small", ARCH).at(0), cases_for(16, 8, true, 120), false, POLICY);                              \
  }
#define REPLAYSSM_SANITIZE_CASES(ARCH, ARCH_NAME, ARCH_TAG, POLICY, POLICY_NAME, POLICY_TAGS, U)                      \
  TEST_CASE("CUDA " ARCH_NAME " " POLICY_NAME " kernels under compute-sanitizer: every mode on the quick cases",     \
            "[gpu][sanitize][" ARCH_TAG "]" POLICY_TAGS) {                                                            \
    (void)gpu();                                                                                                     \
    check(shapes_for("small", ARCH).at(0), sanitize_cases(), false, POLICY, U);                                      \
  }

REPLAYSSM_POLICY_CASES(Arch::gdn, "GDN", "gdn", Policy::conventional_shared, "conventional")
REPLAYSSM_POLICY_CASES(Arch::gdn, "GDN", "gdn", Policy::replay_shared, "replay-shared")
REPLAYSSM_POLICY_CASES(Arch::gdn, "GDN", "gdn", Policy::replay_split, "replay-split")
REPLAYSSM_POLICY_CASES(Arch::mamba2, "Mamba-2", "mamba2", Policy::conventional_shared, "conventional")
REPLAYSSM_POLICY_CASES(Arch::mamba2, "Mamba-2", "mamba2", Policy::replay_shared, "replay-shared")
REPLAYSSM_POLICY_CASES(Arch::mamba2, "Mamba-2", "mamba2", Policy::replay_split, "replay-split")
REPLAYSSM_SANITIZE_CASES(Arch::gdn, "GDN", "gdn", Policy::conventional_shared, "conventional", "[conventional]", -1)
REPLAYSSM_SANITIZE_CASES(Arch::gdn, "GDN", "gdn", Policy::replay_shared, "replay-shared", "[replay-shared]", -1)
REPLAYSSM_SANITIZE_CASES(Arch::gdn, "GDN", "gdn", Policy::replay_split, "replay-split u=hp", "[replay-split][u-hp]",
                         int(USource::hp))
REPLAYSSM_SANITIZE_CASES(Arch::gdn, "GDN", "gdn", Policy::replay_split, "replay-split u=lp", "[replay-split][u-lp]",
                         int(USource::lp))
REPLAYSSM_SANITIZE_CASES(Arch::gdn, "GDN", "gdn", Policy::replay_split, "replay-split u=recompute",
                         "[replay-split][u-recompute]", int(USource::recompute))
REPLAYSSM_SANITIZE_CASES(Arch::mamba2, "Mamba-2", "mamba2", Policy::conventional_shared, "conventional",
                         "[conventional]", -1)
REPLAYSSM_SANITIZE_CASES(Arch::mamba2, "Mamba-2", "mamba2", Policy::replay_shared, "replay-shared", "[replay-shared]",
                         -1)
REPLAYSSM_SANITIZE_CASES(Arch::mamba2, "Mamba-2", "mamba2", Policy::replay_split, "replay-split", "[replay-split]", -1)

// Real head shapes at batch 1, main formats only.
TEST_CASE("CUDA GDN kernels at the Qwen3.5 head shape, batch 1", "[gpu][real][gdn]") {
  (void)gpu();
  for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split})
    check(shapes_for("qwen3.5", Arch::gdn).at(0), cases_for(16, 8, false, 24), true, p);
}
TEST_CASE("CUDA Mamba-2 kernels at the Nemotron-H head shape, batch 1", "[gpu][real][mamba2]") {
  (void)gpu();
  for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split})
    check(shapes_for("nemotron-h", Arch::mamba2).at(0), cases_for(16, 8, false, 24), true, p);
}
