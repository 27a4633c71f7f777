#pragma once
// Byte blobs of in-memory state (a run's checkpoint): plain values and vectors of them, host byte order, each
// vector length-prefixed. A blob is read back by the same build on the same machine, so no portability layer: the
// point is bit-exact round trips. BlobReader throws std::invalid_argument naming what it was reading when the blob
// ends early or a length does not fit, so a damaged blob is an error, never a crash.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace replayssm {

class BlobWriter {
 public:
  explicit BlobWriter(std::vector<std::uint8_t>& out) : out_(out) {}
  template <class T>
  void pod(const T& x) {
    static_assert(std::is_trivially_copyable<T>::value, "BlobWriter::pod: trivially copyable types only");
    raw(&x, sizeof x);
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable<T>::value, "BlobWriter::vec: trivially copyable types only");
    pod(static_cast<std::uint64_t>(v.size()));
    if (!v.empty()) raw(v.data(), v.size() * sizeof(T));
  }
  void bytes(const std::uint8_t* p, std::size_t n) {  // length-prefixed (a nested blob)
    pod(static_cast<std::uint64_t>(n));
    if (n) raw(p, n);
  }
  void str(const std::string& s) { bytes(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }

 private:
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<std::uint8_t>& out_;
};

class BlobReader {
 public:
  // what: the blob's owner, for messages ("emulated backend checkpoint").
  BlobReader(const std::uint8_t* p, std::size_t n, std::string what) : p_(p), n_(n), what_(std::move(what)) {}
  template <class T>
  T pod(const char* field) {
    static_assert(std::is_trivially_copyable<T>::value, "BlobReader::pod: trivially copyable types only");
    T x;
    std::memcpy(&x, take(sizeof x, field), sizeof x);
    return x;
  }
  template <class T>
  std::vector<T> vec(const char* field) {
    const std::uint64_t n = pod<std::uint64_t>(field);
    if (n > (n_ - at_) / sizeof(T)) fail(field, "length " + std::to_string(n) + " runs past the end");
    std::vector<T> v(static_cast<std::size_t>(n));
    if (n) std::memcpy(v.data(), take(v.size() * sizeof(T), field), v.size() * sizeof(T));
    return v;
  }
  // A vector whose length the reader already knows (a buffer sized by init()): a different length is an error.
  template <class T>
  void vec_into(std::vector<T>& v, const char* field) {
    std::vector<T> got = vec<T>(field);
    if (got.size() != v.size())
      fail(field, "holds " + std::to_string(got.size()) + " values, expected " + std::to_string(v.size()));
    v = std::move(got);
  }
  // A nested blob: {pointer, length} into this one.
  std::pair<const std::uint8_t*, std::size_t> bytes(const char* field) {
    const std::uint64_t n = pod<std::uint64_t>(field);
    if (n > n_ - at_) fail(field, "length " + std::to_string(n) + " runs past the end");
    const std::uint8_t* p = take(static_cast<std::size_t>(n), field);
    return {p, static_cast<std::size_t>(n)};
  }
  std::string str(const char* field) {
    const auto b = bytes(field);
    return std::string(reinterpret_cast<const char*>(b.first), b.second);
  }
  // Every byte must have been read: trailing bytes mean the blob is not what the reader thinks it is.
  void finish() const {
    if (at_ != n_) fail("end", std::to_string(n_ - at_) + " trailing bytes");
  }
  [[noreturn]] void fail(const char* field, const std::string& why) const {
    throw std::invalid_argument(what_ + ": " + field + ": " + why);
  }

 private:
  const std::uint8_t* take(std::size_t n, const char* field) {
    if (n > n_ - at_) fail(field, "truncated");
    const std::uint8_t* p = p_ + at_;
    at_ += n;
    return p;
  }
  const std::uint8_t* p_;
  std::size_t n_, at_ = 0;
  std::string what_;
};

}  // namespace replayssm
