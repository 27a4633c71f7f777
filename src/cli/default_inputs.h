#pragma once
// The inputs a model sweep uses when none are given: the datasets folder (REPLAYSSM_DATASETS, else the source tree's
// datasets/), both tiny PG-19 models and the first PG-19 test book. Shared by `sweep` and `reference-cache`, so that
// a cache filled without options serves the sweep run without options.
#include <string>
#include <vector>

namespace replayssm::cli {

std::string data_dir();
std::vector<std::string> default_models();
std::string default_text();

}  // namespace replayssm::cli
