#pragma once
// The decode backends of a sweep: one per SSM layer per worker (each holds its layer's state for a run).
#include <memory>
#include <string>
#include <vector>

#include "emulation/decode_api.h"

namespace replayssm::cli {

struct Backends {
  std::string name, device;
  std::string plan;  // the kernels' launch-plan override (REPLAYSSM_PLAN), "" for none
  std::vector<std::unique_ptr<emu::DecodeBackend>> pool;  // per_worker per worker, worker w's from w * per_worker
  int per_worker = 1;
  std::vector<emu::DecodeBackend*> of_worker(int w) const {
    std::vector<emu::DecodeBackend*> out;
    for (int i = 0; i < per_worker; ++i) out.push_back(pool[static_cast<std::size_t>(w * per_worker + i)].get());
    return out;
  }
};

// per_worker: backends each worker needs (a model sweep: one per SSM layer, each holding its layer's state).
// which: auto (CUDA when a device is there, else the emulation, said on stderr unless quiet), cuda or emulated.
// UserError on an unknown name, a bad REPLAYSSM_PLAN, or cuda without a device (kExitNoDevice).
Backends make_backends(const std::string& which, int jobs, int per_worker, bool quiet);

}  // namespace replayssm::cli
