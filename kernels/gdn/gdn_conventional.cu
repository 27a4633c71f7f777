// The tuned GDN kernels of conventional decode (conv_kernel: the state in its format every step; verify keeps T
// snapshots).
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern {
template int launch_tuned<true, OpKind::conventional>(formats::FormatId f, const KParams& p, const LaunchPlan& plan,
                                                void* stream);
}  // namespace replayssm::kern
