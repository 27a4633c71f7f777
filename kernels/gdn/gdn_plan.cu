// The tuned GDN kernels' launch plan of an op: kern::plan_launch with the codec's shared-memory layout facts
// (common/fast_launch.cuh). Host code only: no kernel is instantiated here.
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern {
LaunchPlan plan_fast_gdn(formats::FormatId f, const KParams& p, const PlanOverride& o, const Device& dev) {
  return fast::plan_any<true>(f, p, o, dev);
}
}  // namespace replayssm::kern
