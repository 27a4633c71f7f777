#pragma once
// The validation harness shared by `replayssm validate` and tests/kernels: cases (op sequences on fresh random
// inputs, awkward lengths and decays, every accepted length), the FP64 reference of a case, and the comparison
// of a backend against it (and of one backend against another) with the tolerances of tolerances.h.
#include <cstdint>
#include <string>
#include <vector>

#include "core/compare.h"
#include "emulation/decode_api.h"

namespace replayssm::emu {

struct Shape {
  std::string name;
  Arch arch = Arch::gdn;
  Dims dims;
};
// "small" | "nemotron-h" (Mamba-2 only) | "qwen3.5" (GDN only) | "all"; returns the shapes of `arch`.
std::vector<Shape> shapes_for(const std::string& which, Arch arch);

struct Op {
  int T = 1;          // 1 with verify=false: a standard step
  bool verify = false;
  int accept = 0;     // verify: accepted drafts of sequence 0; sequence b accepts (accept + b) % (T + 1)
};

struct Case {
  std::string name;
  std::vector<Op> ops;
  double g_lo = -2.0, g_hi = -0.01;  // log-decay range of the random inputs
  bool zero_init = false;
};
// The case list: "full" (every awkward case) or "quick" (T=1, L+1, long, one verify, a one-draft verify). long_steps
// sizes "long".
std::vector<Case> cases_for(int L, int max_drafts, bool full, int long_steps);
// L - 1 steps, a verify of max_drafts drafts accepting max_drafts - 1 (sequence 0) and max_drafts (sequence 1), so
// that both buffers are nearly full, then a verify of min(4, max_drafts) drafts that flushes early in sequences 0 and 1
// in the same op, then a step: the case behind the tuned flush kernel's multi-sequence early flush (B >= 2).
Case two_early_flushes_case(int L, int max_drafts);
// L - 1 steps, a verify of max_drafts drafts that sequence 0 accepts whole (its buffer then full) and sequence 1
// rejects, then steps: the first of them flushes early in sequence 0 and at the L-th record in sequence 1, in one step
// op (an early flush in a step op, which the tuned launcher must give one slice per flush CTA; B >= 2).
Case step_at_capacity_case(int L, int max_drafts);

// Inputs of a whole case (one TokenData per op) and the initial state.
struct CaseInputs {
  Shape shape;
  std::vector<TokenData> ops;
  std::vector<Op> op_list;
  std::vector<float> S0;  // [B][H][V][K]
};
CaseInputs make_inputs(const Shape& s, const Case& c, std::uint64_t seed);
// A case from real activations: one sequence, T standard steps (prepared from a dump layer by the caller).
CaseInputs inputs_from_tokens(const Shape& s, const TokenData& steps, int max_tokens);

// What running a case produces: every output (steps and drafts, in op order) and the final materialised state.
struct CaseOutputs {
  std::vector<double> o, state;
  std::vector<std::uint8_t> codes, scales;  // the stored F copy at the end
  long flushes = 0;
  long n_tokens = 0;  // committed tokens (per sequence)
};
CaseOutputs run_reference(const CaseInputs& in);  // FP64 spec: recurrent steps
CaseOutputs run_backend(DecodeBackend& be, const Mode& m, const CaseInputs& in);

struct CheckRow {
  std::string arch, kernel, mode, case_name, shape, against;
  Comparison out, state;
  Tolerance tol;
  bool pass = false;
  double bits_identical = -1.0;  // fraction of identical stored bytes (backend vs emulation), -1 = n/a
};
// Backend vs the FP64 reference, with tolerance_vs_fp64(m, ...).
CheckRow check_vs_reference(const Mode& m, const Case& c, const CaseInputs& in, const CaseOutputs& ref,
                            const CaseOutputs& got);
// Backend vs the emulation (kEmulationTolerance); also the fraction of identical stored bytes.
CheckRow check_vs_emulation(const Mode& m, const Case& c, const CaseInputs& in, const CaseOutputs& emu,
                            const CaseOutputs& got);

// The validation modes of an arch: every policy (and GDN u-source) x formats. main_only: fp32, bf16,
// fp8_e4m3/row, nvfp4/block.
std::vector<Mode> modes_for(Arch a, bool main_only);

}  // namespace replayssm::emu
