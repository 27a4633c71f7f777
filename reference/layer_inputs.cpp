#include "reference/layer_inputs.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace replayssm::ref {
namespace {

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw std::invalid_argument(field + ": " + what);
}

void check_dim(const char* name, int value, bool allow_zero = false) {
  if (value < 0 || (!allow_zero && value == 0)) bad(name, "must be " + std::string(allow_zero ? ">= 0" : "> 0") +
                                                            ", got " + std::to_string(value));
}

void check_array(const char* name, const std::vector<double>& a, long long expected, const char* shape) {
  if (static_cast<long long>(a.size()) != expected)
    bad(name, std::string("expected ") + shape + " = " + std::to_string(expected) + " elements, got " +
                  std::to_string(a.size()));
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a[i])) bad(name, "non-finite value at index " + std::to_string(i));
}

void check_grouping(const char* outer, int n_outer, const char* inner, int n_inner) {
  if (n_outer % n_inner != 0)
    bad(outer, std::to_string(n_outer) + " is not a multiple of " + inner + " = " + std::to_string(n_inner));
}

using ll = long long;

}  // namespace

void GdnInputs::validate() const {
  check_dim("T", T, true);
  check_dim("Hk", Hk);
  check_dim("Hv", Hv);
  check_dim("K", K);
  check_dim("V", V);
  check_grouping("Hv", Hv, "Hk", Hk);
  if (!std::isfinite(scale) || scale == 0.0) bad("scale", "must be finite and non-zero (normally 1/sqrt(K))");
  check_array("q", q, ll(T) * Hk * K, "[T][Hk][K]");
  check_array("k", k, ll(T) * Hk * K, "[T][Hk][K]");
  check_array("v", v, ll(T) * Hv * V, "[T][Hv][V]");
  check_array("g", g, ll(T) * Hv, "[T][Hv]");
  check_array("beta", beta, ll(T) * Hv, "[T][Hv]");
}

void Mamba2Inputs::validate() const {
  check_dim("T", T, true);
  check_dim("H", H);
  check_dim("G", G);
  check_dim("P", P);
  check_dim("N", N);
  check_grouping("H", H, "G", G);
  check_array("x", x, ll(T) * H * P, "[T][H][P]");
  check_array("B", B, ll(T) * G * N, "[T][G][N]");
  check_array("C", C, ll(T) * G * N, "[T][G][N]");
  check_array("dt", dt, ll(T) * H, "[T][H]");
  check_array("A", A, H, "[H]");
  if (!D.empty()) check_array("D", D, H, "[H] (or empty)");
}

void validate_initial_state(const std::vector<double>* initial_state, int state_size) {
  if (initial_state) check_array("initial_state", *initial_state, state_size, "[heads][V][K]");
}

Eigen::MatrixXd head_state(const std::vector<double>& flat, int h, int V, int K) {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return Eigen::Map<const RowMajor>(flat.data() + std::size_t(h) * std::size_t(V) * std::size_t(K), V, K);
}

void put_head_state(std::vector<double>& flat, int h, const Eigen::MatrixXd& S) {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::size_t off = std::size_t(h) * std::size_t(S.rows()) * std::size_t(S.cols());
  Eigen::Map<RowMajor>(flat.data() + off, S.rows(), S.cols()) = S;
}

}  // namespace replayssm::ref
