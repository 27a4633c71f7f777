// The Mamba-2 reference decode kernel (common/decode_kernel.cuh): every format, op and mode; the spec the tuned
// kernels are checked against on the device.
#include "kernels/common/decode_kernel.cuh"

namespace replayssm::kern {
int launch_reference_mamba2(formats::FormatId f, const KParams& p, void* stream) {
  return launch_any<false>(f, p, stream);
}
}  // namespace replayssm::kern
