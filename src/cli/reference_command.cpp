// `replayssm reference`: FP64 outputs and final states of an activation dump, for anyone to compare against.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "core/activation_dump.h"
#include "core/compare.h"
#include "core/errors.h"
#include "reference/gdn_chunked.h"
#include "reference/gdn_recurrent.h"
#include "reference/gdn_replay.h"
#include "reference/mamba2_chunked.h"
#include "reference/mamba2_recurrent.h"
#include "reference/mamba2_replay.h"

namespace replayssm::cli {
namespace {

void add_options(po::options_description& d) {
  d.add_options()
    ("in", po::value<std::string>()->required(), "activation dump (.h5; schema in datasets/README.md)")
    ("out", po::value<std::string>()->required(), "output file: /layers/<i>/o and /layers/<i>/final_state (float64)")
    ("check-forms", po::bool_switch(), "also run the chunked and ReplaySSM forms and check them against the spec")
    ("chunk", po::value<int>()->default_value(64), "chunk size for --check-forms")
    ("L", po::value<int>()->default_value(16), "ReplaySSM buffer capacity for --check-forms");
}

struct FormCheck {
  std::string layer, form;
  Comparison out, state;
};

ref::LayerOutputs run_form(const DumpLayer& l, Arch arch, const std::string& form, int chunk, int L) {
  const std::vector<double>* init = l.initial_state ? &*l.initial_state : nullptr;
  if (arch == Arch::gdn) {
    if (form == "recurrent") return ref::gdn_recurrent(l.gdn, init);
    if (form == "chunked") return ref::gdn_chunked(l.gdn, chunk, init);
    return ref::gdn_replay_decode(l.gdn, L, init);
  }
  if (form == "recurrent") return ref::mamba2_recurrent(l.mamba2, init);
  if (form == "chunked") return ref::mamba2_chunked(l.mamba2, chunk, init);
  return ref::mamba2_replay_decode(l.mamba2, L, init);
}

int run(const po::variables_map& vm) {
  const std::string in_path = vm["in"].as<std::string>(), out_path = vm["out"].as<std::string>();
  h5::refuse_output_over_input(out_path, {in_path});
  const int chunk = vm["chunk"].as<int>(), L = vm["L"].as<int>();
  if (chunk < 1) throw UserError("--chunk must be >= 1");
  if (L < 1) throw UserError("--L must be >= 1");
  const bool check = vm["check-forms"].as<bool>();

  const ActivationDump dump = read_activation_dump(in_path);
  h5::AtomicOutput out(out_path);
  h5::File& f = out.file();
  f.set_attr("/", "arch", arch_name(dump.arch));
  f.set_attr("/", "input", in_path);
  f.set_attr("/", "form", "recurrent (FP64 spec)");
  std::vector<FormCheck> checks;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& l : dump.layers) {
    const ref::LayerOutputs spec = run_form(l, dump.arch, "recurrent", chunk, L);
    const std::string g = "/layers/" + l.name;
    if (dump.arch == Arch::gdn) {
      const auto& in = l.gdn;
      const auto T = static_cast<std::size_t>(in.T), Hv = static_cast<std::size_t>(in.Hv);
      const auto V = static_cast<std::size_t>(in.V), K = static_cast<std::size_t>(in.K);
      f.write(g + "/o", {T, Hv, V}, spec.o.data());
      f.write(g + "/final_state", {Hv, V, K}, spec.final_state.data());
      f.set_attr(g, "scale", in.scale);
      f.set_attr(g, "state_layout", "[Hv, V, K], o = S (scale q)");
    } else {
      const auto& in = l.mamba2;
      const auto T = static_cast<std::size_t>(in.T), H = static_cast<std::size_t>(in.H);
      const auto P = static_cast<std::size_t>(in.P), N = static_cast<std::size_t>(in.N);
      f.write(g + "/o", {T, H, P}, spec.o.data());
      f.write(g + "/final_state", {H, P, N}, spec.final_state.data());
      f.set_attr(g, "state_layout", "[H, P, N], y = S C + D x");
    }
    if (check) {
      for (const char* form : {"chunked", "replay"}) {
        const ref::LayerOutputs r = run_form(l, dump.arch, form, chunk, L);
        checks.push_back({l.name, form, compare(spec.o, r.o, kFp64FormTolerance),
                          compare(spec.final_state, r.final_state, kFp64FormTolerance)});
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  h5::write_provenance(f, command_line(), resolved_options(vm), "cpu (FP64 Eigen reference)");
  out.commit();
  std::cout << "reference: " << dump.layers.size() << " " << arch_name(dump.arch) << " layer(s) from " << in_path
            << " -> " << out_path << " (" << secs << " s)\n";
  bool ok = true;
  if (check) {
    std::printf("%-6s %-8s %12s %12s %12s %12s %6s\n", "layer", "form", "o max-abs", "o rel-RMS", "S max-abs",
                "S rel-RMS", "result");
    for (const auto& c : checks) {
      const bool pass = c.out.pass && c.state.pass;
      ok = ok && pass;
      std::printf("%-6s %-8s %12.3e %12.3e %12.3e %12.3e %6s\n", c.layer.c_str(), c.form.c_str(), c.out.max_abs,
                  c.out.rel_rms, c.state.max_abs, c.state.rel_rms, pass ? "PASS" : "FAIL");
    }
    std::printf("tolerance: rel-RMS and max-abs/max|ref| <= %.0e (kFp64FormTolerance)\n", kFp64FormTolerance.rel_rms);
  }
  return ok ? kExitOk : kExitValidationFailed;
}

const Registrar reg{{"reference", "FP64 reference outputs and final states of an activation dump", add_options, run,
                     "replayssm reference --in acts.h5 --out ref.h5 --check-forms"}};

}  // namespace
}  // namespace replayssm::cli
