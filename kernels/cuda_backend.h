#pragma once
// The CUDA implementation of emu::DecodeBackend (kernels/common/cuda_backend.cu). Declared here, defined only when
// the kernels are built (REPLAYSSM_HAVE_CUDA); core code never includes CUDA headers.
#include <memory>
#include <string>

#include "emulation/decode_api.h"

namespace replayssm::kern {

// A backend on device 0, or nullptr with *why_not set ("no CUDA device: ...") when there is no usable GPU.
std::unique_ptr<emu::DecodeBackend> make_cuda_backend(std::string* why_not);

}  // namespace replayssm::kern
