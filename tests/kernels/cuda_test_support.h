// Shared by the CUDA kernel tests (test_cuda_kernels.cpp, test_cuda_forms.cpp: one binary): the device backend under
// a launch-plan override, the plans it ran, and the real shapes.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "emulation/decode_api.h"
#include "emulation/device_backend.h"
#include "emulation/validation.h"
#include "kernels/common/decode_kernel.h"
#include "../formats/no_device.h"

namespace replayssm::cudatest {
using namespace replayssm::emu;

// The device backend under a launch-plan override (kernels/launch_plan.h; "" = the plan function's choice), one per
// override text; without a usable device the process prints why and exits 77 (skipped), or 1 (failed) under
// REPLAYSSM_REQUIRE_GPU=1 (tests/formats/no_device.h).
inline DecodeBackend& gpu(const std::string& plan = "") {
  static std::map<std::string, std::unique_ptr<DecodeBackend>> pool;
  auto it = pool.find(plan);
  if (it != pool.end()) return *it->second;
  std::string why;
  auto b = make_cuda_backend(DeviceBackendOptions{plan}, &why);
  if (!b) replayssm::testsupport::no_device_exit(why);
  return *pool.emplace(plan, std::move(b)).first->second;
}

// The words of the plans a backend ran since its last init() (LaunchPlan's to_string: "layout=split", "hot=group", ...).
inline bool plan_has(const DecodeBackend& be, const std::string& word) {
  for (const std::string& line : be.launch_plans()) {
    std::istringstream w(line);
    std::string x;
    while (w >> x)
      if (x == word) return true;
  }
  return false;
}
// The largest value of "key=N" in those plans (0 where none has it); with flushing, only plans that launch a flush.
inline int plan_max(const DecodeBackend& be, const std::string& key, bool flushing = false) {
  int best = 0;
  for (const std::string& line : be.launch_plans()) {
    if (flushing && (line.find(" flush_seqs=") == std::string::npos || line.find(" flush_seqs=0") != std::string::npos))
      continue;
    const auto at = line.find(" " + key + "=");
    if (at != std::string::npos) best = std::max(best, std::atoi(line.c_str() + at + key.size() + 2));
  }
  return best;
}
// Heads per CTA in the ReplaySSM non-flush op: every head of a group that a power of two allows (at any batch).
constexpr int kAllGroupHeads = 1 << 20;
inline const std::string kAllHeads = "heads=" + std::to_string(kAllGroupHeads);

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
