#include "core/h5.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "core/errors.h"
#include "core/h5_handle.h"
#include "core/memory_budget.h"
#include "core/run_info.h"
#include "core/version.h"

namespace replayssm::h5 {
namespace {

// HDF5 prints its own error stack by default; we report one line instead.
// No HDF5 exit handler either: every file is closed explicitly, and libhdf5 1.10's handler crashes (SIGSEGV in
// H5F__close_cb) on a file whose close failed, e.g. after a write past a full disk, turning exit 2 into a signal.
struct SilenceHdf5 {
  SilenceHdf5() {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
};
const SilenceHdf5 silence_once;

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string parent_of(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos || pos == 0) return "/";
  return path.substr(0, pos);
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

}  // namespace

[[noreturn]] void File::fail(const std::string& field, const std::string& what) const {
  throw input_error(label(), field, what);
}

File File::open_read(const std::string& path) {
  if (!file_exists(path)) throw UserError(path + ": no such file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UserError(path + ": not an HDF5 file (or truncated/corrupt)");
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw UserError(path + ": cannot open HDF5 file for reading (corrupt?)");
  return File(path, id);
}

File File::open_rw(const std::string& path) {
  if (!file_exists(path)) throw UserError(path + ": no such file");
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (id < 0) throw UserError(path + ": cannot open HDF5 file for writing");
  return File(path, id);
}

File File::create(const std::string& path) {
  hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) throw UserError(path + ": cannot create output file (directory missing or not writable?)");
  return File(path, id);
}

File::File(File&& o) noexcept : path_(std::move(o.path_)), label_(std::move(o.label_)), id_(o.id_) { o.id_ = -1; }
File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::move(o.path_);
    label_ = std::move(o.label_);
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}
File::~File() { close(); }
void File::close() { (void)close_checked(); }

bool File::close_checked() {
  if (id_ < 0) return true;
  const bool ok = H5Fclose(id_) >= 0;  // flushes: a full disk shows here
  id_ = -1;
  return ok;
}

bool File::exists(const std::string& object) const {
  if (object.empty() || object == "/") return true;
  // Walk the path so a missing intermediate group is "absent", not an error.
  std::string sofar;
  std::stringstream ss(object);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    sofar += "/" + part;
    if (H5Lexists(id_, sofar.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return H5Oexists_by_name(id_, object.c_str(), H5P_DEFAULT) > 0;
}

bool File::is_dataset(const std::string& object) const {
  if (!exists(object)) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name(id_, object.c_str(), &info, H5P_DEFAULT) < 0) return false;
  return info.type == H5O_TYPE_DATASET;
}

std::vector<std::string> File::list(const std::string& group) const {
  if (!exists(group)) fail(group, "missing group");
  Handle g(H5Gopen2(id_, group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.ok()) fail(group, "not a group");
  H5G_info_t info;
  H5Gget_info(g.id, &info);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t len = H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) continue;
    std::string name(static_cast<std::size_t>(len), '\0');
    H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), static_cast<std::size_t>(len) + 1,
                       H5P_DEFAULT);
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Shape File::shape(const std::string& dataset) const {
  if (!is_dataset(dataset)) fail(dataset, exists(dataset) ? "not a dataset" : "missing dataset");
  Handle d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) fail(dataset, "cannot open dataset");
  Handle sp(H5Dget_space(d.id), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(sp.id);
  if (rank < 0) fail(dataset, "unreadable dataspace");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(sp.id, dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

template <class T>
Array<T> File::read_as(const std::string& dataset, hid_t mem_type) const {
  Array<T> a;
  a.shape = shape(dataset);
  // The declared shape decides the allocation: a tiny file may declare a huge (unwritten, fill-value) dataset, so
  // the size is checked against the memory budget first (as a double: the product cannot overflow).
  double elems = 1.0;
  for (auto d : a.shape) elems *= static_cast<double>(d);
  require_memory(label() + ": " + dataset, "reading shape " + shape_str(a.shape) + " (" + std::to_string(sizeof(T)) +
                                             " bytes an element)",
                 elems * static_cast<double>(sizeof(T)), "the declared shape must fit in memory: a corrupt file?");
  std::size_t n = 1;
  for (auto d : a.shape) n *= d;
  a.data.resize(n);
  Handle d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  Handle ft(H5Dget_type(d.id), H5Tclose);
  const H5T_class_t cls = H5Tget_class(ft.id);
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) fail(dataset, "expected a numeric dataset");
  if (n > 0 && H5Dread(d.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()) < 0)
    fail(dataset, "read failed (corrupt or truncated data?)");
  return a;
}

Array<double> File::read_f64(const std::string& dataset, bool require_finite) const {
  auto a = read_as<double>(dataset, H5T_NATIVE_DOUBLE);
  if (require_finite)
    for (std::size_t i = 0; i < a.data.size(); ++i)
      if (!std::isfinite(a.data[i])) fail(dataset, "non-finite value (NaN/Inf) at flat index " + std::to_string(i));
  return a;
}

Array<float> File::read_f32(const std::string& dataset, bool require_finite) const {
  auto a = read_as<float>(dataset, H5T_NATIVE_FLOAT);
  if (require_finite)
    for (std::size_t i = 0; i < a.data.size(); ++i)
      if (!std::isfinite(a.data[i])) fail(dataset, "non-finite value (NaN/Inf) at flat index " + std::to_string(i));
  return a;
}

Array<std::int64_t> File::read_i64(const std::string& dataset) const {
  return read_as<std::int64_t>(dataset, H5T_NATIVE_INT64);
}
Array<std::uint8_t> File::read_u8(const std::string& dataset) const {
  return read_as<std::uint8_t>(dataset, H5T_NATIVE_UINT8);
}

void File::ensure_group(const std::string& group) {
  if (group.empty() || group == "/") return;
  std::string sofar;
  std::stringstream ss(group);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    sofar += "/" + part;
    if (H5Lexists(id_, sofar.c_str(), H5P_DEFAULT) > 0) continue;
    Handle g(H5Gcreate2(id_, sofar.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!g.ok()) fail(sofar, "cannot create group");
  }
}

void File::write_raw(const std::string& dataset, const Shape& shape, hid_t mem_type, hid_t file_type,
                     const void* data) {
  ensure_group(parent_of(dataset));
  if (H5Lexists(id_, dataset.c_str(), H5P_DEFAULT) > 0 && H5Ldelete(id_, dataset.c_str(), H5P_DEFAULT) < 0)
    fail(dataset, "cannot replace existing dataset");
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Handle sp(shape.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
            H5Sclose);
  Handle d(H5Dcreate2(id_, dataset.c_str(), file_type, sp.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.ok()) fail(dataset, "cannot create dataset");
  std::size_t n = 1;
  for (auto s : shape) n *= s;
  if (n > 0 && H5Dwrite(d.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail(dataset, "write failed (disk full?)");
}

void File::write(const std::string& ds, const Shape& s, const double* p) {
  write_raw(ds, s, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, p);
}
void File::write(const std::string& ds, const Shape& s, const float* p) {
  write_raw(ds, s, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, p);
}
void File::write(const std::string& ds, const Shape& s, const std::int64_t* p) {
  write_raw(ds, s, H5T_NATIVE_INT64, H5T_STD_I64LE, p);
}
void File::write(const std::string& ds, const Shape& s, const std::int32_t* p) {
  write_raw(ds, s, H5T_NATIVE_INT32, H5T_STD_I32LE, p);
}
void File::write(const std::string& ds, const Shape& s, const std::uint8_t* p) {
  write_raw(ds, s, H5T_NATIVE_UINT8, H5T_STD_U8LE, p);
}

void File::write_strings(const std::string& dataset, const std::vector<std::string>& values) {
  ensure_group(parent_of(dataset));
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.id, H5T_VARIABLE);
  H5Tset_cset(t.id, H5T_CSET_UTF8);
  hsize_t n = values.size();
  Handle sp(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle d(H5Dcreate2(id_, dataset.c_str(), t.id, sp.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.ok()) fail(dataset, "cannot create dataset");
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (n > 0 && H5Dwrite(d.id, t.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) fail(dataset, "write failed");
}

std::vector<std::string> File::read_strings(const std::string& dataset) const {
  Shape s = shape(dataset);
  if (s.size() != 1) fail(dataset, "expected a 1-d string dataset");
  Handle d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  Handle ft(H5Dget_type(d.id), H5Tclose);
  if (H5Tget_class(ft.id) != H5T_STRING || H5Tis_variable_str(ft.id) <= 0)
    fail(dataset, "expected variable-length strings");
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.id, H5T_VARIABLE);
  H5Tset_cset(t.id, H5Tget_cset(ft.id));
  require_memory(label() + ": " + dataset, "reading " + std::to_string(s[0]) + " strings",
                 static_cast<double>(s[0]) * 64.0, "the declared shape must fit in memory: a corrupt file?");
  std::vector<char*> raw(s[0], nullptr);
  if (!raw.empty() && H5Dread(d.id, t.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0) fail(dataset, "read failed");
  std::vector<std::string> out;
  for (char* p : raw) {
    out.emplace_back(p ? p : "");
    H5free_memory(p);
  }
  return out;
}

bool File::has_attr(const std::string& object, const std::string& name) const {
  if (!exists(object)) return false;
  return H5Aexists_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

std::vector<std::string> File::list_attrs(const std::string& object) const {
  if (!exists(object)) fail(object, "missing object");
  std::vector<std::string> names;
  H5O_info_t info;
  if (H5Oget_info_by_name(id_, object.c_str(), &info, H5P_DEFAULT) < 0) fail(object, "unreadable object");
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    ssize_t len = H5Aget_name_by_idx(id_, object.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) continue;
    std::string name(static_cast<std::size_t>(len), '\0');
    H5Aget_name_by_idx(id_, object.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, name.data(),
                       static_cast<std::size_t>(len) + 1, H5P_DEFAULT);
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string File::attr_string(const std::string& object, const std::string& name) const {
  const std::string field = object + (object == "/" ? "" : "/") + "@" + name;
  if (!has_attr(object, name)) fail(field, "missing attribute");
  Handle a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Handle ft(H5Aget_type(a.id), H5Tclose);
  if (H5Tget_class(ft.id) != H5T_STRING) fail(field, "expected a string attribute");
  if (H5Tis_variable_str(ft.id) > 0) {
    Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(t.id, H5T_VARIABLE);
    H5Tset_cset(t.id, H5Tget_cset(ft.id));  // HDF5 will not convert between ASCII and UTF-8
    char* p = nullptr;
    if (H5Aread(a.id, t.id, &p) < 0) fail(field, "unreadable attribute");
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  std::size_t size = H5Tget_size(ft.id);
  require_memory(label() + ": " + field, "a fixed-size string of " + std::to_string(size) + " bytes",
                 static_cast<double>(size), "a corrupt file?");
  std::string s(size, '\0');
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.id, size);
  H5Tset_cset(t.id, H5Tget_cset(ft.id));
  if (H5Aread(a.id, t.id, s.data()) < 0) fail(field, "unreadable attribute");
  auto end = s.find('\0');
  if (end != std::string::npos) s.resize(end);
  return s;
}

double File::attr_double(const std::string& object, const std::string& name) const {
  const std::string field = object + (object == "/" ? "" : "/") + "@" + name;
  if (!has_attr(object, name)) fail(field, "missing attribute");
  Handle a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Handle ft(H5Aget_type(a.id), H5Tclose);
  auto cls = H5Tget_class(ft.id);
  Handle sp(H5Aget_space(a.id), H5Sclose);
  if ((cls != H5T_FLOAT && cls != H5T_INTEGER) || H5Sget_simple_extent_npoints(sp.id) != 1)
    fail(field, "expected a numeric scalar attribute");
  double v = 0;
  if (H5Aread(a.id, H5T_NATIVE_DOUBLE, &v) < 0) fail(field, "unreadable attribute");
  if (!std::isfinite(v)) fail(field, "non-finite value");
  return v;
}

std::int64_t File::attr_int(const std::string& object, const std::string& name) const {
  const double v = attr_double(object, name);
  const std::string field = object + (object == "/" ? "" : "/") + "@" + name;
  if (v != std::floor(v)) fail(field, "expected an integer");
  // [-2^63, 2^63): the range a double converts to int64 without undefined behaviour
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) fail(field, "integer out of range");
  return static_cast<std::int64_t>(v);
}

void File::set_attr(const std::string& object, const std::string& name, const std::string& value) {
  ensure_group(object);
  if (has_attr(object, name)) H5Adelete_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT);
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.id, H5T_VARIABLE);
  H5Tset_cset(t.id, H5T_CSET_UTF8);
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), t.id, sp.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  if (!a.ok()) fail(object + "/@" + name, "cannot create attribute");
  const char* p = value.c_str();
  H5Awrite(a.id, t.id, &p);
}
void File::set_attr(const std::string& object, const std::string& name, const char* value) {
  set_attr(object, name, std::string(value));
}

void File::set_scalar_attr(const std::string& object, const std::string& name, hid_t file_type, hid_t mem_type,
                           const void* value) {
  ensure_group(object);
  if (has_attr(object, name)) H5Adelete_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT);
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), file_type, sp.id, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT),
           H5Aclose);
  if (!a.ok()) fail(object + "/@" + name, "cannot create attribute");
  H5Awrite(a.id, mem_type, value);
}

void File::set_attr(const std::string& object, const std::string& name, double value) {
  set_scalar_attr(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}
void File::set_attr(const std::string& object, const std::string& name, std::int64_t value) {
  set_scalar_attr(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}
void File::set_attr_u64(const std::string& object, const std::string& name, std::uint64_t value) {
  set_scalar_attr(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

std::string File::attr_text(const std::string& object, const std::string& name) const {
  const std::string field = object + (object == "/" ? "" : "/") + "@" + name;
  if (!has_attr(object, name)) fail(field, "missing attribute");
  H5T_class_t cls;
  H5T_sign_t sign;
  {
    Handle a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    Handle ft(H5Aget_type(a.id), H5Tclose);
    Handle sp(H5Aget_space(a.id), H5Sclose);
    cls = H5Tget_class(ft.id);
    sign = H5Tget_sign(ft.id);
    if (cls != H5T_STRING && H5Sget_simple_extent_npoints(sp.id) != 1) fail(field, "expected a scalar attribute");
    if (cls == H5T_INTEGER) {
      if (sign == H5T_SGN_NONE) {
        std::uint64_t u = 0;
        if (H5Aread(a.id, H5T_NATIVE_UINT64, &u) < 0) fail(field, "unreadable attribute");
        return std::to_string(u);
      }
      std::int64_t v = 0;
      if (H5Aread(a.id, H5T_NATIVE_INT64, &v) < 0) fail(field, "unreadable attribute");
      return std::to_string(v);
    }
  }
  if (cls == H5T_STRING) return attr_string(object, name);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", attr_double(object, name));
  return buf;
}

void require_shape(const File& f, const std::string& dataset, const Shape& got, const Shape& expected) {
  if (got.size() != expected.size())
    f.fail(dataset, "expected rank " + std::to_string(expected.size()) + ", got shape " + shape_str(got));
  for (std::size_t i = 0; i < got.size(); ++i)
    if (expected[i] != 0 && got[i] != expected[i])
      f.fail(dataset, "expected shape " + shape_str(expected) + " (0 = any), got " + shape_str(got));
}

void write_provenance(File& f, const std::string& command, const std::map<std::string, std::string>& options,
                      const std::string& device) {
  f.set_attr("/", "tool", "replayssm");
  f.set_attr("/", "tool_version", tool_version());
  f.set_attr("/", "git_sha", git_sha());
  f.set_attr("/", "compiler", compiler_id());
  f.set_attr("/", "compiler_flags", compiler_flags());
  f.set_attr("/", "host", host_description());
  f.set_attr("/", "device", device);
  f.set_attr("/", "command", command);
  f.set_attr("/", "created_utc", utc_timestamp());
  for (const auto& [k, v] : options) f.set_attr("/", "option." + k, v);
}

std::pair<std::string, std::string> split_file_dataset(const std::string& spec) {
  // The dataset part starts at the last ':' that is followed by '/', so paths with ':' still work.
  auto pos = spec.rfind(":/");
  if (pos == std::string::npos) return {spec, ""};
  return {spec.substr(0, pos), spec.substr(pos + 1)};
}

}  // namespace replayssm::h5
