#pragma once
// The validation harness shared by `replayssm validate` and tests/kernels: cases (op sequences on fresh random
// inputs, awkward lengths and decays, every accepted length), the FP64 references of a case -- the plain recurrence
// (run_reference) and the mode-aware one (run_mode_aware: the format's codec applied where the mode stores,
// reference/README.md) -- and the comparison of a backend against them (and of one backend against another) with the
// tolerances of tolerances.h. The pass criterion of a mode is check_vs_mode_aware; check_vs_reference measures the
// distance to the exact recurrence.
#include <cstdint>
#include <memory>
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
  // Non-empty (with verify, T = tree.size()): a tree verify of these parents (DecodeBackend::verify_tree); accept is
  // then the accepted node of sequence 0 (-1..T-1), sequence b accepts node (accept + 1 + b) % (T + 1) - 1.
  std::vector<int> tree = {};
};
// The accepted node of sequence b after tree op `op`, and the tokens sequence b commits with any op.
int accepted_node(const Op& op, int b);
int committed_by(const Op& op, int b);

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

// Tree verify cases of one tree (parents) named "tree <label> ...": after committed steps (a non-empty window) a tree
// verify accepting the deepest node, steps through a flush, a tree verify accepting its last node, a step; and L - 1
// steps, a tree verify accepting the deepest node, then one that flushes early (in a mode of tree_mode), a step, one
// accepting nothing, a step. Throws std::invalid_argument for a bad tree.
std::vector<Case> tree_cases(int L, const std::vector<int>& parents, const std::string& label);
// m with max_drafts = T: the buffer holds L - 1 + T records, so a tree verify after an accepted path behind L - 1
// records flushes early.
Mode tree_mode(Mode m, int T);

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

// The stored F copy of a backend against the mode-aware reference's, compared element by element after init and after
// every op (tolerances.h, StoreTolerance): equal, a flip (the neighbouring code; taken over by the reference), or
// illegal.
struct StoreCheck {
  long stores = 0;           // stores the reference made (head x store; the initial store included)
  long elements = 0;         // elements in those stores
  long flips = 0;            // elements one code step from the reference's store (taken over)
  long illegal = 0;          // elements further away, or non-finite
  long layout_mismatches = 0;  // checks where the backend's stored bytes do not have the mode's layout
  double max_op_flip_fraction = 0.0;  // the largest flips / stored elements of one op
  long first_illegal_op = -2;         // -1 = the initial store, 0.. = op index; -2 = none
  double flip_fraction() const { return elements > 0 ? double(flips) / double(elements) : 0.0; }
};

struct CheckRow {
  std::string arch, kernel, mode, case_name, shape, against;
  Comparison out, state;
  Tolerance tol;
  bool pass = false;
  double bits_identical = -1.0;  // fraction of identical stored bytes (backend vs emulation), -1 = n/a
  // check_vs_mode_aware only:
  StoreCheck stores;
  double max_flip_fraction = -1.0;  // the allowed flip fraction, -1 = n/a
  bool fp64_measured = false;       // fp64_out / fp64_state hold the plain-FP64 distance (a measurement, not a criterion)
  Comparison fp64_out, fp64_state;
  std::string why;  // the failed criteria, "" when it passes
};
// Backend vs the FP64 reference, with tolerance_vs_fp64(m, ...). A measurement of the distance to the exact recurrence;
// since the mode-aware reference exists it is not the pass criterion of a quantised mode (tolerance_vs_fp64 caps at
// rel-RMS 1 for 4-bit formats re-quantised every token): use check_vs_mode_aware. An all-zero output or state where
// the reference's is not zero fails here whatever the tolerance.
CheckRow check_vs_reference(const Mode& m, const Case& c, const CaseInputs& in, const CaseOutputs& ref,
                            const CaseOutputs& got);
// Backend vs the emulation (kEmulationTolerance); also the fraction of identical stored bytes.
CheckRow check_vs_emulation(const Mode& m, const Case& c, const CaseInputs& in, const CaseOutputs& emu,
                            const CaseOutputs& got);

// ---- The mode-aware FP64 reference (reference/mode_aware.h, reference/README.md) ----
// The FP64 recurrence of a mode with the format's codec applied exactly where the mode stores, as a DecodeBackend
// (its FP64 outputs and states are rounded to FP32 at this interface; run_mode_aware uses them unrounded).
std::unique_ptr<DecodeBackend> make_mode_aware_reference();

struct ModeAwareOptions {
  // Mutation tests only: run the backend in this mode (arch taken from the case) while the reference keeps m.
  const Mode* backend_mode = nullptr;
  // Mutation tests only: added to the SR step index of every token store of the reference.
  std::uint32_t reference_sr_step_offset = 0;
};

struct ModeAwareRun {
  CaseOutputs ref;  // the mode-aware reference (FP64): outputs and final state, the backend's flips taken over
  CaseOutputs got;  // the backend's
  StoreCheck stores;
};
// Runs the backend and the mode-aware reference of m side by side over a case. After init and after every op the
// backend's stored copy (DecodeBackend::stored) is compared with the reference's, element by element: a flip (the
// neighbouring code, because the FP32 and FP64 states straddle a rounding boundary) is taken over by the reference, so
// that what remains between them is FP32 arithmetic only; anything further is counted illegal.
ModeAwareRun run_mode_aware(DecodeBackend& be, const Mode& m, const Case& c, const CaseInputs& in,
                            const ModeAwareOptions& opt = {});
// Backend vs the mode-aware reference with tolerance_vs_mode_aware: outputs and final state within the FP32 bound, no
// illegal stored element, flips within the allowed fraction, the same token and flush counts, and neither output nor
// state all-zero where the reference's is not. With fp64 (run_reference of the same inputs), the plain-FP64 distance
// is filled in as a measurement (fp64_out, fp64_state), not as a criterion.
CheckRow check_vs_mode_aware(const Mode& m, const Case& c, const CaseInputs& in, const ModeAwareRun& run,
                             const CaseOutputs* fp64 = nullptr);

// The validation modes of an arch: every policy (and GDN u-source) x formats. main_only: fp32, bf16,
// fp8_e4m3/row, nvfp4/block.
std::vector<Mode> modes_for(Arch a, bool main_only);
// Every policy (and GDN u-source) of each (format, scaling, rounding), seed 1234.
std::vector<Mode> modes_of(Arch a, const std::vector<formats::FormatSpec>& specs);
// The formats whose stored state resolves ~2^-16 of the value or of its scale group (int16; compensated bf16x2), a
// few bits above the FP32 floor of the mode-aware check: their emulation is checked against the mode-aware reference
// as every mode is, but they are not in modes_for's list, whose every mutation (a swapped rounding or u-source
// included) must fail that check: at this resolution such a swap moves the state by less than the FP32 floor. Also
// int8_ef (INT8 with an error-feedback residual), which has no stochastic rounding to swap. `replayssm validate` runs
// them after modes_for's on the small shapes.
std::vector<Mode> fine_modes_for(Arch a);
// The replay modes (every policy and GDN u-source) of fp32 and fp8_e4m3/row with BF16 records (Records::bf16).
// `replayssm validate` runs them after fine_modes_for's on the small shapes.
std::vector<Mode> records_modes_for(Arch a);

}  // namespace replayssm::emu
