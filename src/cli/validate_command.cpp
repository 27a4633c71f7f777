// `replayssm validate`: every decode kernel x mode against the FP64 reference (and, for CUDA, the emulation) on
// fresh random inputs, awkward cases and an optional activation dump. Exit 1 on any failure, 3 without a GPU for
// --backend cuda.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cli/command.h"
#include "core/errors.h"
#include "core/external_validation.h"
#include "core/h5.h"
#include "emulation/decode_api.h"
#include "emulation/device_backend.h"
#include "emulation/dump_cases.h"
#include "emulation/external_mode.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"
#include "reference/tree_verify.h"

namespace replayssm::cli {
namespace {

using namespace replayssm::emu;

void add_options(po::options_description& d) {
  d.add_options()("arch", po::value<std::string>()->default_value("all"), "gdn | mamba2 | all")(
      "backend", po::value<std::string>()->default_value("emulated"), "cuda | emulated | all")(
      "plan", po::value<std::string>()->default_value(""),
      "override of the CUDA kernels' launch plan, key=value,... (kernels/README.md; adds to REPLAYSSM_PLAN)")(
      "shapes", po::value<std::string>()->default_value("small"), "small | nemotron-h | qwen3.5 | all")(
      "activations", po::value<std::string>(), "activation dump (HDF5) to run through every mode as well")(
      "max-tokens", po::value<int>()->default_value(256), "tokens of each dump layer to use")(
      "seed", po::value<unsigned long long>()->default_value(20240601ull), "seed of the random cases")(
      "verbose,v", po::bool_switch(), "print every case, not only the per-mode summary and failures")(
      "external", po::value<std::string>(),
      "outside kernel's outputs (.h5: /layers/<i>/o [, final_state]) to check against the FP64 reference of "
      "--activations, per layer and head")(
      "rtol", po::value<double>()->default_value(kExternalDefaultRtol, "1e-4"),
      "--external pass bound: relative RMS per layer and head")(
      "mode", po::value<std::string>(),
      "--external: the decode mode theirs implements, policy/format[/scaling][/rounding][/u=SRC][/L=N][/seed=N] "
      "(e.g. conventional_shared/bf16, replay_shared/fp8_e4m3/row/L=16): judged against the mode-aware FP64 "
      "reference with a derived bound instead of --rtol")(
      "tree", po::value<std::string>(),
      "also run tree speculative verify cases (the GPU's on the reference kernel): chain[:T] | binary[:DEPTH] | "
      "star[:T] | a branching list per depth like 4,2,2,1; at most 64 nodes")(
      "save-expected", po::value<std::string>(),
      "--external --mode: also write what theirs should be (the mode-aware reference and this tool's emulation of "
      "the mode, per layer) to this .h5");
}

// The resolved plan override (--plan with REPLAYSSM_PLAN), or exit 2 naming the key.
std::string checked_plan(const po::variables_map& vm) {
  try {
    return resolved_plan_override(vm["plan"].as<std::string>());
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("--plan: ") + e.what());
  }
}

struct Summary {
  CheckRow worst;
  double worst_ratio = -1.0;
  int n = 0, fails = 0;
};

double ratio(const CheckRow& r) {
  const double a = std::max(r.out.rel_rms, r.state.rel_rms) / std::max(r.tol.rel_rms, 1e-300);
  return r.pass ? a : 1e300;
}

void print_row(const CheckRow& r, const std::string& backend, int n, int fails) {
  const Comparison& w = r.out.rel_rms >= r.state.rel_rms ? r.out : r.state;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-9s %-14s %-11s %-44s %-22s %-8s %10.3e %10.3e %10.3e  %s", backend.c_str(),
                r.kernel.c_str(), r.shape.c_str(), r.mode.c_str(), r.case_name.c_str(), r.against.c_str(), w.max_abs,
                std::max(r.out.rel_rms, r.state.rel_rms), r.tol.rel_rms, r.pass ? "PASS" : "FAIL");
  std::cout << buf;
  if (n > 1) std::cout << "  (" << n - fails << "/" << n << " cases)";
  if (r.bits_identical >= 0) std::printf("  bits=%.6f", r.bits_identical), std::fflush(stdout);
  if (r.max_flip_fraction >= 0)
    std::printf("  flips=%.2e (<= %.2e)", r.stores.flip_fraction(), r.max_flip_fraction), std::fflush(stdout);
  if (r.fp64_measured)  // the distance to the exact recurrence: the mode's own error, measured, not judged
    std::printf("  fp64 rel-RMS out=%.2e state=%.2e", r.fp64_out.rel_rms, r.fp64_state.rel_rms), std::fflush(stdout);
  if (!r.pass) std::cout << "\n      out: " << r.out.summary() << "\n      state: " << r.state.summary();
  if (!r.pass && !r.why.empty()) std::cout << "\n      why: " << r.why;
  std::cout << "\n";
}

// The tree of --tree (empty without it), or exit 2 naming --tree.
std::vector<int> checked_tree(const po::variables_map& vm) {
  if (!vm.count("tree")) return {};
  if (vm.count("external")) throw UserError("--tree applies to the random cases, not to --external");
  try {
    return ref::tree_from_text(vm["tree"].as<std::string>(), ref::kMaxTreeNodes).parent;
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("--tree: ") + e.what());
  }
}

bool is_tree_case(const Case& c) {
  return std::any_of(c.ops.begin(), c.ops.end(), [](const Op& op) { return !op.tree.empty(); });
}

int run(const po::variables_map& vm) {
  const std::vector<int> tree = checked_tree(vm);
  if (vm.count("external")) {  // an outside kernel's file against the FP64 reference (core/external_validation.h)
    if (!vm.count("activations"))
      throw UserError("--external needs --activations acts.h5 (the dump the outside kernel ran on)");
    if (vm.count("mode")) {
      if (!vm["rtol"].defaulted())
        throw UserError("--rtol does not apply with --mode (the bound of a mode is derived: src/emulation/tolerances.h)");
      ExpectedOutputs save;
      if (vm.count("save-expected")) {
        save.path = vm["save-expected"].as<std::string>();
        if (save.path.empty()) throw UserError("--save-expected: empty path");
        save.command = command_line();
        save.options = resolved_options(vm);
      }
      return run_external_mode_validation(vm["external"].as<std::string>(), vm["activations"].as<std::string>(),
                                          vm["mode"].as<std::string>(), save);
    }
    if (vm.count("save-expected")) throw UserError("--save-expected applies to --external with --mode only");
    return run_external_validation(vm["external"].as<std::string>(), vm["activations"].as<std::string>(),
                                   vm["rtol"].as<double>());
  }
  if (vm.count("mode")) throw UserError("--mode applies to --external only (without it, validate runs every mode)");
  if (vm.count("save-expected")) throw UserError("--save-expected applies to --external with --mode only");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string arch_s = vm["arch"].as<std::string>(), backend_s = vm["backend"].as<std::string>(),
                    shapes_s = vm["shapes"].as<std::string>();
  const bool verbose = vm["verbose"].as<bool>();
  std::vector<Arch> archs;
  if (arch_s == "gdn" || arch_s == "all") archs.push_back(Arch::gdn);
  if (arch_s == "mamba2" || arch_s == "all") archs.push_back(Arch::mamba2);
  if (archs.empty()) throw UserError("--arch: unknown arch '" + arch_s + "' (expected gdn, mamba2 or all)");
  if (backend_s != "cuda" && backend_s != "emulated" && backend_s != "all")
    throw UserError("--backend: unknown backend '" + backend_s + "' (expected cuda, emulated or all)");
  if (vm["max-tokens"].as<int>() < 1)
    throw UserError("--max-tokens must be >= 1 (got " + std::to_string(vm["max-tokens"].as<int>()) + ")");
  try {
    (void)shapes_for(shapes_s, Arch::gdn);
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("--shapes: ") + e.what());
  }

  const std::string plan = checked_plan(vm);
  std::unique_ptr<DecodeBackend> emu = make_emulated_backend(), cuda;
  if (backend_s != "emulated") {
    std::string why;
    cuda = make_cuda_backend(DeviceBackendOptions{vm["plan"].as<std::string>()}, &why);
    if (!cuda) {
      if (backend_s == "cuda") throw UserError(why, kExitNoDevice);
      std::cout << why << "; --backend all falls back to emulated only\n";
    } else {
      std::cout << "cuda device: " << cuda->device() << "; launch plan override: " << (plan.empty() ? "none" : plan)
                << "\n";
    }
  }
  const bool run_emu_rows = backend_s != "cuda";

  std::vector<std::tuple<Shape, std::vector<Case>, std::vector<CaseInputs>>> work;
  const std::uint64_t seed = vm["seed"].as<unsigned long long>();
  const int L = 16, D = 8;
  for (Arch a : archs)
    for (const Shape& s : shapes_for(shapes_s, a)) {
      const bool small = s.name == "small";
      std::vector<Case> cs = cases_for(L, D, small, small ? 300 : 40);
      if (!tree.empty())
        for (const Case& c : tree_cases(L, tree, vm["tree"].as<std::string>())) cs.push_back(c);
      std::vector<CaseInputs> ins;
      for (std::size_t i = 0; i < cs.size(); ++i) ins.push_back(make_inputs(s, cs[i], seed + 7919 * i));
      work.emplace_back(s, cs, std::move(ins));
    }
  if (vm.count("activations")) {
    const std::string path = vm["activations"].as<std::string>();
    const int max_tokens = vm["max-tokens"].as<int>();
    for (const DumpLayerCase& l : load_dump_cases(path)) {
      if (std::find(archs.begin(), archs.end(), l.shape.arch) == archs.end()) continue;
      CaseInputs in = dump_case_inputs(l, max_tokens);
      const Case c = dump_case(l, in);
      work.emplace_back(l.shape, std::vector<Case>{c}, std::vector<CaseInputs>{std::move(in)});
    }
  }

  std::printf("%-9s %-14s %-11s %-44s %-22s %-8s %10s %10s %10s  %s\n", "backend", "kernel", "shape", "mode", "case",
              "against", "max-abs", "rel-RMS", "tolerance", "result");
  int total = 0, failed = 0;
  for (auto& [s, cs, ins] : work) {
    std::vector<CaseOutputs> refs;
    for (const CaseInputs& in : ins) refs.push_back(run_reference(in));
    std::vector<Mode> modes = modes_for(s.arch, s.name != "small");  // real shapes: main formats (time)
    if (s.name == "small") {  // and the formats outside modes_for's list (int16, bf16x2, int8_ef), BF16 records
      const std::vector<Mode> fine = fine_modes_for(s.arch), recs = records_modes_for(s.arch);
      modes.insert(modes.end(), fine.begin(), fine.end());
      modes.insert(modes.end(), recs.begin(), recs.end());
    }
    for (const Mode& m : modes) {
      // key: backend|against|kernel
      std::map<std::string, Summary> sums;
      auto record = [&](const std::string& backend, const CheckRow& r) {
        Summary& sm = sums[backend + "|" + r.against + "|" + r.kernel];
        ++sm.n;
        ++total;
        if (!r.pass) ++sm.fails, ++failed;
        if (verbose || !r.pass) print_row(r, backend, 1, r.pass ? 0 : 1);
        const double rr = ratio(r);
        if (rr > sm.worst_ratio) sm.worst_ratio = rr, sm.worst = r;
      };
      std::vector<std::string> plans;  // the kernel plans the CUDA backend ran for this mode
      for (std::size_t i = 0; i < cs.size(); ++i) {
        // the pass criterion: the mode-aware FP64 reference (the codec where the mode stores); the distance to the
        // plain FP64 recurrence is reported beside it as a measurement
        const bool tree_case = is_tree_case(cs[i]);  // its mode holds the tree's drafts
        const Mode mc = tree_case ? tree_mode(m, int(tree.size())) : m;
        const ModeAwareRun er = run_mode_aware(*emu, mc, cs[i], ins[i]);
        const CaseOutputs& e = er.got;
        if (run_emu_rows) record("emulated", check_vs_mode_aware(mc, cs[i], ins[i], er, &refs[i]));
        if (cuda) {
          const ModeAwareRun gr = run_mode_aware(*cuda, mc, cs[i], ins[i]);
          record("cuda", check_vs_mode_aware(mc, cs[i], ins[i], gr, &refs[i]));
          record("cuda", check_vs_emulation(mc, cs[i], ins[i], e, gr.got));
          for (const std::string& pl : cuda->launch_plans())
            if (std::find(plans.begin(), plans.end(), pl) == plans.end()) plans.push_back(pl);
        }
      }
      if (verbose)
        for (const std::string& pl : plans) std::printf("  plan %s %s: %s\n", s.name.c_str(), m.name().c_str(), pl.c_str());
      for (auto& [key, sm] : sums) {
        CheckRow r = sm.worst;
        r.pass = sm.fails == 0;
        r.case_name = "worst: " + r.case_name;
        print_row(r, key.substr(0, key.find('|')), sm.n, sm.fails);
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("validate: %d checks, %d failed (%.1f s)\n", total, failed, secs);
  return failed ? kExitValidationFailed : kExitOk;
}

const Registrar reg{{"validate", "check every decode kernel x mode against the FP64 reference and the emulation",
                     add_options, run,
                     "replayssm validate --arch all --backend all --shapes small\n"
                     "  replayssm validate --backend all --tree 4,2,2,1\n"
                     "  replayssm validate --external theirs.h5 --activations acts.h5 [--rtol 1e-4]\n"
                     "  replayssm validate --external theirs.h5 --activations acts.h5 --mode conventional_shared/bf16",
                     ""}};

}  // namespace
}  // namespace replayssm::cli
