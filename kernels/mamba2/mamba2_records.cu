// The tuned Mamba-2 kernels of BF16 records (emu::Records::bf16) with FP32 checkpoints: the ReplaySSM step
// (head_step_kernel, the folded flush, the fused grid) and verify (group_verify_kernel, replay_hot_kernel).
#include "kernels/common/fast_records_launch.cuh"

namespace replayssm::kern {
template int launch_tuned_bf16_records<false, OpKind::step>(const KParams& p, const LaunchPlan& plan, void* stream);
template int launch_tuned_bf16_records<false, OpKind::verify>(const KParams& p, const LaunchPlan& plan, void* stream);
}  // namespace replayssm::kern
