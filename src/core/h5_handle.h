#pragma once
// An HDF5 identifier closed when it goes out of scope (the h5 wrapper's own files only).
#include <hdf5.h>

namespace replayssm::h5 {

struct Handle {
  hid_t id;
  herr_t (*closer)(hid_t);
  Handle(hid_t i, herr_t (*c)(hid_t)) : id(i), closer(c) {}
  ~Handle() {
    if (id >= 0) closer(id);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  bool ok() const { return id >= 0; }
};

}  // namespace replayssm::h5
