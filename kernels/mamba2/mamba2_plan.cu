// The tuned Mamba-2 kernels' launch plan of an op: kern::plan_launch with the codec's shared-memory layout facts
// (common/fast_launch.cuh). Host code only: no kernel is instantiated here.
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern {
LaunchPlan plan_fast_mamba2(formats::FormatId f, const KParams& p, const PlanOverride& o, const Device& dev) {
  return fast::plan_any<false>(f, p, o, dev);
}
}  // namespace replayssm::kern
