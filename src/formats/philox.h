#pragma once
// Philox-4x32 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the Random123
// library's philox4x32_R): a counter-based generator of four 32-bit words from a 128-bit counter and a 64-bit key,
// in 32-bit integer arithmetic only, so the CPU and the GPU produce identical bits. One round:
//   (hi0, lo0) = mulhilo(0xD2511F53, c0); (hi1, lo1) = mulhilo(0xCD9E8D57, c2);
//   c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
// and between rounds the key takes the Weyl steps k0 += 0x9E3779B9, k1 += 0xBB67AE85. Random123's default (and
// cuRAND's curand_Philox4x32_10) is 10 rounds.
#include <cstdint>

#include "formats/hd.h"

namespace replayssm::formats {

inline constexpr int kPhiloxDefaultRounds = 10;
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

struct Philox4x32 {
  uint32_t v[4];
};

REPLAYSSM_HD Philox4x32 philox4x32_round(Philox4x32 c, uint32_t k0, uint32_t k1) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c.v[0];
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c.v[2];
  const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return Philox4x32{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
}

// philox4x32_R(rounds, counter, key): rounds >= 1 (Random123 allows 0..16; 7 is its smallest "Crush-resistant" count).
REPLAYSSM_HD Philox4x32 philox4x32(Philox4x32 ctr, uint32_t k0, uint32_t k1, int rounds = kPhiloxDefaultRounds) {
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    ctr = philox4x32_round(ctr, k0, k1);
  }
  return ctr;
}

// The 32 random bits of state element (row v, column k) of a head at a step: the first output word of Philox-4x32
// with counter (k, v, head, step) and key (seed low 32 bits, seed high 32 bits). The head is the codec's head counter
// (the flat sequence * heads + head index of the store, as for the hash SR); a multi-layer caller gives each layer
// its own seed.
REPLAYSSM_HD uint32_t philox_bits(uint64_t seed, uint32_t head, uint32_t row, uint32_t col, uint32_t step,
                                  int rounds = kPhiloxDefaultRounds) {
  const Philox4x32 out = philox4x32(Philox4x32{{col, row, head, step}}, static_cast<uint32_t>(seed),
                                    static_cast<uint32_t>(seed >> 32), rounds);
  return out.v[0];
}

}  // namespace replayssm::formats
