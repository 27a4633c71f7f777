#pragma once
// Launch interface of the decode kernels (host side, no CUDA types), shared by kernels/{gdn,mamba2}/*.cu and the
// backend (kernels/common/cuda_backend.cu). All pointers are device pointers; layouts as in
// src/emulation/decode_api.h and the emulation's stores (kernels/README.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "emulation/decode_api.h"
#include "formats/hd.h"

namespace replayssm::kern {

enum class Op : int { step = 0, verify = 1, state = 2 };

struct KParams {
  int B = 0, G = 0, H = 0, K = 0, V = 0;
  int L = 16, cap = 23, max_drafts = 8, T = 1;
  emu::Policy policy = emu::Policy::conventional_shared;
  emu::USource usource = emu::USource::hp;
  formats::Scaling scaling = formats::Scaling::none;
  formats::Rounding rounding = formats::Rounding::rne;
  std::uint64_t seed = 0;
  Op op = Op::step;
  // token batch [B][T]...
  const float *a = nullptr, *beta = nullptr, *v = nullptr, *k = nullptr, *q = nullptr, *skip = nullptr;
  float* o = nullptr;          // step [B][H][V], verify [B][T][H][V]
  float* state_out = nullptr;  // Op::state: [B][H][V][K]
  // stores, per head hh = b * H + h
  std::uint8_t* codes = nullptr;
  std::uint8_t* scales = nullptr;
  std::size_t code_bytes = 0, scale_bytes = 0;
  float* hp = nullptr;  // split: [heads][V][K]
  std::uint8_t* snap_codes = nullptr;  // conventional verify: [heads][max_drafts][code_bytes]
  std::uint8_t* snap_scales = nullptr;
  float *ra = nullptr, *rbeta = nullptr, *rk = nullptr, *rw = nullptr, *rv = nullptr;  // [heads][cap](x K | V)
  // per sequence
  const int* n = nullptr;      // valid records before this op
  const int* early = nullptr;  // 1: flush the n records first (the op would overflow the buffer)
  const int* tok = nullptr;    // committed tokens (SR step index)
  // How many sequences flush in this op (early flush, or a step that fills the window), where the caller knows it
  // (the backend and the bench do); -1 = unknown. Sizes the tuned flush kernel's grid (v13), and 0 skips it: results
  // depend only on whether it is 0 where some sequence flushes (then it must not be).
  int flush_hint = -1;
  // set by the fast launcher (fast_kernel.cuh): replay_head's dynamic shared memory in floats, 0 = not used
  int head_floats = 0;
  // set by the fast launcher: log2(H / G) where that is a power of two, else -1 (the group of head h without the two
  // integer divisions that were 2-4% of the replay kernel's instructions, PERF_NOTES v11)
  int group_shift = -1;
  // set by the fast launcher: heads per CTA of the non-flush op (v12, a power of two dividing H / G; 1 = one per head)
  int group_heads = 1;
  // set by the fast launcher for replay_group: its shared-memory offsets in floats (fast_replay_group.cuh, group_plan)
  struct HeadLayout {
    int A = 0, B = 0, K = 0, Q = 0, W = 0, Vt = 0, Sk = 0, Tot = 0, CU = 0, CO = 0, D = 0, ring = 0, DotQ = 0, DotK = 0;
  } hl;
  // set by the fast launcher: 32-row slices per CTA of the split layout's step flush (v24, fast_kernel.cuh: one
  // window staging and one set of tables for that many slices of a head; 1 = a CTA per slice, v13-v23). Last, so that
  // the fields above keep their offsets: v24a put it before hl, which changed the SASS of replay_group (it reads hl)
  // and measured verify 1-2% slower; here replay_group's SASS equals v22's.
  int flush_slices = 1;
  // How many sequences flush early in this op where the caller knows it (the backend and the bench do); -1 = unknown.
  // The step flush runs several row slices per CTA only where it is 0 (kern::step_flush_slices): an early flush takes
  // replay_flush, one slice per work item; and (v62) the folded step-flush kernel, which has no replay_flush path,
  // runs only where it is 0. So it must be exact or -1; -1 (the default) costs only speed. Last in the struct, like
  // flush_slices, so that the other fields keep their offsets.
  int early_hint = -1;
  // v66: set by the fast launcher for step_flush_kernel (the FP32 step and its folded flush in one grid): grid row
  // j * fused_stride (j < fused_rows) holds flush items, the other rows the step's sequences in order. Last, so that the
  // other fields keep their offsets.
  int fused_rows = 0, fused_stride = 1;
  int fused_scratch = 0;  // its flush rows' scan scratch: an int offset into dynamic shared memory past both layouts
  // v67 (kern::set_fast_step_fused(2)): fused_mul_rule(fused_stride), the row's role and sequence by mul-hi's instead
  // of divisions. After fused_scratch, so that v66's kernels keep their parameter offsets (and SASS).
  unsigned fused_mul = 0;
};

// Both return a cudaError_t as int (0 = success).
int launch_gdn(formats::FormatId f, const KParams& p, void* stream);
int launch_mamba2(formats::FormatId f, const KParams& p, void* stream);
// The tuned kernels (common/fast_kernel.cuh): -1 where they do not apply (the launchers above then use the reference
// kernel), else a cudaError_t. REPLAYSSM_REFERENCE_KERNEL=1 in the environment forces the reference kernel.
int launch_fast_gdn(formats::FormatId f, const KParams& p, void* stream);
int launch_fast_mamba2(formats::FormatId f, const KParams& p, void* stream);
// Heads of one group per CTA in the tuned ReplaySSM non-flush op: 0 = the launcher's rule (group_heads_rule below);
// n > 0 overrides it: the largest power of two <= n that divides H / G, for every op and batch that runs the split
// layout (v13: only its non-flush kernel groups; with set_fast_kernel_split(1) every op does, so 16 also groups
// one-draft steps, which measured slower, and starves the grid at batch 1). The tests run every case with 1 and with
// every head of a group; REPLAYSSM_GROUP_HEADS=n in the environment sets the start value (A/B of one binary). Results
// are bit-identical for every value.
void set_fast_group_heads(int n);
int fast_group_heads();
// The largest heads per CTA a tuned ReplaySSM launch used since the last call with reset = true (tests: the group path
// really ran where they force it).
int fast_group_heads_used(bool reset);
void note_group_heads_used(int n);
// How many tuned ReplaySSM launches ran the split layout since the last call with reset = true (tests: the split layout
// really ran where they force it).
long fast_split_launches(bool reset);
void note_split_launch();
// How many tuned ReplaySSM launches ran head_step_kernel (v32: the one-token FP8 row-scaled step at the real dims in
// the split layout, v35: and the FP32 one; REPLAYSSM_STEP_KERNEL=0 in the environment turns it off) since the last call with reset = true.
long fast_step_kernel_launches(bool reset);
void note_step_kernel_launch();
// How many tuned ReplaySSM launches ran group_verify_kernel (v39: the grouped FP32 verify of T = 2..8 drafts at the real
// dims, the draft count a constant; REPLAYSSM_VERIFY_KERNEL=0 turns it off) since the last call with reset = true.
long fast_verify_kernel_launches(bool reset);
void note_verify_kernel_launch();
// How many tuned ReplaySSM launches ran the folded step flush (v42: replay_flush_kernel's kFold, the split layout's step
// flush at the real dims with FP32 or row-scaled RNE 8-bit codes, replay-shared or split u=lp; REPLAYSSM_FLUSH_FOLD=0
// turns it off) since the last call with reset = true.
long fast_flush_fold_launches(bool reset);
void note_flush_fold_launch();
// The environment's A/B knobs of the folded step flush, as the launcher reads them (common/fast_kernel.cuh caches
// them; the tests ask here): REPLAYSSM_LEAN=0..7 (which lean paths run, default 7; bit 1: the step flush) and
// REPLAYSSM_FLUSH_FOLD=0 (the generic flush). v62: the fold needs the lean step flush.
inline int lean_paths_env() {
  const char* e = std::getenv("REPLAYSSM_LEAN");
  return (!e || !*e) ? 7 : (std::atoi(e) & 7);
}
inline bool flush_fold_env() {
  const char* e = std::getenv("REPLAYSSM_FLUSH_FOLD");
  return !(e && *e && std::atoi(e) == 0);
}
inline bool flush_fold_allowed_env() { return flush_fold_env() && (lean_paths_env() & 2) != 0; }
// v66: the FP32 step and its folded step flush in one grid (step_flush_kernel) wherever the split layout would run both
// at the real dims with whole-head flush items (the split layout's FP32 step: GDN B H >= 8192, Mamba-2 >= 16384;
// fp32_step_split_rule): 1 = on (default), 0 = the two kernels. Measured against the two kernels (B H heads; L = 16,
// 1/16 of the sequences flush; PERF_NOTES twenty-sixth pass, calls 4-5): GDN 8192 -3.5%, 12288 -1.4%, 16384 -2.2%;
// Mamba-2 16384 -4.3%, 32768 -1.8..-2.4%, 49152 -2.0..-2.4%, 65536 -1.4..-1.7%. REPLAYSSM_STEP_FUSED=0|1|2 in the
// environment sets the start value; REPLAYSSM_FUSED_SPREAD (percent, default 75) where its flush rows end in the grid
// (A/B knobs of one binary). Results are bit-identical.
// v67, mode 2 (opt-in, GDN only, not yet timed): the same grid with the row's role and sequence from two mul-hi's of
// KParams::fused_mul instead of two integer divisions (fused_mul_rule), so that the sequence index is uniform across
// the CTA and stays in uniform registers; ptxas then spills 8 B per thread in the step path instead of 20 B (v66: ncu
// 52 MB of local stores and ~19 MB more DRAM writes than the two kernels, PERF_NOTES twenty-seventh pass). Where the
// mul-hi's would not be exact (fused_mulhi_applies: (B + F + k) k >= 2^31; at spread 75 from B = 40450 with one
// flushing sequence, never with three or more) mode 2 runs mode 1's kernel.
inline constexpr int kFusedSpread = 75;  // measured (B = 256, 512): 75 and 90 equal, 50 ~1% slower for GDN
void set_fast_step_fused(int mode);  // 0, 1 or 2 (other values: 1)
int fast_step_fused();
// How many tuned ReplaySSM launches ran step_flush_kernel since the last call with reset = true (tests).
long fast_step_fused_launches(bool reset);
void note_step_fused_launch();
// How many of them ran v67's mul-hi form (mode 2) since the last call with reset = true (tests).
long fast_step_mulhi_launches(bool reset);
void note_step_mulhi_launch();
inline int step_fused_env() {
  const char* e = std::getenv("REPLAYSSM_STEP_FUSED");
  const int v = e && *e ? std::atoi(e) : 1;
  return v == 0 || v == 2 ? v : 1;
}
inline int fused_spread_env() {
  const char* e = std::getenv("REPLAYSSM_FUSED_SPREAD");
  const int v = (!e || !*e) ? kFusedSpread : std::atoi(e);
  return v < 0 ? 0 : v > 100 ? 100 : v;
}
// The grid-row stride of step_flush_kernel's flush rows: F rows spread over the first spread % of the B + F rows.
inline int fused_stride_rule(int B, int F, int spread) {
  if (F <= 0) return 1;
  const long long k = static_cast<long long>(spread) * (B + F) / (100LL * F);
  return k < 1 ? 1 : static_cast<int>(k);
}
// The sequence of step_flush_kernel's step row y (not a flush row): y less the flush rows before it.
REPLAYSSM_HD int fused_step_seq(int y, int F, int k) {
  const int before = (y + k - 1) / k;
  return y - (before < F ? before : F);
}
REPLAYSSM_HD bool fused_flush_row(int y, int F, int k) { return y % k == 0 && y / k < F; }
// v67: m = ceil(2^31 / k) gives floor(x / k) = mulhi(2 x, m) for every x with x k < 2^31 (m k = 2^31 + e, 0 <= e < k:
// x m / 2^31 = x / k + x e / (k 2^31), and x e < 2^31 keeps the excess below 1 / k); 2^31 rather than 2^32 so that
// k = 1 fits 32 bits. The largest x the kernel divides is rows + k - 2 (rows = B + F grid rows).
inline bool fused_mulhi_applies(int rows, int k) {
  if (k < 1 || rows < 1) return false;
  const unsigned long long kk = static_cast<unsigned long long>(k), top = static_cast<unsigned long long>(rows) + kk;
  return top * kk < (1ull << 31);
}
inline unsigned fused_mul_rule(int k) {
  const unsigned long long kk = static_cast<unsigned long long>(k < 1 ? 1 : k);
  return static_cast<unsigned>(((1ull << 31) + kk - 1) / kk);
}
REPLAYSSM_HD unsigned fused_div_mulhi(unsigned x, unsigned m) {  // x / k for m = fused_mul_rule(k)
#ifdef __CUDA_ARCH__
  return __umulhi(x << 1, m);
#else
  return static_cast<unsigned>((static_cast<unsigned long long>(x << 1) * m) >> 32);
#endif
}
// fused_flush_row and fused_step_seq by fused_div_mulhi (where fused_mulhi_applies(B + F, k)): row y is flush row
// q = y / k where q k == y and q < F (-1: a step row), else the step row of sequence y - min(F, (y + k - 1) / k).
REPLAYSSM_HD int fused_flush_index_mulhi(int y, int F, int k, unsigned m) {
  const int q = static_cast<int>(fused_div_mulhi(static_cast<unsigned>(y), m));
  return q * k == y && q < F ? q : -1;
}
REPLAYSSM_HD int fused_step_seq_mulhi(int y, int F, int k, unsigned m) {
  const int before = static_cast<int>(fused_div_mulhi(static_cast<unsigned>(y + k - 1), m));
  return y - (before < F ? before : F);
}
// v46: head_step_kernel's form (replay_head's kFused): 0 = v40-v45's kernel, 1 = v46's (the default: its 8-bit row
// dots' trees reduced together, GDN's window chains fused). REPLAYSSM_STEP_FORM=0 in the environment keeps v40-v45's
// (A/B of one binary); the fixed-records instantiation below is form 1's.
int fast_step_form();
// v55: form 2, GDN's 8-bit row dots S_c q, S_c k on the tensor cores (fast_step_rows_tc.cuh; the FP32 step and Mamba-2,
// which ran slower in it, keep form 1); v57: also the grouped FP32 verify's row dots, both archs (below).
// Not the emulation's bits: its outputs agree with the emulation within the dot's error bound and are checked against
// the FP64 reference (tests/kernels: [tc-dots]); `replayssm bench --step-dots exact,tc` times both forms in one run.
// REPLAYSSM_STEP_FORM=2 in the environment sets the start value. set_fast_step_form takes 0, 1 or 2 (else 1).
void set_fast_step_form(int form);
// How many head_step_kernel launches ran form 2 since the last call with reset = true (tests, bench).
long fast_step_tc_launches(bool reset);
void note_step_tc_launch();
// v57: form 2 also runs the grouped FP32 verify's row dots on the tensor cores (3xTF32, fast_verify_rows_tc.cuh; both
// archs; tests/kernels: [tc-verify]). How many verify launches ran it since the last call with reset = true.
long fast_verify_tc_launches(bool reset);
void note_verify_tc_launch();
// The draft counts from which the verify's form 2 runs (below them form 1 measured faster at B = 256: the MMAs' fixed
// cost per row beats the FFMA dots' cost per draft from T = 4 for GDN's 16 dots per row, T = 6 for Mamba-2's 8;
// kernels/PERF_NOTES.md, twenty-third pass).
inline constexpr int tc_verify_min_drafts(bool gdn) { return gdn ? 4 : 6; }
// v48: head_step_kernel with its window's record count a constant (kStepFixedRecords, a step's records at L = 16)
// where step_fixed_applies, so that its shared-memory layout folds; 0 = always the generic instantiation. 1 by default;
// REPLAYSSM_STEP_FIXED=0 in the environment sets the start value (A/B of one binary). The tests run the split layout
// both ways at the real head dims; results are bit-identical.
void set_fast_step_fixed(int on);
int fast_step_fixed();
// How many tuned ReplaySSM launches ran head_step_kernel's fixed-records instantiation since the last call with
// reset = true (tests).
long fast_step_fixed_launches(bool reset);
void note_step_fixed_launch();
inline constexpr int kStepFixedRecords = 15;
// A step's window holds min(L - 1, cap) records at most (fast_replay_head.cuh: step_records).
inline bool step_fixed_applies(int L, int cap, bool on) {
  return on && (L - 1 < cap ? L - 1 : cap) == kStepFixedRecords;
}
// The flush count the CUDA backend passes as KParams::flush_hint: kExactFlushHint (default) = the true count;
// -1 = unknown; n > 0 = claim n where some sequence flushes (the true 0 where none does; 0 and values below -1 mean
// kExactFlushHint, since a claim of 0 would skip the flushes). The tests claim 1 in one of their runs (the tuned flush
// kernel then has one sequence's CTAs, which must stride through every flush).
inline constexpr int kExactFlushHint = -2;
void set_fast_flush_hint(int n);
int fast_flush_hint();
// Row slices per CTA of the split layout's step flush: 0 = flush_slices_rule below (default); n > 0 = n (at most the
// head's slices), where step_flush_slices allows more than one (no early flush reported, the lean step flush).
// REPLAYSSM_FLUSH_SLICES=n in the environment sets the start value (A/B of one binary). The tests force whole heads in
// their split layout (the rule gives 1 at their batch sizes). Results are bit-identical for every value.
void set_fast_flush_slices(int n);
int fast_flush_slices();
// The largest slices per flush CTA a tuned ReplaySSM launch used since the last call with reset = true (tests).
int fast_flush_slices_used(bool reset);
void note_flush_slices_used(int n);
// The rule behind it (host only, tested on the CPU): the largest power of two that divides H / G, so that the CTA's
// heads share one group; with cap > 0 at most cap, for any op and batch; with cap = 0 only for verify ops (drafts >=
// kMinGroupDrafts; a step passes drafts = 0: for the step the per-head kernel was faster, PERF_NOTES v12 and ninth
// pass; since v21 verify of one draft groups too), halved while the non-flush grid would have fewer than
// kMinGroupCtasPerSm working CTAs per SM on `sms` SMs -- but not below two heads per CTA while their grid keeps at
// least kMinPairCtasPerSmX2 / 2 CTAs per SM (v58, PERF_NOTES twenty-third pass: verify measured faster with two heads
// per CTA than with one from ~2 CTAs per SM: GDN B = 16..64 -10..-24% at T = 8, Mamba-2 B = 4..16 -13..-23%; slower
// below, GDN B <= 8).
inline constexpr int kMinGroupCtasPerSm = 8;
inline constexpr int kMinPairCtasPerSmX2 = 3;
inline constexpr int kMinGroupDrafts = 1;
inline int group_heads_rule(int B, int G, int H, int drafts, int cap, int sms) {
  if (G <= 0 || H <= 0 || H % G != 0) return 1;
  const int per = H / G;
  int g = per & -per;
  if (cap > 0) {
    while (g > cap) g /= 2;
    return g;
  }
  if (drafts < kMinGroupDrafts) return 1;
  const long long heads = static_cast<long long>(B) * H;
  while (g > 2 && heads / g < static_cast<long long>(kMinGroupCtasPerSm) * sms) g /= 2;
  if (g == 2 && heads / 2 < static_cast<long long>(kMinGroupCtasPerSm) * sms &&
      2 * (heads / 2) < static_cast<long long>(kMinPairCtasPerSmX2) * sms)
    g = 1;
  return g;
}

// The tuned ReplaySSM op's kernel layout: -1 = kernel_split_rule below (default), 0 = the combined kernel, 1 = the
// split kernels, for every op where replay_head's shared memory fits (elsewhere the combined kernel runs);
// REPLAYSSM_KERNEL_SPLIT=0|1|auto in the environment sets the start value (A/B of one binary). The tests run every case
// in three layouts (combined; split per head; split grouped). Results are bit-identical for every value.
void set_fast_kernel_split(int v);
int fast_kernel_split();
// The tuned ReplaySSM op's kernel layout (v13, PERF_NOTES "seventh pass"): true = the split kernels (the flushing
// sequences' row slices in one kernel, then the non-flush op with one CTA per head or group in another); false = the
// combined kernel (every path in one grid of 32-row CTAs, per head: v12 without its group path, which only the split
// layout has). The split kernels give the non-flush code its own register allocation and launch no CTA only to return,
// but run the flushes apart from the rest: a win for verify (few flushes, and the group path; v13 for 2+ drafts, v21
// for one draft too) and for low-precision checkpoints (their non-flush code spilled in the combined kernel), a loss
// for the FP32 step (its 1 / L flushes no longer hide behind the other CTAs) and for the u=recompute step (heavier
// flushes). drafts: the verify op's draft count, 0 for a step. u=recompute verify splits, to keep v12's group path (not
// measured in either layout). fp32_step_kernel (v35, PERF_NOTES sixteenth pass): the FP32 step would run
// head_step_kernel and fp32_step_split_rule below says the split layout pays.
inline bool kernel_split_rule(int state_bits, int drafts, bool recompute, bool fp32_step_kernel = false) {
  if (drafts >= 1) return true;
  if (recompute) return false;
  return state_bits < 32 || fp32_step_kernel;
}
// Where the FP32 step runs head_step_kernel (the real dims) in the split layout: where no sequence flushes
// (flush_hint == 0: no flush kernel at all) or where the heads of the op fill many waves, so that the flush kernel's
// one wave is a small share of the op. GDN (v35, B H >= kFp32StepSplitHeads): measured (B = 1, 16, 64, 256, 512;
// H = 32) -7.8%, +20%, +16%, -2.6%, -5.4% against the combined kernel. Mamba-2 (v53, B H >= kFp32StepSplitHeadsMamba2):
// equal until its step kernel read the k records once per group (v53); since then (B = 1, 16, 64, 128, 256; H = 128)
// -7.7%, +14.2%, -0.2%, -3.5%, -7.7%.
inline constexpr long long kFp32StepSplitHeads = 8192;
inline constexpr long long kFp32StepSplitHeadsMamba2 = 16384;
inline bool fp32_step_split_rule(long long heads, long long flush_hint, bool gdn = true) {
  return flush_hint == 0 || heads >= (gdn ? kFp32StepSplitHeads : kFp32StepSplitHeadsMamba2);
}

// 32-row slices per CTA of the split layout's step flush (v24, PERF_NOTES "eleventh pass"): one CTA stages the window
// and builds the tables once for that many slices of a head, then runs them in turn. Worth it only where the slices
// outnumber the flush kernel's resident CTAs (kFlushCtasPerSm per SM): then fewer, longer CTAs do less work in all
// (B = 256: GDN 2048 slices -> 4 per CTA, Mamba-2 4096 -> 2): the fewest slices per CTA whose grid fits them, else the
// whole head; at small batches a CTA per slice keeps the grid wide.
inline constexpr int kFlushCtasPerSm = 4;
inline int flush_slices_rule(long long flushing_seqs, int H, int nsplit, int sms) {
  const long long slices = flushing_seqs * H * nsplit, slots = static_cast<long long>(kFlushCtasPerSm) * sms;
  if (nsplit <= 1 || slots <= 0 || slices <= slots) return 1;
  int fs = static_cast<int>(std::min<long long>(nsplit, (slices + slots - 1) / slots));
  while (fs < nsplit && flushing_seqs * H * ((nsplit + fs - 1) / fs) > slots) ++fs;  // the fewest CTAs that fit
  return fs;
}

// KParams::flush_slices of one op: 1 unless every flush of the op is a step flush that replay_lean runs (lean_flush:
// the lean step-flush path is on and V % 4 == 0; not u=recompute, whose step flush is replay_flush's) and the caller
// says that no sequence flushes early (early_hint == 0: an early flush takes replay_flush, one slice per work item);
// then forced > 0 (set_fast_flush_slices, at most the head's slices), else flush_slices_rule.
inline int step_flush_slices(int forced, long long flushing_seqs, int early_hint, bool lean_flush, int H, int nsplit,
                             int sms) {
  if (early_hint != 0 || !lean_flush || nsplit <= 1) return 1;
  if (forced > 0) return std::min(forced, nsplit);
  return flush_slices_rule(flushing_seqs, H, nsplit, sms);
}

}  // namespace replayssm::kern
