#pragma once
// Thin RAII layer over the HDF5 C API. Every failure becomes a UserError naming the file and the field, so a
// user sees "acts.h5: /layers/0/q: expected rank 3, got 2" instead of an HDF5 error stack.
#include <hdf5.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace replayssm::h5 {

using Shape = std::vector<std::size_t>;

// An n-d array read from a file, converted to T (double for the reference, float for kernels' inputs).
template <class T>
struct Array {
  Shape shape;
  std::vector<T> data;
  std::size_t dim(std::size_t i) const { return shape.at(i); }
  std::size_t rank() const { return shape.size(); }
};

class File {
 public:
  static File open_read(const std::string& path);
  static File open_rw(const std::string& path);
  static File create(const std::string& path);  // truncates
  File(File&& o) noexcept;
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();
  void close();
  bool close_checked();  // false when HDF5 could not flush and close the file

  const std::string& path() const { return path_; }
  // The name errors give the file: its path, or what the user called it (AtomicOutput: the final --out, not the
  // temporary file it writes first).
  const std::string& label() const { return label_.empty() ? path_ : label_; }
  void set_label(std::string label) { label_ = std::move(label); }
  hid_t id() const { return id_; }

  bool exists(const std::string& object) const;        // dataset or group at an absolute path
  bool is_dataset(const std::string& object) const;
  std::vector<std::string> list(const std::string& group) const;  // member names, sorted
  Shape shape(const std::string& dataset) const;

  // Reads and converts. require_finite rejects NaN/Inf with an error naming the field.
  Array<double> read_f64(const std::string& dataset, bool require_finite = true) const;
  Array<float> read_f32(const std::string& dataset, bool require_finite = true) const;
  Array<std::int64_t> read_i64(const std::string& dataset) const;
  Array<std::uint8_t> read_u8(const std::string& dataset) const;

  // Writers create intermediate groups. Data is row-major with the given shape.
  void write(const std::string& dataset, const Shape& shape, const double* data);
  void write(const std::string& dataset, const Shape& shape, const float* data);
  void write(const std::string& dataset, const Shape& shape, const std::int64_t* data);
  void write(const std::string& dataset, const Shape& shape, const std::int32_t* data);
  void write(const std::string& dataset, const Shape& shape, const std::uint8_t* data);
  void write_strings(const std::string& dataset, const std::vector<std::string>& values);
  std::vector<std::string> read_strings(const std::string& dataset) const;
  void ensure_group(const std::string& group);

  bool has_attr(const std::string& object, const std::string& name) const;
  std::vector<std::string> list_attrs(const std::string& object) const;  // names, sorted
  std::string attr_string(const std::string& object, const std::string& name) const;
  double attr_double(const std::string& object, const std::string& name) const;
  std::int64_t attr_int(const std::string& object, const std::string& name) const;
  void set_attr(const std::string& object, const std::string& name, const std::string& value);
  void set_attr(const std::string& object, const std::string& name, const char* value);
  void set_attr(const std::string& object, const std::string& name, double value);
  void set_attr(const std::string& object, const std::string& name, std::int64_t value);
  void set_attr_u64(const std::string& object, const std::string& name, std::uint64_t value);
  // Any scalar attribute as text: a string as it is, an integer in decimal (signed or unsigned, exactly), a float
  // with 17 significant digits; for readers that accept both the numeric and an older string form.
  std::string attr_text(const std::string& object, const std::string& name) const;
  void set_attr(const std::string& object, const std::string& name, int value) {
    set_attr(object, name, static_cast<std::int64_t>(value));
  }

  // Error helper bound to this file: "path: field: what".
  [[noreturn]] void fail(const std::string& field, const std::string& what) const;

 private:
  File(std::string path, hid_t id) : path_(std::move(path)), id_(id) {}
  template <class T>
  Array<T> read_as(const std::string& dataset, hid_t mem_type) const;
  void write_raw(const std::string& dataset, const Shape& shape, hid_t mem_type, hid_t file_type, const void* data);
  void set_scalar_attr(const std::string& object, const std::string& name, hid_t file_type, hid_t mem_type,
                       const void* value);
  std::string path_, label_;
  hid_t id_ = -1;
};

// A float64 dataset of a known shape written in consecutive blocks of rows along its first dimension (chunked
// storage of chunk_rows rows), for outputs too large to hold in memory at once.
class RowWriter {
 public:
  RowWriter(File& f, const std::string& dataset, const Shape& shape, std::size_t chunk_rows);
  // The next n rows (n times the product of the other dimensions values, row-major).
  void append(const double* data, std::size_t n);
  std::size_t rows_written() const { return written_; }

 private:
  File& f_;
  std::string dataset_;
  Shape shape_;
  std::size_t written_ = 0;
};

// Rows [first, first + n) along the first dimension of a float64 dataset, row-major (n times the product of the
// other dimensions values); an error naming the field when they are beyond its end.
std::vector<double> read_rows(const File& f, const std::string& dataset, std::size_t first, std::size_t n);

// Checks a dataset's rank and (where given, non-zero) each dimension; 0 in `expected` means "any".
void require_shape(const File& f, const std::string& dataset, const Shape& got, const Shape& expected);

// Writes to "<final>.tmp-<pid>" and renames onto <final> on commit(); an uncommitted output is deleted, so an
// interrupted run never leaves a half-written file under the final name.
class AtomicOutput {
 public:
  explicit AtomicOutput(std::string final_path);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;
  File& file() { return file_; }
  const std::string& final_path() const { return final_; }
  const std::string& temp_path() const { return temp_; }
  void commit();

 private:
  std::string final_, temp_;
  File file_;
  bool committed_ = false;
};

// Checks an output path before any work: not empty, not a directory, device, pipe or socket (the rename would replace
// it), in a directory that exists and is writable; and
// refuses one that names one of the inputs, also under another spelling or through a link (the atomic rename would
// replace the input): "<out>: --out is the same file as the input <in>" (exit 2).
void refuse_output_over_input(const std::string& out_path, const std::vector<std::string>& inputs);

// One writer per output: an exclusive flock on "<out>.lock" (holding the writer's pid), released on exit or death,
// so a leftover lock file of a dead process never blocks. A second writer fails at once:
// "<out>: another replayssm (pid N) is writing this output (lock <out>.lock)" (exit 2). While it is held, every
// "<out>.tmp-*" is a leftover of a killed writer and is removed.
class OutputLock {
 public:
  explicit OutputLock(const std::string& out_path);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// Root attributes every output carries: tool version, git sha, compiler and flags, host, device, the command
// and each resolved option (as "option.<name>").
void write_provenance(File& f, const std::string& command, const std::map<std::string, std::string>& options,
                      const std::string& device);

// "file.h5:/path/to/dataset" -> {file, dataset}; a bare file gives dataset "".
std::pair<std::string, std::string> split_file_dataset(const std::string& spec);

}  // namespace replayssm::h5
