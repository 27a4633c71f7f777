#pragma once
// Device 0 for the factories of the CUDA implementations (the decode backend, the FP64 device): its properties, or
// why there is no usable GPU.
#include <cuda_runtime.h>

#include <string>

namespace replayssm::kern {

// false with *why_not = "no CUDA device (...)" when there is no usable device.
inline bool probe_device0(cudaDeviceProp* prop, std::string* why_not) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why_not)
      *why_not = std::string("no CUDA device (") + (e != cudaSuccess ? cudaGetErrorString(e) : "device count 0") + ")";
    return false;
  }
  if (cudaGetDeviceProperties(prop, 0) != cudaSuccess) {
    if (why_not) *why_not = "no CUDA device (cudaGetDeviceProperties failed)";
    return false;
  }
  return true;
}

}  // namespace replayssm::kern
