#include "cli/fp64_option.h"

#include "core/errors.h"
#include "runtime/gemm.h"

namespace replayssm::cli {

std::unique_ptr<runtime::Fp64Device> make_fp64_device(const std::string& which) {
  if (which == "cpu") return nullptr;
  if (which != "auto" && which != "cuda")
    throw UserError("--fp64: unknown value '" + which + "' (expected auto, cpu or cuda)");
  std::string why;
  auto d = runtime::make_cuda_fp64_device(&why);
  if (!d && which == "cuda") throw UserError("--fp64 cuda: " + why, kExitNoDevice);
  return d;
}

std::string fp64_device_name(const runtime::Fp64Device* device) {
  return device ? device->name() : std::string("cpu (") + runtime::gemm_path() + ")";
}

}  // namespace replayssm::cli
