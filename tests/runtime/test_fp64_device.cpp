// The FP64 model on the CUDA device against the CPU paths, bit for bit (fp64_device_checks.h). Exits 77 (skipped)
// without a usable device, 1 under REPLAYSSM_REQUIRE_GPU=1.
#include <memory>
#include <string>

#include "../formats/no_device.h"
#include "fp64_device_checks.h"

runtime::Fp64Device& fp64check::device() {
  static std::unique_ptr<runtime::Fp64Device> dev = [] {
    std::string why;
    auto d = runtime::make_cuda_fp64_device(&why);
    if (!d) testsupport::no_device_exit(why);
    return d;
  }();
  return *dev;
}

TEST_CASE("fp64 device: a job crossing no snapshot point may pass no buffer", "[gpu][fp64]") { check_snapshot_fields(); }
TEST_CASE("fp64 device: projections equal gemm_nt bit for bit", "[gpu][fp64]") { check_projections(); }
TEST_CASE("fp64 device: the reference recurrence equals the CPU's bit for bit", "[gpu][fp64]") { check_recurrence(); }
TEST_CASE("fp64 device: tiny-model teacher forcing equals the CPU's bit for bit", "[gpu][fp64]") {
  check_teacher_forcing();
}
TEST_CASE("fp64 device: the sweep's FP64 shadow gives the CPU's outputs and drifts", "[gpu][fp64]") { check_shadow(); }
