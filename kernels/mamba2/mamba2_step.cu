// The tuned Mamba-2 kernels of the ReplaySSM standard decode step: the combined layout (replay_kernel), the split
// layout (head_step_kernel or replay_hot_kernel, with replay_flush_kernel) and the fused layout (step_flush_kernel).
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern {
template int launch_tuned<false, OpKind::step>(formats::FormatId f, const KParams& p, const LaunchPlan& plan,
                                                void* stream);
}  // namespace replayssm::kern
