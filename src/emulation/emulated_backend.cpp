// The CPU emulation of the decode kernels: the same algorithms, stores and per-element formulas
// (decode_math.h) as kernels/, one head at a time, FP32 throughout. See decode_math.h for the accumulation order.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "emulation/decode_api.h"
#include "emulation/emulated_state.h"
#include "emulation/flush_rule.h"
#include "emulation/decode_math.h"
#include "emulation/fast_dot.h"

namespace replayssm::emu {
namespace {

class EmulatedBackend final : public DecodeBackend, private EmulatedState {
 public:
  std::string name() const override { return "emulated"; }
  std::string device() const override { return "cpu (emulated)"; }

  void init(const Dims& d, const Mode& m, const float* S0) override {
    check_mode(m, d);
    d_ = d;
    m_ = m;
    lay_ = store_layout(m, d.V, d.K);
    const std::size_t nh = d.heads(), VK = std::size_t(d.V) * d.K, cap = std::size_t(m.capacity());
    codes_.assign(nh * lay_.code_bytes, 0);
    scales_.assign(nh * lay_.scale_bytes, 0);
    hp_.assign(m.split() ? nh * VK : 0, 0.0f);
    snap_codes_.assign(m.replay() ? 0 : nh * m.max_drafts * lay_.code_bytes, 0);
    snap_scales_.assign(m.replay() ? 0 : nh * m.max_drafts * lay_.scale_bytes, 0);
    ra_.assign(m.replay() ? nh * cap : 0, 0.0f);
    rbeta_.assign(m.replay() ? nh * cap : 0, 0.0f);
    rk_.assign(m.replay() ? nh * cap * d.K : 0, 0.0f);
    rw_.assign(m.replay() ? nh * cap * d.V : 0, 0.0f);
    rv_.assign(m.recompute() ? nh * cap * d.V : 0, 0.0f);
    ck_.assign(m.replay() ? nh * VK : 0, 0.0f);
    work_.assign(VK, 0.0f);
    node_S_.assign(m.replay() ? 0 : std::size_t(m.max_drafts) * VK, 0.0f);
    pa_.assign(m.replay() ? cap : 0, 0.0f);
    pk_.assign(m.replay() ? cap * d.K : 0, 0.0f);
    pw_.assign(m.replay() ? cap * d.V : 0, 0.0f);
    win_G_.assign(cap + 1, 0.0f);
    win_d_.assign(cap + 1, 0.0f);
    win_c_.assign(cap + 1, 0.0f);
    row_x_.assign(std::size_t(d.V), 0.0f);
    row_y_.assign(std::size_t(d.V), 0.0f);
    dot_ = canonical_dot_fn();
    pdot_ = canonical_dot_prepared_fns();
    prep_k_.assign(std::size_t(d.K), 0.0f);
    prep_q_.assign(std::size_t(d.K), 0.0f);
    n_.assign(std::size_t(d.B), 0);
    tok_.assign(std::size_t(d.B), 0);
    pendingT_ = 0;
    tree_.clear();
    flushes_ = 0;
    std::vector<float> zero;
    if (!S0) zero.assign(VK, 0.0f);
    for (std::size_t hh = 0; hh < nh; ++hh) {
      const float* s = S0 ? S0 + hh * VK : zero.data();
      encode_head(m_, s, d.V, d.K, uint32_t(hh), kInitStep, codes(hh), scales(hh));
      if (m.split()) std::copy(s, s + VK, hp(hh));
      if (m.replay()) refresh_ckpt(hh);
    }
  }

  void step(const TokenBatch& in, float* o) override {
    require_ready("step", in, 1);
    for (int b = 0; b < d_.B; ++b) {
      const int need_early = m_.replay() && flushes_early(n_[b], 1, m_.capacity());
      bool flushed = false;
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * d_.H + h;
        const Tok t = token(in, b, 0, h);
        float* oh = o + hh * d_.V;
        if (!m_.replay()) {
          conv_chain(hh, &t, 1, oh, uint32_t(tok_[b]), /*snapshots=*/false);
        } else {
          if (need_early) flush_window(hh, n_[b], uint32_t(tok_[b]), nullptr, nullptr);
          const int n = need_early ? 0 : n_[b];
          append(hh, n, t);
          const int m = n + 1;
          if (step_fills_window(n, m_.L)) {
            flush_window(hh, m, uint32_t(tok_[b]), &t, oh);
            flushed = true;
          } else {
            replay_output(hh, m, t, oh);
          }
        }
      }
      if (m_.replay()) {
        if (need_early) n_[b] = 0, ++flushes_;
        n_[b] = window_after_step(n_[b], m_.L);
        if (flushed) ++flushes_;
      }
      ++tok_[b];
    }
  }

  void verify(const TokenBatch& in, float* o) override {
    require_ready("verify", in, in.T);
    if (in.T > m_.max_drafts) throw std::invalid_argument("verify: T exceeds max_drafts");
    const int T = in.T;
    for (int b = 0; b < d_.B; ++b) {
      const bool early = m_.replay() && flushes_early(n_[b], T, m_.capacity());
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * d_.H + h;
        std::vector<Tok> toks(static_cast<std::size_t>(T));
        for (int i = 0; i < T; ++i) toks[std::size_t(i)] = token(in, b, i, h);
        if (!m_.replay()) {
          // o [B][T][H][V]
          std::vector<float> ob(std::size_t(T) * d_.V);
          conv_chain(hh, toks.data(), T, ob.data(), uint32_t(tok_[b]), /*snapshots=*/true);
          for (int i = 0; i < T; ++i)
            std::copy(ob.begin() + std::ptrdiff_t(i) * d_.V, ob.begin() + std::ptrdiff_t(i + 1) * d_.V,
                      o + ((std::size_t(b) * T + i) * d_.H + h) * d_.V);
        } else {
          if (early) flush_window(hh, n_[b], uint32_t(tok_[b]), nullptr, nullptr);
          const int n = early ? 0 : n_[b];
          for (int i = 0; i < T; ++i) {
            append(hh, n + i, toks[std::size_t(i)]);
            replay_output(hh, n + i + 1, toks[std::size_t(i)], o + ((std::size_t(b) * T + i) * d_.H + h) * d_.V);
          }
        }
      }
      if (early) n_[b] = 0, ++flushes_;
    }
    pendingT_ = T;
  }

  void accept(const int* accepted) override {
    if (pendingT_ == 0) throw std::logic_error("accept: no verify pending");
    if (!tree_.empty()) throw std::logic_error("accept: the pending verify is a tree's (accept_path)");
    for (int b = 0; b < d_.B; ++b) {
      const int a = accepted[b];
      if (a < 0 || a > pendingT_) throw std::invalid_argument("accept: accepted length out of range");
      if (!m_.replay()) {
        if (a > 0)
          for (int h = 0; h < d_.H; ++h) restore_snapshot(std::size_t(b) * d_.H + h, a - 1);
      } else {
        n_[b] += a;
      }
      tok_[b] += a;
    }
    pendingT_ = 0;
  }

  void verify_tree(const TokenBatch& in, const int* parents, float* o) override {
    require_ready("verify_tree", in, in.T);
    if (in.T > m_.max_drafts) throw std::invalid_argument("verify_tree: T exceeds max_drafts");
    const int T = in.T;
    const std::vector<int> depth = tree_depths(parents, T);
    std::vector<std::vector<int>> paths;
    for (int i = 0; i < T; ++i) paths.push_back(tree_path(parents, i));
    for (int b = 0; b < d_.B; ++b) {
      const bool early = m_.replay() && flushes_early(n_[b], T, m_.capacity());
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * d_.H + h;
        const auto out = [&](int i) { return o + ((std::size_t(b) * T + i) * d_.H + h) * d_.V; };
        if (!m_.replay()) {
          conv_tree(hh, in, b, h, parents, depth, uint32_t(tok_[b]), out);
          continue;
        }
        if (early) flush_window(hh, n_[b], uint32_t(tok_[b]), nullptr, nullptr);
        const int n = early ? 0 : n_[b];
        gather_window(hh, n);
        for (int i = 0; i < T; ++i) tree_node(hh, n, i, paths[std::size_t(i)], token(in, b, i, h), out(i));
      }
      if (early) n_[b] = 0, ++flushes_;
    }
    pendingT_ = T;
    tree_.assign(parents, parents + T);
  }

  void accept_path(const int* node) override {
    if (pendingT_ == 0 || tree_.empty()) throw std::logic_error("accept_path: no tree verify pending");
    for (int b = 0; b < d_.B; ++b)
      if (node[b] < -1 || node[b] >= pendingT_) throw std::invalid_argument("accept_path: node out of range");
    for (int b = 0; b < d_.B; ++b) {
      const std::vector<int> path = tree_path(tree_.data(), node[b]);
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * d_.H + h;
        if (!m_.replay()) {
          if (node[b] >= 0) restore_snapshot(hh, node[b]);
        } else {
          for (std::size_t d = 0; d < path.size(); ++d)
            if (path[d] != int(d)) move_record(hh, n_[b] + path[d], n_[b] + int(d));
        }
      }
      if (m_.replay()) n_[b] += int(path.size());
      tok_[b] += int(path.size());
    }
    pendingT_ = 0;
    tree_.clear();
  }

  void state(float* S) override {
    const std::size_t VK = std::size_t(d_.V) * d_.K;
    for (int b = 0; b < d_.B; ++b)
      for (int h = 0; h < d_.H; ++h) {
        const std::size_t hh = std::size_t(b) * d_.H + h;
        float* out = S + hh * VK;
        if (!m_.replay()) {
          decode_head(m_, codes(hh), scales(hh), d_.V, d_.K, out);
        } else {
          // What a flush now would write (on copies of the buffer: recompute must not change later outputs).
          const std::size_t cap = std::size_t(m_.capacity());
          std::vector<float> w_save(rw_.begin() + std::ptrdiff_t(hh * cap * d_.V),
                                    rw_.begin() + std::ptrdiff_t((hh + 1) * cap * d_.V));
          materialise(hh, n_[b], out);
          std::copy(w_save.begin(), w_save.end(), rw_.begin() + std::ptrdiff_t(hh * cap * d_.V));
        }
      }
  }

  void stored(std::vector<std::uint8_t>& c, std::vector<std::uint8_t>& s) override {
    c = codes_;
    s = scales_;
  }
  long flushes() const override { return flushes_; }

  // Scratch (work_, node_S_, the path and window buffers, prepared vectors) is rewritten before every read: the
  // EmulatedState members carry everything else.
  void save(std::vector<std::uint8_t>& out) const override { save_state(out, name()); }
  void load(const std::uint8_t* blob, std::size_t size) override { load_state(blob, size, name()); }

 private:
  struct Tok {
    float a, beta;
    const float *v, *k, *q, *skip;
  };

  // Conventional: the store becomes snapshot `slot` of head hh.
  void restore_snapshot(std::size_t hh, int slot) {
    const std::size_t s = hh * m_.max_drafts + std::size_t(slot);
    std::memcpy(codes(hh), snap_codes_.data() + s * lay_.code_bytes, lay_.code_bytes);
    if (lay_.scale_bytes)  // unscaled formats: no scale buffer (memcpy from a null pointer is UB even for 0)
      std::memcpy(scales(hh), snap_scales_.data() + s * lay_.scale_bytes, lay_.scale_bytes);
  }

  void require_ready(const char* what, const TokenBatch& in, int T) const {
    if (codes_.empty() && lay_.code_bytes == 0) throw std::logic_error(std::string(what) + ": init() first");
    if (pendingT_ != 0) throw std::logic_error(std::string(what) + ": accept() the pending verify first");
    if (in.T != T || T < 1) throw std::invalid_argument(std::string(what) + ": bad T");
    if (m_.arch == Arch::gdn && !in.beta) throw std::invalid_argument(std::string(what) + ": GDN needs beta");
  }

  Tok token(const TokenBatch& in, int b, int t, int h) const {
    const std::size_t bt = std::size_t(b) * in.T + t;
    const int g = h / (d_.H / d_.G);
    Tok tk;
    tk.a = in.a[bt * d_.H + h];
    tk.beta = in.beta ? in.beta[bt * d_.H + h] : 1.0f;
    tk.v = in.v + (bt * d_.H + h) * d_.V;
    tk.k = in.k + (bt * d_.G + g) * d_.K;
    tk.q = in.q + (bt * d_.G + g) * d_.K;
    tk.skip = in.skip ? in.skip + (bt * d_.H + h) * d_.V : nullptr;
    return tk;
  }

  std::uint8_t* codes(std::size_t hh) { return codes_.data() + hh * lay_.code_bytes; }
  std::uint8_t* scales(std::size_t hh) { return scales_.data() + hh * lay_.scale_bytes; }
  float* hp(std::size_t hh) { return hp_.data() + hh * std::size_t(d_.V) * d_.K; }
  std::size_t cap() const { return std::size_t(m_.capacity()); }
  float* rec_a(std::size_t hh) { return ra_.data() + hh * cap(); }
  float* rec_beta(std::size_t hh) { return rbeta_.data() + hh * cap(); }
  float* rec_k(std::size_t hh) { return rk_.data() + hh * cap() * d_.K; }
  float* rec_w(std::size_t hh) { return rw_.data() + hh * cap() * d_.V; }
  float* rec_v(std::size_t hh) { return rv_.data() + hh * cap() * d_.V; }

  // The checkpoint that serves outputs: the F store (shared) or the LP copy (split), decoded. It changes only at
  // init and flushes, so it is decoded there (refresh_ckpt) instead of at every step: the same values.
  const float* out_ckpt(std::size_t hh) const { return ck_.data() + hh * std::size_t(d_.V) * d_.K; }
  void refresh_ckpt(std::size_t hh) {
    decode_head(m_, codes(hh), scales(hh), d_.V, d_.K, ck_.data() + hh * std::size_t(d_.V) * d_.K);
  }
  // The checkpoint that carries the recurrence: HP under split, the F store otherwise.
  const float* rec_ckpt(std::size_t hh) { return m_.split() ? hp(hh) : out_ckpt(hh); }

  // Conventional: T tokens from the stored state, FP32 in between; each step's state is quantised into the
  // store (step) or snapshot i (verify). o is [T][V].
  void conv_chain(std::size_t hh, const Tok* toks, int T, float* o, std::uint32_t tok0, bool snapshots) {
    const int V = d_.V, K = d_.K;
    std::vector<float>& S = work_;
    decode_head(m_, codes(hh), scales(hh), V, K, S.data());
    for (int i = 0; i < T; ++i) {
      conv_token(S.data(), toks[i], o + std::size_t(i) * V);
      if (snapshots) {
        const std::size_t slot = hh * m_.max_drafts + std::size_t(i);
        // a snapshot replaces the committed store at accept: that store is its previous state
        encode_head(m_, S.data(), V, K, uint32_t(hh), tok0 + uint32_t(i), codes(hh), scales(hh),
                    snap_codes_.data() + slot * lay_.code_bytes, snap_scales_.data() + slot * lay_.scale_bytes);
      } else {
        encode_head(m_, S.data(), V, K, uint32_t(hh), tok0 + uint32_t(i), codes(hh), scales(hh), codes(hh),
                    scales(hh));
      }
    }
  }

  // One conventional step of token t on the FP32 state S ([V][K], in place); o [V] reads the updated state.
  void conv_token(float* S, const Tok& t, float* o) {
    const int V = d_.V, K = d_.K;
    float *pk = prep_k_.data(), *pq = prep_q_.data();
    if (m_.arch == Arch::gdn) pdot_.prepare(t.k, K, pk);
    pdot_.prepare(t.q, K, pq);
    for (int r = 0; r < V; ++r) {
      float* row = S + std::size_t(r) * K;
      for (int c = 0; c < K; ++c) row[c] = conv_decay(t.a, row[c]);
      const float w = m_.arch == Arch::gdn ? gdn_u(t.beta, t.v[r], pdot_.dot_prepared(row, pk, K)) : t.v[r];
      for (int c = 0; c < K; ++c) row[c] = conv_update(w, t.k[c], row[c]);
      o[r] = add_skip(pdot_.dot_prepared(row, pq, K), t.skip, r);
    }
  }

  // Conventional tree verify: node i's FP32 state is its parent's (the decoded store for a root child) stepped by
  // token i, quantised into snapshot i with the SR step of its token index (tok0 + depth - 1); nothing is re-quantised
  // between nodes.
  template <class Out>
  void conv_tree(std::size_t hh, const TokenBatch& in, int b, int h, const int* parents, const std::vector<int>& depth,
                 std::uint32_t tok0, const Out& out) {
    const int V = d_.V, K = d_.K;
    const std::size_t VK = std::size_t(V) * K;
    decode_head(m_, codes(hh), scales(hh), V, K, work_.data());
    for (int i = 0; i < int(depth.size()); ++i) {
      float* S = node_S_.data() + std::size_t(i) * VK;
      const float* from = parents[i] < 0 ? work_.data() : node_S_.data() + std::size_t(parents[i]) * VK;
      std::copy(from, from + VK, S);
      conv_token(S, token(in, b, i, h), out(i));
      const std::size_t slot = hh * m_.max_drafts + std::size_t(i);
      encode_head(m_, S, V, K, uint32_t(hh), tok0 + uint32_t(depth[std::size_t(i)] - 1), codes(hh), scales(hh),
                  snap_codes_.data() + slot * lay_.code_bytes, snap_scales_.data() + slot * lay_.scale_bytes);
    }
  }

  // GDN: w_i (= u_i) of record i from checkpoint S (rows [V][K]) and records 0..i-1; writes rec_w row i.
  void gdn_record_u(std::size_t hh, const float* S, int i, float beta, const float* v) {
    gdn_u_from(rec_a(hh), rec_k(hh), rec_w(hh), S, i, beta, v, rec_w(hh) + std::size_t(i) * d_.V);
  }
  // The same over any record arrays (a [m], rk [m][K], rw [m][V]): u of record i into u [V].
  void gdn_u_from(const float* a, const float* rk, const float* rw, const float* S, int i, float beta, const float* v,
                  float* u) {
    const int V = d_.V, K = d_.K;
    const float* k = rk + std::size_t(i) * K;
    float *G = win_G_.data(), *d = win_d_.data(), *coef = win_c_.data();
    const float total = window_gammas(a, i + 1, G);
    float* pk = prep_k_.data();
    pdot_.prepare(k, K, pk);
    for (int j = 0; j < i; ++j) d[std::size_t(j)] = pdot_.dot_prepared(rk + std::size_t(j) * K, pk, K);
    window_coefs(G, d, i, coef);
    float *sck = row_x_.data(), *ask = row_y_.data();
    for (int r = 0; r < V; ++r) sck[r] = pdot_.dot_prepared(S + std::size_t(r) * K, pk, K);
    window_sum_rows(total, sck, coef, rw, V, i, V, ask);  // = window_sum(total, sck[r], coef, rw, V, r, i) per row
    for (int r = 0; r < V; ++r) u[r] = record_value(gdn_u(beta, v[r], ask[r]), m_.bf16_records());
  }

  // A record vector into the buffer, in the mode's record format.
  void store_vec(const float* x, int n, float* dst) const {
    for (int e = 0; e < n; ++e) dst[e] = record_value(x[e], m_.bf16_records());
  }
  // Appends token t as record i (0-based) of head hh's window.
  void append(std::size_t hh, int i, const Tok& t) {
    const int V = d_.V, K = d_.K;
    rec_a(hh)[i] = t.a;
    rec_beta(hh)[i] = t.beta;
    store_vec(t.k, K, rec_k(hh) + std::size_t(i) * K);
    if (m_.recompute()) store_vec(t.v, V, rec_v(hh) + std::size_t(i) * V);
    if (m_.arch == Arch::mamba2) {
      store_vec(t.v, V, rec_w(hh) + std::size_t(i) * V);
      return;
    }
    // u source: shared -> the F checkpoint; split -> HP (u=hp) or the LP copy (u=lp, and u=recompute between flushes)
    const float* S = m_.split() && m_.usource == USource::hp ? hp(hh) : out_ckpt(hh);
    gdn_record_u(hh, S, i, t.beta, t.v);
  }

  // Non-flush output over the first m records, from the output checkpoint.
  void replay_output(std::size_t hh, int m, const Tok& t, float* o) {
    replay_output_from(rec_a(hh), rec_k(hh), rec_w(hh), out_ckpt(hh), m, t, o);
  }
  // The same over any record arrays (a [m], rk [m][K], rw [m][V]) and checkpoint S.
  void replay_output_from(const float* a, const float* rk, const float* rw, const float* S, int m, const Tok& t,
                          float* o) {
    const int V = d_.V, K = d_.K;
    float *G = win_G_.data(), *d = win_d_.data(), *coef = win_c_.data();
    const float total = window_gammas(a, m, G);
    float* pq = prep_q_.data();
    pdot_.prepare(t.q, K, pq);
    for (int j = 0; j < m; ++j) d[std::size_t(j)] = pdot_.dot_prepared(rk + std::size_t(j) * K, pq, K);
    window_coefs(G, d, m, coef);
    float *scq = row_x_.data(), *y = row_y_.data();
    for (int r = 0; r < V; ++r) scq[r] = pdot_.dot_prepared(S + std::size_t(r) * K, pq, K);
    window_sum_rows(total, scq, coef, rw, V, m, V, y);  // = window_sum(total, scq[r], coef, w, V, r, m) per row
    for (int r = 0; r < V; ++r) o[r] = add_skip(y[r], t.skip, r);
  }

  // Tree verify, replay: the path scratch (pa_, pk_, pw_) holds the window's n records, then those of one node's root
  // path; node i's u and output are the chain's formulas over it (copies of the records: the same values and bits).
  void gather_window(std::size_t hh, int n) {
    const int V = d_.V, K = d_.K;
    std::copy(rec_a(hh), rec_a(hh) + n, pa_.data());
    std::copy(rec_k(hh), rec_k(hh) + std::size_t(n) * K, pk_.data());
    std::copy(rec_w(hh), rec_w(hh) + std::size_t(n) * V, pw_.data());
  }
  // Node i of a tree (root path `path`, ending in i): its record goes to slot n + i, its u (GDN) reads the window and
  // its ancestors' records, its output the window and its whole path.
  void tree_node(std::size_t hh, int n, int i, const std::vector<int>& path, const Tok& t, float* o) {
    const int V = d_.V, K = d_.K;
    const int slot = n + i, m = n + int(path.size());
    rec_a(hh)[slot] = t.a;
    rec_beta(hh)[slot] = t.beta;
    store_vec(t.k, K, rec_k(hh) + std::size_t(slot) * K);
    if (m_.recompute()) store_vec(t.v, V, rec_v(hh) + std::size_t(slot) * V);
    for (std::size_t d = 0; d < path.size(); ++d) {
      const std::size_t src = std::size_t(n + path[d]), dst = std::size_t(n) + d;
      pa_[dst] = rec_a(hh)[src];
      std::copy(rec_k(hh) + src * K, rec_k(hh) + (src + 1) * K, pk_.data() + dst * K);
      if (d + 1 < path.size()) std::copy(rec_w(hh) + src * V, rec_w(hh) + (src + 1) * V, pw_.data() + dst * V);
    }
    float* w = rec_w(hh) + std::size_t(slot) * V;
    if (m_.arch == Arch::mamba2) {
      store_vec(t.v, V, w);
    } else {
      // u source as append(): shared -> the F checkpoint; split -> HP (u=hp) or the LP copy (u=lp, u=recompute)
      const float* S = m_.split() && m_.usource == USource::hp ? hp(hh) : out_ckpt(hh);
      gdn_u_from(pa_.data(), pk_.data(), pw_.data(), S, m - 1, t.beta, t.v, w);
    }
    std::copy(w, w + V, pw_.data() + std::size_t(m - 1) * V);
    replay_output_from(pa_.data(), pk_.data(), pw_.data(), out_ckpt(hh), m, t, o);
  }
  // Accepting a path: record `from` of head hh is copied to slot `to` (every field a flush or recompute reads).
  void move_record(std::size_t hh, int from, int to) {
    const int V = d_.V, K = d_.K;
    rec_a(hh)[to] = rec_a(hh)[from];
    rec_beta(hh)[to] = rec_beta(hh)[from];
    std::copy(rec_k(hh) + std::size_t(from) * K, rec_k(hh) + std::size_t(from + 1) * K, rec_k(hh) + std::size_t(to) * K);
    std::copy(rec_w(hh) + std::size_t(from) * V, rec_w(hh) + std::size_t(from + 1) * V, rec_w(hh) + std::size_t(to) * V);
    if (m_.recompute())
      std::copy(rec_v(hh) + std::size_t(from) * V, rec_v(hh) + std::size_t(from + 1) * V,
                rec_v(hh) + std::size_t(to) * V);
  }

  // S_{c+m} from the recurrence checkpoint and the first m records (recompute: u's re-derived from HP first).
  void materialise(std::size_t hh, int m, float* out) {
    const int V = d_.V, K = d_.K;
    const float* S = rec_ckpt(hh);
    if (m_.recompute())
      for (int i = 0; i < m; ++i) gdn_record_u(hh, S, i, rec_beta(hh)[i], rec_v(hh) + std::size_t(i) * V);
    float *G = win_G_.data(), *rowcoef = win_c_.data();
    const float total = window_gammas(rec_a(hh), m, G);
    const float* rw = rec_w(hh);
    const float* rk = rec_k(hh);
    for (int r = 0; r < V; ++r) {
      for (int j = 0; j < m; ++j) rowcoef[std::size_t(j)] = REPLAYSSM_MUL(G[std::size_t(j)], rw[std::size_t(j) * V + r]);
      // = window_state_elem(total, S[r][c], rowcoef, rk + c, K, m) for every column c
      window_state_row(total, S + std::size_t(r) * K, rowcoef, rk, K, m, K, out + std::size_t(r) * K);
    }
  }

  // Flush: materialise the window of m records, write the checkpoint (HP + LP under split); with a token, also
  // its output from the new state.
  void flush_window(std::size_t hh, int m, std::uint32_t tok, const Tok* t, float* o) {
    const int V = d_.V, K = d_.K;
    std::vector<float>& S = work_;
    materialise(hh, m, S.data());
    if (t)
      for (int r = 0; r < V; ++r) o[r] = add_skip(dot_(S.data() + std::size_t(r) * K, t->q, K), t->skip, r);
    if (m_.split()) std::copy(S.begin(), S.end(), hp(hh));
    encode_head(m_, S.data(), V, K, uint32_t(hh), tok, codes(hh), scales(hh), codes(hh), scales(hh));
    refresh_ckpt(hh);
  }

  std::vector<float> work_;                    // one head state of scratch (conventional chain, flush)
  std::vector<float> node_S_;                  // conventional tree verify: the FP32 state of every node of one head
  std::vector<float> pa_, pk_, pw_;            // replay tree verify: window + one root path's records (a, k, w)
  std::vector<float> win_G_, win_d_, win_c_;   // window decays, dots and coefficients (capacity + 1)
  std::vector<float> row_x_, row_y_;           // per-row values of one head ([V])
  DotFn dot_ = canonical_dot_fn();
  PreparedDot pdot_ = canonical_dot_prepared_fns();  // one vector against many rows
  std::vector<float> prep_k_, prep_q_;                // k_t / q_t arranged for pdot_ ([K])
};

}  // namespace

std::unique_ptr<DecodeBackend> make_emulated_backend() { return std::make_unique<EmulatedBackend>(); }

}  // namespace replayssm::emu
