#include "core/activation_dump.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace replayssm {

Arch parse_arch(const std::string& name) {
  if (name == "gdn") return Arch::gdn;
  if (name == "mamba2") return Arch::mamba2;
  throw UserError("unknown arch '" + name + "' (expected gdn or mamba2)");
}

const char* arch_name(Arch a) { return a == Arch::gdn ? "gdn" : "mamba2"; }

namespace {

int as_int(std::size_t v) { return static_cast<int>(v); }

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void check_range(const h5::File& f, const std::string& field, const std::vector<double>& v, double lo, double hi,
                 const char* why) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] < lo || v[i] > hi)
      f.fail(field, "value " + std::to_string(v[i]) + " at flat index " + std::to_string(i) + " out of range (" + why +
                        ")");
}

void read_gdn(const h5::File& f, const std::string& g, double scale, DumpLayer& layer) {
  auto q = f.read_f64(g + "/q");
  h5::require_shape(f, g + "/q", q.shape, {0, 0, 0});
  const std::size_t T = q.dim(0), Hk = q.dim(1), K = q.dim(2);
  auto k = f.read_f64(g + "/k");
  h5::require_shape(f, g + "/k", k.shape, {T, Hk, K});
  auto v = f.read_f64(g + "/v");
  h5::require_shape(f, g + "/v", v.shape, {T, 0, 0});
  const std::size_t Hv = v.dim(1), V = v.dim(2);
  if (T == 0 || Hk == 0 || K == 0 || Hv == 0 || V == 0) f.fail(g + "/v", "empty dimension");
  if (Hv % Hk != 0)
    f.fail(g + "/v", "value heads (" + std::to_string(Hv) + ") must be a multiple of key heads (" +
                         std::to_string(Hk) + ")");
  auto gg = f.read_f64(g + "/g");
  h5::require_shape(f, g + "/g", gg.shape, {T, Hv});
  check_range(f, g + "/g", gg.data, -INFINITY, 0.0, "log decay must be <= 0");
  auto beta = f.read_f64(g + "/beta");
  h5::require_shape(f, g + "/beta", beta.shape, {T, Hv});
  auto& in = layer.gdn;
  in.T = as_int(T);
  in.Hk = as_int(Hk);
  in.Hv = as_int(Hv);
  in.K = as_int(K);
  in.V = as_int(V);
  in.scale = scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(K));
  in.q = std::move(q.data);
  in.k = std::move(k.data);
  in.v = std::move(v.data);
  in.g = std::move(gg.data);
  in.beta = std::move(beta.data);
  if (f.exists(g + "/initial_state")) {
    auto s = f.read_f64(g + "/initial_state");
    h5::require_shape(f, g + "/initial_state", s.shape, {Hv, V, K});
    layer.initial_state = std::move(s.data);
  }
}

void read_mamba2(const h5::File& f, const std::string& g, DumpLayer& layer) {
  auto x = f.read_f64(g + "/x");
  h5::require_shape(f, g + "/x", x.shape, {0, 0, 0});
  const std::size_t T = x.dim(0), H = x.dim(1), P = x.dim(2);
  auto B = f.read_f64(g + "/B");
  h5::require_shape(f, g + "/B", B.shape, {T, 0, 0});
  const std::size_t G = B.dim(1), N = B.dim(2);
  if (T == 0 || H == 0 || P == 0 || G == 0 || N == 0) f.fail(g + "/B", "empty dimension");
  if (H % G != 0)
    f.fail(g + "/B", "heads (" + std::to_string(H) + ") must be a multiple of groups (" + std::to_string(G) + ")");
  auto C = f.read_f64(g + "/C");
  h5::require_shape(f, g + "/C", C.shape, {T, G, N});
  auto dt = f.read_f64(g + "/dt");
  h5::require_shape(f, g + "/dt", dt.shape, {T, H});
  check_range(f, g + "/dt", dt.data, 0.0, INFINITY, "dt is after softplus, must be >= 0");
  auto A = f.read_f64(g + "/A");
  h5::require_shape(f, g + "/A", A.shape, {H});
  check_range(f, g + "/A", A.data, -INFINITY, 0.0, "A = -exp(A_log) must be <= 0");
  auto& in = layer.mamba2;
  in.T = as_int(T);
  in.H = as_int(H);
  in.G = as_int(G);
  in.P = as_int(P);
  in.N = as_int(N);
  in.x = std::move(x.data);
  in.B = std::move(B.data);
  in.C = std::move(C.data);
  in.dt = std::move(dt.data);
  in.A = std::move(A.data);
  if (f.exists(g + "/D")) {
    auto D = f.read_f64(g + "/D");
    h5::require_shape(f, g + "/D", D.shape, {H});
    in.D = std::move(D.data);
  }
  if (f.exists(g + "/initial_state")) {
    auto s = f.read_f64(g + "/initial_state");
    h5::require_shape(f, g + "/initial_state", s.shape, {H, P, N});
    layer.initial_state = std::move(s.data);
  }
}

}  // namespace

ActivationDump read_activation_dump(const std::string& path) {
  h5::File f = h5::File::open_read(path);
  ActivationDump d;
  d.path = path;
  std::string arch;
  if (f.has_attr("/", "arch")) {
    arch = f.attr_string("/", "arch");
  } else if (f.has_attr("/meta", "arch")) {
    arch = f.attr_string("/meta", "arch");
  } else {
    f.fail("/@arch", "missing attribute (expected \"gdn\" or \"mamba2\")");
  }
  if (arch != "gdn" && arch != "mamba2") f.fail("/@arch", "unknown arch '" + arch + "' (expected gdn or mamba2)");
  d.arch = parse_arch(arch);
  double scale = 0.0;
  if (f.has_attr("/", "scale")) {
    scale = f.attr_double("/", "scale");
    if (!(scale > 0.0)) f.fail("/@scale", "must be > 0");
  }
  if (!f.exists("/layers")) f.fail("/layers", "missing group");
  std::vector<std::string> names = f.list("/layers");
  names.erase(std::remove_if(names.begin(), names.end(), [](const std::string& s) { return !is_index(s); }),
              names.end());
  if (names.empty()) f.fail("/layers", "no layers (expected /layers/0, /layers/1, ...)");
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  for (const auto& name : names) {
    DumpLayer layer;
    layer.name = name;
    const std::string g = "/layers/" + name;
    if (d.arch == Arch::gdn)
      read_gdn(f, g, scale, layer);
    else
      read_mamba2(f, g, layer);
    d.layers.push_back(std::move(layer));
  }
  return d;
}

namespace {
void put(h5::File& f, const std::string& name, const h5::Shape& shape, const std::vector<double>& v, bool f32) {
  if (f32) {
    std::vector<float> tmp(v.begin(), v.end());
    f.write(name, shape, tmp.data());
  } else {
    f.write(name, shape, v.data());
  }
}
std::size_t u(int v) { return static_cast<std::size_t>(v); }
}  // namespace

void write_dump_header(h5::File& f, Arch arch, double gdn_scale) {
  f.set_attr("/", "arch", arch_name(arch));
  f.set_attr("/meta", "arch", arch_name(arch));
  if (arch == Arch::gdn && gdn_scale > 0) f.set_attr("/", "scale", gdn_scale);
}

void write_gdn_layer(h5::File& f, const std::string& layer, const ref::GdnInputs& in, bool f32,
                     const std::vector<double>* initial_state) {
  const std::string g = "/layers/" + layer;
  put(f, g + "/q", {u(in.T), u(in.Hk), u(in.K)}, in.q, f32);
  put(f, g + "/k", {u(in.T), u(in.Hk), u(in.K)}, in.k, f32);
  put(f, g + "/v", {u(in.T), u(in.Hv), u(in.V)}, in.v, f32);
  put(f, g + "/g", {u(in.T), u(in.Hv)}, in.g, f32);
  put(f, g + "/beta", {u(in.T), u(in.Hv)}, in.beta, f32);
  if (initial_state) put(f, g + "/initial_state", {u(in.Hv), u(in.V), u(in.K)}, *initial_state, f32);
}

void write_mamba2_layer(h5::File& f, const std::string& layer, const ref::Mamba2Inputs& in, bool f32,
                        const std::vector<double>* initial_state) {
  const std::string g = "/layers/" + layer;
  put(f, g + "/x", {u(in.T), u(in.H), u(in.P)}, in.x, f32);
  put(f, g + "/B", {u(in.T), u(in.G), u(in.N)}, in.B, f32);
  put(f, g + "/C", {u(in.T), u(in.G), u(in.N)}, in.C, f32);
  put(f, g + "/dt", {u(in.T), u(in.H)}, in.dt, f32);
  put(f, g + "/A", {u(in.H)}, in.A, f32);
  if (!in.D.empty()) put(f, g + "/D", {u(in.H)}, in.D, f32);
  if (initial_state) put(f, g + "/initial_state", {u(in.H), u(in.P), u(in.N)}, *initial_state, f32);
}

}  // namespace replayssm
