// GDN decode kernels (conventional / replay, step / verify, every format): the tuned kernel (gdn_fast.cu,
// common/fast_kernel.cuh) where it applies, else the reference kernel common/decode_kernel.cuh.
#include <cstdlib>

#include "kernels/common/decode_kernel.cuh"

namespace replayssm::kern {
int launch_gdn(formats::FormatId f, const KParams& p, void* stream) {
  static const bool ref_only = std::getenv("REPLAYSSM_REFERENCE_KERNEL") != nullptr;
  if (!ref_only) {
    const int r = launch_fast_gdn(f, p, stream);
    if (r >= 0) return r;
  }
  return launch_any<true>(f, p, stream);
}
}  // namespace replayssm::kern
