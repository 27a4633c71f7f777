#pragma once
// The tuned kernels of BF16 records (Bf16Records<C>, fast_records.cuh) and their launch, instantiated only by
// kernels/{gdn,mamba2}/<arch>_records.cu: kept out of the FP32 records' translation units, whose generated code
// (ptxas's register allocation of some kernels) moved with other kernels in the same module.
#include "kernels/common/fast_launch.cuh"

namespace replayssm::kern::fast {

// A ReplaySSM step with BF16 records (Bf16Records<C>, FP32 codes): the kernels plan_launch plans for them
// (kern::bf16_records_tuned): head_step_kernel (a head or a row group per CTA), the folded flush and the fused grid.
// -1 for any other plan (the reference kernel then runs it).
template <class C, bool kGdn>
int launch_bf16_records_step(const KParams& p, const LaunchPlan& plan, cudaStream_t s) {
  static_assert(C::kBits == 32, "launch_bf16_records_step: FP32 codes");
  using B = Bf16Records<C>;
  if (!bf16_records_tuned(Op::step, plan)) return -1;
  if (plan.layout == Layout::fused) return launch_fused(fused_kernel<B, kGdn>(plan), p, plan, s);
  constexpr int kF = kStepFixedRecords;
  const bool fixed = plan.fixed_records;
  KernelFn hot = plan.hot == Hot::slice_step
                     ? (fixed ? head_step_kernel<B, kGdn, 1, kF, true> : head_step_kernel<B, kGdn, 1, 0, true>)
                     : (fixed ? head_step_kernel<B, kGdn, 1, kF> : head_step_kernel<B, kGdn, 1, 0>);
  KernelFn flush = plan.flush == Flush::fold_split ? replay_flush_kernel<B, kGdn, true, 2>
                                                   : replay_flush_kernel<B, kGdn, true, 1>;
  return launch_split(hot, flush, p, plan, s);
}
// A ReplaySSM verify with BF16 records (FP32 codes) and no early flush: group_verify_kernel or replay_hot_kernel per
// group or head at the real dims (kern::bf16_records_tuned); -1 for any other plan.
template <class C, bool kGdn>
int launch_bf16_records_verify(const KParams& p, const LaunchPlan& plan, cudaStream_t s) {
  static_assert(C::kBits == 32, "launch_bf16_records_verify: FP32 codes");
  using B = Bf16Records<C>;
  if (!bf16_records_tuned(Op::verify, plan) || plan.flush_seqs > 0) return -1;
  KernelFn hot = plan.hot == Hot::group ? replay_hot_kernel<B, kGdn, true, true>
                                        : replay_hot_kernel<B, kGdn, false, true>;
  if (plan.hot == Hot::group_verify) {
    switch (p.T) {
      case 2: hot = group_verify_kernel<B, kGdn, 2>; break;
      case 3: hot = group_verify_kernel<B, kGdn, 3>; break;
      case 4: hot = group_verify_kernel<B, kGdn, 4>; break;
      case 5: hot = group_verify_kernel<B, kGdn, 5>; break;
      case 6: hot = group_verify_kernel<B, kGdn, 6>; break;
      case 7: hot = group_verify_kernel<B, kGdn, 7>; break;
      default: hot = group_verify_kernel<B, kGdn, 8>; break;
    }
  }
  return launch_split(hot, nullptr, p, plan, s);
}

}  // namespace replayssm::kern::fast

namespace replayssm::kern {
// The definition behind decode_kernel.h's launch_tuned_bf16_records (FP32 codes; the derived KParams of launch_one).
template <bool kGdn, OpKind kKind>
int launch_tuned_bf16_records(const KParams& p, const LaunchPlan& plan, void* stream) {
  using C = formats::StateCodec<formats::FormatId::fp32>;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if constexpr (kKind == OpKind::step) return fast::launch_bf16_records_step<C, kGdn>(p, plan, s);
  else if constexpr (kKind == OpKind::verify) return fast::launch_bf16_records_verify<C, kGdn>(p, plan, s);
  else return -1;
}
}  // namespace replayssm::kern
