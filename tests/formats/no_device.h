// What a GPU test binary does when it finds no usable CUDA device (no device, no driver, a CUDA error at start-up):
// by default it prints "SKIP: <why>" and exits 77 (CTest's SKIP_RETURN_CODE for the gpu tests); with the
// environment variable REPLAYSSM_REQUIRE_GPU=1 (set by CI on a GPU runner) it prints "FAIL: ..." with the same
// reason and exits 1, so that a broken driver fails the run instead of skipping it. Any value other than "" and
// "0" counts as set. Used by tests/kernels/cuda_test_support.h (gpu()) and tests/formats/test_formats_gpu.cpp;
// tested on any machine by tests/formats/no_device_test.cmake (through no_device_probe.cpp).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace replayssm::testsupport {

inline bool gpu_required() {
  const char* v = std::getenv("REPLAYSSM_REQUIRE_GPU");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

[[noreturn]] inline void no_device_exit(const std::string& why) {
  if (gpu_required()) {
    std::printf("FAIL: REPLAYSSM_REQUIRE_GPU is set and there is no usable CUDA device: %s\n", why.c_str());
    std::fflush(stdout);
    std::exit(1);
  }
  std::printf("SKIP: %s (set REPLAYSSM_REQUIRE_GPU=1 to make this a failure)\n", why.c_str());
  std::fflush(stdout);
  std::exit(77);
}

}  // namespace replayssm::testsupport
