#pragma once
// The record vectors' element type in the tuned kernels (KParams::records_of): FP32, or BF16 codes under
// Records::bf16. Part of fast_kernel.cuh.
//
// The kernels take the record format as a traits type on their codec parameter: a codec C keeps FP32 records, and
// Bf16Records<C> (C with every member of C) keeps BF16 ones, so that the FP32 records' instantiations are the same
// templates with the same arguments (their names and code unchanged). With BF16 records the window is staged in
// shared memory as FP32, each element widened from its BF16 code (emu::record_load), and every record vector an op
// appends (the token's k, GDN's u, Mamba-2's w = v) is rounded once (emu::record_value's RNE) before anything reads
// it, so that the products read exactly the emulation's values and the math after the staging is the FP32 records'.
#include <cstdint>
#include <type_traits>

#include "emulation/decode_math.h"
#include "kernels/common/fast_rows.cuh"

namespace replayssm::kern::fast {

template <class C>
struct Bf16Records : C {};
template <class C>
struct RecordsOf {
  using type = float;
};
template <class C>
struct RecordsOf<Bf16Records<C>> {
  using type = emu::RecordBf16;
};
template <class C>
using record_t = typename RecordsOf<C>::type;
template <class C>
inline constexpr bool kBf16Rec = !std::is_same_v<record_t<C>, float>;

// Elements i..i+3 of a record buffer in global memory (i % 4 == 0; FP32: 16 bytes, BF16: 8 bytes), widened.
__device__ __forceinline__ F4 rec_ld4(const float* g) { return ld4(g); }
__device__ __forceinline__ F4 widen4(uint2 v) {  // four BF16 codes (low half first), emu::record_load each
  return F4{{emu::record_load(emu::RecordBf16{std::uint16_t(v.x & 0xFFFFu)}),
             emu::record_load(emu::RecordBf16{std::uint16_t(v.x >> 16)}),
             emu::record_load(emu::RecordBf16{std::uint16_t(v.y & 0xFFFFu)}),
             emu::record_load(emu::RecordBf16{std::uint16_t(v.y >> 16)})}};
}
__device__ __forceinline__ F4 rec_ld4(const emu::RecordBf16* g) { return widen4(*reinterpret_cast<const uint2*>(g)); }
// Four values into a record buffer (emu::record_store each).
__device__ __forceinline__ void rec_st4(float* g, const F4& a) { st4(g, a); }
__device__ __forceinline__ void rec_st4(emu::RecordBf16* g, const F4& a) {
  emu::RecordBf16 c[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) emu::record_store(c + e, a.x[e]);
  *reinterpret_cast<uint2*>(g) = make_uint2(unsigned(c[0].bits) | (unsigned(c[1].bits) << 16),
                                            unsigned(c[2].bits) | (unsigned(c[3].bits) << 16));
}
// A value as a record of element type R holds it (emu::record_value).
template <class R>
__device__ __forceinline__ float rec_round(float x) {
  if constexpr (std::is_same_v<R, float>) {
    return x;
  } else {
    R c;
    emu::record_store(&c, x);
    return emu::record_load(c);
  }
}
template <class R>
__device__ __forceinline__ F4 rec_round4(const F4& a) {
  return F4{{rec_round<R>(a.x[0]), rec_round<R>(a.x[1]), rec_round<R>(a.x[2]), rec_round<R>(a.x[3])}};
}

// The step's window of BF16 records, staged by bulk copies as codes in the first half of each record vector's FP32
// region and widened there in place: thread t holds groups t + i kThreads (i < kBf16WidenF4) of four codes. The
// codes of group x sit at bytes [8x, 8x + 8), its floats go to [16x, 16x + 16), which hold the codes of groups 2x and
// 2x + 1 >= x: so every thread loads all its codes, a barrier, then every thread stores (load / store around one
// __syncthreads), and no store overwrites codes that a thread has yet to read.
inline constexpr int kBf16WidenF4 = 2;
struct Bf16Widen {
  uint2 k[kBf16WidenF4], w[kBf16WidenF4];
  __device__ __forceinline__ void load(const float* sk, int nk4, const float* sw, int nw4, int tid) {
#pragma unroll
    for (int i = 0; i < kBf16WidenF4; ++i) {
      const int x = tid + i * kThreads;
      if (x < nk4) k[i] = reinterpret_cast<const uint2*>(sk)[x];
      if (x < nw4) w[i] = reinterpret_cast<const uint2*>(sw)[x];
    }
  }
  __device__ __forceinline__ void store(float* sk, int nk4, float* sw, int nw4, int tid) const {
#pragma unroll
    for (int i = 0; i < kBf16WidenF4; ++i) {
      const int x = tid + i * kThreads;
      if (x < nk4) st4(sk + 4 * x, widen4(k[i]));
      if (x < nw4) st4(sw + 4 * x, widen4(w[i]));
    }
  }
};

}  // namespace replayssm::kern::fast
