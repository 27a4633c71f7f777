// Calls no_device_exit() as a GPU test binary does on a machine without a usable device, so that
// no_device_test.cmake can check the exit codes of REPLAYSSM_REQUIRE_GPU's two settings on any machine.
#include "no_device.h"

int main() { replayssm::testsupport::no_device_exit("cudaGetDeviceCount: probe reason (no_device_probe)"); }
