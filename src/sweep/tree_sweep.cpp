// Teacher-forced tree verification through the tiny models (tree_sweep.h).
#include "sweep/tree_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "core/blob.h"
#include "core/errors.h"
#include "runtime/tree_forward.h"
#include "sweep/metrics.h"

namespace replayssm::sweep {
namespace {

constexpr int kVocab = 256;

// The shape's nodes of depth <= max_depth, in the shape's order (parents stay before their children).
ref::DraftTree cut_to_depth(const ref::DraftTree& shape, int max_depth) {
  std::vector<int> index(std::size_t(shape.size()), -1);
  ref::DraftTree out;
  for (int i = 0; i < shape.size(); ++i) {
    if (shape.depth(i) > max_depth) continue;
    const int p = shape.parent[std::size_t(i)];
    index[std::size_t(i)] = out.size();
    out.parent.push_back(p < 0 ? -1 : index[std::size_t(p)]);
  }
  return out;
}

// The true byte, then every other byte from the most to the least likely under row (ties: the lower byte first).
std::vector<std::uint8_t> ranked_alternatives(std::uint8_t truth, const double* row) {
  std::vector<int> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
  std::vector<std::uint8_t> out{truth};
  for (int b : order)
    if (b != truth) out.push_back(std::uint8_t(b));
  return out;
}

// Each SSM layer's recurrence in a decode backend of its own (the layers' states live side by side between rounds),
// fed the FP32 head-token values the chain sweep feeds (sweep/mode_recurrence.cpp: the FP64 tokens rounded to FP32).
class ModeTreeRecurrence final : public runtime::TreeRecurrence {
 public:
  ModeTreeRecurrence(const runtime::ModelConfig& c, const emu::Mode& mode) : mode_(mode) {
    const bool gdn = c.is_gdn();
    if (gdn != (mode.arch == emu::Arch::gdn)) throw std::invalid_argument("tree sweep: the mode's arch is not the model's");
    d_.B = 1;
    d_.G = gdn ? c.Hk : c.G;
    d_.H = gdn ? c.Hv : c.H;
    d_.K = gdn ? c.K : c.N;
    d_.V = gdn ? c.V : c.P;
    for (int l = 0; l < c.n_layers; ++l) {
      layers_.push_back(emu::make_emulated_backend());
      layers_.back()->init(d_, mode_, nullptr);
    }
  }
  std::string name() const override { return "mode " + mode_.name(); }

  std::vector<double> verify(int layer, const std::vector<std::vector<ref::HeadToken>>& toks,
                             const std::vector<int>& parents) override {
    const int T = int(parents.size()), H = d_.H, G = d_.G, V = d_.V, K = d_.K;
    const bool skip = toks.front().front().skip.size() != 0;
    emu::TokenData in;
    in.B = 1, in.T = T;
    in.a.resize(std::size_t(T) * H);
    in.beta.resize(mode_.arch == emu::Arch::gdn ? std::size_t(T) * H : 0);
    in.v.resize(std::size_t(T) * H * V);
    in.skip.resize(skip ? std::size_t(T) * H * V : 0);
    in.k.resize(std::size_t(T) * G * K);
    in.q.resize(std::size_t(T) * G * K);
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h) {
        const ref::HeadToken& tk = toks[std::size_t(h)][std::size_t(t)];
        const std::size_t th = std::size_t(t) * H + h;
        in.a[th] = float(tk.a);
        if (!in.beta.empty()) in.beta[th] = float(tk.beta);
        for (int i = 0; i < V; ++i) {
          in.v[th * V + i] = float(tk.v[i]);
          if (skip) in.skip[th * V + i] = float(tk.skip[i]);
        }
        if (h % (H / G) != 0) continue;  // k, q belong to the key head / group, which its first value head carries
        const std::size_t tg = (std::size_t(t) * G + std::size_t(h / (H / G))) * K;
        for (int i = 0; i < K; ++i) {
          in.k[tg + i] = float(tk.k[i]);
          in.q[tg + i] = float(tk.q[i]);
        }
      }
    std::vector<float> o(std::size_t(T) * H * V);
    layers_.at(std::size_t(layer))->verify_tree(in.view(), parents.data(), o.data());
    return std::vector<double>(o.begin(), o.end());
  }

  void accept_path(int node) override {
    for (auto& be : layers_) be->accept_path(&node);
  }

  void save(std::vector<std::uint8_t>& out) const override {
    BlobWriter w(out);
    w.pod(std::uint64_t(layers_.size()));
    std::vector<std::uint8_t> blob;
    for (const auto& be : layers_) {
      blob.clear();
      be->save(blob);
      w.bytes(blob.data(), blob.size());
    }
  }
  void load(const std::uint8_t* blob, std::size_t size) override {
    BlobReader r(blob, size, "tree mode recurrence checkpoint");
    if (r.pod<std::uint64_t>("layers") != layers_.size()) r.fail("layers", "not this model's layer count");
    for (auto& be : layers_) {
      const auto b = r.bytes("layer");
      be->load(b.first, b.second);
    }
    r.finish();
  }

 private:
  emu::Mode mode_;
  emu::Dims d_;
  std::vector<std::unique_ptr<emu::DecodeBackend>> layers_;
};

// The bin of 0-based position t under 1-based edges, or -1 past the last.
int bin_of(std::int64_t t, const std::vector<std::int64_t>& edges) {
  for (std::size_t b = 0; b + 1 < edges.size(); ++b)
    if (t + 1 >= edges[b] && t + 1 < edges[b + 1]) return int(b);
  return -1;
}

void bin_branches(TreeBranches& br, const std::vector<std::int64_t>& edges, std::int64_t diverged_at) {
  const std::size_t bins = edges.size() - 1;
  std::vector<double> sum(bins, 0.0), mx(bins, 0.0), agree(bins, 0.0), n(bins, 0.0);
  for (std::size_t i = 0; i < br.kl.size(); ++i) {
    const int b = bin_of(br.position[i], edges);
    if (b < 0) continue;
    sum[std::size_t(b)] += br.kl[i];
    mx[std::size_t(b)] = std::max(mx[std::size_t(b)], br.kl[i]);
    agree[std::size_t(b)] += br.top1[i];
    n[std::size_t(b)] += 1.0;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  br.kl_binned.clear();
  br.flip_rate_binned.clear();
  for (std::size_t b = 0; b < bins; ++b) {
    // A diverged run has no branches to count from the divergence on: those bins are NaN, not 0.
    const bool lost = diverged_at >= 0 && edges[b + 1] - 1 > diverged_at;
    br.kl_binned.push_back(lost ? nan : n[b] > 0 ? sum[b] / n[b] : 0.0);
    br.kl_binned.push_back(lost ? nan : mx[b]);
    br.flip_rate_binned.push_back(lost ? nan : n[b] > 0 ? 1.0 - agree[b] / n[b] : 0.0);
  }
}

// A tree run's checkpoint: the evaluate_run file layout with the committed position, the accepted path's metrics so
// far, and as the stream blob the next round's index, the branches so far and the forward pass's blob.
void save_tree_run(const RunCheckpointing& ck, std::size_t next_round, std::int64_t position,
                   const runtime::TreeForward& fwd, const RunResult& r, const TreeBranches& br) {
  RunCheckpointData d;
  d.position = position;
  const auto upto = std::ptrdiff_t(position);
  d.kl.assign(r.kl.begin(), r.kl.begin() + upto);
  d.nll.assign(r.nll.begin(), r.nll.begin() + upto);
  d.top1.assign(r.top1.begin(), r.top1.begin() + upto);
  BlobWriter w(d.stream);
  w.pod(std::uint64_t(next_round));
  w.vec(br.position);
  w.vec(br.kl);
  w.vec(br.top1);
  std::vector<std::uint8_t> f;
  fwd.save(f);
  w.bytes(f.data(), f.size());
  write_run_checkpoint(ck.path, ck.key, d);
}

// The first round to run: 0, or the one after a matching checkpoint, whose state goes into fwd, r and br.
std::size_t resume_tree_run(const RunCheckpointing& ck, const std::string& run_id, const std::vector<TreeRound>& rounds,
                            runtime::TreeForward& fwd, RunResult& r, TreeBranches& br) {
  std::string why;
  std::optional<RunCheckpointData> from = read_run_checkpoint(ck.path, ck.key, &why);
  std::size_t next = 0;
  if (from) {
    try {
      BlobReader b(from->stream.data(), from->stream.size(), "tree run checkpoint");
      next = std::size_t(b.pod<std::uint64_t>("round"));
      if (next >= rounds.size() || rounds[next].start != from->position ||
          from->kl.size() != std::size_t(from->position))
        b.fail("round", "not a round boundary of this run's rounds");
      br.position = b.vec<std::int64_t>("branch positions");
      br.kl = b.vec<double>("branch kl");
      br.top1 = b.vec<double>("branch top1");
      if (br.kl.size() != br.position.size() || br.top1.size() != br.position.size())
        b.fail("branches", "lengths differ");
      const auto f = b.bytes("forward");
      b.finish();
      fwd.load(f.first, f.second);
    } catch (const std::invalid_argument& e) {
      throw input_error(ck.path, "stream", e.what());
    }
    std::copy(from->kl.begin(), from->kl.end(), r.kl.begin());
    std::copy(from->nll.begin(), from->nll.end(), r.nll.begin());
    std::copy(from->top1.begin(), from->top1.end(), r.top1.begin());
  }
  if (ck.note && from)
    ck.note("run " + run_id + " resumes at position " + std::to_string(from->position));
  else if (ck.note && !why.empty())
    ck.note("run " + run_id + ": checkpoint " + ck.path + " ignored (" + why + ")");
  return next;
}

}  // namespace

std::vector<TreeRound> plan_tree_rounds(const ref::DraftTree& shape, const TextSlice& text,
                                        const std::vector<double>& logp_ref) {
  shape.validate();
  const std::int64_t T = text.tokens;
  if (logp_ref.size() < std::size_t(T) * kVocab || text.bytes.size() < std::size_t(T) + 1)
    throw std::invalid_argument("plan_tree_rounds: log-probs or bytes shorter than the slice");
  std::vector<TreeRound> rounds;
  for (std::int64_t start = 0; start < T;) {
    TreeRound r;
    r.start = start;
    const ref::DraftTree tree =
        start == 0 ? ref::DraftTree::chain(1) : cut_to_depth(shape, int(std::min<std::int64_t>(T - start, 1 << 20)));
    r.parents = tree.parent;
    std::vector<int> children(r.parents.size() + 1, 0);  // per parent (index + 1): children seen so far
    std::vector<std::vector<std::uint8_t>> byte_of_depth;  // per depth: the true byte, then the runner-ups
    for (int i = 0; i < tree.size(); ++i) {
      const int p = r.parents[std::size_t(i)], d = p < 0 ? 1 : r.depth[std::size_t(p)] + 1;
      const int c = children[std::size_t(p + 1)]++;
      const std::int64_t pos = start + d - 1;  // the text position of this depth
      if (int(byte_of_depth.size()) < d) {
        const std::uint8_t truth = text.bytes[std::size_t(pos)];
        byte_of_depth.push_back(pos == 0 ? std::vector<std::uint8_t>{truth}
                                         : ranked_alternatives(truth, &logp_ref[std::size_t(pos - 1) * kVocab]));
      }
      r.depth.push_back(d);
      r.tokens.push_back(byte_of_depth[std::size_t(d - 1)].at(std::size_t(c)));
      r.on_path.push_back(c == 0 && (p < 0 || r.on_path[std::size_t(p)]) ? 1 : 0);
      if (r.on_path.back() && (r.accept < 0 || d > r.depth[std::size_t(r.accept)])) r.accept = i;
    }
    start += r.depth[std::size_t(r.accept)];
    rounds.push_back(std::move(r));
  }
  return rounds;
}

std::vector<std::vector<double>> tree_reference_logp(const runtime::TinyModel& model,
                                                     const std::vector<TreeRound>& rounds) {
  const auto rec = runtime::make_reference_tree_recurrence(model.cfg);
  runtime::TreeForward fwd(model, *rec);
  std::vector<std::vector<double>> out;
  for (const TreeRound& r : rounds) {
    const runtime::Mat lp = fwd.verify(r.tokens, r.parents);
    out.emplace_back(lp.data(), lp.data() + lp.size());
    fwd.accept_path(r.accept);
  }
  return out;
}

TreeRunResult evaluate_tree_run(const RunSpec& spec, const runtime::TinyModel& model, const TextSlice& text,
                                const std::string& shape_text, const std::vector<TreeRound>& rounds,
                                const std::vector<std::vector<double>>& logp_ref_tree,
                                const std::vector<std::int64_t>& edges, const RunCheckpointing* checkpoints) {
  if (logp_ref_tree.size() != rounds.size())
    throw std::invalid_argument("evaluate_tree_run: one reference per round expected");
  const auto t0 = std::chrono::steady_clock::now();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto T = std::size_t(text.tokens);
  TreeRunResult res;
  RunResult& r = res.run;
  TreeBranches& br = res.branches;
  r.kl.assign(T, nan);
  r.nll.assign(T, nan);
  r.top1.assign(T, nan);
  br.shape = shape_text;
  br.rounds = std::int64_t(rounds.size());
  emu::Mode mode = spec.mode;
  for (const TreeRound& rd : rounds) {
    mode.max_drafts = std::max(mode.max_drafts, int(rd.parents.size()));
    br.nodes = std::max(br.nodes, int(rd.parents.size()));
    br.depth = std::max(br.depth, *std::max_element(rd.depth.begin(), rd.depth.end()));
  }
  ModeTreeRecurrence rec(model.cfg, mode);
  runtime::TreeForward fwd(model, rec);
  std::size_t first_round = 0;
  if (checkpoints && checkpoints->resume) first_round = resume_tree_run(*checkpoints, spec.id, rounds, fwd, r, br);
  std::int64_t diverged_at = -1, saved = first_round < rounds.size() ? rounds[first_round].start : 0;
  for (std::size_t k = first_round; k < rounds.size(); ++k) {
    const TreeRound& rd = rounds[k];
    const runtime::Mat lp = fwd.verify(rd.tokens, rd.parents);
    if (!lp.allFinite()) {
      diverged_at = rd.start;
      break;
    }
    const int n = int(rd.parents.size());
    std::vector<std::uint8_t> targets;
    for (int i = 0; i < n; ++i) targets.push_back(text.bytes[std::size_t(rd.start + rd.depth[std::size_t(i)])]);
    const PositionMetrics m =
        compare_distributions(logp_ref_tree[k], std::vector<double>(lp.data(), lp.data() + lp.size()), targets, n, kVocab);
    for (int i = 0; i < n; ++i) {
      const auto at = std::size_t(i);
      const std::int64_t pos = rd.start + rd.depth[at] - 1;
      if (rd.on_path[at]) {
        r.kl[std::size_t(pos)] = m.kl[at];
        r.nll[std::size_t(pos)] = m.nll[at];
        r.top1[std::size_t(pos)] = m.top1[at];
      } else {
        br.position.push_back(pos);
        br.kl.push_back(m.kl[at]);
        br.top1.push_back(m.top1[at]);
      }
    }
    fwd.accept_path(rd.accept);
    // Between rounds, not after the last (the run's result file follows at once and replaces the checkpoint).
    if (checkpoints && checkpoints->every > 0 && k + 1 < rounds.size() &&
        rounds[k + 1].start - saved >= checkpoints->every) {
      save_tree_run(*checkpoints, k + 1, rounds[k + 1].start, fwd, r, br);
      saved = rounds[k + 1].start;
    }
  }
  r.id = spec.id;
  r.index = spec.index;
  r.kl_binned = binned_stats(r.kl, edges);
  r.flip_rate_binned = binned_flip_rate(r.top1, edges);
  r.first_flip = first_flip(r.top1);
  const int V = model.cfg.is_gdn() ? model.cfg.V : model.cfg.P, K = model.cfg.is_gdn() ? model.cfg.K : model.cfg.N;
  r.bytes_per_element = bytes_per_state_element(spec.mode.format, spec.mode.scaling, V, K);
  r.capacity_vs_fp32 = 4.0 / r.bytes_per_element;
  r.layers = 0;  // layer drift is the chain sweep's: a tree round has no single sequence to shadow
  r.attrs = run_attrs(spec, text.id, diverged_at);
  bin_branches(br, edges, diverged_at);
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

void write_tree_branches(h5::File& f, const std::string& g, const TreeBranches& b) {
  const std::size_t N = b.kl.size(), bins = b.flip_rate_binned.size();
  f.write(g + "/branch_position", {N}, b.position.data());
  f.write(g + "/branch_kl", {N}, b.kl.data());
  f.write(g + "/branch_top1", {N}, b.top1.data());
  f.write(g + "/branch_kl_binned", {bins, std::size_t(kBranchStats)}, b.kl_binned.data());
  f.write(g + "/branch_flip_rate_binned", {bins}, b.flip_rate_binned.data());
  f.set_attr(g, "branch_kl_binned_columns", "mean,max");
  f.set_attr(g, "tree", b.shape);
  f.set_attr(g, "tree_nodes", b.nodes);
  f.set_attr(g, "tree_depth", b.depth);
  f.set_attr(g, "tree_rounds", b.rounds);
}

TreeBranches read_tree_branches(const h5::File& f, const std::string& g) {
  TreeBranches b;
  auto pos = f.read_i64(g + "/branch_position");
  h5::require_shape(f, g + "/branch_position", pos.shape, {0});
  const std::size_t N = pos.dim(0);
  auto kl = f.read_f64(g + "/branch_kl"), top1 = f.read_f64(g + "/branch_top1");
  auto kb = f.read_f64(g + "/branch_kl_binned", false), fr = f.read_f64(g + "/branch_flip_rate_binned", false);
  h5::require_shape(f, g + "/branch_kl", kl.shape, {N});
  h5::require_shape(f, g + "/branch_top1", top1.shape, {N});
  h5::require_shape(f, g + "/branch_kl_binned", kb.shape, {0, std::size_t(kBranchStats)});
  h5::require_shape(f, g + "/branch_flip_rate_binned", fr.shape, {kb.dim(0)});
  b.position = std::move(pos.data);
  b.kl = std::move(kl.data);
  b.top1 = std::move(top1.data);
  b.kl_binned = std::move(kb.data);
  b.flip_rate_binned = std::move(fr.data);
  b.shape = f.attr_string(g, "tree");
  b.nodes = int(f.attr_int(g, "tree_nodes"));
  b.depth = int(f.attr_int(g, "tree_depth"));
  b.rounds = f.attr_int(g, "tree_rounds");
  return b;
}

}  // namespace replayssm::sweep
