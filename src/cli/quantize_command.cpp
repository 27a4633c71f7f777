// `replayssm quantize`: store an array in one of the state formats and read it back.
//   replayssm quantize --format F [--scaling none|head|row|block|column] [--rounding rne|sr|philox --seed N]
//                      --in file.h5:/dataset --out out.h5
// The dataset's last axis is K (blocks run along it), the axis before it is V (the rows of one head state), and
// every axis before those is flattened, row-major, into the head index h (a rank-2 dataset is one head). So a
// [B, H, V, K] state gives B*H head states, head h = b*H + hh, each encoded by StateCodec<F>::encode_state with
// params.head = h (the SR counter), params.step = 0.
// Output: /dequantized float32 (the input's shape), /codes uint8 [heads, code bytes per head], /scales uint8
// [heads, scale bytes per head] (the raw layouts of src/formats/README.md), and the options as root attributes.
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/errors.h"
#include "core/h5.h"
#include "formats/format_id.h"
#include "formats/quantize_heads.h"
#include "formats/state_codec.h"

namespace replayssm::cli {
namespace {

namespace fm = replayssm::formats;

void add_options(po::options_description& d) {
  static const std::string format_help = "one of: " + fm::format_names();
  static const std::string scaling_help = "one of: " + fm::scaling_names() +
                                          " (valid per format: src/formats/README.md; default: none for the unscaled "
                                          "formats, row for fp8/int8/int16, block for nvfp4/mx)";
  d.add_options()
    ("format", po::value<std::string>()->required(), format_help.c_str())
    ("scaling", po::value<std::string>()->default_value(""), scaling_help.c_str())
    ("rounding", po::value<std::string>()->default_value("rne"), "rne (nearest even), sr (stochastic, counter hash) or philox (stochastic, Philox-4x32-10)")
    ("seed", po::value<unsigned long long>()->default_value(0), "seed of the stochastic rounding")
    ("in", po::value<std::string>()->required(), "input array: file.h5:/dataset (last axis = K)")
    ("out", po::value<std::string>()->required(), "output file (.h5)");
}

int run(const po::variables_map& vm) {
  fm::FormatSpec spec;
  try {
    spec = fm::parse_format_spec(vm["format"].as<std::string>(), vm["scaling"].as<std::string>(),
                                 vm["rounding"].as<std::string>());
  } catch (const std::invalid_argument& e) {
    throw UserError(e.what());
  }
  const auto [in_path, dataset] = h5::split_file_dataset(vm["in"].as<std::string>());
  if (dataset.empty()) throw UserError("--in " + in_path + ": expected file.h5:/dataset");
  h5::refuse_output_over_input(vm["out"].as<std::string>(), {in_path});
  h5::File in = h5::File::open_read(in_path);
  if (!in.is_dataset(dataset)) in.fail(dataset, "no such dataset");
  const h5::Shape shape = in.shape(dataset);
  if (shape.size() < 2) in.fail(dataset, "expected rank >= 2 ([..., V, K]), got rank " + std::to_string(shape.size()));
  const std::size_t Kz = shape[shape.size() - 1], Vz = shape[shape.size() - 2];
  std::size_t Hz = 1;
  for (std::size_t i = 0; i + 2 < shape.size(); ++i) Hz *= shape[i];
  if (Kz == 0 || Vz == 0 || Hz == 0) in.fail(dataset, "empty array");
  if (Kz > (1u << 30) || Vz > (1u << 30) || Vz * Kz > (std::size_t{1} << 31))
    in.fail(dataset, "head state [V, K] too large");
  const int V = static_cast<int>(Vz), K = static_cast<int>(Kz);
  // NaN/Inf are allowed: what each format does with them is part of the study (src/formats/README.md).
  const h5::Array<float> x = in.read_f32(dataset, /*require_finite=*/false);

  const std::uint64_t seed = vm["seed"].as<unsigned long long>();
  const fm::QuantizedHeads q = fm::quantize_heads(x.data.data(), Hz, V, K, spec, seed);

  h5::AtomicOutput out(vm["out"].as<std::string>());
  h5::File& f = out.file();
  f.write("/dequantized", shape, q.dequantized.data());
  f.write("/codes", {Hz, q.code_bytes}, q.codes.data());
  f.write("/scales", {Hz, q.scale_bytes}, q.scales.data());
  f.set_attr("/", "format", fm::format_name(spec.format));
  f.set_attr("/", "scaling", fm::scaling_name(spec.scaling));
  f.set_attr("/", "rounding", fm::rounding_name(spec.rounding));
  f.set_attr("/", "seed", static_cast<std::int64_t>(seed));
  f.set_attr("/", "step", static_cast<std::int64_t>(0));
  f.set_attr("/", "input", vm["in"].as<std::string>());
  f.set_attr("/", "heads", static_cast<std::int64_t>(Hz));
  f.set_attr("/", "rows", static_cast<std::int64_t>(V));
  f.set_attr("/", "K", static_cast<std::int64_t>(K));
  f.set_attr("/", "code_bits", static_cast<std::int64_t>(q.code_bits));
  f.set_attr("/", "block", static_cast<std::int64_t>(q.block));
  f.set_attr("/", "code_bytes_per_head", static_cast<std::int64_t>(q.code_bytes));
  f.set_attr("/", "scale_bytes_per_head", static_cast<std::int64_t>(q.scale_bytes));
  f.set_attr("/", "layout",
             "heads = product of all axes but the last two (row-major); codes[h] = row-major [V][K] codes of head h "
             "(4-bit: even element in the low nibble); scales[h] = raw little-endian scale bytes of head h, "
             "see src/formats/README.md");
  h5::write_provenance(f, command_line(), resolved_options(vm), "cpu");
  out.commit();
  std::cout << "quantize: " << fm::format_name(spec.format) << " (" << fm::scaling_name(spec.scaling) << ", "
            << fm::rounding_name(spec.rounding) << "): " << Hz << " head state(s) of [" << V << ", " << K << "], "
            << (q.code_bytes + q.scale_bytes) << " bytes each, to " << out.final_path() << "\n";
  return kExitOk;
}

const Registrar reg{{"quantize", "store an array in a state format (codes + scales) and read it back", add_options,
                     run,
                     "replayssm quantize --format nvfp4 --in states.h5:/layers/0/state --out q.h5"}};

}  // namespace
}  // namespace replayssm::cli
