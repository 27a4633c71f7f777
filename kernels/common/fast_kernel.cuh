#pragma once
// The tuned decode kernel (issue 5): state rows streamed through registers, no whole-state staging.
//
// Grid: nsplit = ceil(V / 32) CTAs per (sequence, head) (conv_kernel: 1-D; replay_kernel: (nsplit, H, B), so that no
// CTA divides to find its head; v13's split kernels below), 256 threads = 8 warps, each warp owns 4 rows of the CTA's 32.
// Lane l holds elements 4l..4l+3 of its rows (K <= 128: one 16-byte load of FP32 codes per row per lane), exactly the
// 32-lane tree of emulation/decode_math.h, so the xor butterfly reproduces the emulation's dot products bit for bit.
// Every row of the GDN / Mamba-2 update only needs that row's dots (u_r = beta (v_r - a (S k)_r)), so rows are
// independent and a head splits across CTAs. Per-head window data (decays, k records, coefficient tables
// G_j (k_j . x)) are small: each CTA stages the records in shared memory and recomputes them (same formulas, same
// order as the emulation: emu::window_gammas / window_sum / window_state_elem / gdn_u).
// Codecs run per element in parallel; row / 32-block scales come from warp amax reductions (max is order-free).
// Supported: K <= 128 (K % 4 == 0), V <= 256, L >= 2, scaling none | row | block, every op but Op::state; formats
// instantiated: fp32, fp8_e4m3 (the template also takes bf16 / fp16 / fp8_e5m2 / int8: add a case to launch_any).
// Everything else uses the reference kernel (decode_kernel.cuh).
// An early flush overwrites record slots from 0 while other CTAs of the head may still read the old window: the last
// CTA of the head to finish staging writes the new per-head records (atomic counter, no waiting).
// ReplaySSM dispatch per CTA (replay_kernel): non-flush ops (15 of 16 steps at L = 16, verify without an early flush)
// run replay_head (v6: CTA 0 of the head does the whole head; the others return. v8: its window sums run one thread
// per row. v9: u=hp is a template parameter) where its shared memory fits, else replay_lean<.., false>; a step that
// fills the window (not u=recompute) replay_lean<.., true>; verify's early flush and the u=recompute flush run
// replay_flush (not inlined). PERF_NOTES.md: "second pass" (v3-v5), "third pass" (v6-v7), "fourth pass" (v8-v9),
// "fifth pass" (v10-v11: E4M3 decode by formats::e4m3_decode4_scaled; the group index by a shift), "sixth pass" (v12:
// verify ops of T >= 2 drafts run replay_group, the heads of one key group per CTA, sharing k, q and the dots; since
// v13 in the split layout only; since v21 verify of one draft too), "ninth pass" (v16-v21: hardware conversions,
// the real head dims as constants, the step's tables for L - 1 records), "tenth pass" (v22: replay_head's row dots one
// row per 8 lanes, stage_row_dots).
// v13 (seventh pass): where replay_head applies and kern::kernel_split_rule says so, two kernels per op instead of the
// combined replay_kernel: replay_flush_kernel (the flushing sequences' row slices, found on the device), then
// replay_hot_kernel (one CTA per head or group of heads): each with its own register allocation, no CTA launched only
// to return. v32-v35 (fifteenth, sixteenth pass): the one-token FP8 row-scaled or FP32 step at the real dims runs
// head_step_kernel instead, replay_head with the launcher's knowledge as constants and the window's records by bulk
// copies. v46: its 8-bit row dots' trees reduced together and GDN's two window chains in one thread (fast_step_rows.cuh).
// Files, in include order: fast_rows.cuh (building blocks), fast_conv.cuh (conventional), fast_flush_fold.cuh (the
// folded step flush), fast_replay_lean.cuh (per-32-row replay paths), fast_async_copy.cuh (cp.async groups, bulk
// copies), fast_head_ring.cuh (replay_head's ring stages: layout, row dots), fast_step_rows.cuh (head_step_kernel's row
// dots and window sums), fast_step_rows_tc.cuh (v55: GDN's step row dots on the tensor cores, the opt-in form 2),
// fast_replay_head.cuh (per-head non-flush op), fast_replay_group.cuh (per-group non-flush op), fast_replay_flush.cuh
// (early and u=recompute flush); this file: the kernels; fast_launch.cuh (included at its end): the host launchers.
#include <atomic>
#include <cstdlib>
#include <string>

#include "kernels/common/fast_conv.cuh"
#include "kernels/common/fast_replay_group.cuh"
#include "kernels/common/fast_replay_flush.cuh"

namespace replayssm::kern::fast {

// Which lean paths run (bit 0: non-flush, bit 1: step flush, bit 2: the non-flush op per head, replay_head, v6);
// REPLAYSSM_LEAN=0..7 in the environment overrides the default 7 (3 = v5; diagnostics and A/B).
__device__ int g_lean = 7;
inline int host_lean() {
  static const int v = lean_paths_env();
  return v;
}

// Minimum resident CTAs per SM the replay kernel is compiled for (register cap 65536 / (256 x this));
// -DREPLAYSSM_REPLAY_MIN_CTAS=N overrides it for every instantiation (A/B builds in kernels/bench).
// FP8 and Mamba-2 fit 4 CTAs and lose 9-15% at 3 (PERF_NOTES, "fourth pass"). GDN FP32: where shared memory limits
// it to 3 CTAs per SM, 80 registers cost no occupancy (v8: -7%). v19 sizes the step's tables for L - 1 records
// (head_records), which fits 4 CTAs per SM, so only the group kernel keeps 80 registers. Still held at 3 or fewer by
// shared memory, and now at 64 registers, not measured (PERF_NOTES ninth pass): per-head verify (cap records; the
// default below B = 66 for GDN) and FP32 split u=hp (the HP ring).
template <class C, bool kGdn, bool kGroup = false>
inline constexpr int kReplayMinCtas = (kGdn && C::kBits == 32 && kGroup) ? 3 : 4;
// v31: Mamba-2's per-head non-flush kernel with 8-bit codes is compiled for 6 CTAs per SM (40 registers, 16 / 60 B of
// spills): latency-bound between its barriers, it gains more from the extra CTAs than it loses to the spills (B = 256,
// L = 16: Mamba-2 FP8 steps -5.3%). Every other replay kernel lost at 5 or 6 CTAs per SM (FP32 step +7..+86%, verify
// +1..+30%, GDN u=hp and u=recompute +5.5%); GDN's FP8 step gained 2.0% at 5 with u=hp's path in the same kernel and
// lost 3.2% with u=hp in a kernel of its own (more spills), so GDN keeps 4 (PERF_NOTES, fourteenth pass).
template <class C, bool kGdn, bool kGroup>
inline constexpr int kHotMinCtas = C::kBits == 8 && !kGdn && !kGroup ? 6 : kReplayMinCtas<C, kGdn, kGroup>;
// v34: head_step_kernel (v32-v33: the FP8 row-scaled step with its constants folded, no spills at 64 / 40 registers)
// fits 5 CTAs per SM for GDN (48 registers, 37 KB of shared memory each) and 8 for Mamba-2 (32 registers, 24 KB),
// both without spills: GDN FP8 steps -4.5%, Mamba-2 -5..-7% against 4 / 6 (PERF_NOTES, fifteenth pass). v35: FP32
// keeps 4 (56 registers; its 2-stage ring and tables, ~53 KB for GDN, fit no fifth CTA, and 48 registers spilled).
// v40: with its checkpoint by bulk copies GDN's 8-bit step fits 6 (40 registers, 8 B of spills; 37 KB of shared memory
// each, the driver's carveout then 228 KB): -1.8..-2.1% against 5 (PERF_NOTES, seventeenth pass).
template <class C, bool kGdn>
inline constexpr int kStepMinCtas = C::kBits == 32 ? kReplayMinCtas<C, kGdn> : kGdn ? 6 : 8;
#ifdef REPLAYSSM_REPLAY_MIN_CTAS
#define REPLAYSSM_REPLAY_BOUNDS REPLAYSSM_REPLAY_MIN_CTAS
#define REPLAYSSM_HOT_BOUNDS REPLAYSSM_REPLAY_MIN_CTAS
#define REPLAYSSM_HOT_BOUNDS_STEP REPLAYSSM_REPLAY_MIN_CTAS
#else
#define REPLAYSSM_REPLAY_BOUNDS (kReplayMinCtas<C, kGdn>)
#define REPLAYSSM_HOT_BOUNDS (kHotMinCtas<C, kGdn, kGroup>)
#define REPLAYSSM_HOT_BOUNDS_STEP (kStepMinCtas<C, kGdn>)
#endif
#define REPLAYSSM_HOT_BOUNDS_VERIFY (kReplayMinCtas<C, kGdn, true>)
__device__ __forceinline__ bool op_flushes(const KParams& p, int b) {
  return p.early[b] != 0 || (p.op != Op::verify && p.n[b] + 1 >= p.L);
}
// v30: a CTA's first test with both loads issued before either is tested, so that it waits one L2 round trip, not two
// in a row (the short-circuit `||` orders the loads, and with `||` here nvcc sinks the load of n back under the
// branch). In the combined and the per-head non-flush kernels (Mamba-2 steps -1.2..-2.9%, GDN -0.1..-1.5%); not the
// group kernel's verify, which lost 0.4-0.8% (PERF_NOTES, fourteenth pass).
__device__ __forceinline__ bool cta_flushes(const KParams& p, int b) {
  const int early = p.early[b], n = p.n[b];
  return (early != 0) | (p.op != Op::verify && n + 1 >= p.L);
}

// kReal (v17): the replay paths with the head dims of the real shapes as constants, where the launcher finds p.K, p.V
// equal to them (ptxas folds the lane masks, loop bounds and row offsets: replay_head ~13% fewer SASS instructions,
// GDN FP8 without spills). Other dims take the kReal = false instantiations.
// kRealK, kRealV, real_dims: fast_replay_head.cuh (head_ring_stages needs them too).
// The kK / kV arguments of the replay paths: the real dims, or 0 (p.K, p.V at run time).
template <bool kGdn, bool kReal>
inline constexpr int kDimK = kReal ? kRealK<kGdn> : 0;
template <bool kGdn, bool kReal>
inline constexpr int kDimV = kReal ? kRealV<kGdn> : 0;

// The combined kernel (v5-v12's dispatch, every path in one grid (nsplit, H, B)): where kern::kernel_split_rule picks
// it (the FP32 step and the u=recompute step: their flushes hide behind the other CTAs here), where replay_head's shared
// memory does not fit, where REPLAYSSM_LEAN turns the head path off, and with REPLAYSSM_KERNEL_SPLIT=0.
template <class C, bool kGdn, bool kReal = false>  // kReal: the real head dims as constants (real_dims)
__global__ void __launch_bounds__(kThreads, REPLAYSSM_REPLAY_BOUNDS) replay_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  constexpr int kK = kDimK<kGdn, kReal>, kV = kDimV<kGdn, kReal>;
  const Cta cta{int(blockIdx.z), int(blockIdx.y), int(blockIdx.x), int(gridDim.x)};
  const bool flush = cta_flushes(p, cta.b);
  const bool recompute = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  const int lean = g_lean;
  if ((lean & 1) && p.V % 4 == 0 && !flush) {  // hot path: 15 of 16 steps (L=16)
    if (p.head_floats > 0) {  // set by the launcher where replay_head's shared memory fits (and REPLAYSSM_LEAN & 4)
      const bool hp = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::hp;
      if (blockIdx.x == 0) {
        if (hp) replay_head<C, kGdn, kGdn, kK, kV>(p, sm, cta);
        else replay_head<C, kGdn, false, kK, kV>(p, sm, cta);
      }
      return;  // the other CTAs of the head have nothing to do
    }
    replay_lean<C, kGdn, false, kK, kV>(p, sm, cta);
    return;
  }
  if ((lean & 2) && p.V % 4 == 0 && p.early[cta.b] == 0 && !recompute) {
    replay_lean<C, kGdn, true, kK, kV>(p, sm, cta);  // step flush
  } else {
    replay_flush<C, kGdn>(p, sm, cta);  // early flush (verify), u=recompute flush
  }
}

// The e-th flushing sequence in increasing b, or -1 where fewer flush; every thread of the CTA gets it (a ballot scan
// of n / early, which sit in L2: the flush list needs no host copy and no extra kernel). `total` becomes the number
// of flushing sequences where the scan reached the last sequence (v16: a CTA then knows its next item is past the
// list without a second scan, which cost ~10% of the flush kernel's instructions and ~15% of its stall samples).
// s_cnt, s_b: kWarps + 1 ints of shared memory (v66's step_flush_kernel passes dynamic shared memory past both
// layouts, so that its static shared memory, and with it the ring's offset from the 128-byte boundary, is
// head_step_kernel's).
__device__ __forceinline__ int nth_flushing_in(const KParams& p, int e, int& total, int* s_cnt, int& s_b) {
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (tid == 0) s_b = -1;
  int before = 0;  // flushing sequences of the chunks already scanned
  for (int base = 0; base < p.B; base += kThreads) {
    const int b = base + tid;
    const bool f = b < p.B && op_flushes(p, b);
    const unsigned m = __ballot_sync(0xffffffffu, f);
    if (lane == 0) s_cnt[warp] = __popc(m);
    __syncthreads();
    int off = before, tot = 0;
    for (int x = 0; x < kWarps; ++x) {
      off += x < warp ? s_cnt[x] : 0;
      tot += s_cnt[x];
    }
    if (f && off + __popc(m & ((1u << lane) - 1u)) == e) s_b = b;
    before += tot;
    __syncthreads();  // s_b written, s_cnt free for the next chunk
    if (base + kThreads >= p.B) total = before;
    if (before > e) break;  // the same for every thread
  }
  __syncthreads();
  const int r = s_b;
  __syncthreads();  // read by all before the next call resets it
  return r;
}
__device__ __forceinline__ int nth_flushing(const KParams& p, int e, int& total) {
  __shared__ int s_cnt[kWarps];
  __shared__ int s_b;
  return nth_flushing_in(p, e, total, s_cnt, s_b);
}

// v13: the non-flush op in a kernel of its own (its own register allocation, no returning row-slice CTAs). Grid
// (H / heads per CTA, B): one CTA per head (replay_head) or per group_heads heads of one group (kGroup: replay_group,
// v12); the CTAs of a flushing sequence return (1 / L of them in steady state). kReal (v17): the real head dims as
// constants (real_dims).
// v25: launched as the flush kernel's programmatic dependent (the flush kernel lets it launch at once): the two touch
// disjoint sequences, so it runs beside the flush CTAs. v26: only the last CTA of the grid waits for the flush grid,
// before it exits, so that this kernel's completion still implies the flush kernel's (stream order for what follows);
// the others free their slots at once (v25: every CTA waited, holding its slot and shared memory until the flush grid
// ended). g_pdl_wait_all = 1 (REPLAYSSM_PDL_WAIT=all in the environment) restores v25's waits (A/B).
// v32: REPLAYSSM_STEP_KERNEL=0 in the environment keeps replay_hot_kernel for every case (A/B of one binary).
inline bool host_step_kernel() {
  static const bool on = [] {
    const char* e = std::getenv("REPLAYSSM_STEP_KERNEL");
    return !(e && *e && std::atoi(e) == 0);
  }();
  return on;
}
// v39: REPLAYSSM_VERIFY_KERNEL=0 keeps replay_hot_kernel for the grouped verify (A/B of one binary).
inline bool host_verify_kernel() {
  static const bool on = [] {
    const char* e = std::getenv("REPLAYSSM_VERIFY_KERNEL");
    return !(e && *e && std::atoi(e) == 0);
  }();
  return on;
}
__device__ int g_pdl_wait_all = 0;
inline int host_pdl_wait_all() {
  static const int v = [] {
    const char* e = std::getenv("REPLAYSSM_PDL_WAIT");
    return e && std::string(e) == "all" ? 1 : 0;
  }();
  return v;
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
template <class C, bool kGdn, bool kGroup, bool kReal = false>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_HOT_BOUNDS) replay_hot_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  const int b = blockIdx.y;
  if (!(kGroup ? op_flushes(p, b) : cta_flushes(p, b))) {  // v30: cta_flushes
    const bool hp = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::hp;
    const Cta cta{b, int(blockIdx.x) * (kGroup ? p.group_heads : 1), 0, (p.V + kRows - 1) / kRows};
    constexpr int kK = kDimK<kGdn, kReal>, kV = kDimV<kGdn, kReal>;
    if constexpr (kGroup) {
      if (hp) replay_group<C, kGdn, kGdn, kK, kV>(p, sm, cta);
      else replay_group<C, kGdn, false, kK, kV>(p, sm, cta);
    } else {
      if (hp) replay_head<C, kGdn, kGdn, kK, kV>(p, sm, cta);
      else replay_head<C, kGdn, false, kK, kV>(p, sm, cta);
    }
  }
  if (g_pdl_wait_all || (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1))
    pdl_wait();  // a no-op where it was launched normally
}
// v32: replay_hot_kernel's per-head form for the one case that the bench's FP8 rows and the split layout's default run:
// a one-token step, 8-bit row-scaled codes, the real dims, not u=hp nor u=recompute (launcher: head_step_kernel_applies),
// with replay_head's draft count, scaling and ring layout as constants. The other cases keep replay_hot_kernel. v35:
// FP32 codes too (no scales; the FP32 step runs it where fp32_step_split_rule picks the split layout: GDN since v35,
// Mamba-2 since v53).
// v46: kForm, replay_head's kFused (fast_step_form; v55: 2, GDN's 8-bit row dots on the tensor cores). v48: kNR,
// replay_head's (kStepFixedRecords where step_fixed_applies, else 0).
template <class C, bool kGdn, int kForm, int kNR>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_HOT_BOUNDS_STEP) head_step_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  __shared__ __align__(8) std::uint64_t bar[2];  // the bulk copies: v33 the window's records, v40 the 8-bit checkpoint
  const int b = blockIdx.y;
  if (!cta_flushes(p, b)) {
    const Cta cta{b, int(blockIdx.x), 0, (kRealV<kGdn> + kRows - 1) / kRows};
    replay_head<C, kGdn, false, kRealK<kGdn>, kRealV<kGdn>, true, kForm, kNR>(p, sm, cta, bar);
  }
  if (g_pdl_wait_all || (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1)) pdl_wait();
}
// v39 (verify T >= 2: -1..-4%, kernels/PERF_NOTES.md, seventeenth pass): the grouped verify of kND drafts at the real
// dims with FP32 codes, the draft count a constant so that the draft loops unroll (the v34 profile: verify T = 8 is
// instruction-bound).
// v57: kTc, the form with the row dots on the tensor cores (fast_verify_rows_tc.cuh; fast_step_form 2).
template <class C, bool kGdn, int kND, bool kTc = false>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_HOT_BOUNDS_VERIFY) group_verify_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  const int b = blockIdx.y;
  if (!op_flushes(p, b)) {
    const Cta cta{b, int(blockIdx.x) * p.group_heads, 0, (kRealV<kGdn> + kRows - 1) / kRows};
    replay_group<C, kGdn, false, kRealK<kGdn>, kRealV<kGdn>, kND, kTc>(p, sm, cta);
  }
  if (g_pdl_wait_all || (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1)) pdl_wait();
}
// v42: the split layout's step flush with its policy, scaling and rounding folded (replay_lean's kFold) for the cases
// the bench's rows run: a one-token step at the real dims, replay-shared or replay-split (GDN: u=lp), FP32 codes or
// row-scaled 8-bit minifloat codes rounded to nearest even. REPLAYSSM_FLUSH_FOLD=0 in the environment keeps the
// generic flush (A/B of one binary). 0: the generic flush, else replay_flush_kernel's kFold.
// v62: only where the caller reports no early flush (KParams::early_hint == 0) and the lean step flush is on, so that
// every work item of the folded kernel takes replay_lean and the kernel holds no call to replay_flush (whose ABI call
// cost it a 528-byte stack frame and 152 B of spill stores in the FP32 GDN flush; without it 48 B).
inline bool host_flush_fold() {
  static const bool on = flush_fold_env();
  return on;
}
// The codecs the folded flush is instantiated for: FP32, and 8-bit minifloats with block scales and a hardware RNE pair.
template <class C>
inline constexpr bool kFlushFoldable =
    C::kBits == 32 || (C::kBits == 8 && C::kBlock != 0 && formats::kHwRnePair<C::kFormat>);
template <class C, bool kGdn>
inline int flush_fold_applies(const KParams& p, bool real) {
  static_assert(kFlushFoldable<C>, "flush_fold_applies: a codec the folded flush is instantiated for");
  const bool split = p.policy == emu::Policy::replay_split;
  if (!real || p.op != Op::step || p.T != 1 || !host_flush_fold()) return 0;
  if (p.early_hint != 0 || !(host_lean() & 2) || p.V % 4 != 0) return 0;  // v62: replay_lean takes every item
  if (p.policy != emu::Policy::replay_shared && !split) return 0;
  if (kGdn && split && p.usource != emu::USource::lp) return 0;
  const bool codes = C::kBits == 32 || (p.scaling == formats::Scaling::row && p.rounding == formats::Rounding::rne);
  return codes ? (split ? 2 : 1) : 0;
}
template <class C, bool kGdn>
inline bool head_step_kernel_applies(const KParams& p, bool real) {  // p.group_heads: 1 for a step (group_heads_rule)
  const bool split = p.policy == emu::Policy::replay_split;
  const bool other_u = kGdn && split && p.usource != emu::USource::lp;
  const bool codes = (C::kBits == 8 && C::kBlock != 0 && p.scaling == formats::Scaling::row) || C::kBits == 32;
  return codes && real && p.op == Op::step && p.T == 1 && !other_u && p.group_heads == 1 && host_step_kernel();
}

// v13: the flushing sequences' row slices in a kernel of their own. Work item w = (e, h, i): row slices
// i fs .. i fs + fs - 1 of head h of the e-th flushing sequence (fs = KParams::flush_slices: v24, the step flush
// stages the window and builds the tables once for fs slices; 1 before v24, for u=recompute and for any op with an
// early flush or where the caller does not report them: KParams::early_hint, kern::step_flush_slices),
// grid-strided, so that any grid is correct; the launcher sizes it from the caller's flush count
// (KParams::flush_hint) so that each CTA usually takes one item.
#ifndef REPLAYSSM_FLUSH_MIN_CTAS
#define REPLAYSSM_FLUSH_MIN_CTAS 4
#endif
// kFold (v42): replay_lean's folded step flush (1 replay-shared, 2 replay-split), where flush_fold_applies; kReal then.
template <class C, bool kGdn, bool kReal = false, int kFold = 0>  // kReal: the step flush at the real head dims (real_dims)
__global__ void __launch_bounds__(kThreads, REPLAYSSM_FLUSH_MIN_CTAS)
    replay_flush_kernel(const __grid_constant__ KParams p) {
  static_assert(kFold == 0 || kReal, "replay_flush_kernel: the folded flush is at the real dims");
  extern __shared__ __align__(16) float sm[];
  constexpr int kK = kDimK<kGdn, kReal>, kV = kDimV<kGdn, kReal>;
  const bool recompute = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  pdl_launch_dependents();  // v25: the non-flush kernel may start beside this one
  const int nsplit = (p.V + kRows - 1) / kRows, fs = p.flush_slices, items = (nsplit + fs - 1) / fs;
  const int per = p.H * items;
  int total = -1;  // flushing sequences, once a scan has seen them all
  for (int w = blockIdx.x;; w += gridDim.x) {
    const int e = w / per, r = w - e * per;
    if (total >= 0 && e >= total) return;
    const int b = nth_flushing(p, e, total);
    if (b < 0) return;
    const int hd = r / items, sp = (r - hd * items) * fs;
    Cta cta{b, hd, sp, nsplit, min(fs, nsplit - sp)};
    if constexpr (kFold != 0) {  // v62: flush_fold_applies guarantees the lean step flush for every item
      replay_lean<C, kGdn, true, kK, kV, kFold>(p, sm, cta);
    } else if ((g_lean & 2) && p.V % 4 == 0 && p.early[b] == 0 && !recompute) {
      replay_lean<C, kGdn, true, kK, kV, kFold>(p, sm, cta);
    } else {  // one slice: the launcher sets fs = 1 wherever this branch can run (kern::step_flush_slices)
      replay_flush<C, kGdn>(p, sm, cta);
    }
    __syncthreads();  // shared memory is reused by the next item
  }
}

// v66: the FP32 step and its folded step flush in one grid (H, B + fused_rows), no second kernel. The split layout
// launches the flush kernel first, one wave of whole-head items that fills every SM's slots for ~30 us at about half
// the DRAM bandwidth while the step kernel, its programmatic dependent, waits for slots; here the flush rows are
// spread over the first part of the grid (fused_stride_rule), so that their latency-bound items run beside step CTAs
// that keep DRAM busy. Flush row j takes the whole heads of flushing sequences j, j + F, ... (nth_flushing; any
// fused_rows >= 1 is correct); a step row's sequence is its row less the flush rows before it (fused_step_seq), and a
// flushing sequence's step CTAs return. Both paths are the split layout's, so the same bits.
// v66b: no static shared memory but head_step_kernel's barriers (the flush rows' scan scratch sits in dynamic shared
// memory past both layouts, KParams::fused_scratch): with nth_flushing's 48 bytes of static shared memory before the
// dynamic base, the step's ring sat at another offset from the 128-byte boundary and the op ran 16-23% slower (v66).
// Row-scaled FP8 steps keep the two kernels: their step kernels run at 6 (GDN) / 8 (Mamba-2) CTAs per SM, and in one
// kernel with the flush at 4, 5 or 6 CTAs per SM every form measured slower (+0.4..+90%; PERF_NOTES twenty-sixth pass).
// v67 (kMulHi, kern::set_fast_step_fused(2)): the row's role and sequence by mul-hi's of p.fused_mul (decode_kernel.h:
// fused_mul_rule), not divisions. With v66's divisions (I2F, MUFU, which the uniform datapath lacks) the sequence
// index and everything addressed by it live in vector registers, and ptxas spills 20 B per thread in the step path
// (head_step_kernel: none); from mul-hi's of the CTA's index and constants they stay uniform: 8 B.
// A flush row's items: flushing sequences e0, e0 + F, ... (any F >= 1 is correct: nth_flushing_in's scan).
template <class C, bool kGdn, int kFold>
__device__ __forceinline__ void fused_flush_items(const KParams& p, float* sm, int e0, int F) {
  constexpr int kK = kRealK<kGdn>, kV = kRealV<kGdn>, kNs = (kV + kRows - 1) / kRows;
  int total = -1;
  for (int e = e0;; e += F) {
    if (total >= 0 && e >= total) return;
    int* scratch = reinterpret_cast<int*>(sm) + p.fused_scratch;
    const int b = nth_flushing_in(p, e, total, scratch, scratch[kWarps]);
    if (b < 0) return;
    replay_lean<C, kGdn, true, kK, kV, kFold>(p, sm, Cta{b, int(blockIdx.x), 0, kNs, kNs});
    __syncthreads();  // shared memory is reused by the next item
  }
}
template <class C, bool kGdn, int kNR, int kFold, bool kMulHi = false>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_FLUSH_MIN_CTAS)
    step_flush_kernel(const __grid_constant__ KParams p) {
  static_assert(C::kBits == 32 && kFold != 0, "step_flush_kernel: the FP32 step with its folded flush");
  extern __shared__ __align__(16) float sm[];
  __shared__ __align__(8) std::uint64_t bar[2];  // head_step_kernel's
  constexpr int kK = kRealK<kGdn>, kV = kRealV<kGdn>, kNs = (kV + kRows - 1) / kRows;
  const int y = blockIdx.y, F = p.fused_rows, k = p.fused_stride;
  if constexpr (kMulHi) {  // v67 (what follows is v66's code, whose SASS it keeps)
    const int q = fused_flush_index_mulhi(y, F, k, p.fused_mul);
    if (q < 0) {
      const int b = fused_step_seq_mulhi(y, F, k, p.fused_mul);
      if (!cta_flushes(p, b))
        replay_head<C, kGdn, false, kK, kV, true, 1, kNR>(p, sm, Cta{b, int(blockIdx.x), 0, kNs}, bar);
      return;
    }
    fused_flush_items<C, kGdn, kFold>(p, sm, q, F);
    return;
  }
  if (fused_flush_row(y, F, k)) {  // fused_flush_items' loop, written out: through the call ptxas moved v66's SASS
    int total = -1;
    for (int e = y / k;; e += F) {
      if (total >= 0 && e >= total) return;
      int* scratch = reinterpret_cast<int*>(sm) + p.fused_scratch;
      const int b = nth_flushing_in(p, e, total, scratch, scratch[kWarps]);
      if (b < 0) return;
      replay_lean<C, kGdn, true, kK, kV, kFold>(p, sm, Cta{b, int(blockIdx.x), 0, kNs, kNs});
      __syncthreads();  // shared memory is reused by the next item
    }
  }
  const int b = fused_step_seq(y, F, k);
  if (!cta_flushes(p, b))
    replay_head<C, kGdn, false, kK, kV, true, 1, kNR>(p, sm, Cta{b, int(blockIdx.x), 0, kNs}, bar);
}

}  // namespace replayssm::kern::fast

#include "kernels/common/fast_launch.cuh"  // the host launchers of the kernels above
