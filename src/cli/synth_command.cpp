// `replayssm synth`: a seeded random activation dump in the standard schema (for demos, kernel checks, tests).
#include <iostream>

#include "cli/command.h"
#include "core/activation_dump.h"
#include "core/errors.h"
#include "core/memory_budget.h"
#include "core/synthetic.h"

namespace replayssm::cli {
namespace {

void add_options(po::options_description& d) {
  d.add_options()
    ("arch", po::value<std::string>()->required(), "gdn or mamba2")
    ("out", po::value<std::string>()->required(), "output activation dump (.h5)")
    ("tokens,T", po::value<int>()->default_value(256), "sequence length")
    ("layers", po::value<int>()->default_value(1), "number of layers")
    ("heads", po::value<int>()->default_value(4), "value heads (GDN Hv) or heads (Mamba-2 H)")
    ("key-heads", po::value<int>()->default_value(2), "GDN key heads Hk (Hv must be a multiple)")
    ("groups", po::value<int>()->default_value(2), "Mamba-2 groups G (H must be a multiple)")
    ("key-dim", po::value<int>()->default_value(128), "K (GDN) or N (Mamba-2)")
    ("value-dim", po::value<int>()->default_value(0), "V (GDN, default 128) or P (Mamba-2, default 64)")
    ("decay-log-min", po::value<double>()->default_value(-5.0), "|log decay| >= exp(this), in [-87, 88]")
    ("decay-log-max", po::value<double>()->default_value(0.0), "|log decay| <= exp(this), in [-87, 88]")
    ("seed", po::value<unsigned long long>()->default_value(1), "random seed")
    ("float64", po::bool_switch(), "store inputs as float64 instead of float32");
}

int check_positive(const po::variables_map& vm, const char* name) {
  int v = vm[name].as<int>();
  if (v <= 0) throw UserError(std::string("--") + name + " must be > 0");
  return v;
}

// The log-decay bounds keep |g| = exp(bound) a normal float32 (the dump's precision): past 88 it overflows to -inf,
// below -87 it is subnormal; the reader refuses a non-finite g.
constexpr double kDecayLogLowest = -87.0, kDecayLogHighest = 88.0;

double decay_bound(const po::variables_map& vm, const char* name) {
  const double v = vm[name].as<double>();
  if (!(v >= kDecayLogLowest && v <= kDecayLogHighest))
    throw UserError(std::string("--") + name + " must be in [-87, 88] (|log decay| = exp(it) stays a normal float32)");
  return v;
}

int run(const po::variables_map& vm) {
  const Arch arch = parse_arch(vm["arch"].as<std::string>());
  h5::refuse_output_over_input(vm["out"].as<std::string>(), {});
  const int T = check_positive(vm, "tokens"), layers = check_positive(vm, "layers");
  const int heads = check_positive(vm, "heads"), kdim = check_positive(vm, "key-dim");
  int vdim = vm["value-dim"].as<int>();
  if (vdim < 0) throw UserError("--value-dim must be >= 0 (0: the architecture's default)");
  if (vdim == 0) vdim = arch == Arch::gdn ? 128 : 64;
  const int hk = check_positive(vm, arch == Arch::gdn ? "key-heads" : "groups");
  if (heads % hk) throw UserError(arch == Arch::gdn ? "--heads must be a multiple of --key-heads"
                                                    : "--heads must be a multiple of --groups");
  DecayRange decay{decay_bound(vm, "decay-log-min"), decay_bound(vm, "decay-log-max")};
  if (decay.log_min > decay.log_max) throw UserError("--decay-log-min must be <= --decay-log-max");
  {
    // One layer is generated in float64 and written through a float32 copy at a time.
    const double t = T, per_token = arch == Arch::gdn ? 2.0 * hk * kdim + double(heads) * vdim + 2.0 * heads
                                                      : double(heads) * vdim + 2.0 * hk * kdim + heads;
    require_memory("synth", std::to_string(T) + " tokens of one layer", t * per_token * 12.0,
                   "reduce --tokens, --heads or the dimensions");
  }
  const auto seed = vm["seed"].as<unsigned long long>();
  const bool f32 = !vm["float64"].as<bool>();
  h5::AtomicOutput out(vm["out"].as<std::string>());
  write_dump_header(out.file(), arch, arch == Arch::gdn ? 1.0 / std::sqrt(static_cast<double>(kdim)) : 0.0);
  for (int l = 0; l < layers; ++l) {
    const std::uint64_t s = seed * 1000003ULL + static_cast<std::uint64_t>(l);
    if (arch == Arch::gdn)
      write_gdn_layer(out.file(), std::to_string(l), random_gdn(T, hk, heads, kdim, vdim, s, decay), f32);
    else
      write_mamba2_layer(out.file(), std::to_string(l), random_mamba2(T, heads, hk, vdim, kdim, s, decay), f32);
  }
  out.file().set_attr("/meta", "n_tokens", static_cast<std::int64_t>(T));
  out.file().set_attr("/meta", "source", "synthetic");
  h5::write_provenance(out.file(), command_line(), resolved_options(vm), "cpu");
  out.commit();
  std::cout << "synth: wrote " << layers << " " << arch_name(arch) << " layer(s), T=" << T << " to "
            << out.final_path() << "\n";
  return kExitOk;
}

const Registrar reg{{"synth", "write a seeded random activation dump (standard schema)", add_options, run,
                     "replayssm synth --arch gdn --tokens 1024 --heads 32 --key-heads 16 --out acts.h5"}};

}  // namespace
}  // namespace replayssm::cli
