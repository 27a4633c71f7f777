// A build without CUDA kernels: the FP64 model runs on the CPU, and the device factory says why (fp64_device.h).
#include "runtime/fp64_device.h"

#if !defined(REPLAYSSM_HAVE_CUDA)
namespace replayssm::runtime {
std::unique_ptr<Fp64Device> make_cuda_fp64_device(std::string* why_not) {
  if (why_not) *why_not = "no CUDA device: this build has no CUDA kernels (configure with -DREPLAYSSM_CUDA=ON)";
  return nullptr;
}
}  // namespace replayssm::runtime
#endif
