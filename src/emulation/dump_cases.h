#pragma once
// Model-facing inputs (the activation-dump fields, datasets/README.md) in the recurrence-facing FP32 form of
// decode_api.h, and an activation dump as decode cases. One conversion, used by `validate --activations` (every mode
// over a dump), `validate --external --mode` and the Python package's emulation, so all three feed the emulation the
// same bits: GDN a = float(exp(g)), q = float(scale q); Mamba-2 a = float(exp(dt A)), v = float(dt x),
// skip = float(D x), k = B, q = C (products and exp in FP64, one rounding to FP32).
#include <string>
#include <vector>

#include "emulation/decode_api.h"
#include "emulation/validation.h"
#include "reference/layer_inputs.h"

namespace replayssm::emu {

// B sequences of T tokens, every array row-major with the batch axis first: GDN q, k [B][T][Hk][K], v [B][T][Hv][V],
// g, beta [B][T][Hv]; Mamba-2 x [B][T][H][P], Bm, C [B][T][G][N], dt [B][T][H], A [H], D [H] or null.
TokenData gdn_tokens(int B, int T, int Hk, int Hv, int K, int V, double scale, const double* q, const double* k,
                     const double* v, const double* g, const double* beta);
TokenData mamba2_tokens(int B, int T, int G, int H, int N, int P, const double* x, const double* Bm, const double* C,
                        const double* dt, const double* A, const double* D);

struct DumpLayerCase {
  std::string layer;      // the dump's layer name (/layers/<name>)
  Shape shape;            // arch and dims; name "acts layer <name>"
  TokenData tokens;       // all T tokens (B = 1)
  std::vector<float> S0;  // [H][V][K]: the dump's initial_state, or zeros
  double a_max = 0.0;     // the largest decay (the layer's effective memory)
};

// One layer's case from validated reference inputs (initial_state [H][V][K] or null).
DumpLayerCase gdn_layer_case(const std::string& layer, const ref::GdnInputs& in, const std::vector<double>* init);
DumpLayerCase mamba2_layer_case(const std::string& layer, const ref::Mamba2Inputs& in,
                                const std::vector<double>* init);

// Reads every layer of the dump with the one dump reader (core/activation_dump.h); a missing, misshapen or
// out-of-range field is a UserError naming the file and the field (exit 2), as is a K (Mamba-2 N) the emulation
// cannot take (not a multiple of 4).
std::vector<DumpLayerCase> load_dump_cases(const std::string& path);

// The first max_tokens tokens of a layer as single-step ops, starting from its initial state.
CaseInputs dump_case_inputs(const DumpLayerCase& l, int max_tokens);
// The Case of those inputs: its ops, and the effective memory from the layer's largest decay (zero_init when the
// dump has no initial state).
Case dump_case(const DumpLayerCase& l, const CaseInputs& in);

}  // namespace replayssm::emu
