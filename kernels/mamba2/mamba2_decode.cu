// Mamba-2 decode kernels (conventional / replay, step / verify, every format): instantiations of
// common/decode_kernel.cuh.
#include "kernels/common/decode_kernel.cuh"

namespace replayssm::kern {
int launch_mamba2(formats::FormatId f, const KParams& p, void* stream) { return launch_any<false>(f, p, stream); }
}  // namespace replayssm::kern
