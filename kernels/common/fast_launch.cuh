#pragma once
// The tuned kernels' host side: the problem's layout facts from the codec (plan_one), the values a plan derives
// (shared-memory layouts, heads per CTA, slices) and the launch of a plan (launch_one). Included at the end of
// fast_kernel.cuh, after the kernels it launches. The decisions are plan_launch's (kernels/launch_plan.h).
#include <algorithm>

#include "kernels/common/fast_kernel.cuh"

namespace replayssm::kern::fast {

using KernelFn = void (*)(KParams);

// The codecs the folded flush is instantiated for: FP32, and 8-bit minifloats with block scales and a hardware RNE pair.
template <class C>
inline constexpr bool kFlushFoldable =
    C::kBits == 32 || (C::kBits == 8 && C::kBlock != 0 && formats::kHwRnePair<C::kFormat>);
// The codecs head_step_kernel is instantiated for: FP32, and 8-bit codes with scales.
template <class C>
inline constexpr bool kStepCodes = C::kBits == 32 || (C::kBits == 8 && C::kBlock != 0);

// Dynamic shared memory of the flush paths (replay_lean, replay_flush) in bytes: p.flush_slices slices of rows.
inline std::size_t flush_smem_bytes(const KParams& p) {
  const bool rec = p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  return std::size_t(Smem{p.cap + p.T, p.T, p.K, rec, p.flush_slices * kRows}.size()) * sizeof(float);
}

// The launcher's KParams for a plan: the layouts of the paths it runs and the plan's heads per CTA and slices.
template <class C, bool kGdn>
inline KParams derive(const KParams& p_in, const LaunchPlan& plan) {
  KParams p = p_in;
  p.head_floats = head_smem_floats<C, kGdn>(p);
  p.group_shift = -1;
  for (int sh = 0; sh < 31 && p.G > 0 && p.H % p.G == 0; ++sh)
    if ((1 << sh) == p.H / p.G) p.group_shift = sh;
  p.flush_slices = plan.flush_slices;
  p.group_heads = plan.group_heads;
  if (p.group_heads > 1) p.head_floats = group_plan<C, kGdn>(p, &p.hl);  // the flush CTAs keep flush_smem_bytes
  return p;
}

// Dynamic shared memory of the combined / split kernels in bytes (the larger of the flush and non-flush paths).
inline std::size_t replay_smem_bytes(const KParams& p) {
  if (p.policy == emu::Policy::conventional_shared) return 0;
  return std::max(flush_smem_bytes(p), std::size_t(p.head_floats) * sizeof(float));
}
inline constexpr std::size_t kMaxSmemBytes = 200 * 1024;

template <class C, bool kGdn>
LaunchPlan plan_one(const KParams& p, const PlanOverride& o, const Device& dev) {
  Problem pr;
  pr.arch = kGdn ? emu::Arch::gdn : emu::Arch::mamba2;
  pr.op = p.op, pr.format = C::kFormat, pr.scaling = p.scaling, pr.rounding = p.rounding;
  pr.policy = p.policy, pr.usource = p.usource, pr.records = p.records;
  pr.B = p.B, pr.G = p.G, pr.H = p.H, pr.K = p.K, pr.V = p.V, pr.T = p.T, pr.L = p.L, pr.cap = p.cap;
  pr.max_drafts = p.max_drafts, pr.flushing = p.flush_hint, pr.early = p.early_hint;
  pr.head_fits = head_smem_floats<C, kGdn>(p) > 0;
  pr.group_fits = group_plan<C, kGdn>(p, nullptr) > 0;
  pr.tc_verify_fits = TcVerifyA<kGdn>::fits(p);
  LaunchPlan plan = plan_launch(pr, dev, o);
  if (plan.engine == Engine::tuned && replay_smem_bytes(derive<C, kGdn>(p, plan)) > kMaxSmemBytes) {
    plan = LaunchPlan{};
    plan.reason = "shared memory > 200 KB";
  }
  return plan;
}

// The split layout's non-flush kernel of a plan (kKind: the op family of this translation unit).
template <class C, bool kGdn, OpKind kKind>
KernelFn hot_kernel(const LaunchPlan& plan, int T) {
  const bool real = plan.real_dims;
  if constexpr (kKind == OpKind::step && kStepCodes<C>) {
    if constexpr (C::kBits == 32)
      if (plan.hot == Hot::slice_step)
        return plan.fixed_records ? head_step_kernel<C, kGdn, 1, kStepFixedRecords, true>
                                  : head_step_kernel<C, kGdn, 1, 0, true>;
    if (plan.hot == Hot::head_step) {
      if constexpr (C::kBits == 8 && kGdn)
        if (plan.tc_dots)
          return plan.fixed_records ? head_step_kernel<C, kGdn, 2, kStepFixedRecords> : head_step_kernel<C, kGdn, 2, 0>;
      return plan.fixed_records ? head_step_kernel<C, kGdn, 1, kStepFixedRecords> : head_step_kernel<C, kGdn, 1, 0>;
    }
  }
  if constexpr (kKind == OpKind::verify && C::kBits == 32) {
    if (plan.hot == Hot::group_verify) {
      static_assert(tc_verify_min_drafts(true) == 4 && tc_verify_min_drafts(false) == 6,
                    "group_verify_kernel's tensor-core instantiations follow tc_verify_min_drafts");
      if (plan.tc_dots) {
        if constexpr (kGdn) {
          if (T == 4) return group_verify_kernel<C, kGdn, 4, true>;
          if (T == 5) return group_verify_kernel<C, kGdn, 5, true>;
        }
        if (T == 6) return group_verify_kernel<C, kGdn, 6, true>;
        if (T == 7) return group_verify_kernel<C, kGdn, 7, true>;
        if (T == 8) return group_verify_kernel<C, kGdn, 8, true>;
      }
      switch (T) {
        case 2: return group_verify_kernel<C, kGdn, 2>;
        case 3: return group_verify_kernel<C, kGdn, 3>;
        case 4: return group_verify_kernel<C, kGdn, 4>;
        case 5: return group_verify_kernel<C, kGdn, 5>;
        case 6: return group_verify_kernel<C, kGdn, 6>;
        case 7: return group_verify_kernel<C, kGdn, 7>;
        default: return group_verify_kernel<C, kGdn, 8>;
      }
    }
  }
  if (plan.hot == Hot::group)
    return real ? replay_hot_kernel<C, kGdn, true, true> : replay_hot_kernel<C, kGdn, true>;
  return real ? replay_hot_kernel<C, kGdn, false, true> : replay_hot_kernel<C, kGdn, false>;
}

// The split layout's flush kernel of a plan (the folded forms are step flushes).
template <class C, bool kGdn, OpKind kKind>
KernelFn flush_kernel(const LaunchPlan& plan) {
  if constexpr (kKind == OpKind::step && kFlushFoldable<C>) {
    if (plan.flush == Flush::fold_shared) return replay_flush_kernel<C, kGdn, true, 1>;
    if (plan.flush == Flush::fold_split) return replay_flush_kernel<C, kGdn, true, 2>;
  }
  return plan.real_dims ? replay_flush_kernel<C, kGdn, true> : replay_flush_kernel<C, kGdn>;
}

// The fused layout's kernel of a plan (FP32 codes only).
template <class C, bool kGdn>
KernelFn fused_kernel(const LaunchPlan& plan) {
  if constexpr (C::kBits == 32) {
    const bool split = plan.flush == Flush::fold_split;
    if (plan.fixed_records)
      return split ? step_flush_kernel<C, kGdn, kStepFixedRecords, 2> : step_flush_kernel<C, kGdn, kStepFixedRecords, 1>;
    return split ? step_flush_kernel<C, kGdn, 0, 2> : step_flush_kernel<C, kGdn, 0, 1>;
  }
  return nullptr;
}

inline int launch_with_smem(KernelFn k, dim3 grid, std::size_t smem, const KParams& p, cudaStream_t s) {
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (e != cudaSuccess) return int(e);
  k<<<grid, kThreads, smem, s>>>(p);
  return int(cudaGetLastError());
}

// The fused layout's launch of its kernel (a step).
inline int launch_fused(KernelFn fused, const KParams& p, const LaunchPlan& plan, cudaStream_t s) {
  const std::size_t fsm = flush_smem_bytes(p), hsm = std::size_t(p.head_floats) * sizeof(float);
  KParams q = p;
  q.fused_rows = plan.fused_rows;
  q.fused_stride = plan.fused_stride;
  const std::size_t lay = (std::max(fsm, hsm) + 15) / 16 * 16;
  q.fused_scratch = int(lay / sizeof(int));
  const dim3 grid(unsigned(p.H), unsigned(p.B + q.fused_rows));
  return launch_with_smem(fused, grid, lay + (kWarps + 1) * sizeof(int), q, s);
}

// The split layout's launch of its two kernels: the flushes first (their CTAs are the longest), then the non-flush
// kernel as their dependent.
inline int launch_split(KernelFn hot, KernelFn flush, const KParams& p, const LaunchPlan& plan, cudaStream_t s) {
  const int nsplit = (p.V + kRows - 1) / kRows;
  const std::size_t fsm = flush_smem_bytes(p), hsm = std::size_t(p.head_floats) * sizeof(float);
  cudaError_t e = cudaFuncSetAttribute(hot, cudaFuncAttributeMaxDynamicSharedMemorySize, int(hsm));
  if (e != cudaSuccess) return int(e);
  if (plan.flush_seqs > 0) {
    const long long per = static_cast<long long>(p.H) * ((nsplit + p.flush_slices - 1) / p.flush_slices);
    const int r = launch_with_smem(flush, dim3(unsigned(plan.flush_seqs * per)), fsm, p, s);
    if (r != 0) return r;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(p.H / p.group_heads * (plan.hot == Hot::slice_step ? nsplit : 1)), unsigned(p.B));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = hsm;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = plan.pdl ? 1 : 0;
  if ((e = cudaLaunchKernelEx(&cfg, hot, p)) != cudaSuccess) return int(e);
  return int(cudaGetLastError());
}

// A ReplaySSM op (kKind step or verify) in its plan's layout: combined, fused (steps) or split.
template <class C, bool kGdn, OpKind kKind>
int launch_replay(const KParams& p, const LaunchPlan& plan, cudaStream_t s) {
  const int nsplit = (p.V + kRows - 1) / kRows;
  if (plan.layout == Layout::combined) {
    KernelFn combined = plan.real_dims ? replay_kernel<C, kGdn, true> : replay_kernel<C, kGdn, false>;
    return launch_with_smem(combined, dim3(unsigned(nsplit), unsigned(p.H), unsigned(p.B)), replay_smem_bytes(p), p, s);
  }
  if constexpr (kKind == OpKind::step)
    if (plan.layout == Layout::fused) return launch_fused(fused_kernel<C, kGdn>(plan), p, plan, s);
  // The non-flush kernel's template first: the kernels' instantiation order is the order of the module's PTX, and
  // ptxas's register allocation of some kernels (GDN's grouped verify) depends on that order.
  KernelFn hot = hot_kernel<C, kGdn, kKind>(plan, p.T);
  KernelFn flush = plan.flush_seqs > 0 ? flush_kernel<C, kGdn, kKind>(plan) : nullptr;  // launched only then
  return launch_split(hot, flush, p, plan, s);
}

// The conventional kernel of a plan: conv_kernel, conv_row8_kernel, or for a one-token step of a store narrower than
// FP32 conv_row8_slices_kernel with 2 or 4 slices per CTA (the plan's conv_groups).
template <class C, bool kGdn, bool kRne>
KernelFn conv_form(bool row8, int groups) {
  if (!row8) return conv_kernel<C, kGdn, kRne>;
  if constexpr (C::kBits == 8) {
    if (groups == 4) return conv_row8_slices_kernel<C, kGdn, kRne, 4>;
  }
  if constexpr (C::kBits < 32) {
    if (groups == 2) return conv_row8_slices_kernel<C, kGdn, kRne, 2>;
  }
  return groups == 1 ? conv_row8_kernel<C, kGdn, kRne> : nullptr;
}

// One op under its plan; kKind: the op family this translation unit compiles (conventional decode, ReplaySSM step,
// ReplaySSM verify), so that each kernel is instantiated only where its op runs. -1: the plan is not the tuned
// engine's, or the op not of this family (the caller launches the reference kernel); else a cudaError_t.
template <class C, bool kGdn, OpKind kKind>
int launch_one(const KParams& p_in, const LaunchPlan& plan, cudaStream_t s) {
  if constexpr (!kSupported<C>) {
    return -1;
  } else {
    if (plan.engine != Engine::tuned || op_kind(p_in) != kKind) return -1;
    const KParams p = derive<C, kGdn>(p_in, plan);
    if constexpr (kKind == OpKind::conventional) {
      const int groups = plan.conv_row8 ? plan.conv_groups : 1;
      const unsigned grid = unsigned(std::size_t(p.B) * p.H * ((p.V + kRows * groups - 1) / (kRows * groups)));
      KernelFn k = conv_form<C, kGdn, false>(plan.conv_row8, groups);
      if constexpr (formats::kHwRnePair<C::kFormat>) {
        if (p.rounding == formats::Rounding::rne) k = conv_form<C, kGdn, true>(plan.conv_row8, groups);
      }
      if (!k) return -1;
      k<<<grid, kThreads, 0, s>>>(p);
      return int(cudaGetLastError());
    } else {
      if (p.records != emu::Records::bf16) return launch_replay<C, kGdn, kKind>(p, plan, s);
      // BF16 records: their kernels' translation unit (<arch>_records.cu)
      if constexpr (C::kBits == 32) return launch_tuned_bf16_records<kGdn, kKind>(p, plan, s);
      return -1;
    }
  }
}

// The formats the tuned kernels are instantiated for: FP32 and FP8 E4M3 for every op; BF16, FP16, FP8 E5M2 and INT8
// for conventional decode (conv_kernel, conv_row8_kernel) only. The cases here and tuned_applies list the same.
template <bool kGdn>
LaunchPlan plan_any(formats::FormatId f, const KParams& p, const PlanOverride& o, const Device& dev) {
  using formats::FormatId;
  using formats::StateCodec;
  switch (f) {
    case FormatId::fp32: return plan_one<StateCodec<FormatId::fp32>, kGdn>(p, o, dev);
    case FormatId::fp8_e4m3: return plan_one<StateCodec<FormatId::fp8_e4m3>, kGdn>(p, o, dev);
    case FormatId::bf16: return plan_one<StateCodec<FormatId::bf16>, kGdn>(p, o, dev);
    case FormatId::fp16: return plan_one<StateCodec<FormatId::fp16>, kGdn>(p, o, dev);
    case FormatId::fp8_e5m2: return plan_one<StateCodec<FormatId::fp8_e5m2>, kGdn>(p, o, dev);
    case FormatId::int8: return plan_one<StateCodec<FormatId::int8>, kGdn>(p, o, dev);
    default: {
      LaunchPlan plan;
      plan.reason = "format not instantiated in the tuned kernels";
      return plan;
    }
  }
}
}  // namespace replayssm::kern::fast

namespace replayssm::kern {
// The definition behind decode_kernel.h's launch_tuned, explicitly instantiated by kernels/{gdn,mamba2}/*_<op>.cu.
template <bool kGdn, OpKind kKind>
int launch_tuned(formats::FormatId f, const KParams& p, const LaunchPlan& plan, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  using formats::FormatId;
  using formats::StateCodec;
  switch (f) {
    case FormatId::fp32: return fast::launch_one<StateCodec<FormatId::fp32>, kGdn, kKind>(p, plan, s);
    case FormatId::fp8_e4m3: return fast::launch_one<StateCodec<FormatId::fp8_e4m3>, kGdn, kKind>(p, plan, s);
    default: break;
  }
  if constexpr (kKind == OpKind::conventional) {
    switch (f) {
      case FormatId::bf16: return fast::launch_one<StateCodec<FormatId::bf16>, kGdn, kKind>(p, plan, s);
      case FormatId::fp16: return fast::launch_one<StateCodec<FormatId::fp16>, kGdn, kKind>(p, plan, s);
      case FormatId::fp8_e5m2: return fast::launch_one<StateCodec<FormatId::fp8_e5m2>, kGdn, kKind>(p, plan, s);
      case FormatId::int8: return fast::launch_one<StateCodec<FormatId::int8>, kGdn, kKind>(p, plan, s);
      default: break;
    }
  }
  return -1;
}
}  // namespace replayssm::kern
