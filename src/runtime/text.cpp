#include "runtime/text.h"

#include <sys/stat.h>

#include <fstream>

#include "core/errors.h"

namespace replayssm::runtime {

std::vector<std::uint8_t> read_text_slice(const std::string& path, long long offset, long long n) {
  if (offset < 0) throw UserError(path + ": --offset must be >= 0");
  if (n <= 0) throw UserError(path + ": --tokens must be > 0");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw UserError(path + ": is a directory, expected a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open text file");
  auto past_end = [&](long long size) {
    return UserError(path + ": --offset " + std::to_string(offset) + " + " + std::to_string(n) +
                     " bytes is beyond the end of the text (" + std::to_string(size) +
                     " bytes): the slice runs past the end");
  };
  const bool regular = S_ISREG(st.st_mode);
  if (regular) {
    const long long size = static_cast<long long>(st.st_size);
    if (size == 0) throw UserError(path + ": empty text");
    if (offset > size || n > size - offset) throw past_end(size);  // not offset + n: that overflows for a huge --offset
    in.seekg(offset);
  } else {
    // A pipe or a device (/dev/zero never ends): read no more than the slice needs, and only a bounded amount.
    if (offset > kMaxStreamedTextBytes || n > kMaxStreamedTextBytes - offset)
      throw UserError(path + ": not a regular file: --offset + --tokens may reach at most " +
                      std::to_string(kMaxStreamedTextBytes) + " bytes of it");
    std::vector<char> skip(1 << 16);
    for (long long left = offset; left > 0;) {
      const auto step = static_cast<std::streamsize>(left < static_cast<long long>(skip.size()) ? left : skip.size());
      in.read(skip.data(), step);
      if (in.gcount() != step) throw past_end(offset - left + static_cast<long long>(in.gcount()));
      left -= step;
    }
  }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  if (in.gcount() != static_cast<std::streamsize>(n)) {
    if (offset == 0 && in.gcount() == 0) throw UserError(path + ": empty text");
    if (regular) throw UserError(path + ": read failed");
    throw past_end(offset + static_cast<long long>(in.gcount()));
  }
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
