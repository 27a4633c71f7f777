#pragma once
// An activation dump (datasets/README.md) as decode cases: every layer in the recurrence-facing FP32 form of
// decode_api.h, one sequence (B = 1). `validate --activations` runs these through every mode; `validate --external
// --mode` runs one mode over them.
#include <string>
#include <vector>

#include "emulation/decode_api.h"
#include "emulation/validation.h"

namespace replayssm::emu {

struct DumpLayerCase {
  std::string layer;      // the dump's layer name (/layers/<name>)
  Shape shape;            // arch and dims; name "acts layer <name>"
  TokenData tokens;       // all T tokens (B = 1), prepared: GDN a = exp(g), q scaled; Mamba-2 a = exp(dt A), v = dt x
  std::vector<float> S0;  // [H][V][K]: the dump's initial_state, or zeros
  double a_max = 0.0;     // the largest decay (the layer's effective memory)
};

// Reads every layer of the dump; a missing or misshapen field is a UserError naming the file and the field (exit 2).
std::vector<DumpLayerCase> load_dump_cases(const std::string& path);

// The first max_tokens tokens of a layer as single-step ops, starting from its initial state.
CaseInputs dump_case_inputs(const DumpLayerCase& l, int max_tokens);
// The Case of those inputs: its ops, and the effective memory from the layer's largest decay (zero_init when the
// dump has no initial state).
Case dump_case(const DumpLayerCase& l, const CaseInputs& in);

}  // namespace replayssm::emu
