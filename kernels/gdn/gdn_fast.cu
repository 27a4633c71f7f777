// Tuned GDN decode kernels (common/fast_kernel.cuh); -1 where they do not apply.
#include "kernels/common/fast_kernel.cuh"

namespace replayssm::kern {
int launch_fast_gdn(formats::FormatId f, const KParams& p, void* stream) { return fast::launch_any<true>(f, p, stream); }
}  // namespace replayssm::kern
