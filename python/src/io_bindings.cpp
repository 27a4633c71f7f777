// The activation-dump schema (datasets/README.md) through the one reader and writer of src/core/activation_dump.h,
// and plain datasets of any replayssm output file.
#include <map>
#include <optional>
#include <string>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "core/activation_dump.h"
#include "core/h5.h"

namespace replayssm::py {
namespace {

Out<double> array(std::vector<double> v, h5::Shape shape) { return to_numpy(std::move(v), std::move(shape)); }

nb::dict read_dump(const std::string& path) {
  ActivationDump dump = read_activation_dump(path);
  nb::dict out;
  out["arch"] = std::string(arch_name(dump.arch));
  nb::list layers;
  auto z = [](int x) { return std::size_t(x); };
  for (DumpLayer& l : dump.layers) {
    nb::dict d;
    d["name"] = l.name;
    if (dump.arch == Arch::gdn) {
      ref::GdnInputs& in = l.gdn;
      out["scale"] = in.scale;
      d["q"] = array(std::move(in.q), {z(in.T), z(in.Hk), z(in.K)});
      d["k"] = array(std::move(in.k), {z(in.T), z(in.Hk), z(in.K)});
      d["v"] = array(std::move(in.v), {z(in.T), z(in.Hv), z(in.V)});
      d["g"] = array(std::move(in.g), {z(in.T), z(in.Hv)});
      d["beta"] = array(std::move(in.beta), {z(in.T), z(in.Hv)});
      if (l.initial_state) d["initial_state"] = array(std::move(*l.initial_state), {z(in.Hv), z(in.V), z(in.K)});
    } else {
      ref::Mamba2Inputs& in = l.mamba2;
      d["x"] = array(std::move(in.x), {z(in.T), z(in.H), z(in.P)});
      d["B"] = array(std::move(in.B), {z(in.T), z(in.G), z(in.N)});
      d["C"] = array(std::move(in.C), {z(in.T), z(in.G), z(in.N)});
      d["dt"] = array(std::move(in.dt), {z(in.T), z(in.H)});
      d["A"] = array(std::move(in.A), {z(in.H)});
      if (!in.D.empty()) d["D"] = array(std::move(in.D), {z(in.H)});
      if (l.initial_state) d["initial_state"] = array(std::move(*l.initial_state), {z(in.H), z(in.P), z(in.N)});
    }
    layers.append(d);
  }
  out["layers"] = layers;
  return out;
}

std::vector<double> values(const In<double>& a) { return std::vector<double>(a.data(), a.data() + a.size()); }
int dim(const In<double>& a, std::size_t i) { return int(a.shape(i)); }

// layers: one dict per layer with the dump's fields (float64, shapes checked by the Python layer); written through
// AtomicOutput (never a half-written file under the final name), then read back with the one reader so a file this
// writes is a file every command accepts.
void write_dump(const std::string& path, const std::string& arch_s, double scale, const nb::list& layers,
                bool as_float32) {
  const Arch arch = parse_arch(arch_s);
  {
    h5::AtomicOutput out(path);
    h5::File& f = out.file();
    write_dump_header(f, arch, scale);
    for (nb::handle h : layers) {
      nb::dict d = nb::cast<nb::dict>(h);
      const std::string name = nb::cast<std::string>(d["name"]);
      std::optional<std::vector<double>> init;
      if (d.contains("initial_state")) init = values(nb::cast<In<double>>(d["initial_state"]));
      auto get = [&](const char* key) { return nb::cast<In<double>>(d[key]); };
      if (arch == Arch::gdn) {
        ref::GdnInputs in;
        const auto q = get("q"), v = get("v");
        in.T = dim(q, 0), in.Hk = dim(q, 1), in.K = dim(q, 2), in.Hv = dim(v, 1), in.V = dim(v, 2);
        in.scale = scale;
        in.q = values(q), in.k = values(get("k")), in.v = values(v), in.g = values(get("g"));
        in.beta = values(get("beta"));
        in.validate();
        write_gdn_layer(f, name, in, as_float32, init ? &*init : nullptr);
      } else {
        ref::Mamba2Inputs in;
        const auto x = get("x"), B = get("B");
        in.T = dim(x, 0), in.H = dim(x, 1), in.P = dim(x, 2), in.G = dim(B, 1), in.N = dim(B, 2);
        in.x = values(x), in.B = values(B), in.C = values(get("C")), in.dt = values(get("dt"));
        in.A = values(get("A"));
        if (d.contains("D")) in.D = values(get("D"));
        in.validate();
        write_mamba2_layer(f, name, in, as_float32, init ? &*init : nullptr);
      }
    }
    out.commit();
  }
  (void)read_activation_dump(path);
}

Out<double> read_array(const std::string& path, const std::string& dataset) {
  const h5::File f = h5::File::open_read(path);
  if (!f.is_dataset(dataset)) f.fail(dataset, "no such dataset");
  h5::Array<double> a = f.read_f64(dataset, /*require_finite=*/false);
  return to_numpy(std::move(a.data), a.shape);
}

void write_arrays(const std::string& path, const std::map<std::string, In<double>>& arrays) {
  h5::AtomicOutput out(path);
  for (const auto& [name, a] : arrays) {
    h5::Shape shape;
    for (std::size_t i = 0; i < a.ndim(); ++i) shape.push_back(a.shape(i));
    out.file().write(name, shape, a.data());
  }
  out.commit();
}

}  // namespace

void bind_io(nb::module_& m) {
  m.def("read_dump", &read_dump, nb::arg("path"));
  m.def("write_dump", &write_dump, nb::arg("path"), nb::arg("arch"), nb::arg("scale"), nb::arg("layers"),
        nb::arg("as_float32"));
  m.def("read_array", &read_array, nb::arg("path"), nb::arg("dataset"));
  m.def("write_arrays", &write_arrays, nb::arg("path"), nb::arg("arrays"));
}

}  // namespace replayssm::py
