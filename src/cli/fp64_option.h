#pragma once
// `--fp64 auto|cpu|cuda` of the commands that run the FP64 model (sweep, reference-cache): where its projections and
// the reference recurrence run. The bits are the same anywhere (runtime/fp64_device.h), so the choice is not part of a
// sweep's configuration hash; outputs record it.
#include <memory>
#include <string>

#include "runtime/fp64_device.h"

namespace replayssm::cli {

inline constexpr const char* kFp64OptionHelp =
    "where the FP64 model's projections and reference recurrence run: auto (a GPU if present), cpu, cuda; the same "
    "bits anywhere";

// auto: the GPU when there is one, else null (the CPU); cuda: UserError with kExitNoDevice when there is none; cpu:
// null. UserError on anything else.
std::unique_ptr<runtime::Fp64Device> make_fp64_device(const std::string& which);

// "cpu (avx2-fma)" or the device's name: what outputs record.
std::string fp64_device_name(const runtime::Fp64Device* device);

}  // namespace replayssm::cli
