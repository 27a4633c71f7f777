#pragma once
// CUDA's own conversions (cuda_bf16.h, cuda_fp16.h, cuda_fp8.h, cuda_fp4.h), called on the host (cuda_oracle.cu)
// or on the device (gpu_sweep.cu). Kept out of the Catch TUs so catch.hpp never goes through nvcc.
#include <cstddef>
#include <cstdint>
#include <string>

namespace replayssm::formats::cuda_oracle {

uint16_t bf16_rn(float x);
uint16_t fp16_rn(float x);
uint8_t e4m3_satfinite(float x);
uint8_t e5m2_satfinite(float x);
uint8_t e2m1_rn(float x);  // __nv_fp4_e2m1(x).__x
float e4m3_decode(uint8_t c);
float e5m2_decode(uint8_t c);
float e2m1_decode(uint8_t c);
float e8m0_decode(uint8_t c);

// GPU sweep (gpu_sweep.cu). Returns false with a reason when no device is usable.
bool device_available(std::string& why);
// For every pattern in `bits`: out[i*kCols + j] = the code of column j, computed on the device:
// 0 bf16 (hw) 1 fp16 (hw) 2 e4m3 (hw satfinite) 3 e5m2 (hw satfinite) 4 e2m1 (__nv_fp4_e2m1)
// 5..9 the same five through src/formats compiled for the device, 10..14 the five with SR (bits sr_bits(7,1,0,i,3))
inline constexpr int kCols = 15;
void device_sweep(const uint32_t* bits, std::size_t n, uint32_t* out);
// The kernels' hardware RNE pairs (src/formats/hw_convert.cuh: bf16, fp16, e4m3, e5m2 in this order) on every float32
// pattern in both slots against minifloat.h's encode on the device: mismatches and the smallest bad pattern
// (0xFFFFFFFF where none) per format.
inline constexpr int kHwPairFormats = 4;
void device_hw_rne_pairs(unsigned long long (&bad)[kHwPairFormats], uint32_t (&first_bad)[kHwPairFormats]);
// The kernels' hardware E4M3 decode of four codes times a scale (hw_convert.cuh) on every 32-bit word at six scales
// against mul_rn(e4m3_decode(code), scale) on the device: wrong words (values, or refusals other than exactly the words
// with a NaN code) and the smallest (0xFFFFFFFF where none).
void device_hw_e4m3_decode(unsigned long long& bad, uint32_t& first_bad);
// Every (format, scaling, rounding) head-state codec run on the device: codes, scales and decoded floats, for
// H heads of [V][K] (one thread per head), in the order of a host loop over kAllFormats x kAllScalings x rounding.
void device_state_codecs(const float* x, int H, int V, int K, uint8_t* codes, std::size_t code_stride,
                         uint8_t* scales, std::size_t scale_stride, float* out);

}  // namespace replayssm::formats::cuda_oracle
