// Mamba-2 decode kernels (conventional / replay, step / verify, every format): the tuned kernel (mamba2_fast.cu,
// common/fast_kernel.cuh) where it applies, else the reference kernel common/decode_kernel.cuh.
#include <cstdlib>

#include "kernels/common/decode_kernel.cuh"

namespace replayssm::kern {
int launch_mamba2(formats::FormatId f, const KParams& p, void* stream) {
  static const bool ref_only = std::getenv("REPLAYSSM_REFERENCE_KERNEL") != nullptr;
  if (!ref_only) {
    const int r = launch_fast_mamba2(f, p, stream);
    if (r >= 0) return r;
  }
  return launch_any<false>(f, p, stream);
}
}  // namespace replayssm::kern
