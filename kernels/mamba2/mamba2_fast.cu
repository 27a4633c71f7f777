// The tuned Mamba-2 decode kernels (common/fast_kernel.cuh): the plan of an op and its launch.
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern {
LaunchPlan plan_fast_mamba2(formats::FormatId f, const KParams& p, const PlanOverride& o, const Device& dev) {
  return fast::plan_any<false>(f, p, o, dev);
}
int launch_fast_mamba2(formats::FormatId f, const KParams& p, const LaunchPlan& plan, void* stream) {
  return fast::launch_any<false>(f, p, plan, stream);
}
}  // namespace replayssm::kern
