#include <algorithm>
#include <functional>
#include <cstdint>
#include <numeric>

#include "core/h5.h"
#include "core/h5_handle.h"

namespace replayssm::h5 {
namespace {

std::size_t row_size(const Shape& shape) {
  return std::accumulate(shape.begin() + 1, shape.end(), std::size_t(1), std::multiplies<std::size_t>());
}

// io(dataset, memory space, file space) on rows [first, first + n) of a dataset of `shape`; false when HDF5 fails.
template <class Io>
bool on_rows(hid_t file, const std::string& dataset, const Shape& shape, std::size_t first, std::size_t n, Io io) {
  Handle d(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) return false;
  Handle fs(H5Dget_space(d.id), H5Sclose);
  std::vector<hsize_t> start(shape.size(), 0), count(shape.begin(), shape.end());
  start[0] = first;
  count[0] = n;
  if (H5Sselect_hyperslab(fs.id, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0) return false;
  Handle ms(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  return io(d.id, ms.id, fs.id) >= 0;
}

}  // namespace

RowWriter::RowWriter(File& f, const std::string& dataset, const Shape& shape, std::size_t chunk_rows)
    : f_(f), dataset_(dataset), shape_(shape) {
  if (shape.empty()) f.fail(dataset, "a row-written dataset needs at least one dimension");
  const std::size_t slash = dataset.find_last_of('/');
  if (slash != std::string::npos && slash > 0) f.ensure_group(dataset.substr(0, slash));
  std::vector<hsize_t> dims(shape.begin(), shape.end()), chunk(dims);
  chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(dims[0], chunk_rows));
  Handle sp(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (dims[0] > 0 && row_size(shape) > 0) H5Pset_chunk(plist.id, static_cast<int>(chunk.size()), chunk.data());
  Handle d(H5Dcreate2(f.id(), dataset.c_str(), H5T_IEEE_F64LE, sp.id, H5P_DEFAULT, plist.id, H5P_DEFAULT), H5Dclose);
  if (!d.ok()) f.fail(dataset, "cannot create dataset");
}

void RowWriter::append(const double* data, std::size_t n) {
  if (written_ + n > shape_[0]) f_.fail(dataset_, "more rows written than the dataset holds");
  if (n == 0 || row_size(shape_) == 0) {
    written_ += n;
    return;
  }
  if (!on_rows(f_.id(), dataset_, shape_, written_, n, [&](hid_t d, hid_t ms, hid_t fs) {
        return H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, data);
      }))
    f_.fail(dataset_, "write failed (disk full?)");
  written_ += n;
}

std::vector<double> read_rows(const File& f, const std::string& dataset, std::size_t first, std::size_t n) {
  const Shape shape = f.shape(dataset);
  if (shape.empty()) f.fail(dataset, "expected at least one dimension, got a scalar");
  if (first + n > shape[0])
    f.fail(dataset, "rows " + std::to_string(first) + ".." + std::to_string(first + n) + " are beyond its " +
                        std::to_string(shape[0]) + " rows");
  std::vector<double> out(n * row_size(shape));
  if (out.empty()) return out;
  if (!on_rows(f.id(), dataset, shape, first, n, [&](hid_t d, hid_t ms, hid_t fs) {
        return H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, out.data());
      }))
    f.fail(dataset, "read failed");
  return out;
}

}  // namespace replayssm::h5
