// The tuned Mamba-2 kernels of the ReplaySSM chain verify: the combined layout (replay_kernel) and the split layout
// (group_verify_kernel or replay_hot_kernel, with replay_flush_kernel for early flushes).
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern {
template int launch_tuned<false, OpKind::verify>(formats::FormatId f, const KParams& p, const LaunchPlan& plan,
                                                void* stream);
}  // namespace replayssm::kern
