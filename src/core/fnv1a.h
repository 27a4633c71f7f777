#pragma once
// FNV-1a 64: the content hash of reference-cache keys, sweep configurations and run checkpoints (stable across runs,
// machines and builds; not a cryptographic hash).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace replayssm {

struct Fnv1a {
  std::uint64_t h = 1469598103934665603ULL;
  void add(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ULL;
    }
  }
  void add(const std::string& s) { add(s.data(), s.size()); }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};

}  // namespace replayssm
