#pragma once
// The tuned decode kernels: state rows streamed through registers, no whole-state staging. Which of them runs an op
// is the launch plan's decision (kernels/launch_plan.h); fast_launch.cuh launches a plan.
//
// Grid: nsplit = ceil(V / 32) CTAs per (sequence, head), 256 threads = 8 warps, each warp owns 4 rows of the CTA's 32.
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
//
// The kernels (launch_plan.h names the layouts):
//   replay_kernel        combined layout: every path in one grid of 32-row CTAs; a non-flush op runs replay_head on
//                        the head's first CTA (the others return) or replay_lean; a step flush replay_lean<flush>;
//                        an early flush and the u=recompute flush replay_flush
//   replay_flush_kernel  split layout, the flushing sequences' row slices (optionally the policy folded in)
//   replay_hot_kernel    split layout, the non-flush op per head (replay_head) or per group of heads (replay_group)
//   head_step_kernel     split layout, the one-token step at the real dims with its constants folded
//   group_verify_kernel  split layout, the FP32 grouped verify of 2..8 drafts at the real dims
//   step_flush_kernel    fused layout: the FP32 step and its folded flush in one grid
// Building blocks, in include order: fast_rows.cuh (rows, codecs, reductions), fast_conv.cuh (conventional),
// fast_flush_fold.cuh (the folded step flush), fast_replay_lean.cuh (per-32-row replay paths), fast_async_copy.cuh
// (cp.async groups, bulk copies), fast_head_ring.cuh (replay_head's ring stages), fast_step_rows.cuh and
// fast_step_rows_tc.cuh (head_step_kernel's row dots and window sums; the tensor-core form), fast_replay_head.cuh (per
// head), fast_replay_group.cuh (per group), fast_replay_flush.cuh (early and u=recompute flush).
#include "kernels/common/fast_conv.cuh"
#include "kernels/common/fast_replay_group.cuh"
#include "kernels/common/fast_replay_flush.cuh"

namespace replayssm::kern::fast {

// Minimum resident CTAs per SM each kernel is compiled for (register cap 65536 / (256 x this)), as measured
// (kernels/PERF_NOTES.md): FP8 and Mamba-2 fit 4 CTAs and lose 9-15% at 3; the GDN FP32 group kernel is held at 3 by
// shared memory, where 80 registers cost no occupancy. -DREPLAYSSM_REPLAY_MIN_CTAS=N overrides every instantiation
// (a compile-time experiment).
template <class C, bool kGdn, bool kGroup = false>
inline constexpr int kReplayMinCtas = (kGdn && C::kBits == 32 && kGroup) ? 3 : 4;
// Mamba-2's per-head non-flush kernel with 8-bit codes: 6 CTAs per SM (40 registers, some spills): latency-bound
// between its barriers, it gains more from the extra CTAs than it loses to the spills (-5.3%); every other replay
// kernel lost at 5 or 6.
template <class C, bool kGdn, bool kGroup>
inline constexpr int kHotMinCtas = C::kBits == 8 && !kGdn && !kGroup ? 6 : kReplayMinCtas<C, kGdn, kGroup>;
// head_step_kernel: 8-bit steps fit 6 (GDN: 40 registers, the checkpoint by bulk copies) and 8 (Mamba-2: 32 registers)
// CTAs per SM without spills; FP32 keeps 4 (its 2-stage ring and tables fit no fifth CTA).
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
  return p.early[b] != 0 || (p.op != Op::verify && emu::step_fills_window(p.n[b], p.L));
}
// A CTA's first test with both loads issued before either is tested, so that it waits one L2 round trip, not two in
// a row (with the short-circuit `||` nvcc sinks the load of n back under the branch): the combined and the per-head
// kernels (steps -0.1..-2.9%); the group kernel's verify measured slower with it.
__device__ __forceinline__ bool cta_flushes(const KParams& p, int b) {
  const int early = p.early[b], n = p.n[b];
  return (early != 0) | (p.op != Op::verify && emu::step_fills_window(n, p.L));
}

// kReal: the replay paths with the head dims of the real shapes as constants, where the launcher finds p.K, p.V equal
// to them (ptxas folds the lane masks, loop bounds and row offsets: replay_head ~13% fewer instructions, GDN FP8
// without spills). Other dims take the kReal = false instantiations.
// kRealK, kRealV, real_dims: fast_replay_head.cuh (head_ring_stages needs them too).
// The kK / kV arguments of the replay paths: the real dims, or 0 (p.K, p.V at run time).
template <bool kGdn, bool kReal>
inline constexpr int kDimK = kReal ? kRealK<kGdn> : 0;
template <bool kGdn, bool kReal>
inline constexpr int kDimV = kReal ? kRealV<kGdn> : 0;

// The combined layout's step flush as a call: inlined, it shared the kernel's register allocation with replay_head
// and ptxas spilled in the non-flush path (GDN FP32 at the real dims: 124 B; the FP32 step at B = 16 +13%); as a call
// the kernel body has no spills and the flushing CTAs (1 / L of the sequences) pay the call.
template <class C, bool kGdn, int kK, int kV>
__device__ __noinline__ void combined_step_flush(const KParams& p, float* sm, const Cta& cta) {
  replay_lean<C, kGdn, true, kK, kV>(p, sm, cta);
}
// The combined layout: every path in one grid (nsplit, H, B).
template <class C, bool kGdn, bool kReal = false>  // kReal: the real head dims as constants (real_dims)
__global__ void __launch_bounds__(kThreads, REPLAYSSM_REPLAY_BOUNDS) replay_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  constexpr int kK = kDimK<kGdn, kReal>, kV = kDimV<kGdn, kReal>;
  const Cta cta{int(blockIdx.z), int(blockIdx.y), int(blockIdx.x), int(gridDim.x)};
  const bool flush = cta_flushes(p, cta.b);
  const bool recompute = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  if (p.V % 4 == 0 && !flush) {  // hot path: 15 of 16 steps (L=16)
    if (p.head_floats > 0) {  // set by the launcher where replay_head's shared memory fits
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
  if (p.V % 4 == 0 && p.early[cta.b] == 0 && !recompute) {
    combined_step_flush<C, kGdn, kK, kV>(p, sm, cta);
  } else {
    replay_flush<C, kGdn>(p, sm, cta);  // early flush (verify), u=recompute flush
  }
}

// The e-th flushing sequence in increasing b, or -1 where fewer flush; every thread of the CTA gets it (a ballot scan
// of n / early, which sit in L2: the flush list needs no host copy and no extra kernel). `total` becomes the number
// of flushing sequences where the scan reached the last sequence, so that a CTA knows its next item is past the list
// without a second scan. s_cnt, s_b: kWarps + 1 ints of shared memory (step_flush_kernel passes dynamic shared memory
// past both layouts, so that its static shared memory, and with it the ring's offset from the 128-byte boundary, is
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

// The split layout's non-flush op in a kernel of its own (its own register allocation, no returning row-slice CTAs).
// Grid (H / heads per CTA, B): one CTA per head (replay_head) or per group_heads heads of one group (kGroup:
// replay_group); the CTAs of a flushing sequence return (1 / L of them in steady state).
// Launched as the flush kernel's programmatic dependent (the flush kernel lets it launch at once): the two touch
// disjoint sequences, so it runs beside the flush CTAs. Only the last CTA of the grid waits for the flush grid, before
// it exits, so that this kernel's completion still implies the flush kernel's (stream order for what follows); the
// others free their slots at once.
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
  if (!(kGroup ? op_flushes(p, b) : cta_flushes(p, b))) {
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
  if (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1) pdl_wait();  // a no-op where launched normally
}
// replay_hot_kernel's per-head form for a one-token step at the real dims with FP32 or row-scaled 8-bit codes, not
// GDN split u=hp / u=recompute (LaunchPlan::hot == head_step), with replay_head's draft count, scaling and ring layout
// as constants and the window's records by bulk copies. kForm: 1 the exact row dots (several row groups' trees reduced
// together, GDN's window chains fused); 2 GDN's 8-bit row dots on the tensor cores (not the emulation's bits). kNR:
// kStepFixedRecords where the window holds that many records (LaunchPlan::fixed_records), so that the shared-memory
// layout folds, else 0. kSlice: a CTA per 32-row group of a head (grid x = H nsplit; replay_head's kSlice).
template <class C, bool kGdn, int kForm, int kNR, bool kSlice = false>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_HOT_BOUNDS_STEP) head_step_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  __shared__ __align__(8) std::uint64_t bar[2];  // the bulk copies: the window's records, the 8-bit checkpoint
  constexpr int kNs = (kRealV<kGdn> + kRows - 1) / kRows;
  const int b = blockIdx.y;
  if (!cta_flushes(p, b)) {
    const int x = int(blockIdx.x);
    const Cta cta{b, kSlice ? x / kNs : x, kSlice ? x % kNs : 0, kNs};
    replay_head<C, kGdn, false, kRealK<kGdn>, kRealV<kGdn>, true, kForm, kNR, kSlice>(p, sm, cta, bar);
  }
  if (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1) pdl_wait();
}
// The grouped verify of kND drafts at the real dims with FP32 codes, the draft count a constant so that the draft
// loops unroll (verify is instruction-bound). kTc: the row dots on the tensor cores (3xTF32, fast_verify_rows_tc.cuh).
template <class C, bool kGdn, int kND, bool kTc = false>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_HOT_BOUNDS_VERIFY) group_verify_kernel(const __grid_constant__ KParams p) {
  extern __shared__ __align__(16) float sm[];
  const int b = blockIdx.y;
  if (!op_flushes(p, b)) {
    const Cta cta{b, int(blockIdx.x) * p.group_heads, 0, (kRealV<kGdn> + kRows - 1) / kRows};
    replay_group<C, kGdn, false, kRealK<kGdn>, kRealV<kGdn>, kND, kTc>(p, sm, cta);
  }
  if (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1) pdl_wait();
}
// The split layout's flush: the flushing sequences' row slices in a kernel of their own. Work item w = (e, h, i): row
// slices i fs .. i fs + fs - 1 of head h of the e-th flushing sequence (fs = KParams::flush_slices: the step flush
// stages the window and builds the tables once for fs slices), grid-strided, so that any grid is correct; the plan
// sizes it from the caller's flush count so that each CTA usually takes one item.
#ifndef REPLAYSSM_FLUSH_MIN_CTAS
#define REPLAYSSM_FLUSH_MIN_CTAS 4
#endif
// kFold: replay_lean's step flush with the policy folded (1 replay-shared, 2 replay-split; LaunchPlan::flush), at the
// real dims: a one-token step with FP32 or row-scaled RNE 8-bit codes and no early flush, so that every work item takes
// the lean path and the kernel holds no call to replay_flush (whose ABI call cost a stack frame and spills).
template <class C, bool kGdn, bool kReal = false, int kFold = 0>  // kReal: the step flush at the real head dims (real_dims)
__global__ void __launch_bounds__(kThreads, REPLAYSSM_FLUSH_MIN_CTAS)
    replay_flush_kernel(const __grid_constant__ KParams p) {
  static_assert(kFold == 0 || kReal, "replay_flush_kernel: the folded flush is at the real dims");
  extern __shared__ __align__(16) float sm[];
  constexpr int kK = kDimK<kGdn, kReal>, kV = kDimV<kGdn, kReal>;
  const bool recompute = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  pdl_launch_dependents();  // the non-flush kernel may start beside this one
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
    if constexpr (kFold != 0) {  // the plan folds only where every item is a lean step flush
      replay_lean<C, kGdn, true, kK, kV, kFold>(p, sm, cta);
    } else if (p.V % 4 == 0 && p.early[b] == 0 && !recompute) {
      replay_lean<C, kGdn, true, kK, kV, kFold>(p, sm, cta);
    } else {  // one slice: the plan sets fs = 1 wherever this branch can run (kern::step_flush_slices)
      replay_flush<C, kGdn>(p, sm, cta);
    }
    __syncthreads();  // shared memory is reused by the next item
  }
}

// The fused layout: the FP32 step and its folded step flush in one grid (H, B + fused_rows), no second kernel. The
// split layout launches the flush kernel first, one wave of whole-head items that fills every SM's slots at about half
// the DRAM bandwidth while the step kernel waits for slots; here the flush rows are spread over the first part of the
// grid (fused_stride_rule), so that their latency-bound items run beside step CTAs that keep DRAM busy. Flush row j
// takes the whole heads of flushing sequences j, j + F, ... (nth_flushing; any fused_rows >= 1 is correct); a step
// row's sequence is its row less the flush rows before it (fused_step_seq), and a flushing sequence's step CTAs
// return. Both paths are the split layout's, so the same bits. No static shared memory but head_step_kernel's barriers
// (the scan scratch sits in dynamic shared memory past both layouts, KParams::fused_scratch): with other static shared
// memory before the dynamic base the step's ring sat at another offset from the 128-byte boundary and ran 16-23%
// slower. Row-scaled FP8 steps keep the two kernels (their step kernels run at 6 / 8 CTAs per SM, and every fused form
// measured slower). The grid mapping's two integer divisions keep the sequence index in vector registers and ptxas
// spills 20 B per thread in the step path (kernels/PERF_NOTES.md).
template <class C, bool kGdn, int kNR, int kFold>
__global__ void __launch_bounds__(kThreads, REPLAYSSM_FLUSH_MIN_CTAS)
    step_flush_kernel(const __grid_constant__ KParams p) {
  static_assert(C::kBits == 32 && kFold != 0, "step_flush_kernel: the FP32 step with its folded flush");
  extern __shared__ __align__(16) float sm[];
  __shared__ __align__(8) std::uint64_t bar[2];  // head_step_kernel's
  constexpr int kK = kRealK<kGdn>, kV = kRealV<kGdn>, kNs = (kV + kRows - 1) / kRows;
  const int y = blockIdx.y, F = p.fused_rows, k = p.fused_stride;
  if (fused_flush_row(y, F, k)) {  // the loop written out: through a helper call ptxas moved the step path's code
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

