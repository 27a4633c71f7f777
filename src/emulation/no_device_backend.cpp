// A build without CUDA kernels: the device backend's factory says so (emulation/device_backend.h).
#include "emulation/device_backend.h"

#if !defined(REPLAYSSM_HAVE_CUDA)
namespace replayssm::emu {
std::unique_ptr<DecodeBackend> make_cuda_backend(const DeviceBackendOptions&, std::string* why_not) {
  if (why_not) *why_not = "no CUDA device: this build has no CUDA kernels (configure with -DREPLAYSSM_CUDA=ON)";
  return nullptr;
}
}  // namespace replayssm::emu
#endif
