#pragma once
// Launch interface of the decode kernels (host side, no CUDA types), shared by kernels/{gdn,mamba2}/*.cu, the
// backend (kernels/common/cuda_backend.cu) and the bench harness. All pointers are device pointers; layouts as in
// src/emulation/decode_api.h and the emulation's stores (kernels/README.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "emulation/decode_api.h"
#include "emulation/flush_rule.h"
#include "formats/hd.h"
#include "kernels/launch_plan.h"

namespace replayssm::kern {

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
  // [heads][cap](x K | V); rk, rw, rv (and the tree scratch pk, pw) hold the mode's record element type (records_of)
  float *ra = nullptr, *rbeta = nullptr, *rk = nullptr, *rw = nullptr, *rv = nullptr;
  // per sequence
  const int* n = nullptr;      // valid records before this op
  const int* early = nullptr;  // 1: flush the n records first (the op would overflow the buffer)
  const int* tok = nullptr;    // committed tokens (SR step index)
  // How many sequences flush in this op (early flush, or a step that fills the window), where the caller knows it
  // (the backend and the bench do); -1 = unknown. Sizes the tuned flush kernel's grid, and 0 skips it: results depend
  // only on whether it is 0 where some sequence flushes (then it must not be).
  int flush_hint = -1;
  // The launcher's derived values (fast_launch.cuh), from the plan and the codec's layouts:
  int head_floats = 0;   // replay_head's dynamic shared memory in floats, 0 = not used
  int group_shift = -1;  // log2(H / G) where that is a power of two (the group of a head by a shift), else -1
  int group_heads = 1;   // heads per CTA of the non-flush op (a power of two dividing H / G)
  // replay_group's shared-memory offsets in floats (fast_replay_group.cuh: group_plan): kernel parameters, since
  // computed in the kernel they held registers and made ptxas spill
  struct HeadLayout {
    int A = 0, B = 0, K = 0, Q = 0, W = 0, Vt = 0, Sk = 0, Tot = 0, CU = 0, CO = 0, D = 0, ring = 0, DotQ = 0, DotK = 0;
  } hl;
  // 32-row slices per CTA of the split layout's step flush (one window staging and one set of tables for that many
  // slices of a head). The fields from here on sit after hl so that hl keeps its offset: replay_group reads it, and
  // with flush_slices before it the verify kernel measured 1-2% slower.
  int flush_slices = 1;
  // How many sequences flush early in this op where the caller knows it; -1 = unknown. Several row slices per flush
  // CTA and the folded step flush (which has no replay_flush path) run only where it is 0, so it must be exact or -1.
  int early_hint = -1;
  // step_flush_kernel (the FP32 step and its folded flush in one grid): grid row j * fused_stride (j < fused_rows)
  // holds flush items, the other rows the step's sequences in order.
  int fused_rows = 0, fused_stride = 1;
  int fused_scratch = 0;  // its flush rows' scan scratch: an int offset into dynamic shared memory past both layouts
  // Op::tree (the reference kernel): the draft tree's parents [T] (-1 = the committed state), the same for every
  // sequence; conventional: every node's FP32 state [heads][max_drafts][V][K]; ReplaySSM: the window and one root
  // path's records [heads][cap](x K | V).
  const int* parents = nullptr;
  float* node_states = nullptr;
  float *pa = nullptr, *pk = nullptr, *pw = nullptr;
  // The record vectors' format (emu::Records): the element type of rk, rw, rv, pk, pw (records_of); last, so that the
  // tuned kernels' parameter offsets stay where they are.
  emu::Records records = emu::Records::fp32;
  // The reference kernel's two staged states per head (output and recurrence checkpoint), [heads][2][V][K], where
  // they do not fit in shared memory (reference_stages_in_global); null: in shared memory.
  float* state_scratch = nullptr;
};

// The record vector buffers (rk, rw, rv, pk, pw) as arrays of the mode's record element type R: float, or
// emu::RecordBf16 (2 bytes, emulation/decode_math.h) under Records::bf16. The fields stay float* so that the kernels
// of FP32 records index them directly; a kernel of BF16 records reads them through records_of<emu::RecordBf16>.
template <class R>
REPLAYSSM_HD R* records_of(float* p) {
  return reinterpret_cast<R*>(p);
}
template <class R>
REPLAYSSM_HD const R* records_of(const float* p) {
  return reinterpret_cast<const R*>(p);
}
// Bytes of one record vector element of a mode.
inline std::size_t record_elem_bytes(emu::Records r) { return r == emu::Records::bf16 ? 2 : 4; }

// The reference kernel's dynamic shared memory: the two staged states (unless they live in state_scratch) and its
// window tables (decays, dots, coefficients of cap + 1 records, and the total).
inline std::size_t reference_smem_bytes(int V, int K, int cap, bool states_in_global) {
  return ((states_in_global ? 0 : 2 * std::size_t(V) * std::size_t(K)) + 3 * std::size_t(cap + 1) + 1) * sizeof(float);
}
// The reference kernel's static shared memory, which the opt-in limit per block counts with the dynamic: the per-warp
// partials of the head amax (NVFP4's row-parallel encode, HeadCtx::head_amax).
inline constexpr std::size_t kReferenceStaticSmemBytes = 8 * sizeof(float);
// Whether the states must live in global memory: their shared-memory layout exceeds the device's opt-in limit per
// block (227 KB on an H100 / H200: V K above ~29000, e.g. 192 x 272).
inline bool reference_stages_in_global(int V, int K, int cap, std::size_t smem_optin_bytes) {
  return reference_smem_bytes(V, K, cap, false) + kReferenceStaticSmemBytes > smem_optin_bytes;
}

// The reference kernel's largest buffer (records of the window plus drafts); the tuned kernels take at most 64.
inline constexpr int kMaxRecords = 128;

// The plan of one op on the current device (the tuned launcher's layout facts filled in from the codec) and its
// launch; both launch functions return a cudaError_t as int (0 = success). launch() plans and launches in one call.
LaunchPlan plan_op(emu::Arch arch, formats::FormatId f, const KParams& p, const PlanOverride& o);
int launch_planned(emu::Arch arch, formats::FormatId f, const KParams& p, const LaunchPlan& plan, void* stream);
int launch(emu::Arch arch, formats::FormatId f, const KParams& p, const PlanOverride& o, void* stream);
// The device the plans are made for (SM count and compute capability of the current device, cached per device).
Device current_device();
// The op families, one translation unit each per arch (kernels/{gdn,mamba2}/<arch>_<family>.cu): conventional
// decode (step and verify, conv_kernel), the ReplaySSM step, the ReplaySSM verify.
enum class OpKind : int { conventional = 0, step = 1, verify = 2 };
inline OpKind op_kind(const KParams& p) {
  return p.policy == emu::Policy::conventional_shared ? OpKind::conventional
         : p.op == Op::verify                         ? OpKind::verify
                                                      : OpKind::step;
}
// Per arch: the tuned kernels' plan (kernels/{gdn,mamba2}/<arch>_plan.cu, with the codec's layout facts), the tuned
// launch of one op family (-1: the plan is not the tuned engine's) and the reference kernel's launch.
LaunchPlan plan_fast_gdn(formats::FormatId f, const KParams& p, const PlanOverride& o, const Device& dev);
LaunchPlan plan_fast_mamba2(formats::FormatId f, const KParams& p, const PlanOverride& o, const Device& dev);
template <bool kGdn, OpKind kKind>
int launch_tuned(formats::FormatId f, const KParams& p, const LaunchPlan& plan, void* stream);
// The tuned kernels of BF16 records (FP32 checkpoints; kernels/{gdn,mamba2}/<arch>_records.cu), called by launch_tuned
// with its derived KParams for a ReplaySSM step or verify of Records::bf16: -1 where the plan is not one of theirs
// (kern::bf16_records_tuned).
template <bool kGdn, OpKind kKind>
int launch_tuned_bf16_records(const KParams& p, const LaunchPlan& plan, void* stream);
int launch_reference_gdn(formats::FormatId f, const KParams& p, void* stream);
int launch_reference_mamba2(formats::FormatId f, const KParams& p, void* stream);
// Accepting a tree path under ReplaySSM (kernels/common/tree_accept.cu): for sequence b, the records of path
// path[b][0..len[b]) (node indices of the last tree verify, root first) move to the slots after its n[b] records.
int launch_accept_path(const KParams& p, const int* path, const int* len, void* stream);

// step_flush_kernel's grid (H, B + F): flush row j sits at grid row j * k (j < F), the other rows are the step's
// sequences in order. The sequence of step row y (not a flush row) is y less the flush rows before it.
REPLAYSSM_HD int fused_step_seq(int y, int F, int k) {
  const int before = (y + k - 1) / k;
  return y - (before < F ? before : F);
}
REPLAYSSM_HD bool fused_flush_row(int y, int F, int k) { return y % k == 0 && y / k < F; }

}  // namespace replayssm::kern
