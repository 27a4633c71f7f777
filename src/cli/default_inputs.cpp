#include "cli/default_inputs.h"

#include <cstdlib>

namespace replayssm::cli {

std::string data_dir() {
  if (const char* d = std::getenv("REPLAYSSM_DATASETS")) return d;
  return REPLAYSSM_SOURCE_DIR "/datasets";
}

std::vector<std::string> default_models() {
  std::vector<std::string> out;
  for (const char* n : {"tiny_gdn.h5", "tiny_mamba2.h5"}) out.push_back(data_dir() + "/models/" + n);
  return out;
}

std::string default_text() { return data_dir() + "/pg19/test/10146.txt"; }

}  // namespace replayssm::cli
