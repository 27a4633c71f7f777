#pragma once
// Where a result came from: host CPU and time, stamped into every output file.
#include <string>

namespace replayssm {
std::string host_description();  // "hostname: cpu model, N cores"
std::string utc_timestamp();      // ISO 8601
}  // namespace replayssm
