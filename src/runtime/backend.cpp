#include "runtime/backend.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

#include "reference/gdn_recurrent.h"
#include "reference/mamba2_recurrent.h"
#include "runtime/fast_recurrence.h"

namespace replayssm::runtime {

void StreamingRecurrence::save(std::vector<std::uint8_t>&) const {
  throw std::runtime_error("recurrence " + name() + ": checkpoints not supported");
}
void StreamingRecurrence::load(const std::uint8_t*, std::size_t) {
  throw std::runtime_error("recurrence " + name() + ": checkpoints not supported");
}

namespace {

// Head groups [begin, end) over `heads` heads that read `groups` key heads / B-C groups (ratio r = heads / groups):
// a group is either a whole number of key groups or lies inside one key group, so it can run as its own layer.
std::vector<std::pair<int, int>> head_groups(int heads, int groups, int threads) {
  const int r = heads / groups;
  int s = (heads + threads - 1) / threads;
  if (s >= r) {
    s = (s + r - 1) / r * r;
  } else {
    while (r % s != 0) ++s;
  }
  std::vector<std::pair<int, int>> out;
  for (int b = 0; b < heads; b += s) out.emplace_back(b, std::min(heads, b + s));
  return out;
}

// Copies rows [t][h0..h1)[dim] of a [T][H][dim] array.
std::vector<double> slice_heads(const std::vector<double>& a, int T, int H, int dim, int h0, int h1) {
  std::vector<double> out(std::size_t(T) * std::size_t(h1 - h0) * std::size_t(dim));
  const std::size_t w = std::size_t(h1 - h0) * std::size_t(dim);
  for (int t = 0; t < T; ++t) {
    const double* src = a.data() + (std::size_t(t) * std::size_t(H) + std::size_t(h0)) * std::size_t(dim);
    std::copy(src, src + w, out.data() + std::size_t(t) * w);
  }
  return out;
}

void scatter_heads(std::vector<double>& dst, const std::vector<double>& src, int T, int H, int dim, int h0, int h1) {
  const std::size_t w = std::size_t(h1 - h0) * std::size_t(dim);
  for (int t = 0; t < T; ++t)
    std::copy(src.data() + std::size_t(t) * w, src.data() + std::size_t(t + 1) * w,
              dst.data() + (std::size_t(t) * std::size_t(H) + std::size_t(h0)) * std::size_t(dim));
}

template <class Fn>
void parallel_for(std::size_t n, Fn fn) {
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(n);
  for (std::size_t i = 1; i < n; ++i)
    pool.emplace_back([&, i] {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  try {
    fn(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// ref::recurrent_layer (every head from the zero state, one ref::recurrent_step per token) with recurrent_step_fast,
// the same bits, heads split over threads. token(t, h, buffers) fills the head token (ref::*_head_token's values).
struct TokenView {
  double a = 1.0, beta = 1.0;
  const double *v = nullptr, *k = nullptr, *q = nullptr, *skip = nullptr;
};
struct TokenBuffers {
  std::vector<double> v, q, skip;
};

// initial: [H][V][K] or null for the zero state.
template <class TokenFn>
ref::LayerOutputs recurrent_fast(bool gdn, int T, int H, int V, int K, int threads, const std::vector<double>* initial,
                                 TokenFn token) {
  ref::LayerOutputs out;
  out.o.assign(std::size_t(T) * std::size_t(H) * std::size_t(V), 0.0);
  out.final_state.assign(std::size_t(H) * std::size_t(V) * std::size_t(K), 0.0);
  const int nt = std::max(1, std::min(threads, H));
  parallel_for(std::size_t(nt), [&](std::size_t part) {
    const int h0 = int(part) * H / nt, h1 = (int(part) + 1) * H / nt;
    const auto vs = static_cast<std::size_t>(V);
    std::vector<double> S(vs * static_cast<std::size_t>(K)), o(vs), scratch(2 * vs);
    TokenBuffers buf;
    buf.v.resize(std::size_t(V));
    buf.skip.resize(std::size_t(V));
    buf.q.resize(std::size_t(K));
    for (int h = h0; h < h1; ++h) {
      if (initial) {
        for (int r = 0; r < V; ++r)  // head_state: [V][K] row-major into column-major [K][V]
          for (int c = 0; c < K; ++c)
            S[std::size_t(c) * V + r] = (*initial)[(std::size_t(h) * V + r) * std::size_t(K) + c];
      } else {
        std::fill(S.begin(), S.end(), 0.0);
      }
      for (int t = 0; t < T; ++t) {
        const TokenView tk = token(t, h, buf);
        const StepHead sh{S.data(), tk.a, tk.beta, tk.v, tk.k, tk.q, tk.skip, o.data()};
        recurrent_step_fast(gdn, sh, V, K, scratch.data());
        std::copy(o.begin(), o.end(), out.o.begin() + std::ptrdiff_t((std::size_t(t) * H + h) * std::size_t(V)));
      }
      for (int r = 0; r < V; ++r)  // put_head_state: [V][K] row-major
        for (int c = 0; c < K; ++c)
          out.final_state[(std::size_t(h) * V + r) * std::size_t(K) + c] = S[std::size_t(c) * V + r];
    }
  });
  return out;
}

std::size_t at(int t, int heads, int h, int dim) {
  return (std::size_t(t) * std::size_t(heads) + std::size_t(h)) * std::size_t(dim);
}

// recurrent_fast's layer on the device: the job's per-token arrays hold what the TokenFn would hand each step.
ref::LayerOutputs recurrent_on_device(Fp64Device& dev, RecurrenceJob job, const std::vector<double>* initial) {
  ref::LayerOutputs out;
  out.o.assign(std::size_t(job.T) * std::size_t(job.H) * std::size_t(job.V), 0.0);
  const std::size_t state = std::size_t(job.H) * std::size_t(job.V) * std::size_t(job.K);
  if (initial) {
    if (initial->size() != state) throw std::invalid_argument("recurrence: initial state of the wrong size");
    out.final_state = *initial;
  } else {
    out.final_state.assign(state, 0.0);
  }
  job.block_cols = recurrent_step_block_cols(job.V, job.K);
  job.state = out.final_state.data();
  job.o = out.o.data();
  dev.recurrence(job);
  return out;
}

// The heads [h0, h1) of a [heads][V][K] state, or null.
const std::vector<double>* slice_state(const std::vector<double>* initial, int h0, int h1, std::size_t per_head,
                                       std::vector<double>& buf) {
  if (!initial) return nullptr;
  buf.assign(initial->begin() + std::ptrdiff_t(std::size_t(h0) * per_head),
             initial->begin() + std::ptrdiff_t(std::size_t(h1) * per_head));
  return &buf;
}

}  // namespace

ref::LayerOutputs ReferenceBackend::run_gdn(const ref::GdnInputs& in) { return gdn(in, nullptr); }
ref::LayerOutputs ReferenceBackend::run_mamba2(const ref::Mamba2Inputs& in) { return mamba2(in, nullptr); }

void ReferenceBackend::start(int layers) { states_.assign(std::size_t(std::max(0, layers)), {}); }

ref::LayerOutputs ReferenceBackend::gdn_chunk(int layer, const ref::GdnInputs& in) {
  auto& s = states_.at(std::size_t(layer));
  ref::LayerOutputs out = gdn(in, s.empty() ? nullptr : &s);
  s = out.final_state;
  return out;
}

ref::LayerOutputs ReferenceBackend::mamba2_chunk(int layer, const ref::Mamba2Inputs& in) {
  auto& s = states_.at(std::size_t(layer));
  ref::LayerOutputs out = mamba2(in, s.empty() ? nullptr : &s);
  s = out.final_state;
  return out;
}

ref::LayerOutputs ReferenceBackend::gdn(const ref::GdnInputs& in, const std::vector<double>* initial) {
  if (device_ && recurrent_step_fast_ok(in.V, in.K) && device_->recurrence_fits(in.V, in.K)) {
    in.validate();
    // the TokenFn's values below, for every token at once
    const std::size_t th = std::size_t(in.T) * std::size_t(in.Hv);
    std::vector<double> a(th), q(in.q.size());
    for (std::size_t i = 0; i < th; ++i) a[i] = std::exp(in.g[i]);
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = in.scale * in.q[i];
    RecurrenceJob job;
    job.gdn = true;
    job.T = in.T, job.H = in.Hv, job.G = in.Hk, job.V = in.V, job.K = in.K;
    job.a = a.data(), job.beta = in.beta.data(), job.v = in.v.data(), job.k = in.k.data(), job.q = q.data();
    return recurrent_on_device(*device_, job, initial);
  }
  if (recurrent_step_fast_ok(in.V, in.K)) {
    in.validate();
    // ref::gdn_head_token: a = exp(g), beta, v, k of key head h / (Hv / Hk), q scaled
    return recurrent_fast(true, in.T, in.Hv, in.V, in.K, threads_, initial, [&](int t, int h, TokenBuffers& b) {
      const int hk = h / (in.Hv / in.Hk);
      TokenView tk;
      tk.a = std::exp(in.g[at(t, in.Hv, h, 1)]);
      tk.beta = in.beta[at(t, in.Hv, h, 1)];
      tk.v = in.v.data() + at(t, in.Hv, h, in.V);
      tk.k = in.k.data() + at(t, in.Hk, hk, in.K);
      const double* q = in.q.data() + at(t, in.Hk, hk, in.K);
      for (int i = 0; i < in.K; ++i) b.q[std::size_t(i)] = in.scale * q[i];
      tk.q = b.q.data();
      return tk;
    });
  }
  if (threads_ == 1 || in.Hv == 1) return ref::gdn_recurrent(in, initial);
  in.validate();
  const auto parts = head_groups(in.Hv, in.Hk, threads_);
  if (parts.size() == 1) return ref::gdn_recurrent(in, initial);
  const int r = in.Hv / in.Hk;
  std::vector<ref::LayerOutputs> outs(parts.size());
  parallel_for(parts.size(), [&](std::size_t i) {
    const auto [h0, h1] = parts[i];
    const int k0 = h0 / r, k1 = (h1 - 1) / r + 1;
    ref::GdnInputs sub;
    sub.T = in.T, sub.Hk = k1 - k0, sub.Hv = h1 - h0, sub.K = in.K, sub.V = in.V, sub.scale = in.scale;
    sub.q = slice_heads(in.q, in.T, in.Hk, in.K, k0, k1);
    sub.k = slice_heads(in.k, in.T, in.Hk, in.K, k0, k1);
    sub.v = slice_heads(in.v, in.T, in.Hv, in.V, h0, h1);
    sub.g = slice_heads(in.g, in.T, in.Hv, 1, h0, h1);
    sub.beta = slice_heads(in.beta, in.T, in.Hv, 1, h0, h1);
    std::vector<double> init;
    outs[i] = ref::gdn_recurrent(sub, slice_state(initial, h0, h1, std::size_t(in.V) * std::size_t(in.K), init));
  });
  ref::LayerOutputs o;
  o.o.resize(std::size_t(in.T) * std::size_t(in.Hv) * std::size_t(in.V));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    scatter_heads(o.o, outs[i].o, in.T, in.Hv, in.V, parts[i].first, parts[i].second);
    o.final_state.insert(o.final_state.end(), outs[i].final_state.begin(), outs[i].final_state.end());
  }
  return o;
}

ref::LayerOutputs ReferenceBackend::mamba2(const ref::Mamba2Inputs& in, const std::vector<double>* initial) {
  if (device_ && recurrent_step_fast_ok(in.P, in.N) && device_->recurrence_fits(in.P, in.N)) {
    in.validate();
    // the TokenFn's values below, for every token at once
    std::vector<double> a(std::size_t(in.T) * std::size_t(in.H)), v(in.x.size()), skip;
    if (!in.D.empty()) skip.resize(in.x.size());
    for (int t = 0; t < in.T; ++t)
      for (int h = 0; h < in.H; ++h) {
        const double dt = in.dt[at(t, in.H, h, 1)];
        a[at(t, in.H, h, 1)] = std::exp(dt * in.A[std::size_t(h)]);
        const std::size_t o = at(t, in.H, h, in.P);
        for (int i = 0; i < in.P; ++i) v[o + std::size_t(i)] = dt * in.x[o + std::size_t(i)];
        if (!in.D.empty())
          for (int i = 0; i < in.P; ++i) skip[o + std::size_t(i)] = in.D[std::size_t(h)] * in.x[o + std::size_t(i)];
      }
    RecurrenceJob job;
    job.gdn = false;
    job.T = in.T, job.H = in.H, job.G = in.G, job.V = in.P, job.K = in.N;
    job.a = a.data(), job.v = v.data(), job.k = in.B.data(), job.q = in.C.data();
    job.skip = skip.empty() ? nullptr : skip.data();
    return recurrent_on_device(*device_, job, initial);
  }
  if (recurrent_step_fast_ok(in.P, in.N)) {
    in.validate();
    // ref::mamba2_head_token: a = exp(dt A_h), v = dt x, k = B, q = C of group h / (H / G), skip = D_h x
    return recurrent_fast(false, in.T, in.H, in.P, in.N, threads_, initial, [&](int t, int h, TokenBuffers& b) {
      const int grp = h / (in.H / in.G);
      const double dt = in.dt[at(t, in.H, h, 1)];
      const double* x = in.x.data() + at(t, in.H, h, in.P);
      TokenView tk;
      tk.a = std::exp(dt * in.A[std::size_t(h)]);
      for (int i = 0; i < in.P; ++i) b.v[std::size_t(i)] = dt * x[i];
      tk.v = b.v.data();
      tk.k = in.B.data() + at(t, in.G, grp, in.N);
      tk.q = in.C.data() + at(t, in.G, grp, in.N);
      if (!in.D.empty()) {
        for (int i = 0; i < in.P; ++i) b.skip[std::size_t(i)] = in.D[std::size_t(h)] * x[i];
        tk.skip = b.skip.data();
      }
      return tk;
    });
  }
  if (threads_ == 1 || in.H == 1) return ref::mamba2_recurrent(in, initial);
  in.validate();
  const auto parts = head_groups(in.H, in.G, threads_);
  if (parts.size() == 1) return ref::mamba2_recurrent(in, initial);
  const int r = in.H / in.G;
  std::vector<ref::LayerOutputs> outs(parts.size());
  parallel_for(parts.size(), [&](std::size_t i) {
    const auto [h0, h1] = parts[i];
    const int g0 = h0 / r, g1 = (h1 - 1) / r + 1;
    ref::Mamba2Inputs sub;
    sub.T = in.T, sub.H = h1 - h0, sub.G = g1 - g0, sub.P = in.P, sub.N = in.N;
    sub.x = slice_heads(in.x, in.T, in.H, in.P, h0, h1);
    sub.B = slice_heads(in.B, in.T, in.G, in.N, g0, g1);
    sub.C = slice_heads(in.C, in.T, in.G, in.N, g0, g1);
    sub.dt = slice_heads(in.dt, in.T, in.H, 1, h0, h1);
    sub.A.assign(in.A.begin() + h0, in.A.begin() + h1);
    if (!in.D.empty()) sub.D.assign(in.D.begin() + h0, in.D.begin() + h1);
    std::vector<double> init;
    outs[i] = ref::mamba2_recurrent(sub, slice_state(initial, h0, h1, std::size_t(in.P) * std::size_t(in.N), init));
  });
  ref::LayerOutputs o;
  o.o.resize(std::size_t(in.T) * std::size_t(in.H) * std::size_t(in.P));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    scatter_heads(o.o, outs[i].o, in.T, in.H, in.P, parts[i].first, parts[i].second);
    o.final_state.insert(o.final_state.end(), outs[i].final_state.begin(), outs[i].final_state.end());
  }
  return o;
}

}  // namespace replayssm::runtime
