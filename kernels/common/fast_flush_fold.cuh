#pragma once
// The folded step flush (replay_lean's kFold; kernels/PERF_NOTES.md): the policy, scaling and rounding as constants
// with the 4 rows of a warp sharing their trees, amax reduction and scale divisions, and u and the coefficient rows
// once per row of the CTA before the slices. Part of fast_kernel.cuh, included by
// fast_replay_lean.cuh.
#include "kernels/common/fast_records.cuh"
#include "kernels/common/fast_rows.cuh"

namespace replayssm::kern::fast {

// The encode of a warp's 4 rows r .. r + 3 (lane's 4 elements of each, K = kK per row): row-scaled 8-bit codes rounded
// to nearest even, or FP32. encode_row's values, computed once per 4 rows where it repeats them per row:
// - the 4 row amaxes by one reduce-scatter (bfly_sum4's pattern with the maximum: 6 shuffles, not 20). The maximum of
//   magnitudes with NaN ignored is order-free, so every order gives encode_row's value;
// - lane 8 i .. 8 i + 7 then hold row i's amax, so one scale_from_amax and one reciprocal per lane serve the 4 rows
//   (encode_row: two divisions per row), and the reciprocals reach the other lanes by shuffles.
// The scale of row r + i is stored by lane 8 i (encode_row: lane 0 of row r's call), the codes as encode_row stores
// them. Where a lane is inactive (4 lane >= kK) its elements count as 0, as in encode_row.
template <class C, int kK>
__device__ __forceinline__ void encode_rows4(const F4 (&x)[kRPW], std::uint8_t* codes, float* scales, int r, int lane,
                                             bool act) {
  static_assert(kRPW == 4, "encode_rows4: the reduce-scatter serves 4 rows");
  if constexpr (C::kBits == 32) {  // FP32: the bits (StateCodec<fp32>::encode), no scale
#pragma unroll
    for (int i = 0; i < kRPW; ++i)
      if (act) st4(reinterpret_cast<float*>(codes) + std::size_t(r + i) * kK + 4 * lane, x[i]);
  } else {
    static_assert(C::kBits == 8 && C::kBlock != 0 && formats::kHwRnePair<C::kFormat>,
                  "encode_rows4: row-scaled 8-bit minifloat codes with the hardware RNE pair");
    float a[kRPW];
#pragma unroll
    for (int i = 0; i < kRPW; ++i) {
      a[i] = 0.0f;
      if (act) {
#pragma unroll
        for (int e = 0; e < 4; ++e) a[i] = formats::amax_ignore_nan(a[i], x[i].x[e]);
      }
    }
    const bool h16 = (lane & 16) != 0, h8 = (lane & 8) != 0;
    float k0 = h16 ? a[2] : a[0], k1 = h16 ? a[3] : a[1];
    const float s0 = h16 ? a[0] : a[2], s1 = h16 ? a[1] : a[3];
    k0 = formats::amax_ignore_nan(k0, __shfl_xor_sync(0xFFFFFFFFu, s0, 16));
    k1 = formats::amax_ignore_nan(k1, __shfl_xor_sync(0xFFFFFFFFu, s1, 16));
    float k = h8 ? k1 : k0;
    const float s = h8 ? k0 : k1;
    k = formats::amax_ignore_nan(k, __shfl_xor_sync(0xFFFFFFFFu, s, 8));
#pragma unroll
    for (int off = 4; off > 0; off /= 2) k = formats::amax_ignore_nan(k, __shfl_xor_sync(0xFFFFFFFFu, k, off));
    const float scale = C::scale_from_amax(k);  // of row r + lane / 8
    const float inv = formats::div_rn(1.0f, scale);
    if ((lane & 7) == 0) scales[r + (lane >> 3)] = scale;
#pragma unroll
    for (int i = 0; i < kRPW; ++i) {
      const float iv = __shfl_sync(0xFFFFFFFFu, inv, 8 * i);
      if (act) {
        std::uint32_t c[4];
        formats::hw_rne_encode2<C::kFormat>(formats::mul_rn(x[i].x[0], iv), formats::mul_rn(x[i].x[1], iv), c[0], c[1]);
        formats::hw_rne_encode2<C::kFormat>(formats::mul_rn(x[i].x[2], iv), formats::mul_rn(x[i].x[3], iv), c[2], c[3]);
        store_codes<8>(codes, std::size_t(r + i) * kK + 4 * lane, c);
      }
    }
  }
}

// The folded step flush's per-row work before the slices, once per CTA instead of once per warp and slice.
// 1. GDN: S_c k_t of each row (the LP rows decoded, bfly_sum4's trees: the bits of dot4's bfly_sum) times total, into
//    the appended record's w slot, slice by slice (raw0: slice 0's rows, loaded with the window). Loading every
//    slice's rows at once spills and measures slower (+4%), and so does requesting the later rows into L2 at the
//    flush's start (kernels/PERF_NOTES.md).
// 2. One thread per row: GDN's u (emu::window_sum over the n old records in order, emu::gdn_u) into that slot and the
//    record (Mamba-2's appended w = v was staged there), then the coefficient rows: w_j[r] becomes G_j w_j[r] for every
//    j <= n (the multiplication the generic body makes per warp and slice), so the slices only run the FFMA chains.
//    Under BF16 records (fast_records.cuh) u is rounded to its record value first, which the output and the state read.
// Block-wide: every thread of the CTA calls it (two barriers).
template <class C, bool kGdn, int kK, int kV>
__device__ __forceinline__ void flush_prep_folded(const KParams& p, const RawRow<C> (&raw0)[kRPW],
                                                  const std::uint8_t* codes, const std::uint8_t* scales, int ns, int r0,
                                                  int rr0, int RS, float tot, int n, const float* sK, const float* sB,
                                                  const float* sVt, float* sW, const float* sGd, const float* sCU,
                                                  int hh, int tid, int lane, bool act) {
  float* wn = sW + n * RS;  // the appended record's row slots
  if constexpr (kGdn) {
    const F4 kk = act ? ld4(sK + n * kK + 4 * lane) : F4{{0, 0, 0, 0}};
    const int g = lane >> 3;
    auto dots = [&](int s, const RawRow<C> (&raw)[kRPW]) {
      F4 S[kRPW];
#pragma unroll
      for (int i = 0; i < kRPW; ++i) S[i] = act ? decode_raw<C, true>(p, raw[i]) : F4{{0, 0, 0, 0}};
      const float d = bfly_sum4(part4(S[0], kk, act), part4(S[1], kk, act), part4(S[2], kk, act), part4(S[3], kk, act),
                                lane);
      if ((lane & 7) == 0) wn[s * kRows + rr0 + g] = formats::mul_rn(tot, d);
    };
    dots(0, raw0);
    for (int s = 1; s < ns; ++s) {
      RawRow<C> raw[kRPW];
#pragma unroll
      for (int i = 0; i < kRPW; ++i)
        if (act) load_raw<C, kK>(p, codes, scales, r0 + s * kRows + rr0 + i, lane, raw[i]);
      dots(s, raw);
    }
  }
  __syncthreads();
  for (int r = tid; r < RS; r += kThreads) {
    float w = wn[r];
    if constexpr (kGdn) {
#pragma unroll 4
      for (int j = 0; j < n; ++j) w = __fmaf_rn(sCU[j], sW[j * RS + r], w);
      w = emu::gdn_u(sB[n], sVt[r], w);
      if constexpr (kBf16Rec<C>) w = rec_round<record_t<C>>(w);
    }
    if constexpr (kBf16Rec<C>)
      emu::record_store(records_of<record_t<C>>(p.rw) + (std::size_t(hh) * p.cap + n) * kV + r0 + r, w);
    else
      p.rw[(std::size_t(hh) * p.cap + n) * kV + r0 + r] = w;
#pragma unroll 4
    for (int j = 0; j < n; ++j) sW[j * RS + r] = formats::mul_rn(sGd[j], sW[j * RS + r]);
    wn[r] = formats::mul_rn(sGd[n], w);
  }
  __syncthreads();
}

// One slice's rows of a warp in the folded step flush, after flush_prep_folded: the materialised rows
// N = total S + sum_{j <= n} (G_j w_j[r]) k_j (the 4 rows advance together through the records, each element's chain
// as the generic body's), the output N q_t (+ skip), the HP rows (split) and the encode. S: the decoded LP rows
// (replay-shared: the state), Sh: the HP rows (split: the state). The output's trees run for the 4 rows at once
// (bfly_sum4), so lane 8 i stores row rs + i's output (the generic body: lane 0 stores the 4 rows' as one vector).
template <class C, bool kSplit, int kK, int kV>
__device__ __forceinline__ void flush_rows_folded(const KParams& p, const F4 (&S)[kRPW], const F4 (&Sh)[kRPW],
                                                  float tot, int n, int rs, int ro, int RS, const float* sK,
                                                  const float* sQ, const float* sRc, const float* sSk, int hh, int b,
                                                  int h, int lane, bool act) {
  F4 N[kRPW];
#pragma unroll
  for (int i = 0; i < kRPW; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) N[i].x[e] = formats::mul_rn(tot, kSplit ? Sh[i].x[e] : S[i].x[e]);
  for (int j = 0; j <= n; ++j) {
    const F4 rc = ld4(sRc + j * RS + ro);  // G_j w_j[r] of the warp's 4 rows (flush_prep_folded)
    const F4 kj = act ? ld4(sK + j * kK + 4 * lane) : F4{{0, 0, 0, 0}};
#pragma unroll
    for (int i = 0; i < kRPW; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) N[i].x[e] = __fmaf_rn(rc.x[i], kj.x[e], N[i].x[e]);
  }
  const F4 qq = act ? ld4(sQ + 4 * lane) : F4{{0, 0, 0, 0}};
  float y = bfly_sum4(part4(N[0], qq, act), part4(N[1], qq, act), part4(N[2], qq, act), part4(N[3], qq, act), lane);
  if constexpr (kSplit) {
#pragma unroll
    for (int i = 0; i < kRPW; ++i)
      if (act) st4(p.hp + std::size_t(hh) * kV * kK + std::size_t(rs + i) * kK + 4 * lane, N[i]);
  }
  encode_rows4<C, kK>(N, p.codes + std::size_t(hh) * p.code_bytes,
                      reinterpret_cast<float*>(p.scales + std::size_t(hh) * p.scale_bytes), rs, lane, act);
  if (p.skip) y = __fadd_rn(y, sSk[ro + (lane >> 3)]);  // emu::add_skip
  if ((lane & 7) == 0) p.o[(std::size_t(b) * p.T * p.H + h) * kV + rs + (lane >> 3)] = y;
}

}  // namespace replayssm::kern::fast
