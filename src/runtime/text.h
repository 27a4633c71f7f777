#pragma once
// Byte-level text input for the tiny models: a slice of a file, every byte one token.
#include <cstdint>
#include <string>
#include <vector>

namespace replayssm::runtime {

// Bytes [offset, offset + n) of the file. UserError (exit 2) naming the file when it cannot be read, or when the
// slice is empty or runs past the end. Reads only the slice: a pipe or device (not a regular file, e.g. /dev/zero)
// is read sequentially up to offset + n <= kMaxStreamedTextBytes.
constexpr long long kMaxStreamedTextBytes = 1LL << 30;
std::vector<std::uint8_t> read_text_slice(const std::string& path, long long offset, long long n);

// "pg19/test/10146" style id: the last two path components without the extension.
std::string text_id(const std::string& path);

}  // namespace replayssm::runtime
