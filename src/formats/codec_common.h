#pragma once
// What every StateCodec shares: the codec parameters, the random bits of an element for stochastic rounding, and the
// packed-code size. See state_codec.h for the codecs and src/formats/README.md for the layouts.
#include <cstddef>
#include <cstdint>

#include "formats/format_id.h"
#include "formats/hd.h"
#include "formats/philox.h"
#include "formats/sr_hash.h"

namespace replayssm::formats {

struct CodecParams {
  Scaling scaling = Scaling::none;
  Rounding rounding = Rounding::rne;
  uint64_t seed = 0;
  uint32_t head = 0;
  uint32_t step = 0;
  int philox_rounds = kPhiloxDefaultRounds;  // Rounding::philox only
};

// The random bits of element (v, k): the counter hash (sr), Philox-4x32 (philox), none (rne: 0).
REPLAYSSM_HD uint32_t element_rand_bits(const CodecParams& p, int v, int k) {
  const auto row = static_cast<uint32_t>(v), col = static_cast<uint32_t>(k);
  if (p.rounding == Rounding::sr) return sr_bits(p.seed, p.head, row, col, p.step);
  if (p.rounding == Rounding::philox) return philox_bits(p.seed, p.head, row, col, p.step, p.philox_rounds);
  return 0u;
}

REPLAYSSM_HD constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <FormatId F>
struct StateCodec;

namespace detail {

// Shared head-state code for the formats whose elements are packed codes (everything).
template <class Derived, int kBitsT>
struct PackedCodes {
  // Whether a store depends on the previous stored state (encode_state_after; int8_ef's residual). Stateless codecs
  // encode from the value alone.
  static constexpr bool kStateful = false;
  // Whether the scaled codecs' encode_rows needs the head's amax over every element (NVFP4's second-level scale): a
  // caller running rows apart forms it first (amax is order-free) and stores it with store_head_amax.
  static constexpr bool kHeadAmax = false;
  static constexpr std::size_t code_bytes(int V, int K) {
    return (static_cast<std::size_t>(V) * static_cast<std::size_t>(K) * kBitsT + 7) / 8;
  }
};

}  // namespace detail
}  // namespace replayssm::formats
