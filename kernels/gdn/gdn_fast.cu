// The tuned GDN decode kernels (common/fast_kernel.cuh): the plan of an op and its launch.
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern {
LaunchPlan plan_fast_gdn(formats::FormatId f, const KParams& p, const PlanOverride& o, const Device& dev) {
  return fast::plan_any<true>(f, p, o, dev);
}
int launch_fast_gdn(formats::FormatId f, const KParams& p, const LaunchPlan& plan, void* stream) {
  return fast::launch_any<true>(f, p, plan, stream);
}
}  // namespace replayssm::kern
