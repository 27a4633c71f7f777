#include "runtime/text.h"

#include <fstream>

#include "core/errors.h"

namespace replayssm::runtime {

std::vector<std::uint8_t> read_text_slice(const std::string& path, long long offset, long long n) {
  if (offset < 0) throw UserError(path + ": --offset must be >= 0");
  if (n <= 0) throw UserError(path + ": --tokens must be > 0");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw UserError(path + ": cannot open text file");
  const long long size = static_cast<long long>(in.tellg());
  if (size < 0 || offset > size || n > size - offset)  // not offset + n: that overflows for a huge --offset
    throw UserError(path + ": slice of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                    " runs past the end of the file (" + std::to_string(size) + " bytes)");
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n));
  in.seekg(offset);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  if (!in) throw UserError(path + ": read failed");
  return out;
}

std::string text_id(const std::string& path) {
  std::string p = path;
  const auto dot = p.rfind('.');
  const auto slash = p.rfind('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) p = p.substr(0, dot);
  std::size_t cut = std::string::npos;
  int seen = 0;
  for (std::size_t i = p.size(); i-- > 0;)
    if (p[i] == '/' && ++seen == 2) {
      cut = i;
      break;
    }
  return cut == std::string::npos ? p : p.substr(cut + 1);
}

}  // namespace replayssm::runtime
