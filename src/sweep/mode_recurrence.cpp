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
  Impl(emu::DecodeBackend& b, const emu::Mode& m, runtime::Fp64Device* d) : be(b), mode(m), device(d) {}
  emu::DecodeBackend& be;
  emu::Mode mode;
  runtime::Fp64Device* device;
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
    if (drift && fast && device && device->recurrence_fits(V, K)) return run_on_device(T, fill, drift);
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

  // run() with the shadow on the device: per block of up to kDeviceBlock tokens and kDeviceFlushes flush windows (the
  // block's backend states and state snapshots are held at once), the backend steps through every token
  // (its state read after every L-th position, as run() does), then the shadow runs the block on the device and the
  // drifts are formed from its outputs and state snapshots with the same relative_l2 calls. A divergence inside a
  // block keeps the drifts of the block's whole L-windows before it, as run() does.
  static constexpr int kDeviceBlock = 1024, kDeviceFlushes = 64;
  template <class FillFn>
  ref::LayerOutputs run_on_device(int T, FillFn&& fill, LayerDrift* drift) {
    const bool gdn = mode.arch == emu::Arch::gdn;
    const std::size_t out_per_t = static_cast<std::size_t>(H) * static_cast<std::size_t>(V);
    const std::size_t state_n = out_per_t * static_cast<std::size_t>(K), hv = static_cast<std::size_t>(V);
    const std::size_t gk = static_cast<std::size_t>(G) * static_cast<std::size_t>(K);
    const std::int64_t first = position;
    ref::LayerOutputs out;
    out.o.resize(static_cast<std::size_t>(T) * out_per_t);
    if (first == 0) {
      drift->output.clear();
      drift->steps.clear();
      drift->state.clear();
    }
    drift->output.resize(static_cast<std::size_t>(first + T), 0.0);
    StepBuffers& b = steps.front();
    std::vector<double> a, beta, v, k, q, skp, job_state(state_n), snaps;
    std::vector<float> got;  // the backend's state at each flush of the block
    for (int t0 = 0; t0 < T;) {
      // Blocks end where run()'s pieces do (multiples of L, the chunk's end), so a divergence drops the same piece.
      const std::int64_t most = std::min<std::int64_t>(kDeviceBlock, std::int64_t(kDeviceFlushes) * mode.L);
      int n = static_cast<int>(std::min<std::int64_t>(most, T - t0));
      if (t0 + n < T) {
        const int cut = n - static_cast<int>((first + t0 + n) % mode.L);
        n = cut > 0 ? cut : static_cast<int>(std::min<std::int64_t>(mode.L - (first + t0) % mode.L, T - t0));
      }
      a.assign(std::size_t(n) * H, 0.0);
      beta.assign(std::size_t(n) * H, 1.0);
      v.assign(std::size_t(n) * out_per_t, 0.0);
      skp.assign(skip ? std::size_t(n) * out_per_t : 0, 0.0);
      k.assign(std::size_t(n) * gk, 0.0);
      q.assign(std::size_t(n) * gk, 0.0);
      got.clear();
      // The tokens of the block whose shadow runs: all, or those before the piece where the outputs diverge.
      int stepped = n;
      std::int64_t diverged = -1;
      for (int i = 0; i < n; ++i) {
        const int t = t0 + i;
        fill(t, b);
        be.step(b.data.view(), o.data());
        double* dst = &out.o[static_cast<std::size_t>(t) * out_per_t];
        bool finite = true;
        for (std::size_t j = 0; j < out_per_t && finite; ++j) {
          finite = std::isfinite(o[j]);
          dst[j] = o[j];
        }
        if (!finite) {
          diverged = first + t;
          stepped = std::max(0, i - static_cast<int>((first + t) % mode.L));
          break;
        }
        std::copy(b.a.begin(), b.a.end(), a.begin() + std::ptrdiff_t(std::size_t(i) * H));
        std::copy(b.beta.begin(), b.beta.end(), beta.begin() + std::ptrdiff_t(std::size_t(i) * H));
        std::copy(b.v.begin(), b.v.end(), v.begin() + std::ptrdiff_t(std::size_t(i) * out_per_t));
        if (skip) std::copy(b.skip.begin(), b.skip.end(), skp.begin() + std::ptrdiff_t(std::size_t(i) * out_per_t));
        std::copy(b.k.begin(), b.k.end(), k.begin() + std::ptrdiff_t(std::size_t(i) * gk));
        std::copy(b.q.begin(), b.q.end(), q.begin() + std::ptrdiff_t(std::size_t(i) * gk));
        if ((first + t + 1) % mode.L == 0) {
          be.state(S.data());
          got.insert(got.end(), S.begin(), S.end());
        }
      }
      if (stepped > 0) {
        for (int h = 0; h < H; ++h)  // shadow[h] (column-major [K][V]) -> [H][V][K] row-major
          for (int c = 0; c < K; ++c)
            for (int r = 0; r < V; ++r)
              job_state[(std::size_t(h) * hv + std::size_t(r)) * std::size_t(K) + std::size_t(c)] =
                  shadow[std::size_t(h)].data()[std::size_t(c) * hv + std::size_t(r)];
        runtime::RecurrenceJob job;
        job.gdn = gdn;
        job.T = stepped, job.H = H, job.G = G, job.V = V, job.K = K;
        job.block_cols = runtime::recurrent_step_block_cols(V, K);
        job.a = a.data(), job.beta = beta.data(), job.v = v.data(), job.k = k.data(), job.q = q.data();
        job.skip = skip ? skp.data() : nullptr;
        job.state = job_state.data();
        o_ref.resize(std::size_t(stepped) * out_per_t);
        job.o = o_ref.data();
        const std::int64_t start = first + t0;
        job.snapshot_period = mode.L;
        job.snapshot_offset = static_cast<int>(start % mode.L);
        const int nsnap = runtime::snapshot_count(stepped, mode.L, job.snapshot_offset);
        snaps.resize(std::size_t(nsnap) * state_n);
        job.snapshots = snaps.data();
        device->recurrence(job);
        for (int h = 0; h < H; ++h)
          for (int c = 0; c < K; ++c)
            for (int r = 0; r < V; ++r)
              shadow[std::size_t(h)].data()[std::size_t(c) * hv + std::size_t(r)] =
                  job_state[(std::size_t(h) * hv + std::size_t(r)) * std::size_t(K) + std::size_t(c)];
        for (int i = 0; i < stepped; ++i)
          drift->output[static_cast<std::size_t>(start + i)] = relative_l2(
              o_ref.data() + std::size_t(i) * out_per_t, &out.o[std::size_t(t0 + i) * out_per_t], out_per_t);
        int f = 0;
        for (int i = 0; i < stepped; ++i) {
          if ((start + i + 1) % mode.L != 0) continue;
          const double* snap = snaps.data() + std::size_t(f) * state_n;
          const float* g = got.data() + std::size_t(f) * state_n;
          for (int h = 0; h < H; ++h)  // [H][K][V] -> (h, r, c) order, as run() compares
            for (int r = 0; r < V; ++r)
              for (int c = 0; c < K; ++c) {
                const std::size_t idx = (std::size_t(h) * hv + std::size_t(r)) * std::size_t(K) + std::size_t(c);
                S_ref[idx] = snap[(std::size_t(h) * std::size_t(K) + std::size_t(c)) * hv + std::size_t(r)];
                S_got[idx] = g[idx];
              }
          drift->steps.push_back(start + i + 1);
          drift->state.push_back(relative_l2(S_ref.data(), S_got.data(), state_n));
          ++f;
        }
      }
      if (diverged >= 0) {
        position = first + t0 + stepped;
        throw Diverged(diverged);
      }
      t0 += n;
      position = first + t0;
    }
    return out;
  }
};

ModeLayerStream::ModeLayerStream(emu::DecodeBackend& backend, const emu::Mode& mode, runtime::Fp64Device* device)
    : impl_(std::make_unique<Impl>(backend, mode, device)) {}
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
