#include "core/memory_budget.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace replayssm {

double memory_budget_bytes() {
  if (const char* env = std::getenv("REPLAYSSM_MEMORY_LIMIT")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(v >= 1.0) || v > 1e18)
      throw UserError(std::string("REPLAYSSM_MEMORY_LIMIT: '") + env + "' is not a number of bytes >= 1");
    return v;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 1e18;  // unknown: no refusal, the allocation itself decides
  return static_cast<double>(pages) * static_cast<double>(page);
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void require_memory(const std::string& where, const std::string& what, double bytes, const std::string& fix) {
  const double budget = memory_budget_bytes();
  if (!(bytes <= budget))
    throw UserError(where + ": " + what + " needs about " + format_bytes(bytes) + " of memory, more than the " +
                    format_bytes(budget) + " available (" + fix + ")");
}

}  // namespace replayssm
