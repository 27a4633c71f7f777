#pragma once
// The one comparison used everywhere (tests, `validate`, benches): max-abs, relative RMS, first bad index.
// Header-only and free of Eigen/HDF5 so kernels' host code and the reference tests can both use it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

namespace replayssm {

// An element is bad when |got - ref| > max_abs_rel * scale + abs_floor, where scale = max|ref| over the array,
// or when got is NaN/Inf while ref is finite. The array passes when no element is bad, no NaN appeared,
// and rel_rms = ||got - ref||_2 / ||ref||_2 <= rel_rms (with ||ref|| = 0 treated as absolute).
struct Tolerance {
  double max_abs_rel;
  double rel_rms;
  double abs_floor = 0.0;
};

struct Comparison {
  std::size_t n = 0;
  double max_abs = 0.0;       // max |got - ref|
  double ref_max_abs = 0.0;   // max |ref| (the scale of max_abs)
  double rel_rms = 0.0;       // ||got - ref|| / ||ref||
  std::int64_t first_bad = -1;  // index of the first bad element, -1 if none
  std::size_t n_bad = 0;
  std::size_t n_nonfinite = 0;  // NaN/Inf in got (or ref): never passes
  bool pass = false;

  std::string summary() const {
    std::ostringstream os;
    os.precision(3);
    os << std::scientific << "max_abs=" << max_abs << " (ref max " << ref_max_abs << ") rel_rms=" << rel_rms
       << " bad=" << n_bad << "/" << n;
    if (first_bad >= 0) os << " first_bad=" << first_bad;
    if (n_nonfinite) os << " nonfinite=" << n_nonfinite;
    os << (pass ? " PASS" : " FAIL");
    return os.str();
  }
};

template <class RefT, class GotT>
Comparison compare(const RefT* ref, const GotT* got, std::size_t n, const Tolerance& tol) {
  Comparison c;
  c.n = n;
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = static_cast<double>(ref[i]);
    if (std::isfinite(r)) c.ref_max_abs = std::fmax(c.ref_max_abs, std::fabs(r));
  }
  const double bound = tol.max_abs_rel * c.ref_max_abs + tol.abs_floor;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = static_cast<double>(ref[i]);
    const double g = static_cast<double>(got[i]);
    bool bad;
    if (!std::isfinite(r) || !std::isfinite(g)) {
      ++c.n_nonfinite;
      bad = true;
    } else {
      const double d = std::fabs(g - r);
      c.max_abs = std::fmax(c.max_abs, d);
      num += d * d;
      den += r * r;
      bad = d > bound;
    }
    if (bad) {
      ++c.n_bad;
      if (c.first_bad < 0) c.first_bad = static_cast<std::int64_t>(i);
    }
  }
  c.rel_rms = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
  c.pass = c.n_bad == 0 && c.n_nonfinite == 0 && c.rel_rms <= tol.rel_rms;
  return c;
}

template <class RefVec, class GotVec>
Comparison compare(const RefVec& ref, const GotVec& got, const Tolerance& tol) {
  if (static_cast<std::size_t>(ref.size()) != static_cast<std::size_t>(got.size())) {
    Comparison c;
    c.n = static_cast<std::size_t>(ref.size());
    c.first_bad = 0;
    c.n_bad = c.n ? c.n : 1;
    c.pass = false;
    return c;
  }
  return compare(ref.data(), got.data(), static_cast<std::size_t>(ref.size()), tol);
}

// Named tolerances. FP64 reformulations of the same math (chunked, replay) against the recurrent spec.
inline constexpr Tolerance kFp64FormTolerance{1e-12, 1e-12, 0.0};

}  // namespace replayssm
