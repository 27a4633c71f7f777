#pragma once
// The decode kernels' launch plan: which engine, layout, kernels and form run one op, chosen by one pure function of
// the problem and the device (plan_launch). Plain C++ with no CUDA types: the CLI prints the table
// (`replayssm bench --list-plans`), the CPU tests pin it, and the CUDA launcher takes a plan and reads nothing else.
//
// One override serves experiments (PlanOverride): `--plan key=value,...` on `replayssm bench` / `validate`, or the
// environment variable REPLAYSSM_PLAN read in one place (plan_override_from_env). Keys (kernels/README.md):
//   kernel=auto|reference      the generic reference kernel for every op
//   layout=auto|combined|split|fused
//                               combined: every path in one grid of 32-row CTAs; split: the flushing sequences in
//                               one kernel, the non-flush op in another; fused: split, with the FP32 step and its
//                               folded flush in one grid where that applies (the default wherever split runs)
//   heads=N                     heads per CTA of the grouped non-flush op (0: the rule; rounded down to a power of
//                               two dividing H / G)
//   slices=N|whole              row slices per CTA of the step flush (0: the rule)
//   hint=exact|unknown|N        the flush count the backend passes (N > 0: claim N where some sequence flushes)
//   records=auto|generic        head_step_kernel's fixed-records instantiation where it applies, or never
//   dots=exact|tc               tc: the row dots on the tensor cores (opt-in; not the emulation's bits)
//   pdl=auto|off                programmatic dependent launch of the split layout's non-flush kernel
//   step=auto|head|slice        the FP32 step kernel's CTA: a whole head, or one 32-row group of a head
//   conv=auto|lane|row8|row8x2|row8x4
//                               conventional decode: conv_kernel (a warp's rows over all 32 lanes) or
//                               conv_row8_kernel (one row per 8 lanes); row8xN: a one-token step of a store narrower
//                               than FP32 takes N 32-row slices per CTA (conv_row8_slices_kernel; at most the width
//                               allows, 8-bit 4, 16-bit 2, and the head's slices)
// Results are bit-identical under every override except dots=tc.
#include <cstdint>
#include <string>
#include <vector>

#include "emulation/decode_api.h"
#include "formats/format_id.h"

namespace replayssm::kern {

// tree: a draft tree's verify (KParams::parents), run by the reference kernel only.
enum class Op : int { step = 0, verify = 1, state = 2, tree = 3 };

// ---- the override ------------------------------------------------------------------------------------------------
struct PlanOverride {
  bool reference = false;
  enum class Layout : std::uint8_t { automatic, combined, split, fused } layout = Layout::automatic;
  int heads = 0;       // 0: the rule
  int slices = 0;      // 0: the rule; kWholeHead: every slice of a head
  int hint = -2;       // kExactHint, kUnknownHint or a claim > 0
  bool generic_records = false;
  bool tc_dots = false;
  bool no_pdl = false;
  enum class Step : std::uint8_t { automatic, head, slice } step = Step::automatic;
  enum class Conv : std::uint8_t { automatic, lane, row8, row8x2, row8x4 } conv = Conv::automatic;
  std::string text;    // the canonical form (to_string), recorded in outputs
};
inline constexpr int kWholeHead = 1 << 20;
inline constexpr int kExactHint = -2;
inline constexpr int kUnknownHint = -1;

// "key=value,key=value" (empty: no override). Throws std::invalid_argument naming the key and what it accepts.
PlanOverride parse_plan_override(const std::string& s);
// The canonical text: keys in the order above, only those that differ from the default ("" for none).
std::string to_string(const PlanOverride& o);
// REPLAYSSM_PLAN, parsed (the only environment variable the kernels' configuration reads). Throws as above, with the
// variable's name in the message.
PlanOverride plan_override_from_env();
// Combines a command line's --plan with REPLAYSSM_PLAN: the command line wins where both are set.
PlanOverride resolve_plan_override(const std::string& option);

// ---- the problem and the device ------------------------------------------------------------------------------------
struct Problem {
  emu::Arch arch = emu::Arch::gdn;
  Op op = Op::step;
  formats::FormatId format = formats::FormatId::fp32;
  formats::Scaling scaling = formats::Scaling::none;
  formats::Rounding rounding = formats::Rounding::rne;
  emu::Policy policy = emu::Policy::conventional_shared;
  emu::USource usource = emu::USource::hp;
  emu::Records records = emu::Records::fp32;
  int B = 1, G = 1, H = 1, K = 128, V = 128, T = 1, L = 16, cap = 23, max_drafts = 8;
  long long flushing = -1;  // sequences that flush in this op (-1: unknown)
  int early = -1;           // sequences that flush early (-1: unknown)
  // What the tuned kernels' shared-memory layouts allow, from the codec's layout functions (the launcher fills them;
  // assume_layouts_fit sets them as at the real head shapes)
  bool head_fits = false;       // replay_head's per-head layout
  bool group_fits = false;      // replay_group's grouped layout
  bool tc_verify_fits = false;  // the tensor-core verify's A fragments in sK and sQ
  bool gdn() const { return arch == emu::Arch::gdn; }
  bool replay() const { return policy != emu::Policy::conventional_shared; }
  bool recompute() const {
    return gdn() && policy == emu::Policy::replay_split && usource == emu::USource::recompute;
  }
  int drafts() const { return op == Op::verify ? T : 0; }
  int nsplit() const { return (V + 31) / 32; }
};
// The problem of a mode and an op on given dims, with the layouts' fits as at the real head shapes (CPU tests, the
// printed table).
Problem make_problem(const emu::Mode& m, const emu::Dims& d, Op op, int T, long long flushing, int early);
void assume_layouts_fit(Problem& p);

struct Device {
  int sms = 132;     // H200
  int cc_major = 9;  // programmatic dependent launch from 9.0
};

// ---- the plan ------------------------------------------------------------------------------------------------------
enum class Engine : std::uint8_t { reference, tuned };
enum class Layout : std::uint8_t { none, conventional, combined, split, fused };
// The split layout's non-flush kernel: replay_hot_kernel per head (head) or per group (group), head_step_kernel (the
// one-token step at the real dims; slice_step: its FP32 form with a CTA per 32-row group), group_verify_kernel (the
// FP32 grouped verify of 2..8 drafts at the real dims).
enum class Hot : std::uint8_t { none, head, group, head_step, group_verify, slice_step };
// The split layout's flush kernel: replay_flush_kernel, generic or with the policy folded (shared / split).
enum class Flush : std::uint8_t { none, generic, fold_shared, fold_split };

struct LaunchPlan {
  Engine engine = Engine::reference;
  std::string reason;  // why the reference kernel runs
  Layout layout = Layout::none;
  Hot hot = Hot::none;
  Flush flush = Flush::none;
  bool tc_dots = false;        // the non-flush kernel's row dots on the tensor cores
  bool fixed_records = false;  // head_step_kernel's instantiation for a 15-record window
  bool real_dims = false;      // the paths with the real head dims as constants
  bool pdl = false;            // the non-flush kernel launched as the flush kernel's programmatic dependent
  bool conv_row8 = false;      // conventional layout: conv_row8_kernel (one row per 8 lanes), else conv_kernel
  int conv_groups = 1;         // 32-row slices per CTA of the conventional row8 form (> 1: conv_row8_slices_kernel)
  int group_heads = 1, flush_slices = 1;
  long long flush_seqs = 0;    // sequences the flush kernel's grid is sized for (0: no flush kernel)
  int fused_rows = 0, fused_stride = 1;
};
std::string to_string(const LaunchPlan& p);  // one line, "key=value" words; "reference (<reason>)" for the reference
const char* layout_name(Layout l);
const char* hot_name(Hot h);
const char* flush_name(Flush f);

// The one decision: every choice of the tuned launcher as a function of (problem, device, override).
LaunchPlan plan_launch(const Problem& p, const Device& dev, const PlanOverride& o = {});
// The tuned plans whose kernels keep BF16 records (emu::Records::bf16, 2-byte record vectors), at the real dims with
// exact dots: a step in head_step_kernel (a head or a row group per CTA) with no flush or the folded one, or the fused
// grid; a verify in group_verify_kernel or replay_hot_kernel (per group or head) with no early flush. plan_launch gives
// every other op with BF16 records (and 8-bit checkpoints) to the reference kernel.
bool bf16_records_tuned(Op op, const LaunchPlan& plan);

// ---- the rules plan_launch composes (measured; kernels/PERF_NOTES.md) ----------------------------------------------
// The real head dims (Qwen3.5 GDN K = V = 128, Nemotron-H Mamba-2 N = 128, P = 64), compiled as constants.
inline bool real_head_dims(bool gdn, int K, int V) { return K == 128 && V == (gdn ? 128 : 64); }
// Conventional decode: conv_row8_kernel for stores narrower than FP32, and for an FP32 step where the grid is at most
// two CTAs per SM (B = 1; the FP32 verify was not timed in both forms). One row per 8 lanes takes 9 shuffles per 4 rows for the two dots and the amax where conv_kernel
// takes 40 to 60, which bounds the narrow stores (0.63-0.99x conv_kernel's time on one H100) and the latency of a
// small grid (FP32 B = 1: GDN 0.91x, Mamba-2 0.97x); a large FP32 grid is bandwidth-bound and loses (GDN 1.08x).
bool conv_row8_rule(int state_bits, bool step, long long ctas, int sms);
// The slices per CTA that the override row8xN (want = N) gets: at most the store's width allows (8-bit 4, 16-bit 2,
// FP32 1) and the head's slices (nsplit), a power of two.
int conv_slices_cap(int state_bits, int nsplit, int want);
// The slices per CTA of an automatic plan's one-token conventional step (heads: B H of the op). One
// H100, both archs, B = 1..512 (PERF_NOTES "Conventional decode of narrow stores"): 16-bit stores gain 5-21% with 2
// at every batch; the FP8 formats gain 3-19% with the cap while the grid keeps half the SMs busy, and lose below
// (GDN B = 1, FP8 row at 4 slices: 4.4 -> 6.9 us), so their slices halve until it does; INT8, the longest decode and
// encode per byte, loses with any (B = 256: 1.26x with 2).
int conv_slices_rule(formats::FormatId f, int nsplit, long long heads, int sms);
// Whether the tuned kernels take the problem at all (else the reference kernel; the reason in *why). FP32 and FP8
// E4M3 for every policy; BF16, FP16, FP8 E5M2 and INT8 for conventional decode only.
bool tuned_applies(const Problem& p, std::string* why);
// Heads of one group per CTA of the ReplaySSM non-flush op: the largest power of two that divides H / G (a CTA's heads
// share one group); with cap > 0 at most cap, for any op; with cap = 0 only for verify (drafts >= kMinGroupDrafts),
// halved while the grid would have fewer than kMinGroupCtasPerSm CTAs per SM, but kept at two heads while their grid
// keeps kMinPairCtasPerSmX2 / 2 CTAs per SM (two heads per CTA measured faster from ~2 CTAs per SM).
inline constexpr int kMinGroupCtasPerSm = 8;
inline constexpr int kMinPairCtasPerSmX2 = 3;
inline constexpr int kMinGroupDrafts = 1;
int group_heads_rule(int B, int G, int H, int drafts, int cap, int sms);
// The split kernels (flushes apart, the non-flush op with its own register allocation) win for verify, for
// low-precision checkpoints and for the FP32 step where head_step_kernel runs it (fp32_step_kernel; the combined
// kernel measured 10-25% slower at B = 1, 16 and 64, and the split one is the fused grid from B = 256); the
// combined kernel keeps the u=recompute step.
bool kernel_split_rule(int state_bits, int drafts, bool recompute, bool fp32_step_kernel = false);
// 32-row slices per CTA of the split layout's step flush: the fewest whose grid fits kFlushCtasPerSm CTAs per SM,
// where the slices outnumber them; else one (a wide grid at small batch).
inline constexpr int kFlushCtasPerSm = 4;
int flush_slices_rule(long long flushing_seqs, int H, int nsplit, int sms);
// The FP32 step's flush, which runs beside the step (PDL or the fused grid): one slice per CTA where every sequence
// flushes (no step beside it: the widest flush grid), whole heads where its slices reach the SM count (then the fused
// grid runs), else half a head. Measured on an H100 against one slice per CTA: GDN B = 2 / 8 / 16 -2 / -15 / -13%
// (half heads), B = 24..64 -6..-9% (whole heads); Mamba-2 B = 2..32 -4..-13% (whole heads); B = 1 within 0.2 us.
int fp32_flush_slices_rule(long long flushing_seqs, int B, int H, int nsplit, int sms);
// One op's slices: 1 unless every flush is a lean step flush (V % 4 == 0, not u=recompute) and none is early;
// fp32_batch > 0: the FP32 step at that batch with a known flush count (fp32_flush_slices_rule), else
// flush_slices_rule.
int step_flush_slices(int forced, long long flushing_seqs, int early_hint, bool lean_flush, int H, int nsplit, int sms,
                      int fp32_batch = 0);
// The FP32 step kernel's CTA (split layout): one 32-row group of a head where a head's groups outnumber the ring's two
// stages (a chain of refills) and its grid would leave SMs idle (B H < kSliceStepHeadsPerSm SMs); else a whole head,
// the window and tables built once. Measured on an H100 (GDN, 4 groups): B = 1 -18%, B = 4 -4%, B = 16 +4%; Mamba-2
// (2 groups, both in flight from the start) +3..+18% at B = 1..64.
inline constexpr int kSliceStepHeadsPerSm = 1;
bool slice_step_rule(int B, int H, int nsplit, int sms);
// head_step_kernel's fixed-records instantiation: a step's window holds min(L - 1, cap) records.
inline constexpr int kStepFixedRecords = 15;
inline bool step_fixed_applies(int L, int cap, bool on) {
  return on && (L - 1 < cap ? L - 1 : cap) == kStepFixedRecords;
}
// The tensor-core verify from these draft counts (below them the FFMA dots measured faster at B = 256).
inline constexpr int tc_verify_min_drafts(bool gdn) { return gdn ? 4 : 6; }
// The fused step grid's flush rows over the first kFusedSpread percent of its B + F rows (75 and 90 measured equal,
// 50 ~1% slower for GDN).
inline constexpr int kFusedSpread = 75;
int fused_stride_rule(int B, int F, int spread);

}  // namespace replayssm::kern
