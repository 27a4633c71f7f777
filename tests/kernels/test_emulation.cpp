// The CPU emulation of the decode kernels against the FP64 reference: every mode x format on fresh random inputs
// and the awkward cases, with the tolerances of emulation/tolerances.h; and the ordering of the policies' state
// drift that the study relies on.
#include <cmath>
#include <cstdio>
#include <string>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"

using namespace replayssm;
using namespace replayssm::emu;

namespace {

void check_all(Arch arch, bool main_formats, bool full_cases) {
  const Shape s = shapes_for("small", arch).at(0);
  const auto cases = cases_for(16, 8, full_cases, 200);
  auto be = make_emulated_backend();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseInputs in = make_inputs(s, cases[i], 99 + i);
    const CaseOutputs ref = run_reference(in);
    for (const Mode& m : modes_for(arch, main_formats)) {
      const CaseOutputs got = run_backend(*be, m, in);
      const CheckRow r = check_vs_reference(m, cases[i], in, ref, got);
      INFO(r.kernel << " " << r.mode << " " << r.case_name << "\n out: " << r.out.summary()
                    << "\n state: " << r.state.summary() << "\n tol rel_rms " << r.tol.rel_rms);
      CHECK(r.pass);
    }
  }
}

}  // namespace

TEST_CASE("GDN emulation vs FP64, main formats, every awkward case", "[kernels]") { check_all(Arch::gdn, true, true); }
TEST_CASE("Mamba-2 emulation vs FP64, main formats, every awkward case", "[kernels]") {
  check_all(Arch::mamba2, true, true);
}
TEST_CASE("GDN emulation vs FP64, every format, quick cases", "[kernels]") { check_all(Arch::gdn, false, false); }
TEST_CASE("Mamba-2 emulation vs FP64, every format, quick cases", "[kernels]") { check_all(Arch::mamba2, false, false); }

TEST_CASE("FP32 modes are tight: every policy within the FP32 floor", "[kernels]") {
  for (Arch arch : {Arch::gdn, Arch::mamba2}) {
    const Shape s = shapes_for("small", arch).at(0);
    Case c{"long", std::vector<Op>(300, Op{}), -1.0, -0.01, false};
    const CaseInputs in = make_inputs(s, c, 5);
    const CaseOutputs ref = run_reference(in);
    auto be = make_emulated_backend();
    for (const Mode& m : modes_for(arch, true)) {
      if (m.format != formats::FormatId::fp32) continue;
      const CaseOutputs got = run_backend(*be, m, in);
      const Tolerance tol = tolerance_vs_fp64(m, s.dims.V, s.dims.K, ref.n_tokens, 100.0);
      CHECK(tol.rel_rms < 2e-5);
      const Comparison co = compare(ref.o, got.o, tol);
      INFO(m.name() << " " << co.summary());
      CHECK(co.pass);
    }
  }
}

TEST_CASE("A wrong kernel fails: the tolerances are able to fail", "[kernels]") {
  const Shape s = shapes_for("small", Arch::gdn).at(0);
  Case c{"T=L+1", std::vector<Op>(17, Op{}), -2.0, -0.01, false};
  const CaseInputs in = make_inputs(s, c, 11);
  const CaseOutputs ref = run_reference(in);
  auto be = make_emulated_backend();
  Mode m;
  m.arch = Arch::gdn;
  m.policy = Policy::replay_split;
  m.format = formats::FormatId::fp8_e4m3;
  m.scaling = formats::Scaling::row;
  CaseOutputs got = run_backend(*be, m, in);
  CHECK(check_vs_reference(m, c, in, ref, got).pass);
  // the same run with Mamba-2's update in place of the delta rule (what a mixed-up kernel would produce)
  CaseInputs wrong = in;
  wrong.shape.arch = Arch::mamba2;
  got = run_backend(*be, m, wrong);
  CHECK_FALSE(check_vs_reference(m, c, in, ref, got).pass);
  // a NaN never passes
  got = run_backend(*be, m, in);
  got.o[3] = std::nan("");
  CHECK_FALSE(check_vs_reference(m, c, in, ref, got).pass);
}

TEST_CASE("State drift in LP formats: replay-split < replay-shared < conventional-shared", "[kernels]") {
  // A long run with slow decay, where re-quantisation error accumulates: the property the study measures.
  for (Arch arch : {Arch::gdn, Arch::mamba2}) {
    const Shape s = shapes_for("small", arch).at(0);
    Case c{"long slow decay", std::vector<Op>(400, Op{}), -0.05, -0.001, false};
    const CaseInputs in = make_inputs(s, c, 21);
    const CaseOutputs ref = run_reference(in);
    auto be = make_emulated_backend();
    for (auto fmt : {formats::FormatId::bf16, formats::FormatId::fp8_e4m3}) {
      Mode m;
      m.arch = arch;
      m.format = fmt;
      m.scaling = formats::default_scaling(fmt);
      double drift[3];
      const Policy ps[3] = {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split};
      for (int p = 0; p < 3; ++p) {
        m.policy = ps[p];
        const CaseOutputs got = run_backend(*be, m, in);
        drift[p] = compare(ref.state, got.state, Tolerance{1e9, 1e9, 0}).rel_rms;
      }
      INFO(arch_name(arch) << " " << formats::format_name(fmt) << " drift conv " << drift[0] << " shared " << drift[1]
                           << " split " << drift[2]);
      std::printf("drift %s %s: conventional %.3e replay-shared %.3e replay-split %.3e\n", arch_name(arch),
                  formats::format_name(fmt), drift[0], drift[1], drift[2]);
      CHECK(drift[1] * 1.5 < drift[0]);
      CHECK(drift[2] * 1.5 < drift[1]);
    }
  }
}

// The flushes the emulation counts for the first `ops` ops of a case (0 = all), on the small shape (batch 2) in each
// FP32 ReplaySSM mode of each arch (capacity 23 at L = 16, 8 drafts): the GPU test's [overflow] cases rely on them.
namespace {
void check_flush_counts(const Case& c, std::size_t ops, long want) {
  for (const Arch a : {Arch::gdn, Arch::mamba2}) {
    const Shape s = shapes_for("small", a).at(0);
    REQUIRE(s.dims.B == 2);
    CaseInputs in = make_inputs(s, c, 7);
    if (ops > 0) in.ops.resize(ops), in.op_list.resize(ops);
    for (const Mode& m : modes_for(a, true)) {
      if (!m.replay() || m.format != formats::FormatId::fp32) continue;
      REQUIRE(m.capacity() == 23);
      auto emu = make_emulated_backend();
      INFO(arch_name(a) << " " << m.name() << ", " << c.name << ", first " << ops << " ops");
      CHECK(run_backend(*emu, m, in).flushes == want);
    }
  }
}

}  // namespace

TEST_CASE("the two-early-flush case flushes two sequences early in one verify", "[kernels]") {
  // L - 1 steps fill no buffer; the first verify keeps 15 + 7 and 15 + 8 records; the second verify (4 drafts)
  // overflows both, so both flush early; the last step flushes none.
  check_flush_counts(two_early_flushes_case(16, 8), 0, 2);
}

TEST_CASE("the step-at-capacity case flushes early and at the L-th record in one step", "[kernels]") {
  // The verify leaves 15 + 8 records in sequence 0 (full) and 15 in sequence 1; the next step flushes both (early, and
  // at the 16th record); the two steps after it flush none.
  const Case c = step_at_capacity_case(16, 8);
  check_flush_counts(c, 16, 0);
  check_flush_counts(c, 17, 2);
  check_flush_counts(c, 0, 2);
}
