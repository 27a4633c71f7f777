#include "sweep/mode_recurrence.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "core/blob.h"
#include "reference/head_record.h"
#include "runtime/fast_recurrence.h"
#include "sweep/metrics.h"

namespace replayssm::sweep {
namespace {

// One token of every head in the backend's FP32 "head token" form; the FP64 shadow consumes the same values
// (rounded to FP32 first), so the drift measures the state arithmetic and storage, not the input rounding.
// The values are ref::gdn_head_token / ref::mamba2_head_token's, computed in place into buffers reused every step.
struct StepBuffers {
  emu::TokenData data;                     // FP32, what the backend reads
  std::vector<double> a, beta, v, skip;    // [H], [H], [H][V], [H][V]: doubles of the FP32 values
  std::vector<double> k, q;                // [G][K]
  int G = 0, H = 0, V = 0, K = 0;
  bool gdn = false, skip_on = false;

  void init(int g, int h, int vdim, int kdim, bool is_gdn, bool with_skip) {
    G = g, H = h, V = vdim, K = kdim, gdn = is_gdn, skip_on = with_skip;
    data.B = 1;
    data.T = 1;
    data.a.assign(std::size_t(H), 0.0f);
    data.beta.assign(gdn ? std::size_t(H) : 0, 0.0f);
    data.v.assign(std::size_t(H) * V, 0.0f);
    data.k.assign(std::size_t(G) * K, 0.0f);
    data.q.assign(std::size_t(G) * K, 0.0f);
    data.skip.assign(skip_on ? std::size_t(H) * V : 0, 0.0f);
    a.assign(std::size_t(H), 0.0);
    beta.assign(std::size_t(H), 1.0);
    v.assign(std::size_t(H) * V, 0.0);
    skip.assign(skip_on ? std::size_t(H) * V : 0, 0.0);
    k.assign(std::size_t(G) * K, 0.0);
    q.assign(std::size_t(G) * K, 0.0);
  }
  // x rounded to FP32 into f, and its double back into d.
  static void put(double x, float& f, double& d) {
    f = static_cast<float>(x);
    d = f;
  }
};

std::size_t at(int t, int heads, int h, int dim) {
  return (std::size_t(t) * std::size_t(heads) + std::size_t(h)) * std::size_t(dim);
}

// ref::gdn_head_token: a = exp(g), beta, v, k of key head h / (Hv / Hk), q scaled.
void fill_gdn(const ref::GdnInputs& in, int t, StepBuffers& s) {
  for (int h = 0; h < in.Hv; ++h) {
    const auto hs = std::size_t(h);
    StepBuffers::put(std::exp(in.g[at(t, in.Hv, h, 1)]), s.data.a[hs], s.a[hs]);
    StepBuffers::put(in.beta[at(t, in.Hv, h, 1)], s.data.beta[hs], s.beta[hs]);
    const double* v = in.v.data() + at(t, in.Hv, h, in.V);
    for (int i = 0; i < in.V; ++i) StepBuffers::put(v[i], s.data.v[hs * in.V + i], s.v[hs * in.V + i]);
  }
  for (int g = 0; g < in.Hk; ++g) {
    const double* k = in.k.data() + at(t, in.Hk, g, in.K);
    const double* q = in.q.data() + at(t, in.Hk, g, in.K);
    const std::size_t o = std::size_t(g) * in.K;
    for (int i = 0; i < in.K; ++i) {
      StepBuffers::put(k[i], s.data.k[o + i], s.k[o + i]);
      StepBuffers::put(in.scale * q[i], s.data.q[o + i], s.q[o + i]);
    }
  }
}

// ref::mamba2_head_token: a = exp(dt A_h), v = dt x, k = B, q = C of group h / (H / G), skip = D_h x.
void fill_mamba2(const ref::Mamba2Inputs& in, int t, StepBuffers& s) {
  for (int h = 0; h < in.H; ++h) {
    const auto hs = std::size_t(h);
    const double dt = in.dt[at(t, in.H, h, 1)];
    StepBuffers::put(std::exp(dt * in.A[hs]), s.data.a[hs], s.a[hs]);
    const double* x = in.x.data() + at(t, in.H, h, in.P);
    for (int i = 0; i < in.P; ++i) {
      StepBuffers::put(dt * x[i], s.data.v[hs * in.P + i], s.v[hs * in.P + i]);
      if (s.skip_on) StepBuffers::put(in.D[hs] * x[i], s.data.skip[hs * in.P + i], s.skip[hs * in.P + i]);
    }
  }
  for (int g = 0; g < in.G; ++g) {
    const std::size_t o = std::size_t(g) * in.N;
    const double* B = in.B.data() + at(t, in.G, g, in.N);
    const double* C = in.C.data() + at(t, in.G, g, in.N);
    for (int i = 0; i < in.N; ++i) {
      StepBuffers::put(B[i], s.data.k[o + i], s.k[o + i]);
      StepBuffers::put(C[i], s.data.q[o + i], s.q[o + i]);
    }
  }
}

}  // namespace

struct ModeLayerStream::Impl {
  Impl(emu::DecodeBackend& b, const emu::Mode& m) : be(b), mode(m) {}
  emu::DecodeBackend& be;
  emu::Mode mode;
  bool started = false;
  std::int64_t position = 0;  // positions stepped so far
  int G = 0, H = 0, V = 0, K = 0;
  bool skip = false, fast = false;
  // shadow[h]: column-major [K][V], element (r, c) at c * V + r (an Eigen::MatrixXd's storage)
  std::vector<Eigen::MatrixXd> shadow;
  std::vector<StepBuffers> steps;
  std::vector<float> o, S;
  std::vector<double> o_ref, S_ref, S_got, scratch;

  void start(int g, int h, int v, int k, bool with_skip) {
    emu::Dims d;
    d.B = 1;
    d.G = g;
    d.H = h;
    d.K = k;
    d.V = v;
    emu::check_mode(mode, d);
    G = g, H = h, V = v, K = k, skip = with_skip;
    fast = runtime::recurrent_step_fast_ok(V, K);
    be.init(d, mode, nullptr);
    shadow.assign(static_cast<std::size_t>(H), Eigen::MatrixXd::Zero(V, K));
    const std::size_t out_per_t = static_cast<std::size_t>(H) * static_cast<std::size_t>(V);
    const std::size_t state = out_per_t * static_cast<std::size_t>(K);
    o.assign(out_per_t, 0.0f);
    S.assign(state, 0.0f);
    S_ref.assign(state, 0.0);
    S_got.assign(state, 0.0);
    scratch.assign(2 * static_cast<std::size_t>(V), 0.0);
    // Tokens go in blocks of L (the state comparisons fall on block ends): the backend steps through the block, then
    // the shadow runs head by head over it (a head's state stays in cache for L steps).
    steps.resize(static_cast<std::size_t>(mode.L));
    for (auto& b : steps) b.init(G, H, V, K, mode.arch == emu::Arch::gdn, skip);
    o_ref.assign(static_cast<std::size_t>(mode.L) * out_per_t, 0.0);
    started = true;
  }

  // Later chunks (and a chunk after load()) must be of the shape the stream started with.
  void require_shape(int g, int h, int v, int k, bool with_skip) const {
    if (g != G || h != H || v != V || k != K || with_skip != skip)
      throw std::invalid_argument("ModeLayerStream: a chunk of another layer shape than the stream's");
  }

  // The next T positions. Blocks end on multiples of L counted from the sequence's start, so the backend sees
  // exactly the calls of one pass over the whole sequence (steps, then state() after every L-th step) and every
  // shadow step is the same, wherever the chunks are cut.
  template <class FillFn>
  ref::LayerOutputs run(int T, FillFn&& fill, LayerDrift* drift) {
    const bool gdn = mode.arch == emu::Arch::gdn;
    const ref::Recurrence rec = gdn ? ref::Recurrence::kGdn : ref::Recurrence::kMamba2;
    const std::size_t out_per_t = static_cast<std::size_t>(H) * static_cast<std::size_t>(V);
    const std::int64_t first = position;
    ref::LayerOutputs out;
    out.o.resize(static_cast<std::size_t>(T) * out_per_t);
    const int per_group = H / G;
    if (drift) {
      if (first == 0) {
        drift->output.clear();
        drift->steps.clear();
        drift->state.clear();
      }
      drift->output.resize(static_cast<std::size_t>(first + T), 0.0);
    }
    for (int t0 = 0; t0 < T;) {
      const int n = static_cast<int>(std::min<std::int64_t>(mode.L - (first + t0) % mode.L, T - t0));
      for (int i = 0; i < n; ++i) {
        const int t = t0 + i;
        StepBuffers& b = steps[static_cast<std::size_t>(i)];
        fill(t, b);
        be.step(b.data.view(), o.data());
        double* dst = &out.o[static_cast<std::size_t>(t) * out_per_t];
        for (std::size_t j = 0; j < out_per_t; ++j) {
          if (!std::isfinite(o[j])) throw Diverged(first + t);
          dst[j] = o[j];
        }
      }
      position = first + t0 + n;
      const bool flush = position % mode.L == 0;
      t0 += n;
      if (!drift) continue;  // the shadow only feeds the drifts
      for (int h = 0; h < H; ++h) {
        const auto hs = static_cast<std::size_t>(h);
        const std::size_t g = static_cast<std::size_t>(h / per_group) * std::size_t(K);
        for (int i = 0; i < n; ++i) {
          const StepBuffers& b = steps[static_cast<std::size_t>(i)];
          double* oh = o_ref.data() + static_cast<std::size_t>(i) * out_per_t + hs * V;
          const runtime::StepHead sh{shadow[hs].data(), b.a[hs], gdn ? b.beta[hs] : 1.0, b.v.data() + hs * V,
                                     b.k.data() + g, b.q.data() + g, skip ? b.skip.data() + hs * V : nullptr, oh};
          if (fast) {
            runtime::recurrent_step_fast(gdn, sh, V, K, scratch.data());
            continue;
          }
          ref::HeadToken tok;
          tok.a = sh.a;
          tok.beta = sh.beta;
          tok.v = Eigen::Map<const Eigen::VectorXd>(sh.v, V);
          tok.k = Eigen::Map<const Eigen::VectorXd>(sh.k, K);
          tok.q = Eigen::Map<const Eigen::VectorXd>(sh.q, K);
          if (skip) tok.skip = Eigen::Map<const Eigen::VectorXd>(sh.skip, V);
          const Eigen::VectorXd r = ref::recurrent_step(rec, shadow[hs], tok);
          for (int j = 0; j < V; ++j) oh[j] = r[j];
        }
      }
      const std::size_t base = static_cast<std::size_t>(position - n);
      for (int i = 0; i < n; ++i) {
        const std::size_t local = static_cast<std::size_t>(t0 - n + i);
        drift->output[base + static_cast<std::size_t>(i)] =
            relative_l2(o_ref.data() + static_cast<std::size_t>(i) * out_per_t, &out.o[local * out_per_t], out_per_t);
      }
      if (flush) {
        be.state(S.data());
        for (int h = 0; h < H; ++h) {
          const double* sh = shadow[static_cast<std::size_t>(h)].data();
          for (int r = 0; r < V; ++r)
            for (int c = 0; c < K; ++c) {
              const std::size_t idx = (static_cast<std::size_t>(h) * V + r) * K + c;
              S_ref[idx] = sh[std::size_t(c) * V + r];
              S_got[idx] = S[idx];
            }
        }
        drift->steps.push_back(position);
        drift->state.push_back(relative_l2(S_ref.data(), S_got.data(), S.size()));
      }
    }
    return out;
  }
};

ModeLayerStream::ModeLayerStream(emu::DecodeBackend& backend, const emu::Mode& mode)
    : impl_(std::make_unique<Impl>(backend, mode)) {}
ModeLayerStream::~ModeLayerStream() = default;
ModeLayerStream::ModeLayerStream(ModeLayerStream&&) noexcept = default;

ref::LayerOutputs ModeLayerStream::gdn(const ref::GdnInputs& in, LayerDrift* drift) {
  if (impl_->mode.arch != emu::Arch::gdn) throw std::invalid_argument("ModeRecurrence: mode is not a GDN mode");
  if (!impl_->started) impl_->start(in.Hk, in.Hv, in.V, in.K, false);
  impl_->require_shape(in.Hk, in.Hv, in.V, in.K, false);
  return impl_->run(in.T, [&](int t, StepBuffers& s) { fill_gdn(in, t, s); }, drift);
}

ref::LayerOutputs ModeLayerStream::mamba2(const ref::Mamba2Inputs& in, LayerDrift* drift) {
  if (impl_->mode.arch != emu::Arch::mamba2) throw std::invalid_argument("ModeRecurrence: mode is not a Mamba-2 mode");
  if (!impl_->started) impl_->start(in.G, in.H, in.P, in.N, !in.D.empty());
  impl_->require_shape(in.G, in.H, in.P, in.N, !in.D.empty());
  return impl_->run(in.T, [&](int t, StepBuffers& s) { fill_mamba2(in, t, s); }, drift);
}

std::vector<double> ModeLayerStream::state() {
  impl_->be.state(impl_->S.data());
  return std::vector<double>(impl_->S.begin(), impl_->S.end());
}

void ModeLayerStream::save(std::vector<std::uint8_t>& out) const {
  const Impl& s = *impl_;
  BlobWriter w(out);
  w.str(s.mode.name());
  w.pod(std::uint8_t(s.started));
  if (!s.started) return;
  for (int x : {s.G, s.H, s.V, s.K, int(s.skip)}) w.pod(std::int32_t(x));
  w.pod(s.position);
  for (const auto& m : s.shadow) w.bytes(reinterpret_cast<const std::uint8_t*>(m.data()), sizeof(double) * m.size());
  std::vector<std::uint8_t> be;
  s.be.save(be);
  w.bytes(be.data(), be.size());
}

void ModeLayerStream::load(const std::uint8_t* blob, std::size_t size) {
  Impl& s = *impl_;
  if (s.started) throw std::logic_error("ModeLayerStream::load: the stream has already run");
  BlobReader r(blob, size, "layer stream checkpoint");
  const std::string mode = r.str("mode");
  if (mode != s.mode.name()) r.fail("mode", "the blob's is " + mode + ", this stream's " + s.mode.name());
  if (!r.pod<std::uint8_t>("started")) return r.finish();
  int dims[5];
  for (int& x : dims) {
    x = r.pod<std::int32_t>("dims");
    if (x < 0 || x > (1 << 20)) r.fail("dims", "out of range");
  }
  const auto position = r.pod<std::int64_t>("position");
  if (position < 0) r.fail("position", "negative");
  s.start(dims[0], dims[1], dims[2], dims[3], dims[4] != 0);  // throws std::invalid_argument on a bad shape
  for (auto& m : s.shadow) {
    const auto b = r.bytes("shadow");
    if (b.second != sizeof(double) * m.size()) r.fail("shadow", "a head state of the wrong size");
    std::memcpy(m.data(), b.first, b.second);
  }
  const auto be = r.bytes("backend");
  r.finish();
  s.be.load(be.first, be.second);
  s.position = position;
}

ref::LayerOutputs ModeRecurrence::run_gdn(const ref::GdnInputs& in, LayerDrift* drift) {
  ModeLayerStream s(be_, mode_);
  ref::LayerOutputs out = s.gdn(in, drift);
  out.final_state = s.state();
  return out;
}

ref::LayerOutputs ModeRecurrence::run_mamba2(const ref::Mamba2Inputs& in, LayerDrift* drift) {
  ModeLayerStream s(be_, mode_);
  ref::LayerOutputs out = s.mamba2(in, drift);
  out.final_state = s.state();
  return out;
}

}  // namespace replayssm::sweep
