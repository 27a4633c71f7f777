#include "runtime/model.h"

#include <initializer_list>
#include <string>

#include "core/errors.h"
#include "core/h5.h"

namespace replayssm::runtime {
namespace {

struct Loader {
  const h5::File& f;

  int cfg_int(const char* name, int min_value = 1) const {
    const std::int64_t v = f.attr_int("/config", name);
    if (v < min_value || v > (1 << 24))
      f.fail(std::string("/config/@") + name, "out of range (" + std::to_string(v) + ")");
    return static_cast<int>(v);
  }
  double cfg_eps(const char* name) const {
    const double v = f.attr_double("/config", name);
    if (!(v > 0.0 && v < 1.0)) f.fail(std::string("/config/@") + name, "expected 0 < eps < 1");
    return v;
  }

  Mat mat(const std::string& name, std::size_t rows, std::size_t cols) const {
    const std::string path = "/" + name;
    const auto a = f.read_f64(path);
    h5::require_shape(f, path, a.shape, {rows, cols});
    Mat m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    for (std::size_t i = 0; i < a.data.size(); ++i) m.data()[i] = a.data[i];
    return m;
  }
  Vec vec(const std::string& name, std::size_t n) const {
    const std::string path = "/" + name;
    const auto a = f.read_f64(path);
    h5::require_shape(f, path, a.shape, {n});
    Vec v(static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i) v[static_cast<Eigen::Index>(i)] = a.data[i];
    return v;
  }
};

Mat stack_rows(std::initializer_list<const Mat*> parts) {
  Eigen::Index rows = 0;
  for (const Mat* p : parts) rows += p->rows();
  Mat out(rows, (*parts.begin())->cols());
  Eigen::Index r = 0;
  for (const Mat* p : parts) {
    out.middleRows(r, p->rows()) = *p;
    r += p->rows();
  }
  return out;
}

}  // namespace

TinyModel TinyModel::load(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  const Loader L{f};
  TinyModel m;
  m.path = path;
  ModelConfig& c = m.cfg;
  if (!f.exists("/config")) f.fail("/config", "missing group (not a replayssm tiny model file?)");
  c.arch = f.attr_string("/config", "arch");
  if (c.arch != "gdn" && c.arch != "mamba2")
    f.fail("/config/@arch", "unknown arch '" + c.arch + "' (expected gdn or mamba2)");
  c.vocab = L.cfg_int("vocab");
  c.d_model = L.cfg_int("d_model");
  c.n_layers = L.cfg_int("n_layers");
  c.d_ff = L.cfg_int("d_ff");
  c.conv_kernel = L.cfg_int("conv_kernel");
  c.norm_eps = L.cfg_eps("norm_eps");
  c.gated_norm_eps = L.cfg_eps("gated_norm_eps");
  if (c.vocab != 256) f.fail("/config/@vocab", "expected 256 (byte-level), got " + std::to_string(c.vocab));
  using S = std::size_t;
  const S d = S(c.d_model), ff = S(c.d_ff), W = S(c.conv_kernel);
  if (c.is_gdn()) {
    c.Hk = L.cfg_int("Hk");
    c.Hv = L.cfg_int("Hv");
    c.K = L.cfg_int("K");
    c.V = L.cfg_int("V");
    c.l2norm_eps = L.cfg_eps("l2norm_eps");
    if (c.Hv % c.Hk != 0) f.fail("/config/@Hv", "Hv must be a multiple of Hk");
  } else {
    c.H = L.cfg_int("H");
    c.G = L.cfg_int("G");
    c.P = L.cfg_int("P");
    c.N = L.cfg_int("N");
    c.d_inner = L.cfg_int("d_inner");
    if (c.H % c.G != 0) f.fail("/config/@H", "H must be a multiple of G");
    if (c.H * c.P != c.d_inner) f.fail("/config/@d_inner", "expected H * P");
  }

  m.embed = L.mat("embed", S(c.vocab), d);
  m.final_norm = L.vec("final_norm", d);
  m.lm_head = L.mat("lm_head", S(c.vocab), d);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "layers/" + std::to_string(i) + "/";
    const std::string x = p + "mixer/";
    LayerWeights lw;
    lw.norm1 = L.vec(p + "norm1", d);
    lw.norm2 = L.vec(p + "norm2", d);
    lw.w_gate = L.mat(p + "w_gate", ff, d);
    lw.w_up = L.mat(p + "w_up", ff, d);
    lw.w_down = L.mat(p + "w_down", d, ff);
    if (c.is_gdn()) {
      const S qk = S(c.Hk) * S(c.K), vv = S(c.Hv) * S(c.V), hv = S(c.Hv);
      GdnWeights& g = lw.gdn;
      g.in_q = L.mat(x + "in_q", qk, d);
      g.in_k = L.mat(x + "in_k", qk, d);
      g.in_v = L.mat(x + "in_v", vv, d);
      g.in_z = L.mat(x + "in_z", vv, d);
      g.in_a = L.mat(x + "in_a", hv, d);
      g.in_b = L.mat(x + "in_b", hv, d);
      g.conv_q = L.mat(x + "conv_q", qk, W);
      g.conv_k = L.mat(x + "conv_k", qk, W);
      g.conv_v = L.mat(x + "conv_v", vv, W);
      g.A_log = L.vec(x + "A_log", hv);
      g.dt_bias = L.vec(x + "dt_bias", hv);
      g.norm = L.vec(x + "norm", S(c.V));
      g.out = L.mat(x + "out", d, vv);
      g.in_fused = stack_rows({&g.in_q, &g.in_k, &g.in_v, &g.in_z, &g.in_a, &g.in_b});
    } else {
      const S di = S(c.d_inner), gn = S(c.G) * S(c.N), h = S(c.H);
      Mamba2Weights& mw = lw.mamba2;
      mw.in_z = L.mat(x + "in_z", di, d);
      mw.in_x = L.mat(x + "in_x", di, d);
      mw.in_B = L.mat(x + "in_B", gn, d);
      mw.in_C = L.mat(x + "in_C", gn, d);
      mw.in_dt = L.mat(x + "in_dt", h, d);
      mw.conv_x = L.mat(x + "conv_x", di, W);
      mw.conv_B = L.mat(x + "conv_B", gn, W);
      mw.conv_C = L.mat(x + "conv_C", gn, W);
      mw.conv_bias_x = L.vec(x + "conv_bias_x", di);
      mw.conv_bias_B = L.vec(x + "conv_bias_B", gn);
      mw.conv_bias_C = L.vec(x + "conv_bias_C", gn);
      mw.A_log = L.vec(x + "A_log", h);
      mw.dt_bias = L.vec(x + "dt_bias", h);
      mw.D = L.vec(x + "D", h);
      mw.norm = L.vec(x + "norm", di);
      mw.out = L.mat(x + "out", d, di);
      mw.in_fused = stack_rows({&mw.in_z, &mw.in_x, &mw.in_B, &mw.in_C, &mw.in_dt});
    }
    lw.w_gate_up = stack_rows({&lw.w_gate, &lw.w_up});
    m.layers.push_back(std::move(lw));
  }
  return m;
}

}  // namespace replayssm::runtime
