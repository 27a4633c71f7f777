#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include "cuda_oracle.h"

namespace replayssm::formats::cuda_oracle {

uint16_t bf16_rn(float x) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x; }
uint16_t fp16_rn(float x) { return static_cast<__half_raw>(__float2half_rn(x)).x; }
uint8_t e4m3_satfinite(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
uint8_t e5m2_satfinite(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); }
uint8_t e2m1_rn(float x) { return __nv_fp4_e2m1(x).__x; }
float e4m3_decode(uint8_t c) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3))); }
float e5m2_decode(uint8_t c) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E5M2))); }
float e2m1_decode(uint8_t c) { return __half2float(__half(__nv_cvt_fp4_to_halfraw(c, __NV_E2M1))); }
float e8m0_decode(uint8_t c) { return __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(c))); }

}  // namespace replayssm::formats::cuda_oracle
