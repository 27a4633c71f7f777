#pragma once
// Asynchronous copies into shared memory that replay_head and replay_group share: cp.async groups (sm_80+) and bulk
// copies completing on an mbarrier (sm_90). Part of fast_kernel.cuh.
#include <cstdint>

namespace replayssm::kern::fast {

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// The step kernel's window records by bulk copies (one thread issues each head's k and w records as one copy each)
// completing on a shared-memory mbarrier, instead of a cp.async per 16 bytes from every warp (staged by cp.async, the
// window's loops were ~13% of Mamba-2's FP8 step instructions).
__device__ __forceinline__ unsigned smem_addr(const void* s) {
  return static_cast<unsigned>(__cvta_generic_to_shared(s));
}
__device__ __forceinline__ void mbar_init_tx(std::uint64_t* bar, unsigned bytes) {  // one arrival, bytes in flight
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_copy(void* s, const void* g, unsigned bytes, std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(s)),
               "l"(g), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
__device__ __forceinline__ void mbar_wait0(std::uint64_t* bar) {  // phase 0 completed
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar))
        : "memory");
  } while (!done);
}

}  // namespace replayssm::kern::fast
