#include "cli/sweep_backends.h"

#include <iostream>
#include <stdexcept>

#include "core/errors.h"
#include "emulation/device_backend.h"

namespace replayssm::cli {

Backends make_backends(const std::string& which, int jobs, int per_worker, bool quiet) {
  Backends b;
  b.per_worker = per_worker;
  std::string why = "no CUDA device: this build has no CUDA kernels";
  if (which == "cuda" || which == "auto") {
    try {
      b.plan = emu::resolved_plan_override("");  // REPLAYSSM_PLAN: exit 2 when bad, recorded in the output
    } catch (const std::invalid_argument& e) {
      throw UserError(e.what());
    }
    if (auto be = emu::make_cuda_backend(emu::DeviceBackendOptions{}, &why)) {
      b.name = "cuda";
      b.device = be->device();
      b.pool.push_back(std::move(be));
      while (static_cast<int>(b.pool.size()) < per_worker) {
        b.pool.push_back(emu::make_cuda_backend(emu::DeviceBackendOptions{}, &why));
        if (!b.pool.back()) throw UserError(why, kExitNoDevice);
      }
      return b;
    }
    if (which == "cuda") throw UserError(why, kExitNoDevice);
    if (!quiet) std::cerr << "sweep: " << why << "; using the emulated backend\n";
  } else if (which != "emulated") {
    throw UserError("--backend: unknown backend '" + which + "' (expected auto, cuda or emulated)");
  }
  b.name = "emulated";
  for (int i = 0; i < jobs * per_worker; ++i) b.pool.push_back(emu::make_emulated_backend());
  b.device = b.pool.front()->device();
  return b;
}

}  // namespace replayssm::cli
