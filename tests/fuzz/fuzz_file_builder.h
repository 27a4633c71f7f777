#pragma once
// Builds an HDF5 file from fuzz bytes, so that the fuzzer explores what replayssm's readers check (names, ranks,
// shapes, declared sizes, types, values, attributes) on files libhdf5 itself parses correctly. Raw corrupt bytes
// mostly exercise libhdf5's own parser (fuzz_readers.cpp: REPLAYSSM_FUZZ_RAW=1).
//
// Program (every field one byte, taken modulo its table; a missing byte reads as 0):
//   op % 3 == 0  dataset : path, dtype (f32 f64 i64 u8 string), rank (0..4), one dim index per axis, then a pattern
//                          (length n, n value indices) repeated over the elements; a shape of more than
//                          kMaxWritten elements is declared and left unwritten (fill value: a tiny file, a huge array)
//   op % 3 == 1  attribute: object, name, kind (string, int64, double, uint64, int64[2], fixed string), value index
//   op % 3 == 2  group    : path
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fuzz {

class Bytes {
 public:
  Bytes(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool done() const { return i_ >= n_; }
  std::uint8_t next() { return i_ < n_ ? d_[i_++] : 0; }
  template <class T>
  const T& pick(const std::vector<T>& table) { return table[next() % table.size()]; }

 private:
  const std::uint8_t* d_;
  std::size_t n_, i_ = 0;
};

inline std::vector<std::string> dataset_paths() {
  std::vector<std::string> p;
  for (const char* l : {"0", "1", "99999999999999999999999", "x"})
    for (const char* f : {"q", "k", "v", "g", "beta", "x", "B", "C", "dt", "A", "D", "initial_state", "o"})
      p.push_back(std::string("/layers/") + l + "/" + f);
  for (const char* r : {"/config/plan", "/bins", "/reference/m/nll", "/runs/r/kl", "/runs/r/nll", "/runs/r/top1",
                        "/runs/r/kl_binned", "/runs/r/output_drift", "/runs/r/flush_steps", "/runs/r/state_drift",
                        "/embed", "/final_norm", "/lm_head"})
    p.push_back(r);
  for (const char* t : {"norm1", "norm2", "w_gate", "w_up", "w_down", "mixer/in_q", "mixer/in_k", "mixer/in_v",
                        "mixer/in_z", "mixer/in_a", "mixer/in_b", "mixer/conv_q", "mixer/conv_k", "mixer/conv_v",
                        "mixer/A_log", "mixer/dt_bias", "mixer/norm", "mixer/out", "mixer/in_x", "mixer/in_B",
                        "mixer/in_C", "mixer/in_dt", "mixer/conv_x", "mixer/conv_B", "mixer/conv_C", "mixer/conv_bias_x",
                        "mixer/conv_bias_B", "mixer/conv_bias_C", "mixer/D"})
    p.push_back(std::string("/layers/0/") + t);
  return p;
}

inline const std::vector<std::string> kObjects = {"/", "/config", "/meta", "/runs/r", "/reference/m",
                                                  "/reference/m/nll", "/layers/0", "/layers/0/q"};
inline const std::vector<std::string> kAttrNames = {
    "arch", "scale", "allow_neg_eigval", "config_hash", "id", "index", "elapsed_s", "L", "seed", "diverged_at",
    "vocab", "d_model", "n_layers", "d_ff", "conv_kernel", "norm_eps", "gated_norm_eps", "l2norm_eps", "Hk", "Hv",
    "K", "V", "H", "G", "P", "N", "d_inner", "model"};
inline const std::vector<std::string> kStrings = {
    "gdn", "mamba2", "", "1", "-1", "16", "0123456789abcdef", "x", "r", "18446744073709551615",
    "99999999999999999999", "-", "1e3"};
inline const std::vector<std::int64_t> kInts = {0, 1, 2, -1, 16, 256, 1 << 24, (1 << 24) + 1, 128, 4,
                                                std::numeric_limits<std::int64_t>::max(),
                                                std::numeric_limits<std::int64_t>::min()};
inline const std::vector<double> kFloats = {0.0, 1.0, -1.0, 0.5, -0.5, 1e-6, 2.0, 0.25, -0.0, 1.5,
                                            std::nan(""), INFINITY, -INFINITY, 1e300, 1e38, -1e-38, 256.0, 0.75};
inline const std::vector<hsize_t> kDims = {0, 1, 2, 3, 4, 5, 8, 16, 256, hsize_t(1) << 20, hsize_t(1) << 40};
constexpr double kMaxWritten = 1 << 16;

inline void ensure_parents(hid_t f, const std::string& path) {
  for (std::size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    const std::string g = path.substr(0, pos);
    if (H5Lexists(f, g.c_str(), H5P_DEFAULT) <= 0) {
      const hid_t id = H5Gcreate2(f, g.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      if (id < 0) return;
      H5Gclose(id);
    }
  }
}

inline void add_dataset(hid_t f, Bytes& in) {
  static const std::vector<std::string> paths = dataset_paths();
  const std::string& path = in.pick(paths);
  const int dtype = in.next() % 5, rank = in.next() % 5;
  std::vector<hsize_t> dims;
  double n = 1;
  for (int r = 0; r < rank; ++r) {
    dims.push_back(in.pick(kDims));
    n *= static_cast<double>(dims.back());
  }
  std::vector<std::uint8_t> pattern(1 + in.next() % 8);
  for (auto& p : pattern) p = in.next();
  ensure_parents(f, path);
  if (H5Lexists(f, path.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f, path.c_str(), H5P_DEFAULT);
  const hid_t space = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims.data(), nullptr);
  hid_t type = dtype == 0 ? H5Tcopy(H5T_IEEE_F32LE) : dtype == 1 ? H5Tcopy(H5T_IEEE_F64LE)
             : dtype == 2 ? H5Tcopy(H5T_STD_I64LE) : dtype == 3 ? H5Tcopy(H5T_STD_U8LE) : H5Tcopy(H5T_C_S1);
  if (dtype == 4) H5Tset_size(type, H5T_VARIABLE);
  const hid_t d = H5Dcreate2(f, path.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d >= 0 && n <= kMaxWritten && n > 0) {
    const auto count = static_cast<std::size_t>(n);
    if (dtype == 4) {
      std::vector<const char*> s(count);
      for (std::size_t i = 0; i < count; ++i) s[i] = kStrings[pattern[i % pattern.size()] % kStrings.size()].c_str();
      H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data());
    } else {
      std::vector<double> v(count);
      for (std::size_t i = 0; i < count; ++i) v[i] = kFloats[pattern[i % pattern.size()] % kFloats.size()];
      if (dtype >= 2)  // integers: the pattern's float values, truncated and clamped by HDF5's conversion
        for (auto& x : v) x = std::isfinite(x) ? std::trunc(x * 4) : 0.0;
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    }
  }
  if (d >= 0) H5Dclose(d);
  H5Tclose(type);
  H5Sclose(space);
}

inline void add_attribute(hid_t f, Bytes& in) {
  const std::string& obj = in.pick(kObjects);
  const std::string& name = in.pick(kAttrNames);
  const int kind = in.next() % 6;
  const std::uint8_t v = in.next();
  if (obj != "/") ensure_parents(f, obj + "/");
  if (H5Lexists(f, obj.c_str(), H5P_DEFAULT) <= 0 && obj != "/") return;
  if (H5Aexists_by_name(f, obj.c_str(), name.c_str(), H5P_DEFAULT) > 0)
    H5Adelete_by_name(f, obj.c_str(), name.c_str(), H5P_DEFAULT);
  hsize_t two = 2;
  const hid_t space = kind == 4 ? H5Screate_simple(1, &two, nullptr) : H5Screate(H5S_SCALAR);
  const std::string& s = kStrings[v % kStrings.size()];
  hid_t type = kind == 1 || kind == 4 ? H5Tcopy(H5T_STD_I64LE) : kind == 2 ? H5Tcopy(H5T_IEEE_F64LE)
             : kind == 3 ? H5Tcopy(H5T_STD_U64LE) : H5Tcopy(H5T_C_S1);
  if (kind == 0) H5Tset_size(type, H5T_VARIABLE);
  if (kind == 5) H5Tset_size(type, s.size() + 1);
  const hid_t a = H5Acreate_by_name(f, obj.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0) {
    const std::int64_t i[2] = {kInts[v % kInts.size()], kInts[(v / 16) % kInts.size()]};
    const double x = kFloats[v % kFloats.size()];
    const std::uint64_t u = v % 3 == 2 ? std::numeric_limits<std::uint64_t>::max() : v % 3;
    const char* p = s.c_str();
    if (kind == 0) H5Awrite(a, type, &p);
    if (kind == 1 || kind == 4) H5Awrite(a, H5T_NATIVE_INT64, i);
    if (kind == 2) H5Awrite(a, H5T_NATIVE_DOUBLE, &x);
    if (kind == 3) H5Awrite(a, H5T_NATIVE_UINT64, &u);
    if (kind == 5) H5Awrite(a, type, s.c_str());
    H5Aclose(a);
  }
  H5Tclose(type);
  H5Sclose(space);
}

// Writes the program's file to path; false if HDF5 could not create it.
inline bool build_file(const std::string& path, Bytes& in) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) return false;
  for (int ops = 0; !in.done() && ops < 256; ++ops) {
    const int op = in.next() % 3;
    if (op == 0) add_dataset(f, in);
    if (op == 1) add_attribute(f, in);
    if (op == 2) ensure_parents(f, in.pick(kObjects) + "/");
  }
  H5Fclose(f);
  return true;
}

}  // namespace fuzz
