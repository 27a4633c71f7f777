#pragma once
// Raw little-endian storage of codes and scales (the byte layouts of src/formats/README.md), shared by every codec.
#include <cstddef>
#include <cstdint>

#include "formats/hd.h"

namespace replayssm::formats {

// ---- raw little-endian storage helpers ----
REPLAYSSM_HD void store_f32(uint8_t* p, float f) {
  const uint32_t u = float_to_bits(f);
  p[0] = static_cast<uint8_t>(u);
  p[1] = static_cast<uint8_t>(u >> 8);
  p[2] = static_cast<uint8_t>(u >> 16);
  p[3] = static_cast<uint8_t>(u >> 24);
}
REPLAYSSM_HD float load_f32(const uint8_t* p) {
  return bits_to_float(static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                       (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24));
}

// Store / load code i of a packed array of kBits-wide codes (kBits in {4, 8, 16, 32}).
template <int kBits>
REPLAYSSM_HD void store_code(uint8_t* codes, std::size_t i, uint32_t c) {
  if constexpr (kBits == 4) {
    uint8_t& byte = codes[i / 2];
    byte = (i & 1u) ? static_cast<uint8_t>((byte & 0x0Fu) | ((c & 0xFu) << 4))
                    : static_cast<uint8_t>((byte & 0xF0u) | (c & 0xFu));
  } else {
#if !defined(__CUDA_ARCH__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // a little-endian host: the same bytes as the loop below, as one store (vectorisable)
    if constexpr (kBits == 32) {
      const uint32_t v = c;
      __builtin_memcpy(codes + 4 * i, &v, 4);
      return;
    } else if constexpr (kBits == 16) {
      const uint16_t v = static_cast<uint16_t>(c);
      __builtin_memcpy(codes + 2 * i, &v, 2);
      return;
    }
#endif
    for (int b = 0; b < kBits / 8; ++b) codes[i * (kBits / 8) + b] = static_cast<uint8_t>(c >> (8 * b));
  }
}
template <int kBits>
REPLAYSSM_HD uint32_t load_code(const uint8_t* codes, std::size_t i) {
  if constexpr (kBits == 4) {
    return (i & 1u) ? (codes[i / 2] >> 4) & 0xFu : codes[i / 2] & 0xFu;
  } else {
#if !defined(__CUDA_ARCH__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if constexpr (kBits == 32) {
      uint32_t v;
      __builtin_memcpy(&v, codes + 4 * i, 4);
      return v;
    } else if constexpr (kBits == 16) {
      uint16_t v;
      __builtin_memcpy(&v, codes + 2 * i, 2);
      return v;
    }
#endif
    uint32_t c = 0;
    for (int b = 0; b < kBits / 8; ++b) c |= static_cast<uint32_t>(codes[i * (kBits / 8) + b]) << (8 * b);
    return c;
  }
}

}  // namespace replayssm::formats
