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

void check(const Shape& s, const std::vector<Case>& cases, bool main_formats) {
  auto emu = make_emulated_backend();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseInputs in = make_inputs(s, cases[i], 1000 + i);
    const CaseOutputs ref = run_reference(in);
    for (const Mode& m : modes_for(s.arch, main_formats)) {
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
}

}  // namespace

TEST_CASE("CUDA GDN kernels: every mode, awkward cases, small shape", "[gpu]") {
  (void)gpu();
  check(shapes_for("small", Arch::gdn).at(0), cases_for(16, 8, true, 120), false);
}
TEST_CASE("CUDA Mamba-2 kernels: every mode, awkward cases, small shape", "[gpu]") {
  (void)gpu();
  check(shapes_for("small", Arch::mamba2).at(0), cases_for(16, 8, true, 120), false);
}
TEST_CASE("CUDA kernels at the real head shapes (Qwen3.5 GDN, Nemotron-H Mamba-2), batch 1", "[gpu]") {
  (void)gpu();
  check(shapes_for("qwen3.5", Arch::gdn).at(0), cases_for(16, 8, false, 24), true);
  check(shapes_for("nemotron-h", Arch::mamba2).at(0), cases_for(16, 8, false, 24), true);
}

// A light pass for compute-sanitizer (memcheck, racecheck, initcheck, synccheck; scripts/gpu_checks.sh): every kernel
// x mode x format once through a step, a flush, a long run, a verify and a verify that must flush early first.
TEST_CASE("CUDA kernels under compute-sanitizer: every mode, quick cases and an early flush, small shape",
          "[gpu][sanitize]") {
  (void)gpu();
  std::vector<Case> cases = cases_for(16, 8, false, 33);
  cases.push_back(cases_for(16, 8, true, 33).back());  // "verify overflow": the early flush
  REQUIRE(cases.back().name == "verify overflow");
  check(shapes_for("small", Arch::gdn).at(0), cases, false);
  check(shapes_for("small", Arch::mamba2).at(0), cases, false);
}
