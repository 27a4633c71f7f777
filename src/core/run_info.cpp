#include "core/run_info.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

namespace replayssm {

std::string host_description() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  std::string model = "unknown cpu";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) model = line.substr(pos + 2);
      break;
    }
  }
  return std::string(host) + ": " + model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace replayssm
