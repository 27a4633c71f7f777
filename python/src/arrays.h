#pragma once
// Arrays across the Python boundary. The Python layer (replayssm/_args.py) hands over C-contiguous CPU arrays of the
// right dtype with the shapes already checked against each other (its ValueError names the argument); here the sizes
// are checked once more (a std::invalid_argument, which nanobind raises as ValueError), never trusted.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace replayssm::py {

namespace nb = nanobind;

template <class T>
using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;
template <class T>
using Out = nb::ndarray<nb::numpy, T>;

// The data of an input array holding exactly n elements.
template <class T>
const T* data_of(const In<T>& a, std::size_t n, const char* name) {
  if (a.size() != n)
    throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(n) + " elements, got " +
                                std::to_string(a.size()));
  return a.data();
}

// A numpy array that owns v (moved), with the given shape.
template <class T>
Out<T> to_numpy(std::vector<T>&& v, std::vector<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  if (n != v.size()) throw std::logic_error("to_numpy: shape does not match the data");
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return Out<T>(owned->data(), shape.size(), shape.data(), owner);
}

// The parts of the module, one file each.
void bind_reference(nb::module_& m);
void bind_formats(nb::module_& m);
void bind_emulate(nb::module_& m);
void bind_io(nb::module_& m);
void bind_compare(nb::module_& m);

}  // namespace replayssm::py
