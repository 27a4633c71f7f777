// The bit-exact state formats (src/formats/): the same quantize_heads as `replayssm quantize` and the kernels' codecs.
#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "formats/format_id.h"
#include "formats/quantize_heads.h"
#include "formats/state_codec.h"

namespace replayssm::py {
namespace {

namespace fm = replayssm::formats;

// prev_codes / prev_scales: the stored states this store replaces (a stateful format feeds them in), or empty arrays
// for a first store.
nb::dict quantize(const In<float>& x, std::size_t heads, int V, int K, const std::string& format,
                  const std::string& scaling, const std::string& rounding, std::uint64_t seed, std::uint32_t step,
                  const In<std::uint8_t>& prev_codes, const In<std::uint8_t>& prev_scales) {
  if (V < 1 || K < 1) throw std::invalid_argument("x: the last two axes [V, K] must be non-empty");
  const fm::FormatSpec spec = fm::parse_format_spec(format, scaling, rounding);
  const float* p = data_of(x, heads * std::size_t(V) * std::size_t(K), "x");
  const std::uint8_t *pc = nullptr, *ps = nullptr;
  if (prev_codes.size() != 0 || prev_scales.size() != 0) {
    const std::size_t cb = fm::dispatch_format(spec.format, [&](auto c) { return decltype(c)::code_bytes(V, K); });
    const std::size_t sb = fm::bytes_per_state(spec.format, V, K, spec.scaling) - cb;
    pc = data_of(prev_codes, heads * cb, "prev.codes");
    ps = data_of(prev_scales, heads * sb, "prev.scales");
  }
  fm::QuantizedHeads q = fm::quantize_heads(p, heads, V, K, spec, seed, step, pc, ps);
  nb::dict d;
  const std::size_t cb = q.code_bytes, sb = q.scale_bytes;
  d["dequantized"] = to_numpy(std::move(q.dequantized), {heads, std::size_t(V), std::size_t(K)});
  d["codes"] = to_numpy(std::move(q.codes), {heads, cb});
  d["scales"] = to_numpy(std::move(q.scales), {heads, sb});
  d["code_bits"] = q.code_bits;
  d["block"] = q.block;
  d["format"] = std::string(fm::format_name(spec.format));
  d["scaling"] = std::string(fm::scaling_name(spec.scaling));
  d["rounding"] = std::string(fm::rounding_name(spec.rounding));
  return d;
}

}  // namespace

void bind_formats(nb::module_& m) {
  m.def("format_names", [] {
    std::vector<std::string> out;
    for (fm::FormatId f : fm::kAllFormats) out.emplace_back(fm::format_name(f));
    return out;
  });
  m.def("valid_scalings", [](const std::string& f) {
    std::vector<std::string> out;
    for (fm::Scaling s : fm::kAllScalings)
      if (fm::scaling_valid(fm::parse_format(f), s)) out.emplace_back(fm::scaling_name(s));
    return out;
  });
  m.def("default_scaling", [](const std::string& f) {
    return std::string(fm::scaling_name(fm::default_scaling(fm::parse_format(f))));
  });
  m.def("bytes_per_state", [](const std::string& f, int V, int K, const std::string& scaling) {
    const fm::FormatSpec spec = fm::parse_format_spec(f, scaling);
    return fm::bytes_per_state(spec.format, V, K, spec.scaling);
  });
  m.def("quantize", &quantize, nb::arg("x"), nb::arg("heads"), nb::arg("V"), nb::arg("K"), nb::arg("format"),
        nb::arg("scaling"), nb::arg("rounding"), nb::arg("seed"), nb::arg("step"), nb::arg("prev_codes"),
        nb::arg("prev_scales"));
}

}  // namespace replayssm::py
