#pragma once
// Device only: CUDA's hardware conversions where they equal minifloat.h bit for bit, for the kernels' hot loops.
// - RNE encode of two floats at once (cvt.rn.bf16x2.f32, cvt.rn.f16x2.f32, cvt.rn.satfinite.e4m3x2.f32 / e5m2x2 on
//   sm_89+): the software RNE is ~25 integer instructions per element, the hardware one instruction per pair, and the
//   flush / conventional kernels encode every state element they write.
// - E4M3 decode of a word of four codes (cvt.rn.f16x2.e4m3x2: every E4M3 value is an FP16 value, so the conversion
//   and FP16 -> FP32 are exact) times a scale.
// minifloat.h stays the definition: test_formats_gpu checks both against it on every float32 pattern / every word
// of four codes, and stochastic rounding always goes through it (kernels/PERF_NOTES.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "formats/format_id.h"
#include "formats/minifloat.h"

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

// The four codes of w (code e in byte e) times s: the bits of mul_rn(e4m3_decode(c_e), s) for every non-NaN code; a
// NaN code gives a NaN (the hardware's, not necessarily the codec's bits). For values that only feed arithmetic, where
// any NaN operand gives the canonical NaN: the non-flush dots of replay_head and replay_group
// (test_formats_gpu checks both decodes on every word).
__device__ __forceinline__ void hw_e4m3_decode4_scaled_arith(std::uint32_t w, float s, float (&out)[4]) {
  const __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w & 0xFFFFu), __NV_E4M3);
  const __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w >> 16), __NV_E4M3);
  out[0] = __fmul_rn(__half2float(__ushort_as_half(lo.x)), s);
  out[1] = __fmul_rn(__half2float(__ushort_as_half(lo.y)), s);
  out[2] = __fmul_rn(__half2float(__ushort_as_half(hi.x)), s);
  out[3] = __fmul_rn(__half2float(__ushort_as_half(hi.y)), s);
}
// The bits of mul_rn(e4m3_decode(c_e), s) for the four codes of w, as e4m3_decode4_scaled, for any s; false (out
// unspecified) where a code is NaN (0x7F / 0xFF), whose canonical NaN the caller's per-code path gives.
__device__ __forceinline__ bool hw_e4m3_decode4_scaled(std::uint32_t w, float s, float (&out)[4]) {
  if (e4m3_word_has_nan(w)) return false;
  hw_e4m3_decode4_scaled_arith(w, s, out);
  return true;
}

}  // namespace replayssm::formats
