// The tiny model over draft trees (tree_forward.h). The layer's projected rows of all nodes come from one product; the
// conv, the recurrence inputs and the recurrence follow each node's root path; the rest is row-wise.
#include "runtime/tree_forward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/blob.h"
#include "reference/preprocess.h"
#include "reference/tree_verify.h"
#include "runtime/rowwise.h"

namespace replayssm::runtime {
namespace {

// Columns [c0, c0 + n) of the rows a node's conv reads: rows of `tail` (committed, oldest first), then of `nodes`.
struct History {
  const Mat& tail;
  const Mat& nodes;
  std::vector<const double*> rows;  // the node's history, oldest first, itself last
  void of(const std::vector<int>& path) {
    rows.clear();
    for (Eigen::Index r = 0; r < tail.rows(); ++r) rows.push_back(tail.data() + r * tail.cols());
    for (int j : path) rows.push_back(nodes.data() + Eigen::Index(j) * nodes.cols());
  }
};

// teacher_force's causal conv + silu (forward.cpp: conv_silu) on columns [c0, c0 + n) of every node, tap i reading the
// node's history entry (W-1-i) back from itself; an entry before the first byte is skipped, as there.
Mat conv_silu_paths(const Mat& tail, const Mat& nodes, const std::vector<std::vector<int>>& paths, Eigen::Index c0,
                    Eigen::Index n, const Mat& w, const Vec* bias) {
  const Eigen::Index W = w.cols();
  Mat Y(Eigen::Index(paths.size()), n);
  History hist{tail, nodes, {}};
  for (std::size_t i = 0; i < paths.size(); ++i) {
    hist.of(paths[i]);
    double* y = Y.data() + Eigen::Index(i) * n;
    for (Eigen::Index c = 0; c < n; ++c) y[c] = bias ? (*bias)[c] : 0.0;
    const auto len = Eigen::Index(hist.rows.size());
    for (Eigen::Index tap = 0; tap < W; ++tap) {
      const Eigen::Index at = len - W + tap;
      if (at < 0) continue;
      const double* x = hist.rows[std::size_t(at)] + c0;
      for (Eigen::Index c = 0; c < n; ++c) y[c] += w(c, tap) * x[c];
    }
    for (Eigen::Index c = 0; c < n; ++c) y[c] = rowwise::silu(y[c]);
  }
  return Y;
}

template <class M>
std::vector<double> flat(const M& m) {
  std::vector<double> out(std::size_t(m.size()));
  Eigen::Map<Mat>(out.data(), m.rows(), m.cols()) = m;
  return out;
}

// The recurrence's tokens [H][T] of a layer's inputs.
template <class Inputs, class TokenFn>
std::vector<std::vector<ref::HeadToken>> head_tokens(const Inputs& in, int heads, TokenFn token) {
  std::vector<std::vector<ref::HeadToken>> toks(static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < in.T; ++t) toks[std::size_t(h)].push_back(token(in, t, h));
  return toks;
}

class ReferenceTreeRecurrence final : public TreeRecurrence {
 public:
  explicit ReferenceTreeRecurrence(const ModelConfig& c)
      : rec_(c.is_gdn() ? ref::Recurrence::kGdn : ref::Recurrence::kMamba2),
        heads_(c.is_gdn() ? c.Hv : c.H),
        committed_(std::size_t(c.n_layers),
                   std::vector<Eigen::MatrixXd>(std::size_t(heads_), Eigen::MatrixXd::Zero(c.is_gdn() ? c.V : c.P,
                                                                                           c.is_gdn() ? c.K : c.N))),
        nodes_(std::size_t(c.n_layers)) {}
  std::string name() const override { return "reference-fp64"; }

  std::vector<double> verify(int layer, const std::vector<std::vector<ref::HeadToken>>& tokens,
                             const std::vector<int>& parents) override {
    const auto& S0 = committed_.at(std::size_t(layer));
    auto& nodes = nodes_[std::size_t(layer)];
    const std::size_t T = parents.size(), V = std::size_t(S0.front().rows());
    nodes.assign(T * std::size_t(heads_), Eigen::MatrixXd());
    std::vector<double> o(T * std::size_t(heads_) * V);
    for (int h = 0; h < heads_; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        const int p = parents[i];
        Eigen::MatrixXd S = p < 0 ? S0[std::size_t(h)] : nodes[std::size_t(p) * std::size_t(heads_) + std::size_t(h)];
        const Eigen::VectorXd oi = ref::recurrent_step(rec_, S, tokens[std::size_t(h)][i]);
        std::copy(oi.data(), oi.data() + V, o.begin() + std::ptrdiff_t((i * std::size_t(heads_) + std::size_t(h)) * V));
        nodes[i * std::size_t(heads_) + std::size_t(h)] = std::move(S);
      }
    return o;
  }

  void accept_path(int node) override {
    for (std::size_t l = 0; l < committed_.size(); ++l) {
      if (node >= 0)
        for (int h = 0; h < heads_; ++h)
          committed_[l][std::size_t(h)] = nodes_[l].at(std::size_t(node) * std::size_t(heads_) + std::size_t(h));
      nodes_[l].clear();
    }
  }

 private:
  ref::Recurrence rec_;
  int heads_;
  std::vector<std::vector<Eigen::MatrixXd>> committed_;  // [layer][head]
  std::vector<std::vector<Eigen::MatrixXd>> nodes_;      // [layer][node * heads + head] of the pending verify
};

}  // namespace

void TreeRecurrence::save(std::vector<std::uint8_t>&) const {
  throw std::runtime_error("tree recurrence " + name() + ": checkpoints not supported");
}
void TreeRecurrence::load(const std::uint8_t*, std::size_t) {
  throw std::runtime_error("tree recurrence " + name() + ": checkpoints not supported");
}

std::unique_ptr<TreeRecurrence> make_reference_tree_recurrence(const ModelConfig& cfg) {
  return std::make_unique<ReferenceTreeRecurrence>(cfg);
}

TreeForward::TreeForward(const TinyModel& m, TreeRecurrence& recurrence, int threads)
    : m_(m), rec_(recurrence), threads_(std::max(1, threads)), tail_(std::size_t(m.cfg.n_layers)),
      pending_(std::size_t(m.cfg.n_layers)) {}

Mat TreeForward::verify(const std::vector<std::uint8_t>& tokens, const std::vector<int>& parents) {
  const ref::DraftTree tree{parents};
  tree.validate();
  if (tokens.size() != parents.size())
    throw std::invalid_argument("tree forward: " + std::to_string(tokens.size()) + " tokens for a " +
                                std::to_string(parents.size()) + "-node tree");
  const ModelConfig& c = m_.cfg;
  const int th = threads_;
  const auto T = Eigen::Index(tokens.size());
  std::vector<std::vector<int>> paths;
  for (int i = 0; i < tree.size(); ++i) paths.push_back(tree.path(i));
  Mat h(T, c.d_model);
  for (Eigen::Index t = 0; t < T; ++t) h.row(t) = m_.embed.row(tokens[std::size_t(t)]);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = m_.layers[std::size_t(l)];
    const Mat& tail = tail_[std::size_t(l)];
    Mat& all = pending_[std::size_t(l)];
    const bool gdn = c.is_gdn();
    all = rowwise::project(rowwise::rms_norm(h, lw.norm1, c.norm_eps, th), gdn ? lw.gdn.in_fused : lw.mamba2.in_fused,
                           th);
    auto conv = [&](Eigen::Index c0, Eigen::Index n, const Mat& w, const Vec* bias) {
      return flat(conv_silu_paths(tail, all, paths, c0, n, w, bias));
    };
    Mat y, z;
    if (gdn) {
      // gdn_layer_inputs' column layout: q, k, v (conv), z, a, b
      const Eigen::Index qk = Eigen::Index(c.Hk) * c.K, vv = Eigen::Index(c.Hv) * c.V, hv = c.Hv;
      ref::GdnRawInputs raw;
      raw.T = int(T), raw.Hk = c.Hk, raw.Hv = c.Hv, raw.K = c.K, raw.V = c.V;
      raw.q = conv(0, qk, lw.gdn.conv_q, nullptr);
      raw.k = conv(qk, qk, lw.gdn.conv_k, nullptr);
      raw.v = conv(2 * qk, vv, lw.gdn.conv_v, nullptr);
      z = all.middleCols(2 * qk + vv, vv);
      raw.a = flat(all.middleCols(2 * qk + 2 * vv, hv));
      raw.b = flat(all.middleCols(2 * qk + 2 * vv + hv, hv));
      raw.A_log.assign(lw.gdn.A_log.data(), lw.gdn.A_log.data() + lw.gdn.A_log.size());
      raw.dt_bias.assign(lw.gdn.dt_bias.data(), lw.gdn.dt_bias.data() + lw.gdn.dt_bias.size());
      const ref::GdnInputs in = ref::gdn_preprocess(raw, 1.0 / std::sqrt(double(c.K)), c.l2norm_eps);
      const std::vector<double> o = rec_.verify(l, head_tokens(in, c.Hv, ref::gdn_head_token), parents);
      y = Eigen::Map<const Mat>(o.data(), T, vv);
      rowwise::rms_norm_groups(y, c.V, lw.gdn.norm, c.gated_norm_eps, th);
      rowwise::times_silu(y, z, th);
      h.noalias() += rowwise::project(y, lw.gdn.out, th);
    } else {
      // mamba2_layer_inputs' column layout: z, x, B, C (conv), dt
      const Eigen::Index di = c.d_inner, gn = Eigen::Index(c.G) * c.N;
      ref::Mamba2RawInputs raw;
      raw.T = int(T), raw.H = c.H, raw.G = c.G, raw.P = c.P, raw.N = c.N;
      raw.x = conv(di, di, lw.mamba2.conv_x, &lw.mamba2.conv_bias_x);
      raw.B = conv(2 * di, gn, lw.mamba2.conv_B, &lw.mamba2.conv_bias_B);
      raw.C = conv(2 * di + gn, gn, lw.mamba2.conv_C, &lw.mamba2.conv_bias_C);
      z = all.middleCols(0, di);
      raw.dt_raw = flat(all.middleCols(2 * di + 2 * gn, c.H));
      raw.dt_bias.assign(lw.mamba2.dt_bias.data(), lw.mamba2.dt_bias.data() + lw.mamba2.dt_bias.size());
      raw.A_log.assign(lw.mamba2.A_log.data(), lw.mamba2.A_log.data() + lw.mamba2.A_log.size());
      raw.D.assign(lw.mamba2.D.data(), lw.mamba2.D.data() + lw.mamba2.D.size());
      const ref::Mamba2Inputs in = ref::mamba2_preprocess(raw);
      const std::vector<double> o = rec_.verify(l, head_tokens(in, c.H, ref::mamba2_head_token), parents);
      y = Eigen::Map<const Mat>(o.data(), T, di);
      rowwise::times_silu(y, z, th);
      rowwise::rms_norm_groups(y, c.d_inner / c.G, lw.mamba2.norm, c.gated_norm_eps, th);
      h.noalias() += rowwise::project(y, lw.mamba2.out, th);
    }
    const Mat gu = rowwise::project(rowwise::rms_norm(h, lw.norm2, c.norm_eps, th), lw.w_gate_up, th);
    Mat gate = gu.leftCols(c.d_ff);
    rowwise::silu_times(gate, gu.rightCols(c.d_ff), th);
    h.noalias() += rowwise::project(gate, lw.w_down, th);
  }
  Mat logp = rowwise::project(rowwise::rms_norm(h, m_.final_norm, c.norm_eps, th), m_.lm_head, th);
  for (Eigen::Index t = 0; t < T; ++t) {  // teacher_force's log-softmax, row by row
    const double mx = logp.row(t).maxCoeff();
    double s = 0.0;
    for (Eigen::Index j = 0; j < logp.cols(); ++j) s += std::exp(logp(t, j) - mx);
    logp.row(t).array() -= mx + std::log(s);
  }
  parents_ = parents;
  return logp;
}

void TreeForward::accept_path(int node) {
  if (parents_.empty()) throw std::logic_error("tree forward: accept_path without a pending verify");
  const std::vector<int> path = ref::DraftTree{parents_}.path(node);  // throws for a node out of range
  rec_.accept_path(node);
  const Eigen::Index keep = m_.cfg.conv_kernel - 1;
  for (std::size_t l = 0; l < tail_.size(); ++l) {
    const Mat& nodes = pending_[l];
    Mat& tail = tail_[l];
    const Eigen::Index rows = std::min<Eigen::Index>(keep, tail.rows() + Eigen::Index(path.size()));
    Mat next(rows, nodes.cols());
    // the newest `rows` of tail + path, oldest first
    Eigen::Index r = rows - 1;
    for (auto it = path.rbegin(); it != path.rend() && r >= 0; ++it, --r) next.row(r) = nodes.row(*it);
    for (Eigen::Index t = tail.rows() - 1; t >= 0 && r >= 0; --t, --r) next.row(r) = tail.row(t);
    tail.swap(next);
  }
  committed_ += std::int64_t(path.size());
  parents_.clear();
}

void TreeForward::save(std::vector<std::uint8_t>& out) const {
  if (!parents_.empty()) throw std::logic_error("tree forward: save with a verify pending");
  BlobWriter w(out);
  w.pod(committed_);
  w.pod(std::uint64_t(tail_.size()));
  for (const Mat& t : tail_) {
    w.pod(std::int64_t(t.rows()));
    w.pod(std::int64_t(t.cols()));
    w.vec(std::vector<double>(t.data(), t.data() + t.size()));
  }
  std::vector<std::uint8_t> rec;
  rec_.save(rec);
  w.bytes(rec.data(), rec.size());
}

void TreeForward::load(const std::uint8_t* blob, std::size_t size) {
  if (committed_ != 0 || !parents_.empty()) throw std::logic_error("tree forward: load after a verify");
  BlobReader r(blob, size, "tree forward checkpoint");
  const auto committed = r.pod<std::int64_t>("committed");
  if (committed < 0) r.fail("committed", "negative");
  if (r.pod<std::uint64_t>("layers") != tail_.size()) r.fail("layers", "not this model's layer count");
  std::vector<Mat> tails;
  for (std::size_t l = 0; l < tail_.size(); ++l) {
    const auto rows = r.pod<std::int64_t>("tail rows"), cols = r.pod<std::int64_t>("tail cols");
    if (rows < 0 || rows > m_.cfg.conv_kernel || cols < 0 || cols > (1 << 20)) r.fail("tail", "shape out of range");
    const std::vector<double> v = r.vec<double>("tail");
    if (v.size() != std::size_t(rows * cols)) r.fail("tail", "size does not match its shape");
    tails.emplace_back(Eigen::Map<const Mat>(v.data(), rows, cols));
  }
  const auto rec = r.bytes("recurrence");
  r.finish();
  rec_.load(rec.first, rec.second);
  tail_ = std::move(tails);
  committed_ = committed;
}

}  // namespace replayssm::runtime
