// The CUDA kernels' opt-in forms and the verify kernel's draft counts: the step's and the grouped verify's row dots on
// the tensor cores (form 2: within the FP64 tolerance, and of the emulation before any flush) and the grouped FP32
// verify kernel at every draft count (form 1: the emulation's bits). Part of the test_cuda_kernels binary.
#include <algorithm>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda_test_support.h"
#include "emulation/tolerances.h"

using namespace replayssm;
using namespace replayssm::emu;
using namespace replayssm::cudatest;

namespace {
// head_step_kernel's tensor-core form (GDN's 8-bit row dots on the tensor cores; not the emulation's bits) on the awkward
// cases at the real shape and at the real head dims with 4 heads, in the split layout with a CTA per head (where the
// step kernel runs): every output and the final state within the FP64 tolerance of the mode, as every kernel; before the
// first flush (every op a step, fewer than L of them) within tc_dots_tolerance of the emulation; and the form really ran.
// The row-scaled RNE E4M3 modes whose steps run head_step_kernel: replay-shared, replay-split u=lp.
void check_tc_dots(const Shape& s) {
  auto emu = make_emulated_backend();
  constexpr int kL = 16;
  DecodeBackend& be = gpu("layout=split,heads=1,dots=tc");
  const std::vector<Case> cases = cases_for(kL, 8, true, 40);
  long tc_launches = 0, tight_checks = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const bool before_flush =
        int(c.ops.size()) < kL && std::none_of(c.ops.begin(), c.ops.end(), [](const Op& op) { return op.verify; });
    const CaseInputs in = make_inputs(s, c, 5000 + i);
    const CaseOutputs ref = run_reference(in);
    for (const Mode& m : modes_for(Arch::gdn, true)) {
      if (m.format != formats::FormatId::fp8_e4m3 || m.scaling != formats::Scaling::row || !m.replay()) continue;
      if (m.split() && m.usource != USource::lp) continue;
      const CaseOutputs g = run_backend(be, m, in);
      tc_launches += plan_has(be, "dots=tc");
      const CheckRow rr = check_vs_reference(m, c, in, ref, g);
      INFO(s.name << " " << rr.mode << " " << rr.case_name << "\n vs fp64 out: " << rr.out.summary()
                  << "\n vs fp64 state: " << rr.state.summary());
      CHECK(rr.pass);
      if (before_flush) {
        const CaseOutputs e = run_backend(*emu, m, in);
        const Tolerance tol = tc_dots_tolerance(s.dims.K);
        const Comparison co = compare(e.o, g.o, tol), cs = compare(e.state, g.state, tol);
        INFO(" vs emu out: " << co.summary() << "\n vs emu state: " << cs.summary());
        CHECK(co.pass);
        CHECK(cs.pass);
        CHECK(e.flushes == g.flushes);
        ++tight_checks;
      }
    }
  }
  INFO(s.name);
  REQUIRE(tc_launches > 0);   // the form ran
  REQUIRE(tight_checks > 0);  // and some case was checked against the emulation
}
}  // namespace

TEST_CASE("CUDA GDN step kernel with tensor-core row dots (form 2) at the real shape, batch 1", "[gpu][tc-dots][tc-real]") {
  (void)gpu();
  check_tc_dots(real_shape(Arch::gdn));
}

// 4 heads: the case compute-sanitizer's racecheck runs (the B columns in shared memory, one barrier)
TEST_CASE("CUDA GDN step kernel with tensor-core row dots (form 2) at the real head dims, 4 heads",
          "[gpu][tc-dots][tc-head]") {
  (void)gpu();
  check_tc_dots(real_head_shape(Arch::gdn));
}

namespace {
// group_verify_kernel's tensor-core form (the FP32 verify's row dots as 3xTF32 on the tensor cores; not the emulation's
// bits) on the awkward verify cases in the group layout (where that kernel runs): every output and the final state
// within the FP64 tolerance of the mode, as every kernel; where no flush has run (a materialised state carries every
// record's difference) within tc_dots_tolerance of the emulation; that the form ran from the launcher's draft count
// (tc_verify_min_drafts) and not below it. The FP32 ReplaySSM modes whose verify runs that kernel (not GDN u=hp).
void check_tc_verify(const Shape& s) {
  auto emu = make_emulated_backend();
  DecodeBackend& be = gpu("layout=split,hint=1,dots=tc," + kAllHeads);
  std::vector<Case> cases = cases_for(16, 8, true, 40);
  for (int T : {2, 4, 6, 8}) {  // verifies before any flush (6 tokens, windows of at most 14 records): tight checks
    Case c{"tc verify T=" + std::to_string(T) + " before a flush", std::vector<Op>(2), -2.0, -0.01, false};
    c.ops.push_back(Op{T, true, std::min(2, T)});
    c.ops.push_back(Op{});
    c.ops.push_back(Op{T, true, 1});
    cases.push_back(c);
  }
  long tc_launches = 0, tight_checks = 0, n = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    if (std::none_of(c.ops.begin(), c.ops.end(), [](const Op& op) { return op.verify && op.T >= 2; })) continue;
    const CaseInputs in = make_inputs(s, c, 6000 + i);
    const CaseOutputs ref = run_reference(in);
    for (const Mode& m : modes_for(s.arch, true)) {
      if (m.format != formats::FormatId::fp32 || !m.replay()) continue;
      if (m.split() && m.arch == Arch::gdn && m.usource == USource::hp) continue;
      ++n;
      const CaseOutputs g = run_backend(be, m, in);
      const long ran = plan_has(be, "dots=tc");
      tc_launches += ran;
      // below the launcher's draft count form 1 runs (tc_verify_min_drafts)
      const bool below = std::all_of(c.ops.begin(), c.ops.end(), [&](const Op& op) {
        return !op.verify || op.T < kern::tc_verify_min_drafts(s.arch == Arch::gdn);
      });
      if (below) CHECK(ran == 0);
      const CheckRow rr = check_vs_reference(m, c, in, ref, g);
      INFO(s.name << " " << rr.mode << " " << rr.case_name << "\n vs fp64 out: " << rr.out.summary()
                  << "\n vs fp64 state: " << rr.state.summary());
      CHECK(rr.pass);
      const CaseOutputs e = run_backend(*emu, m, in);
      CHECK(e.flushes == g.flushes);
      if (e.flushes == 0) {
        const Tolerance tol = tc_dots_tolerance(s.dims.K);
        const Comparison co = compare(e.o, g.o, tol), cs = compare(e.state, g.state, tol);
        INFO(" vs emu out: " << co.summary() << "\n vs emu state: " << cs.summary());
        CHECK(co.pass);
        CHECK(cs.pass);
        ++tight_checks;
      }
    }
  }
  INFO(s.name);
  REQUIRE(n > 0);
  REQUIRE(tc_launches > 0);   // the form ran
  REQUIRE(tight_checks > 0);  // and some case was checked against the emulation
}
}  // namespace

namespace {
// The grouped FP32 verify kernel runs its window sums in phases (verify_window_sums: GDN at every draft count,
// Mamba-2 from T = 6), which must keep the emulation's bits: every draft count T = 2..8 (at odd T a GDN thread runs a
// chain past the last draft and drops it) at buffer positions n = 0, 1, 8 and 15 (the first verify's window from the
// drafts alone up to n + T = 23 records, the capacity at L = 16, without an early flush); at n = 0, 1 and 15 sequence 0
// accepts every draft, so that the later ops read every draft's stored record, at n = 8 half of them; then a second
// verify (from n = 15 it flushes early) and a step; form 1, the group layout, every FP32 ReplaySSM mode whose verify
// runs that kernel. Outputs, state and stored codes: bit for bit.
void check_verify_draft_counts(const Shape& s) {
  auto emu = make_emulated_backend();
  DecodeBackend& be = gpu("layout=split,hint=1," + kAllHeads);
  long n = 0;
  for (int T = 2; T <= 8; ++T) {
    long launches = 0;
    for (int pre : {0, 1, 8, 15}) {
      Case c{"verify T=" + std::to_string(T) + " at n=" + std::to_string(pre), std::vector<Op>(std::size_t(pre)), -2.0,
             -0.01, false};
      c.ops.push_back(Op{T, true, pre == 8 ? T / 2 : T});
      c.ops.push_back(Op{T, true, 1});
      c.ops.push_back(Op{});
      const CaseInputs in = make_inputs(s, c, 7000 + 10 * T + pre);
      for (const Mode& m : modes_for(s.arch, true)) {
        if (m.format != formats::FormatId::fp32 || !m.replay()) continue;
        if (m.split() && m.arch == Arch::gdn && m.usource == USource::hp) continue;
        ++n;
        const CaseOutputs g = run_backend(be, m, in);
        launches += plan_has(be, "hot=group_verify");
        const CaseOutputs e = run_backend(*emu, m, in);
        INFO(s.name << " " << m.name() << " " << c.name);
        CHECK(e.flushes == g.flushes);
        CHECK(e.o == g.o);
        CHECK(e.state == g.state);
        CHECK(e.codes == g.codes);
      }
    }
    INFO(s.name << " T=" << T);
    CHECK(launches > 0);  // the grouped verify kernel of T drafts ran
  }
  REQUIRE(n > 0);
}
}  // namespace

TEST_CASE("CUDA GDN grouped FP32 verify kernel at every draft count: the emulation's bits", "[gpu][verify-drafts]") {
  (void)gpu();
  check_verify_draft_counts(real_head_shape(Arch::gdn));
}

TEST_CASE("CUDA Mamba-2 grouped FP32 verify kernel at every draft count: the emulation's bits", "[gpu][verify-drafts]") {
  (void)gpu();
  check_verify_draft_counts(real_head_shape(Arch::mamba2));
}

TEST_CASE("CUDA GDN grouped FP32 verify with tensor-core row dots (form 2) at the real head dims",
          "[gpu][tc-dots][tc-verify]") {
  (void)gpu();
  check_tc_verify(real_head_shape(Arch::gdn));
}

TEST_CASE("CUDA Mamba-2 grouped FP32 verify with tensor-core row dots (form 2) at the real head dims",
          "[gpu][tc-dots][tc-verify]") {
  (void)gpu();
  check_tc_verify(real_head_shape(Arch::mamba2));
}

// Mamba-2 keeps form 1 with the form set (no tensor-core launch), bit for bit the emulation.
TEST_CASE("CUDA Mamba-2 step kernel with form 2 set: form 1 runs, the emulation's bits", "[gpu][tc-dots]") {
  (void)gpu();
  auto emu = make_emulated_backend();
  DecodeBackend& be = gpu("layout=split,heads=1,dots=tc");
  const Shape s = real_head_shape(Arch::mamba2);
  const Case c = cases_for(16, 8, false, 24).at(1);  // T = L + 1: a step flush
  const CaseInputs in = make_inputs(s, c, 4999);
  int n = 0;
  for (const Mode& m : modes_for(Arch::mamba2, true)) {
    if (m.format != formats::FormatId::fp8_e4m3 || m.scaling != formats::Scaling::row || !m.replay()) continue;
    ++n;
    const CheckRow re = check_vs_emulation(m, c, in, run_backend(*emu, m, in), run_backend(be, m, in));
    INFO(s.name << " " << re.mode << " " << re.case_name << "\n vs emu out: " << re.out.summary());
    CHECK(re.pass);
    CHECK(plan_has(be, "hot=head_step"));
    CHECK_FALSE(plan_has(be, "dots=tc"));
  }
  REQUIRE(n == 2);
}
