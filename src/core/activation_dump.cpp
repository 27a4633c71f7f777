#include "core/activation_dump.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.h"
#include "core/memory_budget.h"

namespace replayssm {

Arch parse_arch(const std::string& name) {
  if (name == "gdn") return Arch::gdn;
  if (name == "mamba2") return Arch::mamba2;
  throw UserError("unknown arch '" + name + "' (expected gdn or mamba2)");
}

const char* arch_name(Arch a) { return a == Arch::gdn ? "gdn" : "mamba2"; }

namespace {

// Dimensions are ints downstream (the reference, the kernels' launch parameters): larger ones are refused, not wrapped.
int as_int(const h5::File& f, const std::string& field, std::size_t v) {
  if (v > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    f.fail(field, "dimension " + std::to_string(v) + " is larger than " + std::to_string(std::numeric_limits<int>::max()));
  return static_cast<int>(v);
}

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

// q and k are L2-normalised with an epsilon (x / sqrt(sum x^2 + eps)), so a norm may be below 1 (a near-zero vector)
// but not above it beyond rounding: GDN's update is non-expansive only for |k| <= 1.
void check_unit_rows(const h5::File& f, const std::string& field, const std::vector<double>& v, std::size_t d) {
  for (std::size_t r = 0; r < v.size() / d; ++r) {
    double s = 0.0;
    for (std::size_t i = 0; i < d; ++i) s += v[r * d + i] * v[r * d + i];
    if (std::sqrt(s) > 1.0 + kUnitNormTolerance)
      f.fail(field, "row " + std::to_string(r) + " has L2 norm " + std::to_string(std::sqrt(s)) +
                        " > 1 (q and k must be L2-normalised; tolerance " + std::to_string(kUnitNormTolerance) + ")");
  }
}

// beta's range: [0, 1], or [0, 2] where the dump asks for FLA's negative-eigenvalue variant (root attribute
// allow_neg_eigval = 1: I - beta k k^T then has the eigenvalue 1 - beta in [-1, 1], still non-expansive).
double beta_max(const h5::File& f) {
  if (!f.has_attr("/", "allow_neg_eigval")) return 1.0;
  const auto v = f.attr_int("/", "allow_neg_eigval");
  if (v != 0 && v != 1) f.fail("/@allow_neg_eigval", "must be 0 or 1, got " + std::to_string(v));
  return v == 1 ? 2.0 : 1.0;
}

void read_gdn(const h5::File& f, const std::string& g, double scale, DumpLayer& layer) {
  auto q = f.read_f64(g + "/q");
  h5::require_shape(f, g + "/q", q.shape, {0, 0, 0});
  const std::size_t T = q.dim(0), Hk = q.dim(1), K = q.dim(2);
  auto k = f.read_f64(g + "/k");
  h5::require_shape(f, g + "/k", k.shape, {T, Hk, K});
  if (K > 0) {
    check_unit_rows(f, g + "/q", q.data, K);
    check_unit_rows(f, g + "/k", k.data, K);
  }
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
  const double bmax = beta_max(f);
  check_range(f, g + "/beta", beta.data, 0.0, bmax,
              bmax > 1.0 ? "write strength in [0, 2] (allow_neg_eigval)"
                         : "write strength sigmoid(b) in [0, 1]; root attribute allow_neg_eigval = 1 allows [0, 2]");
  auto& in = layer.gdn;
  in.T = as_int(f, g, T);
  in.Hk = as_int(f, g, Hk);
  in.Hv = as_int(f, g, Hv);
  in.K = as_int(f, g, K);
  in.V = as_int(f, g, V);
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
  in.T = as_int(f, g, T);
  in.H = as_int(f, g, H);
  in.G = as_int(f, g, G);
  in.P = as_int(f, g, P);
  in.N = as_int(f, g, N);
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
  // Numeric order of names of any length (no integer conversion to overflow): fewer significant digits first.
  auto digits = [](const std::string& s) { return s.substr(std::min(s.find_first_not_of('0'), s.size())); };
  std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    const std::string x = digits(a), y = digits(b);
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  // Everything the reader will hold, before any of it is allocated (each dataset is also checked on its own).
  double elems = 0.0;
  for (const auto& name : names)
    for (const auto& field : f.list("/layers/" + name)) {
      const std::string ds = "/layers/" + name + "/" + field;
      if (!f.is_dataset(ds)) continue;
      double n = 1.0;
      for (auto dim : f.shape(ds)) n *= static_cast<double>(dim);
      elems += n;
    }
  require_memory(path + ": /layers", "reading " + std::to_string(names.size()) + " layer(s) as float64",
                 elems * 8.0, "the declared shapes must fit in memory: a corrupt file, or a dump to split by layer");
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
