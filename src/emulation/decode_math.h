#pragma once
// The per-element arithmetic of every decode mode, written once and compiled for both the CPU emulation and the
// CUDA kernels (REPLAYSSM_HD), so that the two differ only where the order of a reduction differs -- and the
// kernels reproduce the emulation's reduction tree too (canonical_dot below), so in practice they agree bit for bit.
//
// Accumulation order (the contract; kernels/README.md restates it):
//  * dot products of length K (K % 4 == 0) use the "32-lane tree": lane l (0..31) owns the 4 contiguous elements
//    4l..4l+3 of every 128-wide chunk and accumulates p_l = fmaf(x_i, y_i, p_l) over them in increasing i; the 32
//    partials are then summed by a pairwise tree p_l += p_{l+16}, p_l += p_{l+8}, ..., p_0 += p_1 (a warp's xor
//    butterfly produces exactly these sums in every lane).
//  * window decays: with m records, G_{m-1} = 1, G_j = G_{j+1} * a_{j+1}, total = G_0 * a_0 (running products
//    from the newest record backwards, never quotients).
//  * window sums run over records in increasing j with one fmaf per record: acc = fmaf(G_j * d_j, w_j[r], acc)
//    starting from acc = total * (S_c x)[r].
//  * every product and sum is FP32, rounded to nearest; fmaf only where written; no contraction anywhere
//    (host: -ffp-contract=off; device: --fmad=false).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "formats/hd.h"
#include "formats/minifloat.h"

namespace replayssm::emu {

inline constexpr int kLanes = 32;

#if defined(__CUDA_ARCH__)
#define REPLAYSSM_FMA(a, b, c) __fmaf_rn((a), (b), (c))
#define REPLAYSSM_MUL(a, b) __fmul_rn((a), (b))
#define REPLAYSSM_ADD(a, b) __fadd_rn((a), (b))
#define REPLAYSSM_SUB(a, b) __fsub_rn((a), (b))
#else
#define REPLAYSSM_FMA(a, b, c) std::fmaf((a), (b), (c))
#define REPLAYSSM_MUL(a, b) ((a) * (b))
#define REPLAYSSM_ADD(a, b) ((a) + (b))
#define REPLAYSSM_SUB(a, b) ((a) - (b))
#endif

// Host reference of the 32-lane tree (the kernels use warp shuffles for the same sums).
inline float canonical_dot(const float* x, const float* y, int K) {
  float p[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    float acc = 0.0f;
    for (int base = 0; base < K; base += 4 * kLanes)
      for (int e = 0; e < 4; ++e) {
        const int i = base + 4 * l + e;
        if (i < K) acc = REPLAYSSM_FMA(x[i], y[i], acc);
      }
    p[l] = acc;
  }
  for (int off = kLanes / 2; off > 0; off /= 2)
    for (int l = 0; l < off; ++l) p[l] = REPLAYSSM_ADD(p[l], p[l + off]);
  return p[0];
}

// Window decays of m records with decays a[0..m-1]: G[j] (j < m) and the total. G must hold m floats.
REPLAYSSM_HD float window_gammas(const float* a, int m, float* G) {
  if (m <= 0) return 1.0f;
  G[m - 1] = 1.0f;
  for (int j = m - 2; j >= 0; --j) G[j] = REPLAYSSM_MUL(G[j + 1], a[j + 1]);
  return REPLAYSSM_MUL(G[0], a[0]);
}

// A record vector element as a buffer holds it: float (FP32 records), or RecordBf16 (Records::bf16: the RNE code of
// formats::bf16_encode, 2 bytes). record_load widens it to the FP32 value the products read; record_store stores an
// FP32 value in the element's format. A BF16 element round-trips to record_value(x, true) (below), so a buffer of
// either type feeds the same products with the same bits as the emulation's FP32 buffer of rounded values.
struct RecordBf16 {
  std::uint16_t bits;
};
static_assert(sizeof(RecordBf16) == 2, "RecordBf16: the 2-byte BF16 code");
REPLAYSSM_HD float record_load(float x) { return x; }
REPLAYSSM_HD float record_load(RecordBf16 x) { return formats::bf16_decode(x.bits); }
REPLAYSSM_HD void record_store(float* dst, float x) { *dst = x; }
REPLAYSSM_HD void record_store(RecordBf16* dst, float x) { dst->bits = formats::bf16_encode(x); }
// The element type of a mode's record buffers.
template <bool kBf16>
using record_elem_t = std::conditional_t<kBf16, RecordBf16, float>;

// y_r = total * Sc_x_r + sum_{j<m} (G_j * d_j) w_j[r]   (d_j = k_j . x; re-associated window product).
// w is indexed w[j * w_stride + r]; coef[j] = G_j * d_j precomputed by window_coefs.
REPLAYSSM_HD float window_sum(float total, float Sc_x_r, const float* coef, const float* w, int w_stride, int r, int m) {
  float acc = REPLAYSSM_MUL(total, Sc_x_r);
  for (int j = 0; j < m; ++j) acc = REPLAYSSM_FMA(coef[j], w[j * w_stride + r], acc);
  return acc;
}
// The same over a record buffer of element type W (RecordBf16), each w widened by record_load. (The FP32 form above
// stays a function of its own: the kernels' generated code for FP32 records is that of the plain form.)
template <class W>
REPLAYSSM_HD float window_sum(float total, float Sc_x_r, const float* coef, const W* w, int w_stride, int r, int m) {
  float acc = REPLAYSSM_MUL(total, Sc_x_r);
  for (int j = 0; j < m; ++j) acc = REPLAYSSM_FMA(coef[j], record_load(w[j * w_stride + r]), acc);
  return acc;
}

REPLAYSSM_HD void window_coefs(const float* G, const float* d, int m, float* coef) {
  for (int j = 0; j < m; ++j) coef[j] = REPLAYSSM_MUL(G[j], d[j]);
}

// GDN u from the (decayed) S_{t-1} k_t: u = beta (v - a S_{t-1} k). `ask` is already a_t S_{t-1} k_t.
REPLAYSSM_HD float gdn_u(float beta, float v, float ask) { return REPLAYSSM_MUL(beta, REPLAYSSM_SUB(v, ask)); }

// Flush / materialise one element: s = total * Sc[r][c] + sum_j (G_j w_j[r]) k_j[c].
// rowcoef[j] = G_j * w_j[r] (per row), kcol[j * k_stride] = k_j[c].
REPLAYSSM_HD float window_state_elem(float total, float sc, const float* rowcoef, const float* kcol, int k_stride, int m) {
  float acc = REPLAYSSM_MUL(total, sc);
  for (int j = 0; j < m; ++j) acc = REPLAYSSM_FMA(rowcoef[j], kcol[j * k_stride], acc);
  return acc;
}
// The same over a record buffer of element type Kc (RecordBf16), each k widened by record_load.
template <class Kc>
REPLAYSSM_HD float window_state_elem(float total, float sc, const float* rowcoef, const Kc* kcol, int k_stride, int m) {
  float acc = REPLAYSSM_MUL(total, sc);
  for (int j = 0; j < m; ++j) acc = REPLAYSSM_FMA(rowcoef[j], record_load(kcol[j * k_stride]), acc);
  return acc;
}

// window_sum for rows r = 0..V-1 at once (y[r], given Sc_x[r]); and window_state_elem for a whole row (c = 0..K-1).
// The loops are interchanged (records outer) so that rows / columns vectorise on the host; every element still sees
// exactly the operations of window_sum / window_state_elem, in the same order (same bits). Host emulation only.
inline void window_sum_rows(float total, const float* Sc_x, const float* coef, const float* w, int w_stride, int m,
                            int V, float* y) {
  for (int r = 0; r < V; ++r) y[r] = REPLAYSSM_MUL(total, Sc_x[r]);
  for (int j = 0; j < m; ++j)
    for (int r = 0; r < V; ++r) y[r] = REPLAYSSM_FMA(coef[j], w[j * w_stride + r], y[r]);
}
inline void window_state_row(float total, const float* sc_row, const float* rowcoef, const float* k, int k_stride,
                             int m, int K, float* out_row) {
  for (int c = 0; c < K; ++c) out_row[c] = REPLAYSSM_MUL(total, sc_row[c]);
  for (int j = 0; j < m; ++j)
    for (int c = 0; c < K; ++c) out_row[c] = REPLAYSSM_FMA(rowcoef[j], k[j * k_stride + c], out_row[c]);
}

// Conventional step, first half: the decayed element a * s.
REPLAYSSM_HD float conv_decay(float a, float s) { return REPLAYSSM_MUL(a, s); }
// Conventional step, second half: s' = fmaf(w_r, k_c, a s)  (w = u for GDN, v for Mamba-2).
REPLAYSSM_HD float conv_update(float w_r, float k_c, float as) { return REPLAYSSM_FMA(w_r, k_c, as); }

// A record vector's element as the buffer holds it: itself (FP32 records) or its BF16 value (RNE), widened.
REPLAYSSM_HD float record_value(float x, bool bf16) {
  return bf16 ? record_load(RecordBf16{formats::bf16_encode(x)}) : x;
}
REPLAYSSM_HD float add_skip(float o, const float* skip, int r) { return skip ? REPLAYSSM_ADD(o, skip[r]) : o; }

}  // namespace replayssm::emu
