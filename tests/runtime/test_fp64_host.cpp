// The FP64 device kernels' arithmetic (kernels/fp64/fp64_ops.h) run on the host over the kernels' grids, against the
// CPU paths, bit for bit (fp64_device_checks.h): their order of operations checked on any machine.
#include "fp64_device_checks.h"
#include "host_fp64_device.h"

runtime::Fp64Device& fp64check::device() {
  static testsupport::HostFp64Device dev;
  return dev;
}

TEST_CASE("fp64 host emulation: a job crossing no snapshot point may pass no buffer", "[runtime][fp64]") { check_snapshot_fields(); }
TEST_CASE("fp64 host emulation: projections equal gemm_nt bit for bit", "[runtime][fp64]") { check_projections(); }
TEST_CASE("fp64 host emulation: the reference recurrence equals the CPU's bit for bit", "[runtime][fp64]") {
  check_recurrence();
}
TEST_CASE("fp64 host emulation: tiny-model teacher forcing equals the CPU's bit for bit", "[runtime][fp64]") {
  check_teacher_forcing();
}
TEST_CASE("fp64 host emulation: the sweep's FP64 shadow gives the CPU's outputs and drifts", "[runtime][fp64]") {
  check_shadow();
}
