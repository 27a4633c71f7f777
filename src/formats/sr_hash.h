#pragma once
// Counter-based random bits for stochastic rounding: pure 64-bit integer arithmetic, so the CPU and the GPU
// produce identical bits for identical (seed, head, row, column, step). Three rounds of the splitmix64
// finalizer (Steele, Lea, Flood 2014), each absorbing 64 bits of the counter:
//   h = mix(seed); h = mix(h ^ (head << 32 | step)); h = mix(h ^ (row << 32 | column)); bits = h >> 32.
#include <cstdint>

#include "formats/hd.h"

namespace replayssm::formats {

REPLAYSSM_HD uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

REPLAYSSM_HD uint32_t sr_bits(uint64_t seed, uint32_t head, uint32_t row, uint32_t col, uint32_t step) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ ((static_cast<uint64_t>(head) << 32) | step));
  h = splitmix64(h ^ ((static_cast<uint64_t>(row) << 32) | col));
  return static_cast<uint32_t>(h >> 32);
}

}  // namespace replayssm::formats
