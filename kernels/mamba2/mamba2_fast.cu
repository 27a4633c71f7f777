// Tuned Mamba-2 decode kernels (common/fast_kernel.cuh); -1 where they do not apply.
#include "kernels/common/fast_kernel.cuh"

namespace replayssm::kern {
int launch_fast_mamba2(formats::FormatId f, const KParams& p, void* stream) {
  return fast::launch_any<false>(f, p, stream);
}
}  // namespace replayssm::kern
