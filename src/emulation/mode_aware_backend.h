#pragma once
// The mode-aware FP64 reference (reference/mode_aware.h) of a whole batch behind the backend interface, with the FP64
// entry points run_mode_aware (validation.cpp) compares a backend against. Internal to src/emulation.
#include <Eigen/Core>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "emulation/decode_api.h"
#include "emulation/decode_math.h"
#include "reference/mode_aware.h"

namespace replayssm::emu::detail {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Token t of value head h of sequence b from a TokenBatch, as the emulation reads it (EmulatedBackend::token), in FP64.
inline ref::HeadToken batch_head_token(const Dims& d, const TokenBatch& in, int b, int t, int h) {
  const std::size_t bt = std::size_t(b) * std::size_t(in.T) + std::size_t(t);
  const std::size_t g = std::size_t(h / (d.H / d.G));
  const std::size_t hv = bt * std::size_t(d.H) + std::size_t(h);
  ref::HeadToken tok;
  tok.a = double(in.a[hv]);
  tok.beta = in.beta ? double(in.beta[hv]) : 1.0;
  tok.v = Eigen::Map<const Eigen::VectorXf>(in.v + hv * std::size_t(d.V), d.V).cast<double>();
  tok.k = Eigen::Map<const Eigen::VectorXf>(in.k + (bt * std::size_t(d.G) + g) * std::size_t(d.K), d.K).cast<double>();
  tok.q = Eigen::Map<const Eigen::VectorXf>(in.q + (bt * std::size_t(d.G) + g) * std::size_t(d.K), d.K).cast<double>();
  if (in.skip) tok.skip = Eigen::Map<const Eigen::VectorXf>(in.skip + hv * std::size_t(d.V), d.V).cast<double>();
  return tok;
}

inline ref::ModeAwareSpec spec_of(const Mode& m, const Dims& d) {
  ref::ModeAwareSpec s;
  s.recurrence = m.arch == Arch::gdn ? ref::Recurrence::kGdn : ref::Recurrence::kMamba2;
  s.policy = m.policy == Policy::conventional_shared ? ref::StorePolicy::kConventionalShared
             : m.policy == Policy::replay_shared     ? ref::StorePolicy::kReplayShared
                                                     : ref::StorePolicy::kReplaySplit;
  s.usource = m.usource == USource::hp ? ref::SplitUSource::kHp
              : m.usource == USource::lp ? ref::SplitUSource::kLp
                                         : ref::SplitUSource::kRecompute;
  s.V = d.V;
  s.K = d.K;
  // BF16 records: the FP64 value rounded to FP32 (what the emulation's record sees), then the shared record rounding
  if (m.bf16_records()) s.record_value = [](double x) { return double(record_value(float(x), true)); };
  s.L = m.L;
  s.max_drafts = m.max_drafts;
  return s;
}

// The mode-aware reference of every head of a batch behind the backend interface. Each head's store encodes with the
// shared codecs (encode_head / decode_head) under the head index b H + h and the sequence's token index, as the
// emulation does; its codes are what stored() returns (flips taken over by run_mode_aware change the decoded copy
// only).
class ModeAwareReference final : public DecodeBackend {
 public:
  std::string name() const override { return "mode-aware-fp64"; }
  std::string device() const override { return "cpu (FP64 mode-aware reference)"; }

  void init(const Dims& d, const Mode& m, const float* S0) override { start(d, m, S0, 0); }
  // sr_offset: added to the SR step of every token store (mutation tests; 0 otherwise).
  void start(const Dims& d, const Mode& m, const float* S0, std::uint32_t sr_offset) {
    check_mode(m, d);
    d_ = d;
    m_ = m;
    sr_offset_ = sr_offset;
    lay_ = store_layout(m, d.V, d.K);
    const std::size_t nh = d.heads(), VK = std::size_t(d.V) * std::size_t(d.K);
    codes_.assign(nh * lay_.code_bytes, 0);
    scales_.assign(nh * lay_.scale_bytes, 0);
    tok_.assign(std::size_t(d.B), 0);
    pendingT_ = 0;
    tree_ = ref::DraftTree{};
    heads_.clear();
    const ref::ModeAwareSpec spec = spec_of(m, d);
    for (std::size_t hh = 0; hh < nh; ++hh) {
      const Eigen::MatrixXd S = S0 ? Eigen::MatrixXd(Eigen::Map<const RowMajorF>(S0 + hh * VK, d.V, d.K).cast<double>())
                                   : Eigen::MatrixXd::Zero(d.V, d.K);
      ref::StoreFn store = [this, hh](const float* x, std::uint32_t step, float* out) {
        const std::uint32_t st = step == ref::kInitStoreStep ? kInitStep : step + sr_offset_;
        std::uint8_t* c = codes_.data() + hh * lay_.code_bytes;
        std::uint8_t* sc = scales_.data() + hh * lay_.scale_bytes;
        // in place: the head's stored state is the previous one (none at init's store)
        if (step == ref::kInitStoreStep)
          encode_head(m_, x, d_.V, d_.K, std::uint32_t(hh), st, c, sc);
        else
          encode_head(m_, x, d_.V, d_.K, std::uint32_t(hh), st, c, sc, c, sc);
        decode_head(m_, c, sc, d_.V, d_.K, out);
      };
      heads_.push_back(ref::make_mode_aware_head(spec, S, std::move(store)));
    }
  }

  void step64(const TokenBatch& in, double* o) {
    if (heads_.empty()) throw std::logic_error("mode-aware reference: init() first");
    if (pendingT_ != 0) throw std::logic_error("mode-aware reference: accept() the pending verify first");
    if (in.T != 1) throw std::invalid_argument("mode-aware reference: step needs T = 1");
    for (int b = 0; b < d_.B; ++b) {
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * std::size_t(d_.H) + std::size_t(h);
        const Eigen::VectorXd oh = heads_[hh]->step(batch_head_token(d_, in, b, 0, h), std::uint32_t(tok_[std::size_t(b)]));
        for (int r = 0; r < d_.V; ++r) o[hh * std::size_t(d_.V) + std::size_t(r)] = oh[r];
      }
      ++tok_[std::size_t(b)];
    }
  }
  void verify64(const TokenBatch& in, double* o) {
    if (heads_.empty()) throw std::logic_error("mode-aware reference: init() first");
    if (pendingT_ != 0) throw std::logic_error("mode-aware reference: accept() the pending verify first");
    const int T = in.T;
    if (T < 1 || T > m_.max_drafts) throw std::invalid_argument("mode-aware reference: verify T out of range");
    for (int b = 0; b < d_.B; ++b)
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * std::size_t(d_.H) + std::size_t(h);
        std::vector<ref::HeadToken> drafts;
        for (int i = 0; i < T; ++i) drafts.push_back(batch_head_token(d_, in, b, i, h));
        put_drafts(heads_[hh]->verify(drafts, std::uint32_t(tok_[std::size_t(b)])), b, h, T, o);
      }
    pendingT_ = T;
  }
  // Tree verify: the same tree (parents) for every sequence; node i's token index is tok + depth(i) - 1.
  void verify_tree64(const TokenBatch& in, const int* parents, double* o) {
    if (heads_.empty()) throw std::logic_error("mode-aware reference: init() first");
    if (pendingT_ != 0) throw std::logic_error("mode-aware reference: accept the pending verify first");
    const int T = in.T;
    if (T < 1 || T > m_.max_drafts) throw std::invalid_argument("mode-aware reference: verify_tree T out of range");
    tree_depths(parents, T);  // checks the parents
    const ref::DraftTree tree{std::vector<int>(parents, parents + T)};
    for (int b = 0; b < d_.B; ++b)
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * std::size_t(d_.H) + std::size_t(h);
        std::vector<ref::HeadToken> drafts;
        for (int i = 0; i < T; ++i) drafts.push_back(batch_head_token(d_, in, b, i, h));
        put_drafts(heads_[hh]->verify_tree(drafts, tree, std::uint32_t(tok_[std::size_t(b)])), b, h, T, o);
      }
    pendingT_ = T;
    tree_ = tree;
  }
  void verify_tree(const TokenBatch& in, const int* parents, float* o) override {
    std::vector<double> o64(d_.heads() * std::size_t(in.T) * std::size_t(d_.V));
    verify_tree64(in, parents, o64.data());
    std::transform(o64.begin(), o64.end(), o, [](double x) { return float(x); });
  }
  void accept_path(const int* node) override {
    if (pendingT_ == 0 || !tree_.size()) throw std::logic_error("mode-aware reference: accept_path without a tree");
    for (int b = 0; b < d_.B; ++b) {
      const int depth = tree_.depth(node[b]);  // throws for a node out of range
      for (int h = 0; h < d_.H; ++h) heads_[std::size_t(b) * std::size_t(d_.H) + std::size_t(h)]->accept_path(node[b]);
      tok_[std::size_t(b)] += depth;
    }
    pendingT_ = 0;
    tree_ = ref::DraftTree{};
  }

  void state64(double* S) const {
    const std::size_t VK = std::size_t(d_.V) * std::size_t(d_.K);
    for (std::size_t hh = 0; hh < heads_.size(); ++hh) {
      const Eigen::MatrixXd M = heads_[hh]->state();
      for (int r = 0; r < d_.V; ++r)
        for (int c = 0; c < d_.K; ++c) S[hh * VK + std::size_t(r) * std::size_t(d_.K) + std::size_t(c)] = M(r, c);
    }
  }

  void step(const TokenBatch& in, float* o) override {
    std::vector<double> o64(d_.heads() * std::size_t(d_.V));
    step64(in, o64.data());
    std::transform(o64.begin(), o64.end(), o, [](double x) { return float(x); });
  }
  void verify(const TokenBatch& in, float* o) override {
    std::vector<double> o64(d_.heads() * std::size_t(in.T) * std::size_t(d_.V));
    verify64(in, o64.data());
    std::transform(o64.begin(), o64.end(), o, [](double x) { return float(x); });
  }
  void accept(const int* accepted) override {
    if (pendingT_ == 0) throw std::logic_error("mode-aware reference: accept without a verify");
    for (int b = 0; b < d_.B; ++b) {
      const int a = accepted[b];
      if (a < 0 || a > pendingT_) throw std::invalid_argument("mode-aware reference: accepted length out of range");
      for (int h = 0; h < d_.H; ++h) heads_[std::size_t(b) * std::size_t(d_.H) + std::size_t(h)]->accept(a);
      tok_[std::size_t(b)] += a;
    }
    pendingT_ = 0;
  }
  void state(float* S) override {
    std::vector<double> s64(d_.state_elems());
    state64(s64.data());
    std::transform(s64.begin(), s64.end(), S, [](double x) { return float(x); });
  }
  void stored(std::vector<std::uint8_t>& c, std::vector<std::uint8_t>& s) override {
    c = codes_;
    s = scales_;
  }
  long flushes() const override {
    long f = 0;
    for (int b = 0; b < d_.B; ++b) f += heads_[std::size_t(b) * std::size_t(d_.H)]->flushes();
    return f;
  }

  ref::ModeAwareHead& head(std::size_t hh) { return *heads_[hh]; }
  std::size_t n_heads() const { return heads_.size(); }
  // Head hh's stored bytes become the checked backend's (a stateful format after a flip taken over: the next store
  // reads the residual of the code the reference continues from, not of its own neighbouring code).
  void adopt_stored(std::size_t hh, const std::uint8_t* codes, const std::uint8_t* scales) {
    std::copy(codes, codes + lay_.code_bytes, codes_.data() + hh * lay_.code_bytes);
    std::copy(scales, scales + lay_.scale_bytes, scales_.data() + hh * lay_.scale_bytes);
  }

 private:
  // Draft outputs of head (b, h) into o [B][T][H][V].
  void put_drafts(const std::vector<Eigen::VectorXd>& outs, int b, int h, int T, double* o) const {
    for (int i = 0; i < T; ++i)
      for (int r = 0; r < d_.V; ++r)
        o[((std::size_t(b) * std::size_t(T) + std::size_t(i)) * std::size_t(d_.H) + std::size_t(h)) *
              std::size_t(d_.V) +
          std::size_t(r)] = outs[std::size_t(i)][r];
  }

  Dims d_;
  Mode m_;
  std::uint32_t sr_offset_ = 0;
  StoreLayout lay_;
  std::vector<std::uint8_t> codes_, scales_;
  std::vector<std::unique_ptr<ref::ModeAwareHead>> heads_;
  std::vector<long> tok_;
  int pendingT_ = 0;
  ref::DraftTree tree_;  // the pending tree verify's tree
};

}  // namespace replayssm::emu::detail
