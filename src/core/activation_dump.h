#pragma once
// The activation-dump file contract (datasets/README.md): what `capture` writes and `reference`, `validate` and
// `sweep --activations` read. One reader, with every check, so all commands reject bad files the same way.
#include <optional>
#include <string>
#include <vector>

#include "core/h5.h"
#include "reference/layer_inputs.h"

namespace replayssm {

enum class Arch { gdn, mamba2 };
Arch parse_arch(const std::string& name);  // throws UserError for unknown names
const char* arch_name(Arch a);

// How far above 1 the L2 norm of a q or k row may be (float32 rounding of a normalised row is ~sqrt(K) * 2^-24).
constexpr double kUnitNormTolerance = 1e-4;

struct DumpLayer {
  std::string name;  // "0", "1", ... (the group under /layers)
  ref::GdnInputs gdn;        // filled when arch == gdn
  ref::Mamba2Inputs mamba2;  // filled when arch == mamba2
  std::optional<std::vector<double>> initial_state;  // [Hv][V][K] or [H][P][N]
};

struct ActivationDump {
  std::string path;
  Arch arch = Arch::gdn;
  std::vector<DumpLayer> layers;  // in numeric order of their names
};

// Reads and validates the whole dump (ranks, shapes, head grouping, NaN/Inf, value ranges); any problem is a
// UserError "file: /layers/<i>/<field>: what" (exit 2).
ActivationDump read_activation_dump(const std::string& path);

// Writers used by `synth` and `capture`. as_float32 stores the inputs as float32 (the usual dump precision).
void write_dump_header(h5::File& f, Arch arch, double gdn_scale);
void write_gdn_layer(h5::File& f, const std::string& layer, const ref::GdnInputs& in, bool as_float32,
                     const std::vector<double>* initial_state = nullptr);
void write_mamba2_layer(h5::File& f, const std::string& layer, const ref::Mamba2Inputs& in, bool as_float32,
                        const std::vector<double>* initial_state = nullptr);

}  // namespace replayssm
