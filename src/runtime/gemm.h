#pragma once
// Y = X W^T in FP64 for the runtime's projections: X [m, k], W [n, k], Y [m, n], all row-major.
// Every element is one sequential fused multiply-add chain over k (std::fma semantics), whatever m, n, the tiling, the
// thread count or the code path (AVX2+FMA kernel when the CPU has it, scalar std::fma otherwise), so results are
// bit-identical across thread counts, machines and sequence lengths (a prefix gets exactly the longer run's values).
#include <cstddef>

namespace replayssm::runtime {

void gemm_nt(const double* X, const double* W, double* Y, std::size_t m, std::size_t n, std::size_t k, int threads);

// Which path gemm_nt takes on this CPU ("avx2-fma" or "scalar-fma").
const char* gemm_path();

}  // namespace replayssm::runtime
