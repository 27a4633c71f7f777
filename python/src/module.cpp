// replayssm._core: the C++ library (FP64 reference, formats, emulation, comparison, dump I/O) as seen from Python. The
// public API is the pure-Python package around it (python/replayssm/); nothing here is meant to be called directly.
#include <nanobind/nanobind.h>

#include "arrays.h"
#include "core/errors.h"
#include "core/version.h"

NB_MODULE(_core, m) {
  namespace py = replayssm::py;
  m.doc() = "replayssm's C++ core (use the replayssm package, not this module)";
  // Bad input from the library (a file or field the readers refuse) is a ValueError naming it, as std::invalid_argument
  // is by default; everything else stays a RuntimeError.
  nanobind::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const replayssm::UserError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.attr("__version__") = replayssm::tool_version();
  m.attr("git_sha") = replayssm::git_sha();
  py::bind_reference(m);
  py::bind_formats(m);
  py::bind_emulate(m);
  py::bind_io(m);
  py::bind_compare(m);
}
