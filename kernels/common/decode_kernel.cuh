#pragma once
// The decode kernel: one CTA per (sequence, head), 256 threads; a warp owns a state row at a time, a lane owns the
// 4-element chunks 4l..4l+3 of every 128 columns (the 32-lane tree of emulation/decode_math.h, which the xor
// butterfly reproduces exactly). The checkpoint / state is staged in shared memory as FP32. Every per-element
// formula is the emulation's (decode_math.h), so the CUDA result equals the emulation's bit for bit.
// Codecs: unscaled formats (fp32, bf16, fp16) encode/decode in parallel, element by element; scaled formats decode a
// row per thread (StateCodec::decode_rows) and encode a row per thread where every scale group lies in one row
// (encode_rows; NVFP4 after the head's amax by a block reduction), else the shared encode_state from one thread
// (head, tile, column scaling); the stateful int8_ef its encode_state_after with the stored state the store replaces.
#include <cuda_runtime.h>

#include "emulation/decode_math.h"
#include "formats/state_codec.h"
#include "kernels/common/decode_kernel.h"

namespace replayssm::kern {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;

// x, y: float, or a record buffer's element type (widened by emu::record_load).
template <class X, class Y>
__device__ inline float warp_dot(const X* x, const Y* y, int K, int lane) {
  float acc = 0.0f;
  for (int base = 0; base < K; base += 128)
    for (int e = 0; e < 4; ++e) {
      const int i = base + 4 * lane + e;
      if (i < K) acc = __fmaf_rn(emu::record_load(x[i]), emu::record_load(y[i]), acc);
    }
  for (int off = 16; off > 0; off /= 2) acc = __fadd_rn(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, off));
  return acc;
}

// R: the record vectors' element type (float, or emu::RecordBf16 under Records::bf16; KParams::rk).
template <class C, bool kGdn, class R>
struct HeadCtx {
  const KParams& p;
  int b, h, hh, tid, lane, warp;
  float *Sout, *Srec, *G, *d, *coef, *total;
  std::size_t VK;

  __device__ formats::CodecParams cparams(std::uint32_t step) const {
    return formats::CodecParams{p.scaling, p.rounding, p.seed, std::uint32_t(hh), step};
  }
  __device__ void decode(const std::uint8_t* codes, const std::uint8_t* scales, float* out) {
    if constexpr (C::kBlock == 0) {
      for (std::size_t i = tid; i < VK; i += kThreads)
        out[i] = C::decode(static_cast<typename C::code_t>(formats::load_code<C::kBits>(codes, i)));
    } else {  // a thread per row (decode_rows: every element reads its own group's scale)
      for (int v = tid; v < p.V; v += kThreads) C::decode_rows(codes, scales, v, v + 1, p.K, cparams(0), out);
    }
    __syncthreads();
  }
  // The head's amax over every element (amax_ignore_nan; order-free, so any reduction gives encode_state's value).
  __device__ float head_amax(const float* x) {
    __shared__ float part[kThreads / 32];
    static_assert(sizeof(part) <= kReferenceStaticSmemBytes, "HeadCtx::head_amax: reference_stages_in_global's budget");
    float m = 0.0f;
    for (int v = tid; v < p.V; v += kThreads) m = formats::amax_ignore_nan_n(x + std::size_t(v) * p.K, p.K, m);
    for (int o = 16; o > 0; o >>= 1) m = formats::amax_ignore_nan(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
    if (lane == 0) part[warp] = m;
    __syncthreads();
    m = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) m = formats::amax_ignore_nan(m, part[w]);
    __syncthreads();  // part is reused by the next call
    return m;
  }
  // A store of x replacing the stored state prev_codes / prev_scales (the same buffers in place; the committed store
  // for a verify snapshot): a stateful codec (int8_ef) reads its residual from there.
  __device__ void encode(const float* x, const std::uint8_t* prev_codes, const std::uint8_t* prev_scales,
                         std::uint8_t* codes, std::uint8_t* scales, std::uint32_t step) {
    __syncthreads();
    const formats::CodecParams cp = cparams(step);
    if constexpr (C::kStateful) {
      if (tid == 0) formats::encode_state_after<C>(x, p.V, p.K, cp, prev_codes, prev_scales, codes, scales);
    } else if constexpr (C::kBlock == 0) {
      for (std::size_t i = tid; i < VK; i += kThreads) {
        const int v = int(i / std::size_t(p.K)), k = int(i % std::size_t(p.K));
        formats::store_code<C::kBits>(codes, i,
                                      static_cast<std::uint32_t>(C::encode(x[i], p.rounding, formats::element_rand_bits(cp, v, k))));
      }
    } else if (C::rows_apart(p.scaling) && (std::size_t(p.K) * C::kBits) % 8 == 0) {
      // a thread per row (encode_rows; each row's groups and code bytes its own), NVFP4's head amax formed first
      float amax = 0.0f;
      if constexpr (C::kHeadAmax) {
        amax = head_amax(x);
        if (tid == 0) C::store_head_amax(scales, amax);
      }
      for (int v = tid; v < p.V; v += kThreads) C::encode_rows(x, v, v + 1, p.K, cp, amax, codes, scales);
    } else {
      if (tid == 0) C::encode_state(x, p.V, p.K, cp, codes, scales);
    }
    __syncthreads();
  }
  __device__ std::uint8_t* codes() const { return p.codes + std::size_t(hh) * p.code_bytes; }
  __device__ std::uint8_t* scales() const { return p.scales + std::size_t(hh) * p.scale_bytes; }
  __device__ float* hp() const { return p.hp + std::size_t(hh) * VK; }
  __device__ float* ra() const { return p.ra + std::size_t(hh) * p.cap; }
  __device__ float* rbeta() const { return p.rbeta + std::size_t(hh) * p.cap; }
  __device__ R* rk() const { return records_of<R>(p.rk) + std::size_t(hh) * p.cap * p.K; }
  __device__ R* rw() const { return records_of<R>(p.rw) + std::size_t(hh) * p.cap * p.V; }
  __device__ R* rv() const { return records_of<R>(p.rv) + std::size_t(hh) * p.cap * p.V; }
  __device__ bool split() const { return p.policy == emu::Policy::replay_split; }
  __device__ bool recompute() const { return kGdn && split() && p.usource == emu::USource::recompute; }

  // token t of this head
  __device__ std::size_t bt(int t) const { return std::size_t(b) * p.T + t; }
  __device__ float tok_a(int t) const { return p.a[bt(t) * p.H + h]; }
  __device__ float tok_beta(int t) const { return p.beta ? p.beta[bt(t) * p.H + h] : 1.0f; }
  __device__ const float* tok_v(int t) const { return p.v + (bt(t) * p.H + h) * p.V; }
  __device__ int grp() const { return h / (p.H / p.G); }
  __device__ const float* tok_k(int t) const { return p.k + (bt(t) * p.G + grp()) * p.K; }
  __device__ const float* tok_q(int t) const { return p.q + (bt(t) * p.G + grp()) * p.K; }
  __device__ const float* tok_skip(int t) const { return p.skip ? p.skip + (bt(t) * p.H + h) * p.V : nullptr; }
  __device__ float* out_o(int t) const { return p.o + (bt(t) * p.H + h) * p.V; }

  // The output checkpoint into Sout (F store / LP copy), the recurrence checkpoint into Srec.
  __device__ void load_out() { decode(codes(), scales(), Sout); }
  __device__ void load_rec() {
    if (split()) {
      for (std::size_t i = tid; i < VK; i += kThreads) Srec[i] = hp()[i];
      __syncthreads();
    } else {
      decode(codes(), scales(), Srec);
    }
  }

  // Window decays of m records (decays a, keys rk) into G / total (thread 0), then d_j = k_j . x for j < nd,
  // coef_j = G_j d_j.
  template <class X>
  __device__ void gammas_and_coefs(const float* a, const R* rk, int m, const X* x, int nd) {
    if (tid == 0) *total = emu::window_gammas(a, m, G);
    for (int j = warp; j < nd; j += kWarps) {
      const float dj = warp_dot(rk + std::size_t(j) * p.K, x, p.K, lane);
      if (lane == 0) d[j] = dj;
    }
    __syncthreads();
    if (tid == 0) emu::window_coefs(G, d, nd, coef);
    __syncthreads();
  }

  // GDN: u of record i from checkpoint S (smem) and records 0..i-1, into rw row i.
  template <class Vt>
  __device__ void gdn_record_u(const float* S, int i, float beta, const Vt* v) {
    gdn_u_over(ra(), rk(), rw(), S, i, beta, v, rw() + std::size_t(i) * p.V);
  }
  // The same over any records (a [m], rk [m][K], rw [m][V]; record i's key at rk row i), u into u [V] in the record
  // format; v: the token's (float) or a record buffer's raw v (u=recompute).
  template <class Vt>
  __device__ void gdn_u_over(const float* a, const R* rk, const R* rw, const float* S, int i, float beta, const Vt* v,
                             R* u) {
    const R* k = rk + std::size_t(i) * p.K;
    gammas_and_coefs(a, rk, i + 1, k, i);
    for (int r = warp; r < p.V; r += kWarps) {
      const float sck = warp_dot(S + std::size_t(r) * p.K, k, p.K, lane);
      if (lane == 0) {
        const float ask = emu::window_sum(*total, sck, coef, rw, p.V, r, i);
        emu::record_store(u + r, emu::gdn_u(beta, emu::record_load(v[r]), ask));
      }
    }
    __syncthreads();
  }

  // Token t's record fields into slot i: a, beta, k, v (u=recompute) and, for Mamba-2, w = v (GDN's u comes after).
  __device__ void store_record(int i, int t) {
    const float* v = tok_v(t);
    const float* k = tok_k(t);
    if (tid == 0) {
      ra()[i] = tok_a(t);
      rbeta()[i] = tok_beta(t);
    }
    for (int c = tid; c < p.K; c += kThreads) emu::record_store(rk() + std::size_t(i) * p.K + c, k[c]);
    for (int r = tid; r < p.V; r += kThreads) {
      if (recompute()) emu::record_store(rv() + std::size_t(i) * p.V + r, v[r]);
      if (!kGdn) emu::record_store(rw() + std::size_t(i) * p.V + r, v[r]);
    }
    __syncthreads();
  }

  __device__ void append(int i, int t, bool out_loaded) {
    const float* v = tok_v(t);
    store_record(i, t);
    if constexpr (kGdn) {
      if (split() && p.usource == emu::USource::hp) {
        load_rec();
        gdn_record_u(Srec, i, tok_beta(t), v);
      } else {
        if (!out_loaded) load_out();
        gdn_record_u(Sout, i, tok_beta(t), v);
      }
    }
  }

  // Non-flush output over m records from Sout (loaded).
  __device__ void replay_output(int m, int t) { replay_output_over(ra(), rk(), rw(), m, t); }
  // The same over any records (a [m], rk [m][K], rw [m][V]).
  __device__ void replay_output_over(const float* a, const R* rk, const R* rw, int m, int t) {
    const float* q = tok_q(t);
    const float* skip = tok_skip(t);
    gammas_and_coefs(a, rk, m, q, m);
    float* o = out_o(t);
    for (int r = warp; r < p.V; r += kWarps) {
      const float scq = warp_dot(Sout + std::size_t(r) * p.K, q, p.K, lane);
      if (lane == 0) o[r] = emu::add_skip(emu::window_sum(*total, scq, coef, rw, p.V, r, m), skip, r);
    }
    __syncthreads();
  }

  // Srec <- S_{c+m} (recurrence checkpoint + first m records).
  __device__ void materialise(int m) {
    load_rec();
    if (recompute())
      for (int i = 0; i < m; ++i) gdn_record_u(Srec, i, rbeta()[i], rv() + std::size_t(i) * p.V);
    if (tid == 0) *total = emu::window_gammas(ra(), m, G);
    __syncthreads();
    const float tot = *total;
    float rowcoef[kMaxRecords];  // m <= cap <= kMaxRecords (checked on the host)
    for (int r = warp; r < p.V; r += kWarps) {
      for (int j = 0; j < m; ++j) rowcoef[j] = __fmul_rn(G[j], emu::record_load(rw()[std::size_t(j) * p.V + r]));
      float* row = Srec + std::size_t(r) * p.K;
      for (int base = 0; base < p.K; base += 128)
        for (int e = 0; e < 4; ++e) {
          const int c = base + 4 * lane + e;
          if (c < p.K) row[c] = emu::window_state_elem(tot, row[c], rowcoef, rk() + c, p.K, m);
        }
    }
    __syncthreads();
  }

  __device__ void flush_window(int m, int t, bool with_output) {
    materialise(m);
    if (with_output) {
      const float* q = tok_q(t);
      const float* skip = tok_skip(t);
      float* o = out_o(t);
      for (int r = warp; r < p.V; r += kWarps) {
        const float y = warp_dot(Srec + std::size_t(r) * p.K, q, p.K, lane);
        if (lane == 0) o[r] = emu::add_skip(y, skip, r);
      }
    }
    if (split())
      for (std::size_t i = tid; i < VK; i += kThreads) hp()[i] = Srec[i];
    encode(Srec, codes(), scales(), codes(), scales(), std::uint32_t(p.tok[b]));
  }

  // One conventional step of token t on the FP32 state S (smem, in place); its output reads the updated state.
  __device__ void conv_token(float* S, int t) {
    const float a = tok_a(t), beta = tok_beta(t);
    const float *v = tok_v(t), *k = tok_k(t), *q = tok_q(t), *skip = tok_skip(t);
    float* o = out_o(t);
    for (int r = warp; r < p.V; r += kWarps) {
      float* row = S + std::size_t(r) * p.K;
      for (int base = 0; base < p.K; base += 128)
        for (int e = 0; e < 4; ++e) {
          const int c = base + 4 * lane + e;
          if (c < p.K) row[c] = emu::conv_decay(a, row[c]);
        }
      __syncwarp();
      float w = v[r];
      if constexpr (kGdn) w = emu::gdn_u(beta, v[r], warp_dot(row, k, p.K, lane));
      for (int base = 0; base < p.K; base += 128)
        for (int e = 0; e < 4; ++e) {
          const int c = base + 4 * lane + e;
          if (c < p.K) row[c] = emu::conv_update(w, k[c], row[c]);
        }
      __syncwarp();
      const float y = warp_dot(row, q, p.K, lane);
      if (lane == 0) o[r] = emu::add_skip(y, skip, r);
    }
  }

  __device__ void conventional() {
    load_out();
    const int T = p.op == Op::verify ? p.T : 1;
    for (int t = 0; t < T; ++t) {
      conv_token(Sout, t);
      const std::uint32_t step = std::uint32_t(p.tok[b] + t);
      if (p.op == Op::verify) {
        encode(Sout, codes(), scales(), snap_codes(t), snap_scales(t), step);  // a snapshot replaces the store
      } else {
        encode(Sout, codes(), scales(), codes(), scales(), step);
      }
    }
  }
  __device__ std::uint8_t* snap_codes(int slot) const {
    return p.snap_codes + (std::size_t(hh) * p.max_drafts + slot) * p.code_bytes;
  }
  __device__ std::uint8_t* snap_scales(int slot) const {
    return p.snap_scales + (std::size_t(hh) * p.max_drafts + slot) * p.scale_bytes;
  }

  // ---- tree verify (KParams::parents; the emulation's verify_tree, formula for formula) ----
  __device__ int tree_depth(int i) const {
    int d = 0;
    for (int j = i; j >= 0; j = p.parents[j]) ++d;
    return d;
  }

  // Conventional store-all: node i's FP32 state is its parent's (the decoded store for a root child) stepped by token
  // i, kept in node_states and quantised into snapshot i with the SR step of its token index (tok + depth - 1).
  __device__ void tree_conventional() {
    load_out();
    float* nodes = p.node_states + std::size_t(hh) * p.max_drafts * VK;
    for (int i = 0; i < p.T; ++i) {
      const int parent = p.parents[i];
      const float* from = parent < 0 ? Sout : nodes + std::size_t(parent) * VK;
      for (std::size_t e = tid; e < VK; e += kThreads) Srec[e] = from[e];
      __syncthreads();
      conv_token(Srec, i);
      __syncthreads();
      for (std::size_t e = tid; e < VK; e += kThreads) nodes[std::size_t(i) * VK + e] = Srec[e];
      encode(Srec, codes(), scales(), snap_codes(i), snap_scales(i), std::uint32_t(p.tok[b] + tree_depth(i) - 1));
    }
  }

  // ReplaySSM: node i's record goes to slot n + i; the path scratch (pa, pk, pw) holds the window's n records and then
  // those of i's root path (copies: the same values and bits), over which u (GDN) and the output are the chain's.
  __device__ void tree_replay() {
    int n = p.n[b];
    if (p.early[b]) {
      flush_window(n, 0, false);
      n = 0;
    }
    load_out();
    const bool from_hp = kGdn && split() && p.usource == emu::USource::hp;
    if (from_hp) load_rec();
    float* pa = p.pa + std::size_t(hh) * p.cap;
    R* pk = records_of<R>(p.pk) + std::size_t(hh) * p.cap * p.K;
    R* pw = records_of<R>(p.pw) + std::size_t(hh) * p.cap * p.V;
    for (int j = tid; j < n; j += kThreads) pa[j] = ra()[j];
    for (std::size_t e = tid; e < std::size_t(n) * p.K; e += kThreads) pk[e] = rk()[e];
    for (std::size_t e = tid; e < std::size_t(n) * p.V; e += kThreads) pw[e] = rw()[e];
    for (int i = 0; i < p.T; ++i) {
      const int slot = n + i, depth = tree_depth(i), m = n + depth;
      store_record(slot, i);
      // the root path, deepest first: node j at path position d goes to scratch row n + d (w of ancestors only)
      int d = depth - 1;
      for (int j = i; j >= 0; j = p.parents[j], --d) {
        const std::size_t src = std::size_t(n + j), dst = std::size_t(n + d);
        if (tid == 0) pa[dst] = ra()[src];
        for (int c = tid; c < p.K; c += kThreads) pk[dst * p.K + c] = rk()[src * p.K + c];
        if (j != i)
          for (int r = tid; r < p.V; r += kThreads) pw[dst * p.V + r] = rw()[src * p.V + r];
      }
      __syncthreads();
      R* w = rw() + std::size_t(slot) * p.V;  // Mamba-2: v, stored with the record
      if constexpr (kGdn) gdn_u_over(pa, pk, pw, from_hp ? Srec : Sout, m - 1, tok_beta(i), tok_v(i), w);
      for (int r = tid; r < p.V; r += kThreads) pw[std::size_t(m - 1) * p.V + r] = w[r];
      __syncthreads();
      replay_output_over(pa, pk, pw, m, i);
    }
  }

  __device__ void replay() {
    int n = p.n[b];
    if (p.early[b]) {
      flush_window(n, 0, false);
      n = 0;
    }
    if (p.op == Op::step) {
      append(n, 0, false);
      const int m = n + 1;
      if (emu::step_fills_window(n, p.L)) {
        flush_window(m, 0, true);
      } else {
        load_out();
        replay_output(m, 0);
      }
    } else {
      load_out();
      for (int i = 0; i < p.T; ++i) {
        append(n + i, i, true);
        replay_output(n + i + 1, i);
      }
    }
  }

  __device__ void state() {
    float* out = p.state_out + std::size_t(hh) * VK;
    if (p.policy == emu::Policy::conventional_shared) {
      load_out();
      for (std::size_t i = tid; i < VK; i += kThreads) out[i] = Sout[i];
    } else {
      materialise(p.n[b]);
      for (std::size_t i = tid; i < VK; i += kThreads) out[i] = Srec[i];
    }
  }
};

template <class C, bool kGdn, class R>
__global__ void __launch_bounds__(kThreads) decode_kernel(KParams p) {
  extern __shared__ float smem[];
  const std::size_t VK = std::size_t(p.V) * p.K;
  HeadCtx<C, kGdn, R> c{p, 0, 0, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, VK};
  c.hh = blockIdx.x;
  c.b = c.hh / p.H;
  c.h = c.hh % p.H;
  c.tid = threadIdx.x;
  c.lane = threadIdx.x % 32;
  c.warp = threadIdx.x / 32;
  float* states = p.state_scratch ? p.state_scratch + std::size_t(c.hh) * 2 * VK : smem;
  c.Sout = states;
  c.Srec = states + VK;
  c.G = p.state_scratch ? smem : c.Srec + VK;
  c.d = c.G + p.cap + 1;
  c.coef = c.d + p.cap + 1;
  c.total = c.coef + p.cap + 1;
  if (p.op == Op::state)
    c.state();
  else if (p.op == Op::tree && p.policy == emu::Policy::conventional_shared)
    c.tree_conventional();
  else if (p.op == Op::tree)
    c.tree_replay();
  else if (p.policy == emu::Policy::conventional_shared)
    c.conventional();
  else
    c.replay();
}

inline std::size_t smem_bytes(const KParams& p) {
  return reference_smem_bytes(p.V, p.K, p.cap, p.state_scratch != nullptr);
}

template <class C, bool kGdn, class R>
int launch_records(const KParams& p, cudaStream_t s) {
  const std::size_t sm = smem_bytes(p);
  cudaError_t e = cudaFuncSetAttribute(decode_kernel<C, kGdn, R>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm));
  if (e != cudaSuccess) return int(e);
  decode_kernel<C, kGdn, R><<<unsigned(p.B * p.H), kThreads, sm, s>>>(p);
  return int(cudaGetLastError());
}
// BF16 records only under a ReplaySSM policy (conventional decode keeps none).
template <class C, bool kGdn>
int launch_one(const KParams& p, cudaStream_t s) {
  if (p.records == emu::Records::bf16 && p.policy != emu::Policy::conventional_shared)
    return launch_records<C, kGdn, emu::RecordBf16>(p, s);
  return launch_records<C, kGdn, float>(p, s);
}

template <bool kGdn>
int launch_any(formats::FormatId f, const KParams& p, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  using formats::FormatId;
  using formats::StateCodec;
  switch (f) {
    case FormatId::fp32: return launch_one<StateCodec<FormatId::fp32>, kGdn>(p, s);
    case FormatId::bf16: return launch_one<StateCodec<FormatId::bf16>, kGdn>(p, s);
    case FormatId::bf16x2: return launch_one<StateCodec<FormatId::bf16x2>, kGdn>(p, s);
    case FormatId::fp16: return launch_one<StateCodec<FormatId::fp16>, kGdn>(p, s);
    case FormatId::fp8_e4m3: return launch_one<StateCodec<FormatId::fp8_e4m3>, kGdn>(p, s);
    case FormatId::fp8_e5m2: return launch_one<StateCodec<FormatId::fp8_e5m2>, kGdn>(p, s);
    case FormatId::int8: return launch_one<StateCodec<FormatId::int8>, kGdn>(p, s);
    case FormatId::int8_ef: return launch_one<StateCodec<FormatId::int8_ef>, kGdn>(p, s);
    case FormatId::int16: return launch_one<StateCodec<FormatId::int16>, kGdn>(p, s);
    case FormatId::nvfp4: return launch_one<StateCodec<FormatId::nvfp4>, kGdn>(p, s);
    case FormatId::mxfp8: return launch_one<StateCodec<FormatId::mxfp8>, kGdn>(p, s);
    case FormatId::mxfp4: return launch_one<StateCodec<FormatId::mxfp4>, kGdn>(p, s);
  }
  return int(cudaErrorInvalidValue);
}

}  // namespace replayssm::kern
