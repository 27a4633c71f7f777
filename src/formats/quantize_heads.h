#pragma once
// Host-side: an array of head states [heads][V][K] through one format and back, as `replayssm quantize` and the Python
// package's formats.quantize do it (StateCodec<F>::encode_state -- encode_state_after where a previous store is
// given -- then decode_state per head, the SR counter's head index = the head's position, step 0 unless given). Codes
// and scales are the raw layouts of src/formats/README.md.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/format_id.h"
#include "formats/state_codec.h"

namespace replayssm::formats {

struct QuantizedHeads {
  std::vector<float> dequantized;            // [heads][V][K]
  std::vector<std::uint8_t> codes, scales;   // [heads][code_bytes], [heads][scale_bytes]
  std::size_t code_bytes = 0, scale_bytes = 0;
  int code_bits = 0;
  int block = 0;  // elements per scale block along K (block scaling), 0 otherwise
};

// prev_codes / prev_scales: the stored states this store replaces ([heads][code_bytes], [heads][scale_bytes] of the
// same format and scaling), or nullptr for a first store; only a stateful format (int8_ef) reads them.
inline QuantizedHeads quantize_heads(const float* x, std::size_t heads, int V, int K, const FormatSpec& spec,
                                     std::uint64_t seed, std::uint32_t step = 0,
                                     const std::uint8_t* prev_codes = nullptr,
                                     const std::uint8_t* prev_scales = nullptr) {
  CodecParams p;
  p.scaling = spec.scaling;
  p.rounding = spec.rounding;
  p.seed = seed;
  p.step = step;
  const std::size_t n = std::size_t(V) * std::size_t(K);
  QuantizedHeads q;
  q.dequantized.assign(heads * n, 0.0f);
  dispatch_format(spec.format, [&](auto codec) {
    using C = decltype(codec);
    q.code_bits = C::kBits;
    q.block = spec.scaling == Scaling::block ? C::kBlock : 0;
    q.code_bytes = C::code_bytes(V, K);
    q.scale_bytes = C::scale_bytes(V, K, spec.scaling);
    q.codes.assign(heads * q.code_bytes, 0);
    q.scales.assign(heads * q.scale_bytes, 0);
    for (std::size_t h = 0; h < heads; ++h) {
      p.head = static_cast<std::uint32_t>(h);
      encode_state_after<C>(x + h * n, V, K, p, prev_codes ? prev_codes + h * q.code_bytes : nullptr,
                            prev_codes ? prev_scales + h * q.scale_bytes : nullptr, q.codes.data() + h * q.code_bytes,
                            q.scales.data() + h * q.scale_bytes);
      C::decode_state(q.codes.data() + h * q.code_bytes, q.scales.data() + h * q.scale_bytes, V, K, p,
                      q.dequantized.data() + h * n);
    }
    return 0;
  });
  return q;
}

}  // namespace replayssm::formats
