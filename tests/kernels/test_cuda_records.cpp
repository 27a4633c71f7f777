// BF16 records (emu::Records::bf16) on the GPU: the reference kernel rounds every record vector at its store, so its
// outputs, final state, stores and flushes are the emulation's bits, and it passes the mode-aware FP64 reference of the
// mode, on the awkward cases (steps, verifies, accepts, the early flush of an overflowing verify), at the small shape
// and at the real head dims, and on a sparse draft tree.
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

// Every launch plan of the backend's last run names the reference kernel (the tuned kernels keep FP32 records).
bool ran_reference_only(const DecodeBackend& be) {
  const std::vector<std::string> plans = be.launch_plans();
  for (const std::string& line : plans)
    if (line.find("reference") == std::string::npos) return false;
  return !plans.empty();
}

// tree_T > 0: tree cases of that many nodes (the mode holds them: tree_mode).
void check_records(const Shape& s, const std::vector<Case>& cases, int tree_T = 0) {
  DecodeBackend& dev = gpu();
  auto emu = make_emulated_backend();
  int runs = 0, identical = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const CaseInputs in = make_inputs(s, c, 7000 + i);
    const CaseOutputs fp64 = run_reference(in);
    for (const Mode& m0 : records_modes_for(s.arch)) {
      const Mode m = tree_T > 0 ? tree_mode(m0, tree_T) : m0;
      const CaseOutputs e = run_backend(*emu, m, in);
      const ModeAwareRun g = run_mode_aware(dev, m, c, in);
      const CheckRow r = check_vs_mode_aware(m, c, in, g, &fp64);
      INFO(arch_name(s.arch) << " " << s.name << " " << m.name() << " " << c.name << "\n out: " << r.out.summary()
                             << "\n " << r.why);
      CHECK(same_bits(e, g.got));
      CHECK(r.pass);
      CHECK(ran_reference_only(dev));
      ++runs;
      identical += same_bits(e, g.got) ? 1 : 0;
    }
  }
  std::printf("%s %s BF16 records: %d of %d runs bit-identical to the emulation\n", arch_name(s.arch), s.name.c_str(),
              identical, runs);
}

}  // namespace

TEST_CASE("CUDA BF16 records: the emulation's bits on the awkward cases (small shape)", "[gpu][records]") {
  for (Arch a : {Arch::gdn, Arch::mamba2}) check_records(shapes_for("small", a).at(0), cases_for(16, 8, true, 40));
}

TEST_CASE("CUDA BF16 records: the emulation's bits at the real head dims, quick cases", "[gpu][records]") {
  for (Arch a : {Arch::gdn, Arch::mamba2}) check_records(real_shape(a), cases_for(16, 8, false, 24));
}

TEST_CASE("CUDA BF16 records: tree verify, the emulation's bits", "[gpu][records][tree]") {
  const std::vector<int> parents = ref::DraftTree::branching({3, 2, 1}).parent;
  for (Arch a : {Arch::gdn, Arch::mamba2})
    check_records(shapes_for("small", a).at(0), tree_cases(16, parents, "3,2,1"), int(parents.size()));
}
