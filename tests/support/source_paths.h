#pragma once
// Where the tests find the committed inputs: the source tree (REPLAYSSM_SOURCE_DIR, set by replayssm_add_test), its
// tiny models and the PG-19 book the sweeps read.
#include <cstdlib>
#include <string>

namespace replayssm::testing {

inline std::string source_dir() {
  const char* s = std::getenv("REPLAYSSM_SOURCE_DIR");
  return s ? s : ".";
}
inline std::string tiny_model_path(const std::string& arch) {
  return source_dir() + "/datasets/models/tiny_" + arch + ".h5";
}
inline std::string pg19_book_path() { return source_dir() + "/datasets/pg19/test/10146.txt"; }

}  // namespace replayssm::testing
