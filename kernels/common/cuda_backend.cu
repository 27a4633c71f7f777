// The CUDA DecodeBackend: owns the device stores (same layout as the emulation's), uploads each op's inputs,
// launches kernels/{gdn,mamba2} and keeps the per-sequence window length and token count on the host (the host
// decides early flushes and accepts, exactly as the emulation does). Each op's kernels follow the launch plan
// (kernels/launch_plan.h) under the backend's plan override; launch_plans() lists the plans that ran.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/blob.h"
#include "emulation/decode_math.h"
#include "emulation/device_backend.h"
#include "emulation/flush_rule.h"
#include "kernels/common/decode_kernel.h"
#include "kernels/common/device_probe.h"

namespace replayssm::kern {
namespace {

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

template <class T>
struct DevBuf {
  using value_type = T;
  T* p = nullptr;
  std::size_t n = 0;
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() { cudaFree(p); }
  void alloc(std::size_t count) {
    if (count == n && p) return;
    cudaFree(p);
    p = nullptr;
    n = count;
    if (count) ck(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
  }
  void zero() {
    if (n) ck(cudaMemset(p, 0, n * sizeof(T)), "cudaMemset");
  }
  void upload(const T* src, std::size_t count) {
    alloc(count);
    if (count) ck(cudaMemcpy(p, src, count * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  void download(T* dst, std::size_t count) const {
    if (count) ck(cudaMemcpy(dst, p, count * sizeof(T), cudaMemcpyDeviceToHost), "download");
  }
};

class CudaBackend final : public emu::DecodeBackend {
 public:
  CudaBackend(std::string dev, PlanOverride o) : dev_(std::move(dev)), override_(std::move(o)) {}
  std::string name() const override { return "cuda"; }
  std::string device() const override { return dev_; }

  void init(const emu::Dims& d, const emu::Mode& m, const float* S0) override {
    emu::check_mode(m, d);
    if (m.capacity() > kMaxRecords)
      throw std::invalid_argument("cuda backend: L - 1 + max_drafts must be <= " + std::to_string(kMaxRecords));
    d_ = d;
    m_ = m;
    lay_ = emu::store_layout(m, d.V, d.K);
    const std::size_t nh = d.heads(), VK = std::size_t(d.V) * d.K, cap = std::size_t(m.capacity());
    // Initial stores are encoded on the host with the shared codecs (as the emulation does), then uploaded.
    std::vector<std::uint8_t> codes(nh * lay_.code_bytes), scales(nh * lay_.scale_bytes);
    std::vector<float> zero;
    if (!S0) zero.assign(d.state_elems(), 0.0f);
    const float* s = S0 ? S0 : zero.data();
    for (std::size_t hh = 0; hh < nh; ++hh)
      emu::encode_head(m, s + hh * VK, d.V, d.K, std::uint32_t(hh), emu::kInitStep, codes.data() + hh * lay_.code_bytes,
                       scales.data() + hh * lay_.scale_bytes);
    codes_.upload(codes.data(), codes.size());
    scales_.upload(scales.data(), scales.size());
    if (m.split()) hp_.upload(s, d.state_elems());
    if (!m.replay()) {
      snap_codes_.alloc(nh * m.max_drafts * lay_.code_bytes);
      snap_scales_.alloc(nh * m.max_drafts * lay_.scale_bytes);
      // Zeroed like the host-encoded stores: the packed 4-bit encoders read-modify-write their code bytes, and
      // compute-sanitizer initcheck reported those 1-byte reads of never-written snapshot memory (mxfp4, verify).
      snap_codes_.zero();
      snap_scales_.zero();
    } else {
      ra_.alloc(nh * cap);
      rbeta_.alloc(nh * cap);
      ra_.zero(), rbeta_.zero();
      auto drop = [](auto& r) {
        for (auto* b : {&r.k, &r.w, &r.v, &r.pk, &r.pw}) b->alloc(0);
      };
      if (m.bf16_records())
        drop(rec32_);
      else
        drop(rec16_);
      const bool recompute = m.recompute();
      with_records([&](auto& r) {
        r.k.alloc(nh * cap * d.K);
        r.w.alloc(nh * cap * d.V);
        r.v.alloc(recompute ? nh * cap * d.V : 0);
        r.k.zero(), r.w.zero(), r.v.zero();
      });
    }
    n_.assign(std::size_t(d.B), 0);
    tok_.assign(std::size_t(d.B), 0);
    pendingT_ = 0;
    tree_.clear();
    flushes_ = 0;
    int optin = 0;
    ck(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), "cudaDeviceGetAttribute");
    scratch_.alloc(reference_stages_in_global(d.V, d.K, m.capacity(), std::size_t(optin)) ? nh * 2 * VK : 0);
    plans_.clear();
    inited_ = true;
  }

  void step(const emu::TokenBatch& in, float* o) override {
    require(in, 1, "step");
    std::vector<int> early(std::size_t(d_.B), 0);
    for (int b = 0; b < d_.B; ++b) early[std::size_t(b)] = m_.replay() && emu::flushes_early(n_[std::size_t(b)], 1, m_.capacity());
    launch(Op::step, in, early, o, std::size_t(d_.B) * d_.H * d_.V);
    for (int b = 0; b < d_.B; ++b) {
      const std::size_t i = std::size_t(b);
      if (m_.replay()) {
        if (early[i]) n_[i] = 0, ++flushes_;
        if (emu::step_fills_window(n_[i], m_.L)) ++flushes_;
        n_[i] = emu::window_after_step(n_[i], m_.L);
      }
      ++tok_[i];
    }
  }

  void verify(const emu::TokenBatch& in, float* o) override {
    require(in, in.T, "verify");
    if (in.T > m_.max_drafts) throw std::invalid_argument("verify: T exceeds max_drafts");
    std::vector<int> early(std::size_t(d_.B), 0);
    for (int b = 0; b < d_.B; ++b) early[std::size_t(b)] = m_.replay() && emu::flushes_early(n_[std::size_t(b)], in.T, m_.capacity());
    launch(Op::verify, in, early, o, std::size_t(d_.B) * in.T * d_.H * d_.V);
    for (int b = 0; b < d_.B; ++b)
      if (early[std::size_t(b)]) n_[std::size_t(b)] = 0, ++flushes_;
    pendingT_ = in.T;
  }

  void accept(const int* accepted) override {
    if (pendingT_ == 0) throw std::logic_error("accept: no verify pending");
    if (!tree_.empty()) throw std::logic_error("accept: the pending verify is a tree's (accept_path)");
    for (int b = 0; b < d_.B; ++b) {
      const int a = accepted[b];
      if (a < 0 || a > pendingT_) throw std::invalid_argument("accept: accepted length out of range");
      if (!m_.replay()) {
        if (a > 0) restore_snapshots(b, a - 1);
      } else {
        n_[std::size_t(b)] += a;
      }
      tok_[std::size_t(b)] += a;
    }
    pendingT_ = 0;
  }

  // Tree verify on the reference kernel (Op::tree), the emulation's semantics: every node reads its root path;
  // nothing is committed until accept_path().
  void verify_tree(const emu::TokenBatch& in, const int* parents, float* o) override {
    require(in, in.T, "verify_tree");
    if (in.T > m_.max_drafts) throw std::invalid_argument("verify_tree: T exceeds max_drafts");
    emu::tree_depths(parents, in.T);  // checks the tree
    const std::size_t nh = d_.heads(), cap = std::size_t(m_.capacity());
    if (!m_.replay()) {
      node_states_.alloc(std::size_t(m_.max_drafts) * d_.state_elems());
    } else {
      pa_.alloc(nh * cap);
      with_records([&](auto& r) {
        r.pk.alloc(nh * cap * d_.K);
        r.pw.alloc(nh * cap * d_.V);
      });
    }
    dparents_.upload(parents, std::size_t(in.T));
    std::vector<int> early(std::size_t(d_.B), 0);
    for (int b = 0; b < d_.B; ++b)
      early[std::size_t(b)] = m_.replay() && emu::flushes_early(n_[std::size_t(b)], in.T, m_.capacity());
    launch(Op::tree, in, early, o, std::size_t(d_.B) * in.T * d_.H * d_.V);
    for (int b = 0; b < d_.B; ++b)
      if (early[std::size_t(b)]) n_[std::size_t(b)] = 0, ++flushes_;
    pendingT_ = in.T;
    tree_.assign(parents, parents + in.T);
  }

  void accept_path(const int* node) override {
    if (pendingT_ == 0 || tree_.empty()) throw std::logic_error("accept_path: no tree verify pending");
    for (int b = 0; b < d_.B; ++b)
      if (node[b] < -1 || node[b] >= pendingT_) throw std::invalid_argument("accept_path: node out of range");
    std::vector<int> paths(std::size_t(d_.B) * m_.max_drafts, 0), lens(std::size_t(d_.B), 0);
    for (int b = 0; b < d_.B; ++b) {
      const std::vector<int> path = emu::tree_path(tree_.data(), node[b]);
      std::copy(path.begin(), path.end(), paths.begin() + std::ptrdiff_t(b) * m_.max_drafts);
      lens[std::size_t(b)] = int(path.size());
      if (!m_.replay() && node[b] >= 0) restore_snapshots(b, node[b]);
    }
    if (m_.replay()) {
      dn_.upload(n_.data(), n_.size());
      dpath_.upload(paths.data(), paths.size());
      dlen_.upload(lens.data(), lens.size());
      emu::TokenBatch none;
      KParams p = params(Op::tree, none);
      p.n = dn_.p;
      ck(cudaError_t(launch_accept_path(p, dpath_.p, dlen_.p, nullptr)), "accept_path");
      ck(cudaDeviceSynchronize(), "accept_path kernel");
    }
    for (int b = 0; b < d_.B; ++b) {
      if (m_.replay()) n_[std::size_t(b)] += lens[std::size_t(b)];
      tok_[std::size_t(b)] += lens[std::size_t(b)];
    }
    pendingT_ = 0;
    tree_.clear();
  }

  // Checkpoints: the device stores and records this mode uses, copied through the host, and the host counters.
  // Input, output and tree scratch buffers are rewritten by every launch that reads them.
  void save(std::vector<std::uint8_t>& out) const override {
    if (!inited_) throw std::logic_error("save: init() first");
    BlobWriter w(out);
    w.str(name());
    emu::save_dims_mode(w, d_, m_);
    state_buffers(*this, [&](const auto& buf, const char*) {
      std::vector<typename std::decay_t<decltype(buf)>::value_type> host(buf.n);
      buf.download(host.data(), host.size());
      w.vec(host);
    });
    w.vec(n_);
    w.vec(tok_);
    w.vec(tree_);
    w.pod(std::int64_t(pendingT_));
    w.pod(std::int64_t(flushes_));
  }

  void load(const std::uint8_t* blob, std::size_t size) override {
    if (!inited_) throw std::logic_error("load: init() with the blob's mode first");
    BlobReader r(blob, size, "cuda backend checkpoint");
    const std::string owner = r.str("backend");
    if (owner != name()) r.fail("backend", "a " + owner + " backend's blob");
    emu::check_dims_mode(r, d_, m_);
    // Everything is read and checked before the first upload: a blob that fails half way changes nothing.
    std::vector<std::function<void()>> uploads;
    state_buffers(*this, [&](auto& buf, const char* field) {
      auto host = std::make_shared<std::vector<typename std::decay_t<decltype(buf)>::value_type>>(buf.n);
      r.vec_into(*host, field);
      uploads.push_back([&buf, host] { buf.upload(host->data(), host->size()); });
    });
    std::vector<int> n = n_, tok = tok_;
    r.vec_into(n, "record counts");
    r.vec_into(tok, "token counters");
    std::vector<int> tree = r.vec<int>("pending tree");
    const auto pendingT = r.pod<std::int64_t>("pending verify"), flushes = r.pod<std::int64_t>("flushes");
    r.finish();
    if (pendingT < 0 || pendingT > m_.max_drafts) r.fail("pending verify", "out of range");
    for (int x : n)
      if (x < 0 || x > m_.capacity()) r.fail("record counts", "out of range");
    for (auto& u : uploads) u();
    n_ = std::move(n), tok_ = std::move(tok), tree_ = std::move(tree);
    pendingT_ = int(pendingT);
    flushes_ = long(flushes);
  }

  void state(float* S) override {
    if (!inited_) throw std::logic_error("state: init() first");
    DevBuf<float> out;
    DevBuf<std::uint8_t> wsave;
    out.alloc(d_.state_elems());
    std::uint8_t* w = nullptr;  // the record w buffer, as bytes
    std::size_t w_bytes = 0;
    with_records([&](auto& r) {
      w = reinterpret_cast<std::uint8_t*>(r.w.p);
      w_bytes = r.w.n * sizeof(*r.w.p);
    });
    if (m_.recompute()) {  // materialise re-derives the u's in place: keep the buffer's own
      wsave.alloc(w_bytes);
      ck(cudaMemcpy(wsave.p, w, w_bytes, cudaMemcpyDeviceToDevice), "state");
    }
    emu::TokenBatch none;
    KParams p = params(Op::state, none);
    p.state_out = out.p;
    std::vector<int> early(std::size_t(d_.B), 0);
    run(p, early);
    out.download(S, d_.state_elems());
    if (m_.recompute()) ck(cudaMemcpy(w, wsave.p, w_bytes, cudaMemcpyDeviceToDevice), "state");
  }

  void stored(std::vector<std::uint8_t>& c, std::vector<std::uint8_t>& s) override {
    c.resize(codes_.n);
    s.resize(scales_.n);
    codes_.download(c.data(), c.size());
    scales_.download(s.data(), s.size());
  }
  long flushes() const override { return flushes_; }
  std::vector<std::string> launch_plans() const override { return plans_; }

 private:
  // Conventional accept: every head of sequence b takes the store of snapshot `slot`.
  void restore_snapshots(int b, int slot) {
    for (int h = 0; h < d_.H; ++h) {
      const std::size_t hh = std::size_t(b) * d_.H + h, s = hh * m_.max_drafts + std::size_t(slot);
      ck(cudaMemcpy(codes_.p + hh * lay_.code_bytes, snap_codes_.p + s * lay_.code_bytes, lay_.code_bytes,
                    cudaMemcpyDeviceToDevice), "accept");
      if (lay_.scale_bytes)
        ck(cudaMemcpy(scales_.p + hh * lay_.scale_bytes, snap_scales_.p + s * lay_.scale_bytes, lay_.scale_bytes,
                      cudaMemcpyDeviceToDevice), "accept");
    }
  }

  void require(const emu::TokenBatch& in, int T, const char* what) const {
    if (!inited_) throw std::logic_error(std::string(what) + ": init() first");
    if (pendingT_ != 0) throw std::logic_error(std::string(what) + ": accept() the pending verify first");
    if (in.T != T || T < 1) throw std::invalid_argument(std::string(what) + ": bad T");
    if (m_.arch == emu::Arch::gdn && !in.beta) throw std::invalid_argument(std::string(what) + ": GDN needs beta");
  }

  KParams params(Op op, const emu::TokenBatch& in) {
    KParams p;
    p.B = d_.B, p.G = d_.G, p.H = d_.H, p.K = d_.K, p.V = d_.V;
    p.L = m_.L, p.cap = m_.capacity(), p.max_drafts = m_.max_drafts, p.T = in.T;
    p.policy = m_.policy, p.usource = m_.usource, p.scaling = m_.scaling, p.rounding = m_.rounding, p.seed = m_.seed;
    p.records = m_.records;
    p.op = op;
    p.codes = codes_.p, p.scales = scales_.p, p.code_bytes = lay_.code_bytes, p.scale_bytes = lay_.scale_bytes;
    p.hp = hp_.p, p.snap_codes = snap_codes_.p, p.snap_scales = snap_scales_.p;
    p.ra = ra_.p, p.rbeta = rbeta_.p;
    with_records([&](auto& r) {
      p.rk = reinterpret_cast<float*>(r.k.p), p.rw = reinterpret_cast<float*>(r.w.p);
      p.rv = reinterpret_cast<float*>(r.v.p);
      p.pk = reinterpret_cast<float*>(r.pk.p), p.pw = reinterpret_cast<float*>(r.pw.p);
    });
    p.parents = dparents_.p, p.node_states = node_states_.p, p.pa = pa_.p;
    p.state_scratch = scratch_.p;
    return p;
  }

  void run(KParams& p, const std::vector<int>& early) {
    dn_.upload(n_.data(), n_.size());
    dearly_.upload(early.data(), early.size());
    dtok_.upload(tok_.data(), tok_.size());
    p.n = dn_.p, p.early = dearly_.p, p.tok = dtok_.p;
    if (m_.replay()) {  // what the kernels' op_flushes sees, for the tuned flush kernel's grid
      int count = 0, early_count = 0;
      for (int b = 0; b < d_.B; ++b) {
        count += early[std::size_t(b)] != 0 ||
                 (p.op != Op::verify && p.op != Op::tree && emu::step_fills_window(n_[std::size_t(b)], p.L));
        early_count += early[std::size_t(b)] != 0;
      }
      p.early_hint = early_count;
      const int hint = override_.hint;  // the plan override's claim, never 0 where some sequence flushes
      p.flush_hint = count > 0 && (hint > 0 || hint == kUnknownHint) ? hint : count;
    }
    const LaunchPlan plan = plan_op(m_.arch, m_.format, p, override_);
    const char* op = p.op == Op::step ? "step: " : p.op == Op::verify ? "verify: " : p.op == Op::tree ? "tree: " : "state: ";
    const std::string text = std::string(op) +
                             to_string(plan);
    if (std::find(plans_.begin(), plans_.end(), text) == plans_.end()) plans_.push_back(text);
    ck(cudaError_t(launch_planned(m_.arch, m_.format, p, plan, nullptr)), "launch");
    ck(cudaDeviceSynchronize(), "kernel");
  }

  void launch(Op op, const emu::TokenBatch& in, const std::vector<int>& early, float* o, std::size_t n_out) {
    const std::size_t BT = std::size_t(d_.B) * in.T;
    da_.upload(in.a, BT * d_.H);
    if (in.beta) dbeta_.upload(in.beta, BT * d_.H);
    dv_.upload(in.v, BT * d_.H * d_.V);
    dk_.upload(in.k, BT * d_.G * d_.K);
    dq_.upload(in.q, BT * d_.G * d_.K);
    if (in.skip) dskip_.upload(in.skip, BT * d_.H * d_.V);
    dout_.alloc(n_out);
    KParams p = params(op, in);
    p.a = da_.p, p.beta = in.beta ? dbeta_.p : nullptr, p.v = dv_.p, p.k = dk_.p, p.q = dq_.p;
    p.skip = in.skip ? dskip_.p : nullptr;
    p.o = dout_.p;
    run(p, early);
    dout_.download(o, n_out);
  }

  // The device buffers that carry state between calls in this backend's mode (init() sized them).
  // The record vectors in BF16 records' checkpoints are their 2-byte codes.
  template <class Self, class Fn>
  static void state_buffers(Self& s, Fn&& fn) {
    fn(s.codes_, "codes"), fn(s.scales_, "scales");
    if (!s.m_.replay()) fn(s.snap_codes_, "snapshot codes"), fn(s.snap_scales_, "snapshot scales");
    if (s.m_.split()) fn(s.hp_, "hp");
    if (s.m_.replay()) {
      fn(s.ra_, "record a"), fn(s.rbeta_, "record beta");
      s.with_records([&](auto& r) { fn(r.k, "record k"), fn(r.w, "record w"); });
    }
    if (s.m_.recompute()) s.with_records([&](auto& r) { fn(r.v, "record v"); });
  }
  // The record vector buffers of the mode's element type (FP32, or BF16 codes: half the bytes).
  template <class Fn>
  void with_records(Fn&& fn) {
    if (m_.bf16_records())
      fn(rec16_);
    else
      fn(rec32_);
  }
  template <class Fn>
  void with_records(Fn&& fn) const {
    if (m_.bf16_records())
      fn(rec16_);
    else
      fn(rec32_);
  }

  std::string dev_;
  PlanOverride override_;
  std::vector<std::string> plans_;
  emu::Dims d_;
  emu::Mode m_;
  emu::StoreLayout lay_;
  DevBuf<std::uint8_t> codes_, scales_, snap_codes_, snap_scales_;
  DevBuf<float> hp_, ra_, rbeta_, da_, dbeta_, dv_, dk_, dq_, dskip_, dout_;
  // The record vectors k, w, raw v (u=recompute) and tree verify's path scratch pk, pw, of element type R.
  template <class R>
  struct RecordVecs {
    DevBuf<R> k, w, v, pk, pw;
  };
  RecordVecs<float> rec32_;
  RecordVecs<emu::RecordBf16> rec16_;
  DevBuf<float> node_states_, pa_;  // tree verify's scratch (KParams::node_states, pa; pk, pw in RecordVecs)
  DevBuf<float> scratch_;  // the reference kernel's staged states where shared memory is too small (state_scratch)
  DevBuf<int> dn_, dearly_, dtok_, dparents_, dpath_, dlen_;
  std::vector<int> n_, tok_;
  std::vector<int> tree_;  // the pending tree verify's parents (empty: none, or a chain verify's)
  int pendingT_ = 0;
  long flushes_ = 0;
  bool inited_ = false;
};

}  // namespace

}  // namespace replayssm::kern

namespace replayssm::emu {

std::unique_ptr<DecodeBackend> make_cuda_backend(const DeviceBackendOptions& o, std::string* why_not) {
  kern::PlanOverride plan = kern::resolve_plan_override(o.plan);  // a bad override throws, device or not
  cudaDeviceProp prop{};
  if (!kern::probe_device0(&prop, why_not)) return nullptr;
  return std::make_unique<kern::CudaBackend>(std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                                                 std::to_string(prop.minor) + ")",
                                             std::move(plan));
}

}  // namespace replayssm::emu
