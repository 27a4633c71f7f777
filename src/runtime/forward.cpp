#include "runtime/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/blob.h"
#include "reference/preprocess.h"
#include "runtime/gemm.h"
#include "runtime/rowwise.h"

namespace replayssm::runtime {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// X W^T (runtime/gemm.h: one fma chain per element, independent of threads, T and the device).
Mat matmul_nt(const Mat& X, const Mat& W, int threads, Fp64Device* device = nullptr) {
  Mat Y(X.rows(), W.rows());
  if (device)
    device->gemm_nt(X.data(), W.data(), Y.data(), std::size_t(X.rows()), std::size_t(W.rows()), std::size_t(X.cols()));
  else
    gemm_nt(X.data(), W.data(), Y.data(), std::size_t(X.rows()), std::size_t(W.rows()), std::size_t(X.cols()), threads);
  return Y;
}

// x * ref::sigmoid(x) with the same operations: sigmoid's two branches use exp(-x) (x >= 0) and exp(x) (x < 0), i.e.
// exp(-|x|) (for x = -0 that is exp(-0) = exp(+0) = 1), then 1 / (1 + e) or e / (1 + e). Selecting the numerator instead
// of branching avoids a mispredicted branch per element (the sign of an activation is a coin flip).
inline double sigmoid_same(double x) {
  const double e = std::exp(-std::fabs(x));
  const double num = x >= 0.0 ? 1.0 : e;
  return num / (1.0 + e);
}
double silu(double x) { return x * sigmoid_same(x); }

// fn(r0, r1) over [0, n) split into `threads` contiguous ranges (row-wise elementwise work: the split never changes
// a result).
template <class Fn>
void parallel_rows(Eigen::Index n, int threads, Fn fn) {
  const Eigen::Index nt = std::max<Eigen::Index>(1, std::min<Eigen::Index>(threads, n / 256));
  if (nt == 1) {
    fn(Eigen::Index(0), n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(nt));
  for (Eigen::Index i = 1; i < nt; ++i)
    pool.emplace_back([&, i] {
      try {
        fn(n * i / nt, n * (i + 1) / nt);
      } catch (...) {
        errors[std::size_t(i)] = std::current_exception();
      }
    });
  try {
    fn(Eigen::Index(0), n / nt);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// a <- silu(a) * b, element-wise (row blocks over threads).
template <class A, class B>
void silu_mul(A&& a, const B& b, int threads) {
  parallel_rows(a.rows(), threads, [&](Eigen::Index r0, Eigen::Index r1) {
    for (Eigen::Index t = r0; t < r1; ++t)
      for (Eigen::Index c = 0; c < a.cols(); ++c) a(t, c) = silu(a(t, c)) * b(t, c);
  });
}

// a <- a * silu(b).
void mul_silu(Mat& a, const Mat& b, int threads) {
  parallel_rows(a.rows(), threads, [&](Eigen::Index r0, Eigen::Index r1) {
    for (Eigen::Index t = r0; t < r1; ++t)
      for (Eigen::Index c = 0; c < a.cols(); ++c) a(t, c) = a(t, c) * silu(b(t, c));
  });
}

// In place: X[t, c] <- silu(bias[c] + sum_i w[c, i] X[t - (W-1) + i, c]) (zero before the sequence starts).
// Per element: s = bias[c] (or 0), then s += w[c, i] * X[src, c] for i = 0..W-1 in order (src inside the sequence),
// then silu(s). Rows before X's first come from *tail (the pre-conv rows of the positions just before X, at most
// W - 1 of them; none at the start of a sequence), which then moves on to X's last rows: the same operations per
// element whichever way the sequence is cut. The loops run over a whole row of channels at a time (vectorisable).
void conv_silu(Mat& X, const Mat& w, const Vec* bias, int threads, Mat* tail) {
  const Eigen::Index T = X.rows(), C = X.cols(), W = w.cols();
  const Mat none(0, C);
  const Mat& hist = tail && tail->cols() == C ? *tail : none;
  const Eigen::Index H = hist.rows();
  const Mat wt = w.transpose();  // [W, C]: tap i of every channel contiguous
  Mat Y(T, C);
  parallel_rows(T, threads, [&](Eigen::Index r0, Eigen::Index r1) {
    for (Eigen::Index t = r0; t < r1; ++t) {
      double* y = Y.data() + t * C;
      for (Eigen::Index c = 0; c < C; ++c) y[c] = bias ? (*bias)[c] : 0.0;
      for (Eigen::Index i = 0; i < W; ++i) {
        const Eigen::Index src = t - (W - 1) + i;
        if (src < -H) continue;
        const double* wi = wt.data() + i * C;
        const double* x = src >= 0 ? X.data() + src * C : hist.data() + (H + src) * C;
        for (Eigen::Index c = 0; c < C; ++c) y[c] += wi[c] * x[c];
      }
      for (Eigen::Index c = 0; c < C; ++c) y[c] = silu(y[c]);
    }
  });
  if (tail) {
    const Eigen::Index keep = std::min(W - 1, H + T), from_x = std::min(keep, T), from_hist = keep - from_x;
    Mat next(keep, C);
    if (from_hist > 0) next.topRows(from_hist) = hist.bottomRows(from_hist);
    if (from_x > 0) next.bottomRows(from_x) = X.bottomRows(from_x);
    tail->swap(next);
  }
  X.swap(Y);
}

// Row-wise x / sqrt(mean(x^2) + eps) * w over consecutive groups of `width` columns (w has `width` or cols entries).
void rmsnorm_groups(Mat& X, Eigen::Index width, const Vec& w, double eps, int threads = 1) {
  const bool per_col = w.size() == X.cols();
  parallel_rows(X.rows(), threads, [&](Eigen::Index r0, Eigen::Index r1) {
    for (Eigen::Index t = r0; t < r1; ++t) {
      for (Eigen::Index c0 = 0; c0 < X.cols(); c0 += width) {
        double ss = 0.0;
        for (Eigen::Index c = c0; c < c0 + width; ++c) ss += X(t, c) * X(t, c);
        const double inv = 1.0 / std::sqrt(ss / double(width) + eps);
        for (Eigen::Index c = c0; c < c0 + width; ++c) X(t, c) = X(t, c) * inv * w[per_col ? c : c - c0];
      }
    }
  });
}

Mat rmsnorm(const Mat& X, const Vec& w, double eps, int threads) {
  Mat Y = X;
  rmsnorm_groups(Y, Y.cols(), w, eps, threads);
  return Y;
}

template <class M>
std::vector<double> to_vec(const M& m) {
  std::vector<double> out(static_cast<std::size_t>(m.size()));
  Eigen::Map<Mat>(out.data(), m.rows(), m.cols()) = m;
  return out;
}

}  // namespace

ref::GdnInputs gdn_layer_inputs(const TinyModel& m, int layer, const Mat& x, Mat* z, int threads, ConvTails* tails,
                                Fp64Device* device) {
  const ModelConfig& c = m.cfg;
  const GdnWeights& w = m.layers.at(std::size_t(layer)).gdn;
  const Mat all = matmul_nt(x, w.in_fused, threads, device);
  const Eigen::Index qk = Eigen::Index(c.Hk) * c.K, vv = Eigen::Index(c.Hv) * c.V, hv = c.Hv;
  Mat q = all.middleCols(0, qk), k = all.middleCols(qk, qk), v = all.middleCols(2 * qk, vv);
  conv_silu(q, w.conv_q, nullptr, threads, tails ? &(*tails)[0] : nullptr);
  conv_silu(k, w.conv_k, nullptr, threads, tails ? &(*tails)[1] : nullptr);
  conv_silu(v, w.conv_v, nullptr, threads, tails ? &(*tails)[2] : nullptr);
  if (z) *z = all.middleCols(2 * qk + vv, vv);
  ref::GdnRawInputs raw;
  raw.T = static_cast<int>(x.rows()), raw.Hk = c.Hk, raw.Hv = c.Hv, raw.K = c.K, raw.V = c.V;
  raw.q = to_vec(q);
  raw.k = to_vec(k);
  raw.v = to_vec(v);
  raw.a = to_vec(all.middleCols(2 * qk + 2 * vv, hv));
  raw.b = to_vec(all.middleCols(2 * qk + 2 * vv + hv, hv));
  raw.A_log.assign(w.A_log.data(), w.A_log.data() + w.A_log.size());
  raw.dt_bias.assign(w.dt_bias.data(), w.dt_bias.data() + w.dt_bias.size());
  return ref::gdn_preprocess(raw, 1.0 / std::sqrt(double(c.K)), c.l2norm_eps);
}

ref::Mamba2Inputs mamba2_layer_inputs(const TinyModel& m, int layer, const Mat& x, Mat* z, int threads,
                                      ConvTails* tails, Fp64Device* device) {
  const ModelConfig& c = m.cfg;
  const Mamba2Weights& w = m.layers.at(std::size_t(layer)).mamba2;
  const Mat all = matmul_nt(x, w.in_fused, threads, device);
  const Eigen::Index di = c.d_inner, gn = Eigen::Index(c.G) * c.N;
  Mat xs = all.middleCols(di, di), B = all.middleCols(2 * di, gn), C = all.middleCols(2 * di + gn, gn);
  conv_silu(xs, w.conv_x, &w.conv_bias_x, threads, tails ? &(*tails)[0] : nullptr);
  conv_silu(B, w.conv_B, &w.conv_bias_B, threads, tails ? &(*tails)[1] : nullptr);
  conv_silu(C, w.conv_C, &w.conv_bias_C, threads, tails ? &(*tails)[2] : nullptr);
  if (z) *z = all.middleCols(0, di);
  ref::Mamba2RawInputs raw;
  raw.T = static_cast<int>(x.rows()), raw.H = c.H, raw.G = c.G, raw.P = c.P, raw.N = c.N;
  raw.x = to_vec(xs);
  raw.B = to_vec(B);
  raw.C = to_vec(C);
  raw.dt_raw = to_vec(all.middleCols(2 * di + 2 * gn, c.H));
  raw.dt_bias.assign(w.dt_bias.data(), w.dt_bias.data() + w.dt_bias.size());
  raw.A_log.assign(w.A_log.data(), w.A_log.data() + w.A_log.size());
  raw.D.assign(w.D.data(), w.D.data() + w.D.size());
  return ref::mamba2_preprocess(raw);
}

void keep_freed_memory() {
#if defined(__GLIBC__)
  if (std::getenv("REPLAYSSM_DEFAULT_MALLOC")) return;
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
  // One arena for every thread: a worker thread's own arena cannot hold a block past its 64 MiB heap size and glibc then
  // mmaps (and on free munmaps) it whatever M_MMAP_MAX says, so the sweep's parallel runs re-faulted their [T, ~1500]
  // arrays every layer (at 32768 positions x 2 jobs: 131 s of kernel time in a 590 s run). The allocations are large and
  // few, so sharing the arena's lock costs nothing measurable.
  mallopt(M_ARENA_MAX, 1);
#endif
}

namespace {

// A whole-sequence backend seen as a stream of exactly one chunk per layer.
class WholeSequence : public StreamingRecurrence {
 public:
  explicit WholeSequence(RecurrenceBackend& be) : be_(be) {}
  std::string name() const override { return be_.name(); }
  void start(int) override {}
  ref::LayerOutputs gdn_chunk(int, const ref::GdnInputs& in) override { return be_.run_gdn(in); }
  ref::LayerOutputs mamba2_chunk(int, const ref::Mamba2Inputs& in) override { return be_.run_mamba2(in); }

 private:
  RecurrenceBackend& be_;
};

}  // namespace

ForwardStream::ForwardStream(const TinyModel& m, StreamingRecurrence& rec, const ForwardOptions& opt,
                             LayerObserver observer)
    : m_(m), rec_(rec), opt_(opt), observer_(std::move(observer)), tails_(std::size_t(m.cfg.n_layers)) {
  rec_.start(m.cfg.n_layers);
}

void ForwardStream::save(std::vector<std::uint8_t>& out) const {
  BlobWriter w(out);
  w.pod(position_);
  w.pod(std::uint64_t(tails_.size()));
  for (const ConvTails& t : tails_)
    for (const Mat& x : t) {
      w.pod(std::int64_t(x.rows()));
      w.pod(std::int64_t(x.cols()));
      w.bytes(reinterpret_cast<const std::uint8_t*>(x.data()), sizeof(double) * std::size_t(x.size()));
    }
  std::vector<std::uint8_t> rec;
  rec_.save(rec);
  w.bytes(rec.data(), rec.size());
}

void ForwardStream::load(const std::uint8_t* blob, std::size_t size) {
  if (position_ != 0) throw std::logic_error("ForwardStream::load: the stream has already run");
  BlobReader r(blob, size, "forward stream checkpoint");
  const auto position = r.pod<std::int64_t>("position");
  if (position < 0) r.fail("position", "negative");
  if (r.pod<std::uint64_t>("layers") != tails_.size()) r.fail("layers", "not this model's layer count");
  std::vector<ConvTails> tails(tails_.size());
  for (ConvTails& t : tails)
    for (Mat& x : t) {
      const auto rows = r.pod<std::int64_t>("tail rows"), cols = r.pod<std::int64_t>("tail cols");
      const auto b = r.bytes("tail");
      if (rows < 0 || cols < 0 || b.second != sizeof(double) * std::size_t(rows) * std::size_t(cols))
        r.fail("tail", "shape and size disagree");
      x.resize(rows, cols);
      if (b.second) std::memcpy(x.data(), b.first, b.second);
    }
  const auto rec = r.bytes("recurrence");
  r.finish();
  rec_.load(rec.first, rec.second);
  tails_ = std::move(tails);
  position_ = position;
}

Mat ForwardStream::next(const std::uint8_t* tokens, std::size_t n) {
  if (n == 0) throw std::invalid_argument("ForwardStream: empty chunk");
  const ModelConfig& c = m_.cfg;
  const int th = std::max(1, opt_.threads);
  Fp64Device* const dev = opt_.device;
  const auto T = static_cast<Eigen::Index>(n);
  const auto t_start = Clock::now();
  double recurrence = 0.0;
  Mat h(T, c.d_model);
  for (Eigen::Index t = 0; t < T; ++t) h.row(t) = m_.embed.row(tokens[std::size_t(t)]);

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = m_.layers[std::size_t(l)];
    ConvTails* tails = &tails_[std::size_t(l)];
    Mat z, y;
    {
      const Mat x = rmsnorm(h, lw.norm1, c.norm_eps, th);
      if (c.is_gdn()) {
        const ref::GdnInputs in = gdn_layer_inputs(m_, l, x, &z, th, tails, dev);
        const auto t0 = Clock::now();
        const ref::LayerOutputs out = rec_.gdn_chunk(l, in);
        recurrence += since(t0);
        if (out.o.size() != std::size_t(T) * std::size_t(c.Hv) * std::size_t(c.V))
          throw std::runtime_error("backend " + rec_.name() + ": run_gdn returned o of the wrong size");
        if (observer_) observer_(l, &in, nullptr, out);
        y = Eigen::Map<const Mat>(out.o.data(), T, Eigen::Index(c.Hv) * c.V);
      } else {
        const ref::Mamba2Inputs in = mamba2_layer_inputs(m_, l, x, &z, th, tails, dev);
        const auto t0 = Clock::now();
        const ref::LayerOutputs out = rec_.mamba2_chunk(l, in);
        recurrence += since(t0);
        if (out.o.size() != std::size_t(T) * std::size_t(c.H) * std::size_t(c.P))
          throw std::runtime_error("backend " + rec_.name() + ": run_mamba2 returned o of the wrong size");
        if (observer_) observer_(l, nullptr, &in, out);
        y = Eigen::Map<const Mat>(out.o.data(), T, Eigen::Index(c.d_inner));
      }
    }
    if (c.is_gdn()) {
      rmsnorm_groups(y, c.V, lw.gdn.norm, c.gated_norm_eps, th);
      mul_silu(y, z, th);
      h.noalias() += matmul_nt(y, lw.gdn.out, th, dev);
    } else {
      mul_silu(y, z, th);
      rmsnorm_groups(y, c.d_inner / c.G, lw.mamba2.norm, c.gated_norm_eps, th);
      h.noalias() += matmul_nt(y, lw.mamba2.out, th, dev);
    }
    const Mat x2 = rmsnorm(h, lw.norm2, c.norm_eps, th);
    const Mat gu = matmul_nt(x2, lw.w_gate_up, th, dev);
    Mat gate = gu.leftCols(c.d_ff);
    silu_mul(gate, gu.rightCols(c.d_ff), th);
    h.noalias() += matmul_nt(gate, lw.w_down, th, dev);
  }
  Mat logits = matmul_nt(rmsnorm(h, m_.final_norm, c.norm_eps, th), m_.lm_head, th, dev);
  parallel_rows(T, th, [&](Eigen::Index r0, Eigen::Index r1) {
    for (Eigen::Index t = r0; t < r1; ++t) {
      const double mx = logits.row(t).maxCoeff();
      double s = 0.0;
      for (Eigen::Index j = 0; j < logits.cols(); ++j) s += std::exp(logits(t, j) - mx);
      const double lse = mx + std::log(s);
      logits.row(t).array() -= lse;
    }
  });
  position_ += T;
  seconds_recurrence_ += recurrence;
  seconds_dense_ += since(t_start) - recurrence;
  return logits;
}

ForwardResult teacher_force(const TinyModel& m, const std::vector<std::uint8_t>& tokens, RecurrenceBackend& backend,
                            const ForwardOptions& opt, const LayerObserver& observer) {
  if (tokens.empty()) throw std::invalid_argument("teacher_force: empty token sequence");
  WholeSequence whole(backend);
  ForwardStream stream(m, whole, opt, observer);
  ForwardResult res;
  res.logprobs = stream.next(tokens.data(), tokens.size());
  res.seconds_dense = stream.seconds_dense();
  res.seconds_recurrence = stream.seconds_recurrence();
  return res;
}

namespace rowwise {

Mat project(const Mat& X, const Mat& W, int threads) { return matmul_nt(X, W, threads); }
Mat rms_norm(const Mat& X, const Vec& w, double eps, int threads) { return rmsnorm(X, w, eps, threads); }
void rms_norm_groups(Mat& X, Eigen::Index width, const Vec& w, double eps, int threads) {
  runtime::rmsnorm_groups(X, width, w, eps, threads);
}
double silu(double x) { return runtime::silu(x); }
void silu_times(Mat& a, const Mat& b, int threads) { silu_mul(a, b, threads); }
void times_silu(Mat& a, const Mat& b, int threads) { mul_silu(a, b, threads); }

}  // namespace rowwise
}  // namespace replayssm::runtime
