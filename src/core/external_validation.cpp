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

ExternalLayerShape dims_of(const DumpLayer& l, Arch arch) {
  auto z = [](int v) { return static_cast<std::size_t>(v); };
  if (arch == Arch::gdn) return {l.name, z(l.gdn.T), z(l.gdn.Hv), z(l.gdn.V), z(l.gdn.K)};
  return {l.name, z(l.mamba2.T), z(l.mamba2.H), z(l.mamba2.P), z(l.mamba2.N)};
}

// Reads theirs (read_external_outputs) and compares it with the FP64 reference of every dump layer.
std::vector<ExternalRow> validate_external(const std::string& theirs_path, const ActivationDump& dump, double rtol) {
  const Tolerance tol = external_tolerance(rtol);
  std::vector<ExternalLayerShape> shapes;
  for (const auto& l : dump.layers) shapes.push_back(dims_of(l, dump.arch));
  const std::vector<ExternalOutputs> got = read_external_outputs(theirs_path, dump.path, shapes);
  std::vector<ExternalRow> rows;
  for (std::size_t li = 0; li < dump.layers.size(); ++li) {
    const DumpLayer& l = dump.layers[li];
    const ExternalLayerShape& d = shapes[li];
    const std::vector<double>* init = l.initial_state ? &*l.initial_state : nullptr;
    const ref::LayerOutputs spec =
        dump.arch == Arch::gdn ? ref::gdn_recurrent(l.gdn, init) : ref::mamba2_recurrent(l.mamba2, init);
    const std::size_t per_head = d.V * d.K;
    for (std::size_t h = 0; h < d.H; ++h) {
      ExternalRow r;
      r.layer = l.name;
      r.head = static_cast<int>(h);
      r.out = compare(external_head_rows(spec.o, d, h), external_head_rows(got[li].o, d, h), tol);
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

std::vector<ExternalOutputs> read_external_outputs(const std::string& theirs_path, const std::string& dump_path,
                                                   const std::vector<ExternalLayerShape>& layers) {
  const h5::File theirs = h5::File::open_read(theirs_path);
  std::vector<ExternalOutputs> got;
  for (const ExternalLayerShape& d : layers) {
    const std::string g = "/layers/" + d.name;
    if (!theirs.exists(g + "/o"))
      theirs.fail(g + "/o", "missing dataset (the dump " + dump_path + " has layer " + d.name + ")");
    auto o = theirs.read_f64(g + "/o", /*require_finite=*/false);  // NaN is a failed result, not bad input
    h5::require_shape(theirs, g + "/o", o.shape, {d.T, d.H, d.V});
    ExternalOutputs t{std::move(o.data), std::nullopt};
    if (theirs.exists(g + "/final_state")) {
      auto st = theirs.read_f64(g + "/final_state", false);
      h5::require_shape(theirs, g + "/final_state", st.shape, {d.H, d.V, d.K});
      t.state = std::move(st.data);
    }
    got.push_back(std::move(t));
  }
  return got;
}

std::vector<double> external_head_rows(const std::vector<double>& o, const ExternalLayerShape& d, std::size_t h) {
  std::vector<double> out(d.T * d.V);
  for (std::size_t t = 0; t < d.T; ++t)
    for (std::size_t i = 0; i < d.V; ++i) out[t * d.V + i] = o[(t * d.H + h) * d.V + i];
  return out;
}

int run_external_validation(const std::string& theirs_path, const std::string& dump_path, double rtol) {
  if (!(rtol > 0.0) || !std::isfinite(rtol))
    throw UserError("--rtol must be a finite number > 0 (got " + std::to_string(rtol) + ")");
  const ActivationDump dump = read_activation_dump(dump_path);
  const auto rows = validate_external(theirs_path, dump, rtol);
  return print_external_report(rows, theirs_path, dump_path, rtol) ? kExitValidationFailed : kExitOk;
}

}  // namespace replayssm
