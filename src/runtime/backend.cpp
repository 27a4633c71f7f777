#include "runtime/backend.h"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

#include "reference/gdn_recurrent.h"
#include "reference/mamba2_recurrent.h"

namespace replayssm::runtime {
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

}  // namespace

ref::LayerOutputs ReferenceBackend::run_gdn(const ref::GdnInputs& in) {
  if (threads_ == 1 || in.Hv == 1) return ref::gdn_recurrent(in);
  in.validate();
  const auto parts = head_groups(in.Hv, in.Hk, threads_);
  if (parts.size() == 1) return ref::gdn_recurrent(in);
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
    outs[i] = ref::gdn_recurrent(sub);
  });
  ref::LayerOutputs o;
  o.o.resize(std::size_t(in.T) * std::size_t(in.Hv) * std::size_t(in.V));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    scatter_heads(o.o, outs[i].o, in.T, in.Hv, in.V, parts[i].first, parts[i].second);
    o.final_state.insert(o.final_state.end(), outs[i].final_state.begin(), outs[i].final_state.end());
  }
  return o;
}

ref::LayerOutputs ReferenceBackend::run_mamba2(const ref::Mamba2Inputs& in) {
  if (threads_ == 1 || in.H == 1) return ref::mamba2_recurrent(in);
  in.validate();
  const auto parts = head_groups(in.H, in.G, threads_);
  if (parts.size() == 1) return ref::mamba2_recurrent(in);
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
    outs[i] = ref::mamba2_recurrent(sub);
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
