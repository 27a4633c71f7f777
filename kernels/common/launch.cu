// One op's plan and launch for either arch (decode_kernel.h): the tuned kernels' plan (launch_plan.h, with the
// codec's layout facts), or the reference kernel where the plan says so.
#include <cuda_runtime.h>

#include <atomic>

#include "kernels/common/decode_kernel.h"

namespace replayssm::kern {

Device current_device() {
  static std::atomic<int> sms[16] = {}, major[16] = {};
  Device d;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 16) return d;
  if (sms[dev].load() <= 0) {
    int v = 0, m = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) return d;
    if (cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return d;
    major[dev].store(m);
    sms[dev].store(v);
  }
  d.sms = sms[dev].load();
  d.cc_major = major[dev].load();
  return d;
}

LaunchPlan plan_op(emu::Arch arch, formats::FormatId f, const KParams& p, const PlanOverride& o) {
  if (p.op == Op::tree) {  // the reference kernel alone verifies trees (launch_plan.cpp: tuned_applies agrees)
    LaunchPlan plan;
    plan.reason = "tree verify";
    return plan;
  }
  const Device dev = current_device();
  return arch == emu::Arch::gdn ? plan_fast_gdn(f, p, o, dev) : plan_fast_mamba2(f, p, o, dev);
}

namespace {
template <bool kGdn>
int launch_tuned_op(formats::FormatId f, const KParams& p, const LaunchPlan& plan, void* stream) {
  switch (op_kind(p)) {
    case OpKind::conventional: return launch_tuned<kGdn, OpKind::conventional>(f, p, plan, stream);
    case OpKind::step: return launch_tuned<kGdn, OpKind::step>(f, p, plan, stream);
    default: return launch_tuned<kGdn, OpKind::verify>(f, p, plan, stream);
  }
}
}  // namespace

int launch_planned(emu::Arch arch, formats::FormatId f, const KParams& p, const LaunchPlan& plan, void* stream) {
  const bool gdn = arch == emu::Arch::gdn;
  if (plan.engine == Engine::tuned) {
    const int r = gdn ? launch_tuned_op<true>(f, p, plan, stream) : launch_tuned_op<false>(f, p, plan, stream);
    if (r >= 0) return r;
  }
  return gdn ? launch_reference_gdn(f, p, stream) : launch_reference_mamba2(f, p, stream);
}

int launch(emu::Arch arch, formats::FormatId f, const KParams& p, const PlanOverride& o, void* stream) {
  return launch_planned(arch, f, p, plan_op(arch, f, p, o), stream);
}

}  // namespace replayssm::kern
