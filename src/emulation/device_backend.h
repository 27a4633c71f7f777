#pragma once
// The GPU side of the backend interface, declared here so that the CLI depends on the interface only. Implemented in
// kernels/ (kernels/common/cuda_backend.cu, kernels/launch_plan.cpp); a build without CUDA links
// src/emulation/no_device_backend.cpp instead, whose factory says why there is no device.
#include <memory>
#include <string>

#include "emulation/decode_api.h"

namespace replayssm::emu {

struct DeviceBackendOptions {
  // The kernels' launch-plan override, "key=value,..." (kernels/launch_plan.h; "" = the plan function's choice).
  // REPLAYSSM_PLAN in the environment adds to it; this text wins where both name a key.
  std::string plan;
};

// A CUDA backend on device 0, or nullptr with *why_not set ("no CUDA device: ...") when there is no usable GPU.
// Throws std::invalid_argument for a bad plan override (the message names the key).
std::unique_ptr<DecodeBackend> make_cuda_backend(const DeviceBackendOptions& o, std::string* why_not);

// The canonical text of a plan override (the command line's and REPLAYSSM_PLAN together), for the outputs' metadata.
// Throws std::invalid_argument naming the key and what it accepts.
std::string resolved_plan_override(const std::string& option);

// The launch-plan table of the tuned kernels at the bench's shapes (`replayssm bench --list-plans`), under an
// override; no GPU needed.
std::string plan_table(const std::string& option);

}  // namespace replayssm::emu
