#pragma once
// Device only: CUDA's hardware round-to-nearest-even conversions of two floats at once (cvt.rn.bf16x2.f32,
// cvt.rn.f16x2.f32, cvt.rn.satfinite.e4m3x2.f32 / e5m2x2 on sm_89+), for the formats whose RNE encode in
// minifloat.h they equal bit for bit. minifloat.h stays the definition: test_formats_gpu checks these pairs against
// it on every float32 pattern in both slots, and stochastic rounding always goes through it. Why: the software RNE
// is ~25 integer instructions per element, the hardware one instruction per pair, and the flush / conventional
// kernels encode every state element they write (kernels/PERF_NOTES.md, ninth pass).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "formats/format_id.h"

namespace replayssm::formats {

template <FormatId F>
inline constexpr bool kHwRnePair =
    F == FormatId::bf16 || F == FormatId::fp16 || F == FormatId::fp8_e4m3 || F == FormatId::fp8_e5m2;

// The RNE codes of x0 and x1 (bf16_encode, fp16_encode, e4m3_encode, e5m2_encode with Rounding::rne), each in the
// low bits of its word.
template <FormatId F>
__device__ __forceinline__ void hw_rne_encode2(float x0, float x1, std::uint32_t& c0, std::uint32_t& c1) {
  static_assert(kHwRnePair<F>, "no hardware RNE pair for this format");
  if constexpr (F == FormatId::bf16) {
    const __nv_bfloat162_raw v = __floats2bfloat162_rn(x0, x1);
    c0 = v.x, c1 = v.y;
  } else if constexpr (F == FormatId::fp16) {
    const __half2_raw v = __floats2half2_rn(x0, x1);
    c0 = v.x, c1 = v.y;
  } else {
    constexpr __nv_fp8_interpretation_t kind = F == FormatId::fp8_e4m3 ? __NV_E4M3 : __NV_E5M2;
    const std::uint32_t v = __nv_cvt_float2_to_fp8x2(make_float2(x0, x1), __NV_SATFINITE, kind);
    c0 = v & 0xFFu, c1 = (v >> 8) & 0xFFu;
  }
}

}  // namespace replayssm::formats
