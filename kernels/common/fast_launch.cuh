#pragma once
// The tuned kernels' host side: which layout and kernel run an op, their shared memory, and the launch itself
// (launch_one, launch_any). Included at the end of fast_kernel.cuh, after the kernels it launches (moved out of it,
// unchanged, in session 19).
#include "kernels/common/fast_kernel.cuh"

namespace replayssm::kern::fast {

// Which layout runs (v13): kern::kernel_split_rule, or kern::set_fast_kernel_split / REPLAYSSM_KERNEL_SPLIT=0|1
// (decode_kernel.h).
template <class C, bool kGdn>
inline bool host_kernel_split(const KParams& p) {
  const int force = fast_kernel_split();
  if (force >= 0) return force == 1;
  const bool rec = p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  // v35 (GDN), v53 (Mamba-2): the FP32 step runs head_step_kernel in the split layout (p.group_heads is still 1 here,
  // as for any step)
  const bool fp32_step_kernel = C::kBits == 32 && head_step_kernel_applies<C, kGdn>(p, real_dims<kGdn>(p)) &&
                                fp32_step_split_rule(static_cast<long long>(p.B) * p.H, p.flush_hint, kGdn);
  return kernel_split_rule(C::kBits, p.op == Op::verify ? p.T : 0, rec, fp32_step_kernel);
}

// v25: programmatic dependent launch of the split layout's non-flush kernel where the device has it (compute
// capability 9.0+, cached per device); REPLAYSSM_PDL=0 in the environment turns it off (A/B). The device, not the
// binary, decides: code built for an older arch (JIT on a 9.0 device) has no griddepcontrol, so the flush kernel never
// triggers early and its dependent launches only when it completes (the implicit trigger): serialised, as without PDL.
inline bool host_pdl() {
  static const bool env_off = [] {
    const char* e = std::getenv("REPLAYSSM_PDL");
    return e && *e && std::atoi(e) == 0;
  }();
  if (env_off) return false;
  static std::atomic<int> cache[16] = {};
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (dev >= 0 && dev < 16 && cache[dev].load() != 0) return cache[dev].load() > 0;
  const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9;
  if (dev >= 0 && dev < 16) cache[dev].store(ok ? 1 : -1);
  return ok;
}

// v66: step_flush_kernel's flush rows over the first REPLAYSSM_FUSED_SPREAD percent of its grid (decode_kernel.h).
inline int host_fused_spread() {
  static const int v = fused_spread_env();
  return v;
}

// Heads per CTA of the non-flush op (v12): kern::group_heads_rule (decode_kernel.h) on the current device's SM count
// (cached per device).
inline int sm_count() {
  static std::atomic<int> cache[16] = {};
  int dev = 0, v = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 132;
  if (dev >= 0 && dev < 16 && (v = cache[dev].load()) > 0) return v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) return 132;
  if (dev >= 0 && dev < 16) cache[dev].store(v);
  return v;
}
inline int group_heads_for(const KParams& p) {
  return group_heads_rule(p.B, p.G, p.H, p.op == Op::verify ? p.T : 0, fast_group_heads(), sm_count());
}

// Dynamic shared memory of the flush paths (replay_lean, replay_flush) in bytes: p.flush_slices slices of rows.
inline std::size_t flush_smem_bytes(const KParams& p) {
  const bool rec = p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
  return std::size_t(Smem{p.cap + p.T, p.T, p.K, rec, p.flush_slices * kRows}.size()) * sizeof(float);
}
// v24: slices per CTA of the split layout's step flush (KParams::flush_slices): kern::step_flush_slices (v26: one
// unless the caller reports no early flush), then kern::flush_slices_rule on the caller's flush count (all sequences
// where it is unknown) and the device's SM count.
inline int sm_count();
inline int host_flush_slices(const KParams& p, int nsplit) {
  const long long seqs = p.flush_hint >= 0 ? std::min(p.flush_hint, p.B) : p.B;
  const bool lean_flush = (host_lean() & 2) && p.V % 4 == 0;
  return step_flush_slices(fast_flush_slices(), seqs, p.early_hint, lean_flush, p.H, nsplit, sm_count());
}
template <class C, bool kGdn>
inline std::size_t smem_bytes(const KParams& p) {
  if (p.policy == emu::Policy::conventional_shared) return 0;
  return std::max(flush_smem_bytes(p), std::size_t(p.head_floats) * sizeof(float));
}

// -1: not handled here (the caller uses the reference kernel); else a cudaError_t.
template <class C, bool kGdn>
int launch_one(const KParams& p_in, cudaStream_t s) {
  if constexpr (!kSupported<C>) {
    return -1;
  } else {
    KParams p = p_in;  // + head_floats
    if (p.op == Op::state || p.K > 128 || p.K % 4 != 0 || p.V > 8 * kRows || p.L < 2 || p.cap > 64 ||
        p.scaling == formats::Scaling::head)
      return -1;
    if (p.op == Op::verify && p.T > p.max_drafts) return -1;
    if (p.cap + p.T > kThreads) return -1;  // the lean path stages a / beta one thread per record
    const int nsplit = (p.V + kRows - 1) / kRows;
    p.head_floats = (host_lean() & 5) == 5 ? head_smem_floats<C, kGdn>(p) : 0;
    p.group_shift = -1;
    for (int sh = 0; sh < 31 && p.G > 0 && p.H % p.G == 0; ++sh)
      if ((1 << sh) == p.H / p.G) p.group_shift = sh;
    const bool split = host_kernel_split<C, kGdn>(p);
    const bool rec = p.policy == emu::Policy::replay_split && p.usource == emu::USource::recompute;
    p.flush_slices = p.head_floats > 0 && split && p.op == Op::step && !rec ? host_flush_slices(p, nsplit) : 1;
    p.group_heads = p.head_floats > 0 && split ? group_heads_for(p) : 1;  // the combined kernel: per head
    if (p.group_heads > 1) {  // replay_group's layout (the lean paths' smem_bytes still apply to the flush CTAs)
      const int f = group_plan<C, kGdn>(p, &p.hl);
      if (f > 0) p.head_floats = f;
      else p.group_heads = 1;
    }
    note_group_heads_used(p.group_heads);  // the tests check that the group path ran where they force it
    const std::size_t sm = smem_bytes<C, kGdn>(p);
    if (sm > 200 * 1024) return -1;
    const unsigned grid = unsigned(std::size_t(p.B) * p.H * nsplit);
    if (p.policy == emu::Policy::conventional_shared) {
      conv_kernel<C, kGdn><<<grid, kThreads, 0, s>>>(p);
      return int(cudaGetLastError());
    }
    if (std::size_t(p.B) * p.H > kCounters || p.B > 65535 || p.H > 65535) return -1;
    static const bool lean_set = [] {  // once per process, before any graph capture (the first launch is plain)
      const int w = host_pdl_wait_all();
      if (w && cudaMemcpyToSymbol(g_pdl_wait_all, &w, sizeof w) != cudaSuccess) return false;
      if (!std::getenv("REPLAYSSM_LEAN")) return true;
      const int v = host_lean();
      return cudaMemcpyToSymbol(g_lean, &v, sizeof v) == cudaSuccess;
    }();
    if (!lean_set) return int(cudaErrorInvalidValue);
    const bool real = real_dims<kGdn>(p);
    if (p.head_floats > 0 && split) {  // v13: the flush kernel and the non-flush kernel
      note_split_launch();  // the tests check that the split layout ran where they force it
      const std::size_t fsm = flush_smem_bytes(p);
      const long long per = static_cast<long long>(p.H) * ((nsplit + p.flush_slices - 1) / p.flush_slices);
      const long long seqs = p.flush_hint >= 0 ? std::min(p.flush_hint, p.B) : p.B;
      const unsigned fgrid = unsigned(seqs * per);  // 0: the caller knows that none flushes, no flush kernel
      auto* hot = p.group_heads > 1 ? (real ? replay_hot_kernel<C, kGdn, true, true> : replay_hot_kernel<C, kGdn, true>)
                  : real            ? replay_hot_kernel<C, kGdn, false, true>
                                    : replay_hot_kernel<C, kGdn, false>;
      if constexpr ((C::kBits == 8 && C::kBlock != 0) || C::kBits == 32)
        if (head_step_kernel_applies<C, kGdn>(p, real)) {
          // v48: the rule, and the record count the kernel's layout takes (step_records), agree (belt and braces)
          const bool fixed = step_fixed_applies(p.L, p.cap, fast_step_fixed() != 0) &&
                             step_records(p) == kStepFixedRecords;
          int form = fast_step_form();
          if ((C::kBits != 8 || !kGdn) && form == 2) form = 1;  // v55's tensor-core row dots: GDN's 8-bit codes only
          hot = form == 0 ? head_step_kernel<C, kGdn, 0, 0>
                : fixed   ? head_step_kernel<C, kGdn, 1, kStepFixedRecords>
                          : head_step_kernel<C, kGdn, 1, 0>;
          if constexpr (C::kBits == 8 && kGdn)
            if (form == 2) {
              hot = fixed ? head_step_kernel<C, kGdn, 2, kStepFixedRecords> : head_step_kernel<C, kGdn, 2, 0>;
              note_step_tc_launch();
            }
          note_step_kernel_launch();  // the tests check that it ran where it applies
          if (fixed && form != 0) note_step_fixed_launch();
        }
      if constexpr (C::kBits == 32) {  // v39: REPLAYSSM_VERIFY_KERNEL=0 keeps replay_hot_kernel (A/B of one binary)
        const bool hp = kGdn && p.policy == emu::Policy::replay_split && p.usource == emu::USource::hp;
        if (p.group_heads > 1 && real && p.op == Op::verify && !hp && p.T >= 2 && p.T <= 8 && host_verify_kernel()) {
          // v57: form 2 runs the row dots on the tensor cores from the draft count where it measured faster
          // (tc_verify_min_drafts) and where A's fragments fit in sK and sQ
          const bool tc = fast_step_form() == 2 && p.T >= tc_verify_min_drafts(kGdn) && TcVerifyA<kGdn>::fits(p);
          switch (p.T) {
            case 2: hot = group_verify_kernel<C, kGdn, 2>; break;
            case 3: hot = group_verify_kernel<C, kGdn, 3>; break;
            case 4: hot = group_verify_kernel<C, kGdn, 4>; break;
            case 5: hot = group_verify_kernel<C, kGdn, 5>; break;
            case 6: hot = group_verify_kernel<C, kGdn, 6>; break;
            case 7: hot = group_verify_kernel<C, kGdn, 7>; break;
            default: hot = group_verify_kernel<C, kGdn, 8>; break;
          }
          if (tc) {  // the tc instantiations exist from tc_verify_min_drafts on
            static_assert(tc_verify_min_drafts(true) == 4 && tc_verify_min_drafts(false) == 6,
                          "group_verify_kernel's form-2 instantiations follow tc_verify_min_drafts");
            if constexpr (kGdn) {
              if (p.T == 4) hot = group_verify_kernel<C, kGdn, 4, true>;
              if (p.T == 5) hot = group_verify_kernel<C, kGdn, 5, true>;
            }
            if (p.T == 6) hot = group_verify_kernel<C, kGdn, 6, true>;
            if (p.T == 7) hot = group_verify_kernel<C, kGdn, 7, true>;
            if (p.T == 8) hot = group_verify_kernel<C, kGdn, 8, true>;
          }
          note_verify_kernel_launch();  // the tests check that it ran where it applies
          if (tc) note_verify_tc_launch();
        }
      }
      auto* flush = real ? replay_flush_kernel<C, kGdn, true> : replay_flush_kernel<C, kGdn>;
      if constexpr (kFlushFoldable<C>) {
        const int fold = fgrid > 0 ? flush_fold_applies<C, kGdn>(p, real) : 0;
        if (fold > 0) {
          flush = fold == 2 ? replay_flush_kernel<C, kGdn, true, 2> : replay_flush_kernel<C, kGdn, true, 1>;
          note_flush_fold_launch();  // the tests check that it ran where it applies
        }
      }
      const std::size_t hsm = std::size_t(p.head_floats) * sizeof(float);
      if constexpr (C::kBits == 32) {  // v66: the step and its folded flush in one grid (kern::fast_step_fused)
        const int fold = fgrid > 0 && fast_step_fused() && p.flush_slices == nsplit && fast_step_form() != 0 &&
                                 head_step_kernel_applies<C, kGdn>(p, real)
                             ? flush_fold_applies<C, kGdn>(p, real)
                             : 0;
        const bool fixed = step_fixed_applies(p.L, p.cap, fast_step_fixed() != 0) &&
                           step_records(p) == kStepFixedRecords;
        KParams q = p;
        q.fused_rows = int(seqs);
        q.fused_stride = fused_stride_rule(p.B, q.fused_rows, host_fused_spread());
        // v67 (mode 2) for GDN only: Mamba-2's step path spills ~nothing in v66's kernel (ncu: its local stores are the
        // flush rows'), and its mul-hi form compiled to more spills (100 B against 48 B)
        const bool mulhi = kGdn && fast_step_fused() == 2 && fused_mulhi_applies(p.B + q.fused_rows, q.fused_stride);
        q.fused_mul = mulhi ? fused_mul_rule(q.fused_stride) : 0u;
        auto pick = [&](auto form) -> void (*)(KParams) {
          constexpr bool m = decltype(form)::value;
          return fold == 0 ? nullptr
                 : fixed   ? (fold == 2 ? step_flush_kernel<C, kGdn, kStepFixedRecords, 2, m>
                                        : step_flush_kernel<C, kGdn, kStepFixedRecords, 1, m>)
                           : (fold == 2 ? step_flush_kernel<C, kGdn, 0, 2, m> : step_flush_kernel<C, kGdn, 0, 1, m>);
        };
        auto* fused = pick(std::false_type{});
        if constexpr (kGdn)
          if (mulhi) fused = pick(std::true_type{});
        if (fused) {
          const std::size_t lay = (std::max(fsm, hsm) + 15) / 16 * 16;
          q.fused_scratch = int(lay / sizeof(int));
          const std::size_t usm = lay + (kWarps + 1) * sizeof(int);
          cudaError_t e = cudaFuncSetAttribute(fused, cudaFuncAttributeMaxDynamicSharedMemorySize, int(usm));
          if (e != cudaSuccess) return int(e);
          fused<<<dim3(unsigned(p.H), unsigned(p.B + q.fused_rows)), kThreads, usm, s>>>(q);
          if ((e = cudaGetLastError()) != cudaSuccess) return int(e);
          note_flush_slices_used(p.flush_slices);  // (the step kernel's and the fold's launches are noted above)
          note_step_fused_launch();  // the tests check that it ran where they force it
          if (mulhi) note_step_mulhi_launch();  // and v67's form where they ask for it
          return int(cudaSuccess);
        }
      }
      cudaError_t e = cudaFuncSetAttribute(hot, cudaFuncAttributeMaxDynamicSharedMemorySize, int(hsm));
      if (e == cudaSuccess && fgrid > 0)
        e = cudaFuncSetAttribute(flush, cudaFuncAttributeMaxDynamicSharedMemorySize, int(fsm));
      if (e != cudaSuccess) return int(e);
      if (fgrid > 0) {  // the flushes first: their CTAs are the longest
        flush<<<fgrid, kThreads, fsm, s>>>(p);
        if ((e = cudaGetLastError()) != cudaSuccess) return int(e);
        note_flush_slices_used(p.flush_slices);  // the tests check that whole-head flush CTAs ran where they force them
      }
      // v25: the non-flush kernel as the flush kernel's programmatic dependent (sm_90+; REPLAYSSM_PDL=0 turns it off)
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(unsigned(p.H / p.group_heads), unsigned(p.B));
      cfg.blockDim = dim3(kThreads);
      cfg.dynamicSmemBytes = hsm;
      cfg.stream = s;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attr;
      cfg.numAttrs = fgrid > 0 && host_pdl() ? 1 : 0;
      if ((e = cudaLaunchKernelEx(&cfg, hot, p)) != cudaSuccess) return int(e);
      if ((e = cudaGetLastError()) != cudaSuccess) return int(e);
      return int(cudaSuccess);
    }
    auto* combined = real ? replay_kernel<C, kGdn, true> : replay_kernel<C, kGdn, false>;
    const cudaError_t e = cudaFuncSetAttribute(combined, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm));
    if (e != cudaSuccess) return int(e);
    combined<<<dim3(unsigned(nsplit), unsigned(p.H), unsigned(p.B)), kThreads, sm, s>>>(p);
    return int(cudaGetLastError());
  }
}

template <bool kGdn>
int launch_any(formats::FormatId f, const KParams& p, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  using formats::FormatId;
  using formats::StateCodec;
  switch (f) {
    case FormatId::fp32: return launch_one<StateCodec<FormatId::fp32>, kGdn>(p, s);
    case FormatId::fp8_e4m3: return launch_one<StateCodec<FormatId::fp8_e4m3>, kGdn>(p, s);
    // bf16 / fp16 / fp8_e5m2 / int8 are supported by the template (kSupported) but not instantiated yet: nvcc time
    // on the shared build machine. Add a case to enable one.
    default: return -1;
  }
}

}  // namespace replayssm::kern::fast
