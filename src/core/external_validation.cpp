#include "core/external_validation.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "core/activation_dump.h"

#include "core/errors.h"
#include "core/h5.h"
#include "reference/gdn_recurrent.h"
#include "reference/mamba2_recurrent.h"

namespace replayssm {
namespace {

struct ExternalRow {
  std::string layer;
  int head = 0;
  Comparison out;
  std::optional<Comparison> state;  // when theirs has /layers/<i>/final_state
  bool pass() const { return out.pass && (!state || state->pass); }
};

struct LayerDims {
  std::size_t T, H, V, K;  // heads, rows, columns of one head's state (Mamba-2: H, P, N)
};

LayerDims dims_of(const DumpLayer& l, Arch arch) {
  auto z = [](int v) { return static_cast<std::size_t>(v); };
  if (arch == Arch::gdn) return {z(l.gdn.T), z(l.gdn.Hv), z(l.gdn.V), z(l.gdn.K)};
  return {z(l.mamba2.T), z(l.mamba2.H), z(l.mamba2.P), z(l.mamba2.N)};
}

// One head's slice of a [T][H][V] output, as a contiguous [T][V] array.
template <class T>
std::vector<double> head_rows(const std::vector<T>& o, const LayerDims& d, std::size_t h) {
  std::vector<double> out(d.T * d.V);
  for (std::size_t t = 0; t < d.T; ++t)
    for (std::size_t i = 0; i < d.V; ++i) out[t * d.V + i] = static_cast<double>(o[(t * d.H + h) * d.V + i]);
  return out;
}

// Reads theirs (one-line UserError naming the file and field, exit 2, on a missing layer, a wrong shape or a
// non-numeric dataset; NaN/Inf in theirs is a failed comparison, not a bad input) and compares it with the FP64
// reference of every dump layer.
std::vector<ExternalRow> validate_external(const std::string& theirs_path, const ActivationDump& dump, double rtol) {
  const h5::File theirs = h5::File::open_read(theirs_path);
  const Tolerance tol = external_tolerance(rtol);
  // Read every field of theirs first: a bad file fails before minutes of reference work.
  struct Theirs {
    std::vector<double> o;
    std::optional<std::vector<double>> state;
  };
  std::vector<Theirs> got;
  for (const auto& l : dump.layers) {
    const LayerDims d = dims_of(l, dump.arch);
    const std::string g = "/layers/" + l.name;
    if (!theirs.exists(g + "/o"))
      theirs.fail(g + "/o", "missing dataset (the dump " + dump.path + " has layer " + l.name + ")");
    auto o = theirs.read_f64(g + "/o", /*require_finite=*/false);  // NaN is a failed result, not bad input
    h5::require_shape(theirs, g + "/o", o.shape, {d.T, d.H, d.V});
    Theirs t{std::move(o.data), std::nullopt};
    if (theirs.exists(g + "/final_state")) {
      auto s = theirs.read_f64(g + "/final_state", false);
      h5::require_shape(theirs, g + "/final_state", s.shape, {d.H, d.V, d.K});
      t.state = std::move(s.data);
    }
    got.push_back(std::move(t));
  }
  std::vector<ExternalRow> rows;
  for (std::size_t li = 0; li < dump.layers.size(); ++li) {
    const DumpLayer& l = dump.layers[li];
    const LayerDims d = dims_of(l, dump.arch);
    const std::vector<double>* init = l.initial_state ? &*l.initial_state : nullptr;
    const ref::LayerOutputs spec =
        dump.arch == Arch::gdn ? ref::gdn_recurrent(l.gdn, init) : ref::mamba2_recurrent(l.mamba2, init);
    const std::size_t per_head = d.V * d.K;
    for (std::size_t h = 0; h < d.H; ++h) {
      ExternalRow r;
      r.layer = l.name;
      r.head = static_cast<int>(h);
      r.out = compare(head_rows(spec.o, d, h), head_rows(got[li].o, d, h), tol);
      if (got[li].state)
        r.state = compare(spec.final_state.data() + h * per_head, got[li].state->data() + h * per_head, per_head, tol);
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

int print_external_report(const std::vector<ExternalRow>& rows, const std::string& theirs_path,
                          const std::string& dump_path, double rtol) {
  std::printf("validate --external: %s against the FP64 reference of %s\n", theirs_path.c_str(), dump_path.c_str());
  std::printf("%-6s %5s %12s %12s %12s %12s %10s  %s\n", "layer", "head", "o max-abs", "o rel-RMS", "S max-abs",
              "S rel-RMS", "bound", "result");
  int failed = 0;
  bool any_state = false;
  for (const auto& r : rows) {
    char s_abs[32] = "-", s_rms[32] = "-";
    if (r.state) {
      any_state = true;
      std::snprintf(s_abs, sizeof s_abs, "%12.3e", r.state->max_abs);
      std::snprintf(s_rms, sizeof s_rms, "%12.3e", r.state->rel_rms);
    }
    const bool pass = r.pass();
    if (!pass) ++failed;
    std::printf("%-6s %5d %12.3e %12.3e %12s %12s %10.1e  %s", r.layer.c_str(), r.head, r.out.max_abs, r.out.rel_rms,
                s_abs, s_rms, rtol, pass ? "PASS" : "FAIL");
    if (r.out.n_nonfinite || (r.state && r.state->n_nonfinite))
      std::printf("  (non-finite: o %zu, state %zu)", r.out.n_nonfinite, r.state ? r.state->n_nonfinite : 0);
    std::printf("\n");
  }
  std::printf("validate --external: %zu (layer, head) rows, %d failed; bound: rel-RMS <= %.1e per layer and head "
              "(o over all positions%s; NaN/Inf never passes)\n",
              rows.size(), failed, rtol, any_state ? ", final_state over [V, K]" : "; no final_state in theirs");
  return failed;
}

}  // namespace

int run_external_validation(const std::string& theirs_path, const std::string& dump_path, double rtol) {
  if (!(rtol > 0.0) || !std::isfinite(rtol))
    throw UserError("--rtol must be a finite number > 0 (got " + std::to_string(rtol) + ")");
  const ActivationDump dump = read_activation_dump(dump_path);
  const auto rows = validate_external(theirs_path, dump, rtol);
  return print_external_report(rows, theirs_path, dump_path, rtol) ? kExitValidationFailed : kExitOk;
}

}  // namespace replayssm
