#pragma once
// The bench harness's device helpers (kernels/bench/bench_harness.cu): CUDA error checks, input fills, the copy kernel
// of the roofline, the non-finite counter and the device arena of one state / input set.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "emulation/decode_math.h"

namespace replayssm::kbench {

inline void ck(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw std::runtime_error("cuda: " + what + ": " + cudaGetErrorString(e));
}

// ---------------------------------------------------------------------------------------------------------------
// Device helpers: fills (counter hash, no zeros), the copy kernel, a non-finite counter.

__device__ inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// T: float, or a record buffer's element type (emu::RecordBf16: the value stored in its format).
template <class T>
__global__ void fill_uniform(T* p, std::size_t n, float lo, float hi, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t r = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
    const float u = float(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    emu::record_store(p + i, lo + (hi - lo) * u);
  }
}

// 16-byte copy, four independent loads in flight per thread before the stores.
__global__ void __launch_bounds__(256) copy_v4(const float4* __restrict__ src, float4* __restrict__ dst, std::size_t n4) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    const float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n4; i += stride) dst[i] = src[i];
}

__global__ void count_nonfinite(const float* p, std::size_t n, unsigned long long* out) {
  unsigned long long c = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    if (!isfinite(p[i])) ++c;
  if (c) atomicAdd(out, c);
}

struct Arena {  // one cudaMalloc per state/input set, carved into 256-byte aligned pieces
  std::uint8_t* base = nullptr;
  std::size_t size = 0, used = 0;
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&& o) noexcept : base(o.base), size(o.size), used(o.used) { o.base = nullptr; }
  ~Arena() { cudaFree(base); }
  static std::size_t round(std::size_t b) { return (b + 255) / 256 * 256; }
  void alloc(std::size_t bytes, const std::string& what) {
    size = bytes;
    ck(cudaMalloc(&base, bytes), "cudaMalloc " + std::to_string(bytes) + " B (" + what + ")");
  }
  template <class T>
  T* take(std::size_t count) {
    if (count == 0) return nullptr;
    T* p = reinterpret_cast<T*>(base + used);
    used += round(count * sizeof(T));
    if (used > size) throw std::logic_error("bench arena overflow");
    return p;
  }
};

}  // namespace replayssm::kbench
