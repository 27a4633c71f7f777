#include "emulation/external_mode.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

#include "core/errors.h"
#include "core/h5.h"
#include "core/external_validation.h"
#include "emulation/dump_cases.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"

namespace replayssm::emu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
double rel_rms_of(const std::vector<double>& ref, const std::vector<double>& got) {
  return compare(ref, got, Tolerance{kInf, kInf, 0.0}).rel_rms;
}
double rel_rms_of(const double* ref, const double* got, std::size_t n) {
  return compare(ref, got, n, Tolerance{kInf, kInf, 0.0}).rel_rms;
}

Mode checked_mode(const std::string& name, const DumpLayerCase& l, const std::string& dump_path) {
  Mode m;
  try {
    m = parse_mode(name, l.shape.arch);
    check_mode(m, l.shape.dims);
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("--mode: ") + e.what() + " (dump " + dump_path + ", arch " +
                    arch_name(l.shape.arch) + ")");
  }
  return m;
}

}  // namespace

std::vector<ExternalModeRow> validate_external_mode(const std::string& theirs_path, const std::string& dump_path,
                                                    const std::string& mode_name, const ExpectedOutputs& save) {
  const std::vector<DumpLayerCase> layers = load_dump_cases(dump_path);
  std::vector<ExternalLayerShape> shapes;
  std::vector<Mode> modes;
  for (const DumpLayerCase& l : layers) {
    const Dims& d = l.shape.dims;
    shapes.push_back({l.layer, std::size_t(l.tokens.T), std::size_t(d.H), std::size_t(d.V), std::size_t(d.K)});
    modes.push_back(checked_mode(mode_name, l, dump_path));
  }
  const std::vector<ExternalOutputs> got = read_external_outputs(theirs_path, dump_path, shapes);

  std::unique_ptr<h5::AtomicOutput> out;
  if (!save.path.empty()) {
    h5::refuse_output_over_input(save.path, {theirs_path, dump_path});
    out = std::make_unique<h5::AtomicOutput>(save.path);
    h5::write_provenance(out->file(), save.command, save.options, "cpu (emulated)");
    out->file().set_attr("/", "mode", modes.empty() ? mode_name : modes.front().name());
    out->file().set_attr("/", "dump", dump_path);
  }
  std::vector<ExternalModeRow> rows;
  const auto reference = make_mode_aware_reference();
  const auto emulated = make_emulated_backend();
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const DumpLayerCase& l = layers[li];
    const ExternalLayerShape& d = shapes[li];
    const Mode& m = modes[li];
    const CaseInputs in = dump_case_inputs(l, l.tokens.T);
    const CaseOutputs ref = run_backend(*reference, m, in);
    const CaseOutputs emu = run_backend(*emulated, m, in);
    const CaseOutputs fp64 = run_reference(in);
    if (out) {
      const std::string g = "/layers/" + l.layer + "/";
      out->file().write(g + "o", {d.T, d.H, d.V}, ref.o.data());
      out->file().write(g + "final_state", {d.H, d.V, d.K}, ref.state.data());
      out->file().write(g + "emulated_o", {d.T, d.H, d.V}, emu.o.data());
      out->file().write(g + "emulated_state", {d.H, d.V, d.K}, emu.state.data());
    }
    const std::size_t per_head = d.V * d.K;
    double ours = 0.0;  // the scale of the bound: our emulation, the largest over the layer's heads
    for (std::size_t h = 0; h < d.H; ++h) {
      ours = std::max(ours, rel_rms_of(external_head_rows(ref.o, d, h), external_head_rows(emu.o, d, h)));
      ours = std::max(ours, rel_rms_of(ref.state.data() + h * per_head, emu.state.data() + h * per_head, per_head));
    }
    const double mem = 1.0 / std::max(1e-12, 1.0 - l.a_max);
    for (std::size_t h = 0; h < d.H; ++h) {
      ExternalModeRow r;
      r.layer = l.layer;
      r.head = int(h);
      const std::vector<double> ref_o = external_head_rows(ref.o, d, h);
      const double* ref_s = ref.state.data() + h * per_head;
      r.emu_out = rel_rms_of(ref_o, external_head_rows(emu.o, d, h));
      r.mode_error = std::max(rel_rms_of(external_head_rows(fp64.o, d, h), ref_o),
                              rel_rms_of(fp64.state.data() + h * per_head, ref_s, per_head));
      r.tol = external_mode_tolerance(l.shape.dims.K, ref.n_tokens, mem, ours, r.mode_error);
      r.arithmetic = external_mode_tolerance(l.shape.dims.K, ref.n_tokens, mem, ours, 0.0).rel_rms;
      r.out = compare(ref_o, external_head_rows(got[li].o, d, h), r.tol);
      if (got[li].state) r.state = compare(ref_s, got[li].state->data() + h * per_head, per_head, r.tol);
      r.emu_state = rel_rms_of(ref_s, emu.state.data() + h * per_head, per_head);
      rows.push_back(std::move(r));
    }
  }
  if (out) out->commit();
  return rows;
}

int run_external_mode_validation(const std::string& theirs_path, const std::string& dump_path,
                                 const std::string& mode_name, const ExpectedOutputs& save) {
  const std::vector<ExternalModeRow> rows = validate_external_mode(theirs_path, dump_path, mode_name, save);
  std::printf("validate --external --mode %s: %s against the mode-aware FP64 reference of %s\n", mode_name.c_str(),
              theirs_path.c_str(), dump_path.c_str());
  std::printf("%-6s %5s %11s %11s %10s  %-6s %11s %11s %11s %10s\n", "layer", "head", "o rel-RMS", "S rel-RMS",
              "bound", "result", "ours o", "ours S", "mode error", "separation");
  int failed = 0;
  bool any_state = false, weak = false;
  for (const ExternalModeRow& r : rows) {
    char s_rms[32] = "-";
    if (r.state) {
      any_state = true;
      std::snprintf(s_rms, sizeof s_rms, "%11.3e", r.state->rel_rms);
    }
    const bool pass = r.pass();
    failed += pass ? 0 : 1;
    const double separation = r.separation();
    weak = weak || separation < kExternalMinSeparation;
    std::printf("%-6s %5d %11.3e %11s %10.2e  %-6s %11.3e %11.3e %11.3e %10.1f", r.layer.c_str(), r.head,
                r.out.rel_rms, s_rms, r.tol.rel_rms, pass ? "PASS" : "FAIL", r.emu_out, r.emu_state, r.mode_error,
                separation);
    if (r.out.n_nonfinite || (r.state && r.state->n_nonfinite))
      std::printf("  (non-finite: o %zu, state %zu)", r.out.n_nonfinite, r.state ? r.state->n_nonfinite : 0);
    std::printf("\n");
  }
  std::printf("validate --external --mode: %zu (layer, head) rows, %d failed; bound: max(FP32 floor, %.0f x ours, mode "
              "error / %.0f) (src/emulation/tolerances.h), rel-RMS per layer and head (o over all positions%s; NaN/Inf never "
              "passes); 'ours': this tool's emulation of the mode under the same check; mode error: the mode-aware "
              "reference against plain FP64 (outputs or state); separation: mode error over max(FP32 floor, %.0f x "
              "ours)\n",
              rows.size(), failed, kExternalEmulationFactor, kExternalSeparation,
              any_state ? ", final_state over [V, K]" : "; no final_state in theirs", kExternalEmulationFactor);
  if (!save.path.empty())
    std::printf("validate --external --mode: expected outputs (mode-aware reference, emulation) -> %s\n",
                save.path.c_str());
  if (weak)
    std::printf("validate --external --mode: note: in some rows the mode's error is less than %.0fx what FP32 "
                "arithmetic and kept flips explain: there this input cannot tell a missing or misplaced store from "
                "arithmetic (a head whose decay is near 0 forgets its stored state; use more tokens)\n",
                kExternalMinSeparation);
  return failed ? kExitValidationFailed : kExitOk;
}

}  // namespace replayssm::emu
