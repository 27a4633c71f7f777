// Device side of test_formats_gpu: CUDA's device conversions (hardware cvt on sm_89+ for bf16/fp16/fp8; the
// software path for fp4 on sm_90) and src/formats compiled for the device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda_oracle.h"
#include "formats/hw_convert.cuh"
#include "formats/state_codec.h"
#include "state_combos.h"

namespace replayssm::formats::cuda_oracle {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

__global__ void sweep_kernel(const uint32_t* bits, std::size_t n, uint32_t* out) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = __uint_as_float(bits[i]);
  uint32_t* o = out + i * kCols;
  o[0] = static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x;
  o[1] = static_cast<__half_raw>(__float2half_rn(x)).x;
  o[2] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  o[3] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
  o[4] = __nv_fp4_e2m1(x).__x;
  o[5] = bf16_encode(x);
  o[6] = fp16_encode(x);
  o[7] = e4m3_encode(x);
  o[8] = e5m2_encode(x);
  o[9] = e2m1_encode(x);
  const uint32_t rb = sr_bits(7, 1, 0, static_cast<uint32_t>(i), 3);
  o[10] = bf16_encode(x, Rounding::sr, rb);
  o[11] = fp16_encode(x, Rounding::sr, rb);
  o[12] = e4m3_encode(x, Rounding::sr, rb);
  o[13] = e5m2_encode(x, Rounding::sr, rb);
  o[14] = e2m1_encode(x, Rounding::sr, rb);
}

template <FormatId F>
__device__ void run_one(const float* x, int V, int K, const CodecParams& p, uint8_t* codes, uint8_t* scales,
                        float* out) {
  StateCodec<F>::encode_state(x, V, K, p, codes, scales);
  // a stateful codec stores x a second time in place, after the first store (int8_ef: its residual fed back)
  if constexpr (StateCodec<F>::kStateful) encode_state_after<StateCodec<F>>(x, V, K, p, codes, scales, codes, scales);
  StateCodec<F>::decode_state(codes, scales, V, K, p, out);
}

__global__ void state_kernel(const float* x, int H, int V, int K, uint8_t* codes, std::size_t code_stride,
                             uint8_t* scales, std::size_t scale_stride, float* out) {
  const int combo = blockIdx.x;
  const int h = threadIdx.x;
  if (h >= H) return;
  FormatId f = FormatId::fp32;
  CodecParams p;
  if (!combo_at(combo, f, p.scaling, p.rounding)) return;
  p.seed = 0x5EEDull;
  p.head = static_cast<uint32_t>(h);
  p.step = 11;
  const std::size_t slot = static_cast<std::size_t>(combo) * H + h;
  const float* xh = x + static_cast<std::size_t>(h) * V * K;
  uint8_t* c = codes + slot * code_stride;
  uint8_t* s = scales + slot * scale_stride;
  float* o = out + slot * V * K;
  switch (f) {
    case FormatId::fp32: run_one<FormatId::fp32>(xh, V, K, p, c, s, o); break;
    case FormatId::bf16: run_one<FormatId::bf16>(xh, V, K, p, c, s, o); break;
    case FormatId::bf16x2: run_one<FormatId::bf16x2>(xh, V, K, p, c, s, o); break;
    case FormatId::fp16: run_one<FormatId::fp16>(xh, V, K, p, c, s, o); break;
    case FormatId::fp8_e4m3: run_one<FormatId::fp8_e4m3>(xh, V, K, p, c, s, o); break;
    case FormatId::fp8_e5m2: run_one<FormatId::fp8_e5m2>(xh, V, K, p, c, s, o); break;
    case FormatId::int8: run_one<FormatId::int8>(xh, V, K, p, c, s, o); break;
    case FormatId::int8_ef: run_one<FormatId::int8_ef>(xh, V, K, p, c, s, o); break;
    case FormatId::int16: run_one<FormatId::int16>(xh, V, K, p, c, s, o); break;
    case FormatId::nvfp4: run_one<FormatId::nvfp4>(xh, V, K, p, c, s, o); break;
    case FormatId::mxfp8: run_one<FormatId::mxfp8>(xh, V, K, p, c, s, o); break;
    case FormatId::mxfp4: run_one<FormatId::mxfp4>(xh, V, K, p, c, s, o); break;
  }
}

// Every float32 pattern u through the kernels' hardware RNE pairs (hw_convert.cuh), in slot 0 and in slot 1, against
// the software encode of minifloat.h on the device: per format, the mismatch count and the smallest bad pattern.
template <FormatId F>
__device__ void pair_check(float x0, float x1, uint32_t u0, uint32_t u1, uint32_t sw0, uint32_t sw1, int f,
                           unsigned long long* bad, uint32_t* first) {
  uint32_t a, b, c, d;
  hw_rne_encode2<F>(x0, x1, a, b);
  hw_rne_encode2<F>(x1, x0, c, d);
  const unsigned nb = (a != sw0) + (d != sw0) + (b != sw1) + (c != sw1);
  if (nb) {
    atomicAdd(&bad[f], static_cast<unsigned long long>(nb));
    atomicMin(&first[f], (a != sw0 || d != sw0) ? u0 : u1);
  }
}
__global__ void hw_pair_kernel(unsigned long long* bad, uint32_t* first) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (std::size_t{1} << 31);
       i += stride) {
    const uint32_t u0 = static_cast<uint32_t>(2 * i), u1 = u0 + 1u;
    const float x0 = __uint_as_float(u0), x1 = __uint_as_float(u1);
    pair_check<FormatId::bf16>(x0, x1, u0, u1, bf16_encode(x0), bf16_encode(x1), 0, bad, first);
    pair_check<FormatId::fp16>(x0, x1, u0, u1, fp16_encode(x0), fp16_encode(x1), 1, bad, first);
    pair_check<FormatId::fp8_e4m3>(x0, x1, u0, u1, e4m3_encode(x0), e4m3_encode(x1), 2, bad, first);
    pair_check<FormatId::fp8_e5m2>(x0, x1, u0, u1, e5m2_encode(x0), e5m2_encode(x1), 3, bad, first);
  }
}

// Every word of four E4M3 codes through the kernels' hardware decodes at each scale of kDecodeScales, against
// mul_rn(e4m3_decode(code), s) on the device: hw_e4m3_decode4_scaled (wrong values, a refusal of a word without a NaN
// code, an acceptance of one with) and hw_e4m3_decode4_scaled_arith (each non-NaN code's bits; a NaN for each NaN
// code) count as bad, with the smallest bad word.
__constant__ float kDecodeScales[] = {1.0f, 0.37f, -2.5f, 0x1p-140f, 3.0e5f, 1.0e38f};
constexpr int kNumDecodeScales = sizeof(kDecodeScales) / sizeof(float);
__global__ void hw_decode_kernel(unsigned long long* bad, uint32_t* first) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (std::size_t{1} << 32);
       i += stride) {
    const uint32_t w = static_cast<uint32_t>(i);
    bool nan_code = false;
    for (int e = 0; e < 4; ++e) nan_code |= ((w >> (8 * e)) & 0x7Fu) == 0x7Fu;
    for (int k = 0; k < kNumDecodeScales; ++k) {
      const float s = kDecodeScales[k];
      float out[4];
      const bool ok = hw_e4m3_decode4_scaled(w, s, out);
      bool wrong = ok == nan_code;
      float arith[4];
      hw_e4m3_decode4_scaled_arith(w, s, arith);
      for (int e = 0; e < 4; ++e) {
        const uint8_t c = static_cast<uint8_t>(w >> (8 * e));
        const uint32_t ref = __float_as_uint(mul_rn(formats::e4m3_decode(c), s));
        if (ok && !nan_code) wrong |= __float_as_uint(out[e]) != ref;
        wrong |= (c & 0x7Fu) == 0x7Fu ? !isnan(arith[e]) : __float_as_uint(arith[e]) != ref;
      }
      if (wrong) {
        atomicAdd(bad, 1ull);
        atomicMin(first, w);
      }
    }
  }
}

}  // namespace

namespace {
// Runs a counting kernel (bad[n] from 0, first[n] from 0xFFFFFFFF, grid-strided over all inputs) and copies both back.
void run_counting(void (*kernel)(unsigned long long*, uint32_t*), const char* name, int n, unsigned long long* bad,
                  uint32_t* first_bad) {
  unsigned long long* dbad = nullptr;
  uint32_t* dfirst = nullptr;
  check(cudaMalloc(&dbad, n * sizeof *bad), "cudaMalloc");
  check(cudaMalloc(&dfirst, n * sizeof *first_bad), "cudaMalloc");
  check(cudaMemset(dbad, 0, n * sizeof *bad), "cudaMemset");
  check(cudaMemset(dfirst, 0xFF, n * sizeof *first_bad), "cudaMemset");
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  kernel<<<sms * 8, 256>>>(dbad, dfirst);
  check(cudaGetLastError(), name);
  check(cudaMemcpy(bad, dbad, n * sizeof *bad, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(first_bad, dfirst, n * sizeof *first_bad, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(dbad);
  cudaFree(dfirst);
}
}  // namespace

void device_hw_e4m3_decode(unsigned long long& bad, uint32_t& first_bad) {
  run_counting(hw_decode_kernel, "hw_decode_kernel", 1, &bad, &first_bad);
}

void device_hw_rne_pairs(unsigned long long (&bad)[kHwPairFormats], uint32_t (&first_bad)[kHwPairFormats]) {
  run_counting(hw_pair_kernel, "hw_pair_kernel", kHwPairFormats, bad, first_bad);
}

bool device_available(std::string& why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return false;
  }
  if (n == 0) {
    why = "no CUDA device";
    return false;
  }
  return true;
}

void device_sweep(const uint32_t* bits, std::size_t n, uint32_t* out) {
  uint32_t* dbits = nullptr;
  uint32_t* dout = nullptr;
  check(cudaMalloc(&dbits, n * sizeof(uint32_t)), "cudaMalloc");
  check(cudaMalloc(&dout, n * kCols * sizeof(uint32_t)), "cudaMalloc");
  check(cudaMemcpy(dbits, bits, n * sizeof(uint32_t), cudaMemcpyHostToDevice), "cudaMemcpy");
  sweep_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(dbits, n, dout);
  check(cudaGetLastError(), "sweep_kernel");
  check(cudaMemcpy(out, dout, n * kCols * sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(dbits);
  cudaFree(dout);
}

void device_state_codecs(const float* x, int H, int V, int K, uint8_t* codes, std::size_t code_stride,
                         uint8_t* scales, std::size_t scale_stride, float* out) {
  const int nc = combo_count();
  const std::size_t nx = static_cast<std::size_t>(H) * V * K;
  const std::size_t slots = static_cast<std::size_t>(nc) * H;
  float* dx = nullptr;
  float* dout = nullptr;
  uint8_t* dcodes = nullptr;
  uint8_t* dscales = nullptr;
  check(cudaMalloc(&dx, nx * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&dout, slots * V * K * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&dcodes, slots * code_stride), "cudaMalloc");
  check(cudaMalloc(&dscales, slots * scale_stride), "cudaMalloc");
  check(cudaMemset(dcodes, 0, slots * code_stride), "cudaMemset");
  check(cudaMemset(dscales, 0, slots * scale_stride), "cudaMemset");
  check(cudaMemcpy(dx, x, nx * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  state_kernel<<<nc, H>>>(dx, H, V, K, dcodes, code_stride, dscales, scale_stride, dout);
  check(cudaGetLastError(), "state_kernel");
  check(cudaMemcpy(codes, dcodes, slots * code_stride, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(scales, dscales, slots * scale_stride, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(out, dout, slots * V * K * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(dx);
  cudaFree(dout);
  cudaFree(dcodes);
  cudaFree(dscales);
}

}  // namespace replayssm::formats::cuda_oracle
