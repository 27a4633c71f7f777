#include "emulation/dump_cases.h"

#include <algorithm>
#include <cmath>

#include "core/h5.h"

namespace replayssm::emu {

std::vector<DumpLayerCase> load_dump_cases(const std::string& path) {
  h5::File f = h5::File::open_read(path);
  if (!f.has_attr("/", "arch")) f.fail("/ (attr arch)", "missing root attribute 'arch'");
  const std::string arch = f.attr_string("/", "arch");
  if (arch != "gdn" && arch != "mamba2") f.fail("/ (attr arch)", "expected 'gdn' or 'mamba2', got '" + arch + "'");
  std::vector<DumpLayerCase> out;
  if (!f.exists("/layers")) f.fail("/layers", "missing group");
  for (const std::string& li : f.list("/layers")) {
    const std::string p = "/layers/" + li + "/";
    Shape s;
    s.name = "acts layer " + li;
    TokenData td;
    td.B = 1;
    if (arch == "gdn") {
      s.arch = Arch::gdn;
      auto q = f.read_f64(p + "q"), k = f.read_f64(p + "k"), v = f.read_f64(p + "v"), g = f.read_f64(p + "g"),
           beta = f.read_f64(p + "beta");
      h5::require_shape(f, p + "q", q.shape, {0, 0, 0});
      const std::size_t T = q.dim(0), Hk = q.dim(1), K = q.dim(2);
      h5::require_shape(f, p + "k", k.shape, {T, Hk, K});
      h5::require_shape(f, p + "v", v.shape, {T, 0, 0});
      const std::size_t Hv = v.dim(1), V = v.dim(2);
      h5::require_shape(f, p + "g", g.shape, {T, Hv});
      h5::require_shape(f, p + "beta", beta.shape, {T, Hv});
      if (Hv % Hk != 0) f.fail(p + "v", "value heads must be a multiple of key heads");
      if (K % 4 != 0) f.fail(p + "q", "K must be a multiple of 4");
      const double scale = f.has_attr("/", "scale") ? f.attr_double("/", "scale") : 1.0 / std::sqrt(double(K));
      s.dims = Dims{1, int(Hk), int(Hv), int(K), int(V)};
      td.T = int(T);
      for (double x : g.data) td.a.push_back(float(std::exp(x)));
      for (double x : beta.data) td.beta.push_back(float(x));
      for (double x : v.data) td.v.push_back(float(x));
      for (double x : k.data) td.k.push_back(float(x));
      for (double x : q.data) td.q.push_back(float(scale * x));
    } else {
      s.arch = Arch::mamba2;
      auto x = f.read_f64(p + "x"), B = f.read_f64(p + "B"), C = f.read_f64(p + "C"), dt = f.read_f64(p + "dt"),
           A = f.read_f64(p + "A");
      h5::require_shape(f, p + "x", x.shape, {0, 0, 0});
      const std::size_t T = x.dim(0), H = x.dim(1), P = x.dim(2);
      h5::require_shape(f, p + "B", B.shape, {T, 0, 0});
      const std::size_t G = B.dim(1), N = B.dim(2);
      h5::require_shape(f, p + "C", C.shape, {T, G, N});
      h5::require_shape(f, p + "dt", dt.shape, {T, H});
      h5::require_shape(f, p + "A", A.shape, {H});
      if (H % G != 0) f.fail(p + "x", "heads must be a multiple of groups");
      if (N % 4 != 0) f.fail(p + "B", "N must be a multiple of 4");
      std::vector<double> D;
      if (f.exists(p + "D")) {
        auto Da = f.read_f64(p + "D");
        h5::require_shape(f, p + "D", Da.shape, {H});
        D = Da.data;
      }
      s.dims = Dims{1, int(G), int(H), int(N), int(P)};
      td.T = int(T);
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t h = 0; h < H; ++h) {
          const double d = dt.data[t * H + h];
          td.a.push_back(float(std::exp(d * A.data[h])));
          for (std::size_t pp = 0; pp < P; ++pp) {
            const double xv = x.data[(t * H + h) * P + pp];
            td.v.push_back(float(d * xv));
            if (!D.empty()) td.skip.push_back(float(D[h] * xv));
          }
        }
      for (double e : B.data) td.k.push_back(float(e));
      for (double e : C.data) td.q.push_back(float(e));
    }
    const std::size_t n = s.dims.state_elems();
    std::vector<float> S0(n, 0.0f);
    if (f.exists(p + "initial_state")) {
      auto S = f.read_f64(p + "initial_state");
      h5::require_shape(f, p + "initial_state", S.shape,
                        {std::size_t(s.dims.H), std::size_t(s.dims.V), std::size_t(s.dims.K)});
      for (std::size_t i = 0; i < n; ++i) S0[i] = float(S.data[i]);
    }
    double a_max = 0.0;
    for (float x : td.a) a_max = std::max(a_max, double(x));
    out.push_back(DumpLayerCase{li, s, std::move(td), std::move(S0), a_max});
  }
  return out;
}

CaseInputs dump_case_inputs(const DumpLayerCase& l, int max_tokens) {
  CaseInputs in = inputs_from_tokens(l.shape, l.tokens, max_tokens);
  in.S0 = l.S0;
  return in;
}

Case dump_case(const DumpLayerCase& l, const CaseInputs& in) {
  Case c;
  c.name = l.shape.name;
  c.ops = in.op_list;
  c.g_lo = -1.0;
  c.g_hi = std::log(std::max(l.a_max, 1e-30));
  c.zero_init = std::all_of(l.S0.begin(), l.S0.end(), [](float x) { return x == 0.0f; });
  return c;
}

}  // namespace replayssm::emu
