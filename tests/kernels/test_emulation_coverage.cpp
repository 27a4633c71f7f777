// Coverage of the shapes and flush intervals the decode kernels claim, on the CPU emulation against the mode-aware FP64
// reference (run_mode_aware + check_vs_mode_aware, the same criterion as test_emulation.cpp): V % 4 != 0, K > 128 and
// V > 256 (the kernels' fallback dims), non-power-of-two H / G, batch 256, and flush periods L in {1, 2, 7, 16, 64}
// with verifies of 1..8 drafts at each (max_drafts 8). Every policy (conventional, replay-shared, replay-split with
// GDN u = hp / lp / recompute) x the main formats (fp32, bf16, fp8_e4m3/row, nvfp4/block), both archs. Seeded,
// deterministic inputs (make_inputs).
//
// L = 1 (accepted by check_mode): a step then flushes at every token, so where the design makes it so ReplaySSM is the
// conventional decode bit for bit, step by step (outputs and stored bytes); see the last test case for where it is
// not by design and why.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"

using namespace replayssm;
using namespace replayssm::emu;

namespace {

std::vector<Mode> main_modes(Arch a, int L, int max_drafts) {
  std::vector<Mode> ms = modes_for(a, true);
  for (Mode& m : ms) m.L = L, m.max_drafts = max_drafts;
  return ms;
}

// Every case x every mode of `modes` against the mode-aware reference; prints one summary line per group.
void check_group(const std::string& label, const Shape& s, const std::vector<Case>& cases,
                 const std::vector<Mode>& modes, std::uint64_t seed) {
  auto be = make_emulated_backend();
  int n = 0, fails = 0;
  double worst = 0.0;
  long flips = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseInputs in = make_inputs(s, cases[i], seed + i);
    for (const Mode& m : modes) {
      const ModeAwareRun run = run_mode_aware(*be, m, cases[i], in);
      const CheckRow r = check_vs_mode_aware(m, cases[i], in, run);
      INFO(label << " [" << s.name << " B" << s.dims.B << " G" << s.dims.G << " H" << s.dims.H << " K" << s.dims.K
                 << " V" << s.dims.V << "] " << arch_name(s.arch) << " L=" << m.L << " D=" << m.max_drafts << " "
                 << r.mode << " " << r.case_name << "\n out: " << r.out.summary() << "\n state: " << r.state.summary()
                 << "\n tol rel_rms " << r.tol.rel_rms << "\n stores " << r.stores.stores << " flips "
                 << r.stores.flips << " (allowed fraction " << r.max_flip_fraction << ") illegal "
                 << r.stores.illegal << " layout mismatches " << r.stores.layout_mismatches << "\n " << r.why);
      CHECK(r.pass);
      CHECK(r.tol.rel_rms < 1e-3);  // never a bound that an all-zero output could meet
      ++n;
      fails += r.pass ? 0 : 1;
      flips += r.stores.flips;
      worst = std::max(worst, std::max(r.out.rel_rms, r.state.rel_rms) / r.tol.rel_rms);
    }
  }
  std::printf("%-34s %-7s B%-3d G%d H%d K%-3d V%-3d: %4d checks, %d fail, worst rel-RMS/bound %.3f, flips %ld\n",
              label.c_str(), arch_name(s.arch), s.dims.B, s.dims.G, s.dims.H, s.dims.K, s.dims.V, n, fails, worst,
              flips);
}

Shape shape(const char* name, Arch a, int B, int G, int H, int K, int V) { return Shape{name, a, Dims{B, G, H, K, V}}; }

// The quick case list at L = 16 (T=1, T=L+1, a long run, a verify of 4, a one-draft verify), the long run shortened.
std::vector<Case> quick_cases(int long_steps) { return cases_for(16, 8, false, long_steps); }

// A case of L and T drafts: fills the window to L - 1 records, a verify of T that sequence 0 accepts whole (at T = 8
// the buffer is then full, so the next step flushes early), a step (sequence b then sits at different window positions),
// a verify of T accepting T / 2, a full period of steps (a step flush), a verify accepting none, a step.
Case l_draft_case(int L, int T) {
  auto steps = [](int k) { return std::vector<Op>(std::size_t(std::max(k, 0)), Op{}); };
  Case c{"L=" + std::to_string(L) + " T=" + std::to_string(T), steps(L - 1), -2.0, -0.01, false};
  c.ops.push_back(Op{T, true, T});
  c.ops.push_back(Op{});
  c.ops.push_back(Op{T, true, T / 2});
  for (Op& o : steps(L)) c.ops.push_back(o);
  c.ops.push_back(Op{T, true, 0});
  c.ops.push_back(Op{});
  return c;
}

}  // namespace

TEST_CASE("emulation coverage: V % 4 != 0, K > 128, V > 256, non-power-of-two H / G", "[kernels][coverage]") {
  const auto cases = quick_cases(24);
  for (const Arch a : {Arch::gdn, Arch::mamba2}) {
    const auto modes = main_modes(a, 16, 8);
    check_group("V % 4 != 0", shape("V=18", a, 2, 2, 4, 32, 18), cases, modes, 301);
    check_group("K > 128", shape("K=160", a, 1, 1, 2, 160, 20), cases, modes, 311);
    check_group("K > 128, V > 256", shape("K=192,V=272", a, 1, 1, 1, 192, 272), cases, modes, 321);
    check_group("non-power-of-two H/G (G=3, H=9)", shape("G=3,H=9", a, 1, 3, 9, 32, 16), cases, modes, 331);
    check_group("non-power-of-two H/G (G=2, H=6)", shape("G=2,H=6", a, 2, 2, 6, 32, 16), cases, modes, 341);
  }
}

TEST_CASE("emulation coverage: batch 256, small heads", "[kernels][coverage]") {
  // Sequence b accepts (accept + b) % (T + 1) drafts: 256 sequences reach every accept count and window position.
  std::vector<Case> cases;
  {
    Case c{"batch: L+1 steps, verify 8, steps", std::vector<Op>(17, Op{}), -2.0, -0.01, false};
    c.ops.push_back(Op{8, true, 3});
    c.ops.push_back(Op{});
    c.ops.push_back(Op{4, true, 1});
    c.ops.push_back(Op{});
    cases.push_back(c);
  }
  for (const Arch a : {Arch::gdn, Arch::mamba2})
    check_group("batch 256", shape("B=256", a, 256, 1, 2, 16, 16), cases, main_modes(a, 16, 8), 351);
}

TEST_CASE("emulation coverage: L in {1, 2, 7, 16, 64}, verifies of 1..8 drafts at each", "[kernels][coverage]") {
  for (const Arch a : {Arch::gdn, Arch::mamba2}) {
    const Shape s = shape("L-sweep", a, 2, 1, 2, 32, 16);
    for (const int L : {1, 2, 7, 16, 64}) {
      std::vector<Case> cases;
      for (int T = 1; T <= 8; ++T) cases.push_back(l_draft_case(L, T));
      check_group("L=" + std::to_string(L) + ", drafts 1..8", s, cases, main_modes(a, L, 8), 400 + 10 * L);
    }
  }
}

namespace {

struct StepDiff {
  long outputs = 0, out_equal = 0, bytes = 0, bytes_equal = 0;
  bool all_equal() const { return out_equal == outputs && bytes_equal == bytes; }
};

// Runs the steps of `in` through two backends in modes a and b, comparing every step's outputs and stored bytes.
StepDiff step_by_step(const CaseInputs& in, const Mode& ma, const Mode& mb) {
  auto ea = make_emulated_backend(), eb = make_emulated_backend();
  const Dims& d = in.shape.dims;
  ea->init(d, ma, in.S0.data());
  eb->init(d, mb, in.S0.data());
  StepDiff r;
  std::vector<float> oa(std::size_t(d.B) * d.H * d.V), ob(oa.size());
  std::vector<std::uint8_t> ca, sa, cb, sb;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    REQUIRE_FALSE(in.op_list[i].verify);
    ea->step(in.ops[i].view(), oa.data());
    eb->step(in.ops[i].view(), ob.data());
    for (std::size_t j = 0; j < oa.size(); ++j) {
      ++r.outputs;
      r.out_equal += std::memcmp(&oa[j], &ob[j], sizeof(float)) == 0;
    }
    ea->stored(ca, sa);
    eb->stored(cb, sb);
    REQUIRE(ca.size() == cb.size());
    REQUIRE(sa.size() == sb.size());
    for (std::size_t j = 0; j < ca.size(); ++j) ++r.bytes, r.bytes_equal += ca[j] == cb[j];
    for (std::size_t j = 0; j < sa.size(); ++j) ++r.bytes, r.bytes_equal += sa[j] == sb[j];
  }
  REQUIRE(eb->flushes() == long(d.B) * long(in.ops.size()));  // L = 1: every step flushes every sequence
  return r;
}

}  // namespace

TEST_CASE("emulation coverage: L = 1 ReplaySSM steps against the conventional decode, bit for bit", "[kernels][coverage]") {
  // What the design makes identical at L = 1 (every step appends one record and flushes it at once):
  //  * the stored state of a step flush is fmaf(G_0 w_0[r], k_0[c], total S_c[r][c]) with G_0 = 1 and total = a, i.e.
  //    conventional's fmaf(w_r, k_c, a s): the same bits wherever w is (Mamba-2: w = v, exact);
  //  * the flush output is the canonical dot of the new state with q, as conventional's; the same SR step (the
  //    sequence's token index) and the same head index for the store.
  // What it does not, by design:
  //  * GDN: the record's u takes a S_c k as total * (S_c k) = a * (S_c . k) (window_sum with m = 0), where conventional
  //    decays first and takes (a S_c) . k: two different FP32 roundings, so u, and from it the state and the stores,
  //    differ in the last bits (both within the mode-aware reference's FP32 bound, checked by the L-sweep above);
  //  * replay-split in a quantised format: the recurrence runs on the HP (FP32) checkpoint, the LP copy is only
  //    written, while conventional re-reads its quantised store every step: a different recurrence (the point of
  //    split), identical only where the format is FP32;
  //  * verifies: conventional stores the accepted draft's state quantised after the FP32 chain, ReplaySSM keeps the
  //    accepted drafts as records and flushes them together with the next step: not compared.
  for (const Arch a : {Arch::gdn, Arch::mamba2}) {
    const Shape s = shape("L=1", a, 2, 2, 4, 32, 16);
    const Case c{"40 steps", std::vector<Op>(40, Op{}), -2.0, -0.01, false};
    const CaseInputs in = make_inputs(s, c, 77);
    const std::vector<Mode> modes = main_modes(a, 1, 8);
    for (const Mode& conv : modes) {
      if (conv.policy != Policy::conventional_shared) continue;
      for (const Mode& rep : modes) {
        if (!rep.replay() || rep.format != conv.format || rep.scaling != conv.scaling) continue;
        const StepDiff d = step_by_step(in, conv, rep);
        const bool designed = a == Arch::mamba2 && (rep.policy == Policy::replay_shared ||
                                                    rep.format == formats::FormatId::fp32);
        std::printf("L=1 %-7s %-40s vs conventional: outputs %ld/%ld identical, stored bytes %ld/%ld identical%s\n",
                    arch_name(a), rep.name().c_str(), d.out_equal, d.outputs, d.bytes_equal, d.bytes,
                    designed ? " (required)" : " (measured)");
        INFO(arch_name(a) << " " << rep.name() << " outputs " << d.out_equal << "/" << d.outputs << " bytes "
                          << d.bytes_equal << "/" << d.bytes);
        if (designed) CHECK(d.all_equal());
      }
    }
  }
}
