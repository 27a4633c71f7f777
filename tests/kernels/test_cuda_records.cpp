// BF16 records (emu::Records::bf16) on the GPU: the record buffers hold 2-byte BF16 codes; the reference kernel and
// the tuned kernels of FP32 checkpoints (the step: head_step_kernel per head and per row group, its folded flush, the
// fused grid; the verify: group_verify_kernel, replay_hot_kernel per group and per head; kern::bf16_records_tuned)
// round every record vector at its store and widen it at its load, so their outputs, final state, stores and flushes
// are the emulation's bits, and they pass the mode-aware FP64 reference of the mode, on the awkward cases (steps
// T = 1, L - 1, L, L + 1, verifies of 1..8 drafts, accepts, the early flush of an overflowing verify), at the small
// shape and at the real head dims (there in every layout override of the tuned kernels), and on a sparse draft tree.
#include <cstdio>
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

bool same_bits(const CaseOutputs& a, const CaseOutputs& b) {
  return a.o == b.o && a.state == b.state && a.codes == b.codes && a.scales == b.scales && a.flushes == b.flushes &&
         a.n_tokens == b.n_tokens;
}

bool has_word(const std::string& line, const std::string& word) {
  return (" " + line + " ").find(" " + word + " ") != std::string::npos;
}
// Every launch plan of the backend's last run is the reference kernel's or a tuned one that keeps BF16 records
// (kern::bf16_records_tuned: a step in head_step_kernel per head or row group with no flush or the folded one, or in
// the fused grid; a verify in group_verify_kernel or replay_hot_kernel with no flush); counts the tuned plans.
bool ran_bf16_kernels_only(const DecodeBackend& be, int* tuned) {
  const std::vector<std::string> plans = be.launch_plans();
  for (const std::string& line : plans) {
    if (line.find("reference") != std::string::npos) continue;
    if (has_word(line, "dots=tc") || !has_word(line, "real")) return false;
    if (line.rfind("step: ", 0) == 0) {
      const bool hot = has_word(line, "hot=head_step") || has_word(line, "hot=slice_step");
      const bool flush = has_word(line, "flush=none") || has_word(line, "flush=fold_shared") ||
                         has_word(line, "flush=fold_split");
      if (!hot || !flush) return false;
    } else if (line.rfind("verify: ", 0) == 0) {
      const bool hot = has_word(line, "hot=head") || has_word(line, "hot=group") || has_word(line, "hot=group_verify");
      if (!hot || !has_word(line, "flush=none") || !has_word(line, "layout=split")) return false;
    } else {
      return false;
    }
    ++*tuned;
  }
  return !plans.empty();
}

// The tuned kernels' words the runs of check_records saw (LaunchPlan's to_string).
struct Seen {
  int tuned = 0, head_step = 0, slice_step = 0, fused = 0, fold = 0, fixed = 0, generic_records = 0;
  int group_verify = 0, group = 0, head = 0;  // the verify's non-flush kernels
  void add(const DecodeBackend& be) {
    for (const std::string& line : be.launch_plans()) {
      if (line.find("reference") != std::string::npos) continue;
      if (line.rfind("verify: ", 0) == 0) {
        group_verify += has_word(line, "hot=group_verify");
        group += has_word(line, "hot=group");
        head += has_word(line, "hot=head");
        continue;
      }
      head_step += has_word(line, "hot=head_step");
      slice_step += has_word(line, "hot=slice_step");
      fused += has_word(line, "layout=fused");
      fold += has_word(line, "flush=fold_shared") || has_word(line, "flush=fold_split");
      fixed += has_word(line, "records=fixed");
      generic_records += !has_word(line, "records=fixed");
    }
  }
};

// tree_T > 0: tree cases of that many nodes (the mode holds them: tree_mode). plan: the backend's launch-plan
// override; seen: the tuned plans that ran, where given.
void check_records(const Shape& s, const std::vector<Case>& cases, int tree_T = 0, const std::string& plan = "",
                   Seen* seen = nullptr) {
  DecodeBackend& dev = gpu(plan);
  auto emu = make_emulated_backend();
  int runs = 0, identical = 0, tuned = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const CaseInputs in = make_inputs(s, c, 7000 + i);
    const CaseOutputs fp64 = run_reference(in);
    for (const Mode& m0 : records_modes_for(s.arch)) {
      const Mode m = tree_T > 0 ? tree_mode(m0, tree_T) : m0;
      const CaseOutputs e = run_backend(*emu, m, in);
      const ModeAwareRun g = run_mode_aware(dev, m, c, in);
      const CheckRow r = check_vs_mode_aware(m, c, in, g, &fp64);
      INFO(arch_name(s.arch) << " " << s.name << " " << m.name() << " " << c.name << " plan '" << plan
                             << "'\n out: " << r.out.summary() << "\n " << r.why);
      CHECK(same_bits(e, g.got));
      CHECK(r.pass);
      CHECK(ran_bf16_kernels_only(dev, &tuned));
      if (seen) seen->add(dev);
      ++runs;
      identical += same_bits(e, g.got) ? 1 : 0;
    }
  }
  std::printf("%s %s BF16 records%s%s: %d of %d runs bit-identical to the emulation (%d tuned plans)\n",
              arch_name(s.arch), s.name.c_str(), plan.empty() ? "" : ", plan ", plan.c_str(), identical, runs, tuned);
}

}  // namespace

TEST_CASE("CUDA BF16 records: the emulation's bits on the awkward cases (small shape)", "[gpu][records]") {
  for (Arch a : {Arch::gdn, Arch::mamba2}) check_records(shapes_for("small", a).at(0), cases_for(16, 8, true, 40));
}

TEST_CASE("CUDA BF16 records: the emulation's bits at the real head dims, quick cases", "[gpu][records]") {
  for (Arch a : {Arch::gdn, Arch::mamba2}) check_records(real_shape(a), cases_for(16, 8, false, 24));
}

// The tuned FP32 kernels with BF16 records in each of their forms at the real head dims (4 heads in 2 groups, so that
// the window's k records come from the group's first head): the plan's own choice, head_step_kernel per head with
// whole-head flush CTAs and with half heads, its generic-records instantiation, its row-group form (slice_step), the
// fused grid told of every flushing sequence and of one, and the verify per head (heads=1) and per group of heads
// (every head of a group: group_verify_kernel for 2..8 drafts, replay_group for one); the cases' L = 16 takes the
// fixed-records form.
TEST_CASE("CUDA BF16 records: the tuned FP32 kernels, the emulation's bits", "[gpu][records][real-head]") {
  const std::string group_plan = "layout=split," + kAllHeads;
  const std::string plans[] = {"",
                               "layout=split,heads=1,slices=whole,step=head",
                               "layout=split,heads=1,slices=2,step=head",
                               "layout=split,heads=1,slices=whole,records=generic,step=head",
                               "layout=split,heads=1,slices=whole,step=slice",
                               "layout=fused,heads=1,slices=whole",
                               "layout=fused,heads=1,slices=whole,hint=1",
                               group_plan};
  for (Arch a : {Arch::gdn, Arch::mamba2}) {
    Seen seen;
    for (const std::string& plan : plans) check_records(real_head_shape(a), cases_for(16, 8, true, 40), 0, plan, &seen);
    INFO(arch_name(a) << ": tuned " << seen.head_step << " head_step, " << seen.slice_step << " slice_step, "
                      << seen.fused << " fused, " << seen.fold << " folded flush, " << seen.fixed << " fixed / "
                      << seen.generic_records << " generic records; verify " << seen.group_verify << " group_verify, "
                      << seen.group << " group, " << seen.head << " head");
    CHECK(seen.group_verify > 0);
    CHECK(seen.group > 0);
    CHECK(seen.head > 0);
    CHECK(seen.head_step > 0);
    CHECK(seen.fused > 0);
    CHECK(seen.fold > 0);
    CHECK(seen.fixed > 0);
    CHECK(seen.generic_records > 0);
    CHECK(seen.slice_step > 0);
  }
}

TEST_CASE("CUDA BF16 records: tree verify, the emulation's bits", "[gpu][records][tree]") {
  const std::vector<int> parents = ref::DraftTree::branching({3, 2, 1}).parent;
  for (Arch a : {Arch::gdn, Arch::mamba2})
    check_records(shapes_for("small", a).at(0), tree_cases(16, parents, "3,2,1"), int(parents.size()));
}
