// Shared by the CUDA kernel tests (test_cuda_kernels.cpp, test_cuda_forms.cpp: one binary): the device backend, the
// tuned kernel's process-wide settings scoped to a test, and the real shapes.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "emulation/decode_api.h"
#include "emulation/validation.h"
#include "kernels/common/decode_kernel.h"
#include "kernels/cuda_backend.h"

namespace replayssm::cudatest {
using namespace replayssm::emu;

// The device backend; without a device the process prints why and exits 77 (skipped).
inline std::unique_ptr<DecodeBackend>& gpu() {
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

// One of the tuned kernel's process-wide settings, set for one scope and restored after it.
template <int (*Get)(), void (*Set)(int)>
struct Scoped {
  explicit Scoped(int v) : old(Get()) { Set(v); }
  ~Scoped() { Set(old); }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;
  int old;
};
// Heads per CTA in the ReplaySSM non-flush op: 1 = a CTA per head; kAllGroupHeads = every head of a group that a
// power of two allows (at any batch).
using GroupHeads = Scoped<kern::fast_group_heads, kern::set_fast_group_heads>;
constexpr int kAllGroupHeads = 1 << 20;
using KernelSplit = Scoped<kern::fast_kernel_split, kern::set_fast_kernel_split>;  // 0 combined, 1 split
using FlushHint = Scoped<kern::fast_flush_hint, kern::set_fast_flush_hint>;  // the count the backend claims
using FlushSlices = Scoped<kern::fast_flush_slices, kern::set_fast_flush_slices>;  // 0: the rule; n: n per CTA
using StepFixed = Scoped<kern::fast_step_fixed, kern::set_fast_step_fixed>;  // 1: where it applies; 0: generic
using StepForm = Scoped<kern::fast_step_form, kern::set_fast_step_form>;  // 2: the tensor-core row dots (v55)
using StepFused = Scoped<kern::fast_step_fused, kern::set_fast_step_fused>;  // v66: 1 one grid, 0 two kernels
constexpr int kWholeHead = 1 << 20;  // every row slice of a head in one flush CTA (v24)

inline Shape real_shape(Arch a) { return shapes_for(a == Arch::gdn ? "qwen3.5" : "nemotron-h", a).at(0); }
// The real head dims with 4 value heads in 2 groups: racecheck's cases at the real shape. A race is within one CTA, and
// the other heads' CTAs run the same code on other data; the 32 (128) heads take racecheck 8x (32x) as long.
inline Shape real_head_shape(Arch a) {
  Shape s = real_shape(a);
  s.name += " head, 4 heads";
  s.dims.G = 2;
  s.dims.H = 4;
  return s;
}

}  // namespace replayssm::cudatest
