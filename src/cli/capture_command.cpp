// `replayssm capture`: teacher-force a tiny model (datasets/models/) over a slice of a text in FP64 and write every
// SSM layer's recurrence inputs in the activation-dump schema, plus /layers/<i>/o (FP64 outputs) and /tokens.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "core/activation_dump.h"
#include "core/errors.h"
#include "core/memory_budget.h"
#include "runtime/backend.h"
#include "runtime/forward.h"
#include "runtime/model.h"
#include "runtime/text.h"

namespace replayssm::cli {
namespace {

void add_options(po::options_description& d) {
  d.add_options()("model", po::value<std::string>()->required(), "tiny model (.h5), e.g. datasets/models/tiny_gdn.h5")(
      "text", po::value<std::string>()->required(), "text file (bytes are tokens), e.g. datasets/pg19/test/10146.txt")(
      "offset", po::value<long long>()->default_value(0), "first byte of the slice")(
      "tokens,T", po::value<long long>()->required(), "number of bytes to teacher-force")(
      "out", po::value<std::string>()->required(), "output activation dump (.h5)")(
      "float64", po::bool_switch(), "store the recurrence inputs as float64 (default float32)")(
      "logprobs", po::bool_switch(), "also store /logprobs [T, 256] float64 (the model's FP64 next-byte log-probs)")(
      "no-layers", po::bool_switch(), "skip the per-layer dumps (only /tokens, /meta and, with --logprobs, /logprobs)")(
      "threads", po::value<int>()->default_value(0), "CPU threads (0: all cores)");
}

std::size_t u(int v) { return static_cast<std::size_t>(v); }

constexpr double kCaptureActivationsPerLayer = 6.0;

int run(const po::variables_map& vm) {
  const std::string model_path = vm["model"].as<std::string>(), text_path = vm["text"].as<std::string>();
  const std::string out_path = vm["out"].as<std::string>();
  const long long offset = vm["offset"].as<long long>(), n = vm["tokens"].as<long long>();
  int threads = vm["threads"].as<int>();
  if (threads < 0) throw UserError("--threads must be >= 0");
  if (threads == 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const bool f32 = !vm["float64"].as<bool>();
  const bool dump_layers = !vm["no-layers"].as<bool>();
  h5::refuse_output_over_input(out_path, {model_path, text_path});

  runtime::keep_freed_memory();
  const runtime::TinyModel model = runtime::TinyModel::load(model_path);
  const auto& c = model.cfg;
  // Peak memory of the FP64 teacher forcing: the [T, 256] log-probs and per layer about six [T, d_model] float64
  // activations (calibrated on the measured 131072-byte runs: 3.9 GB GDN, 6.7 GB Mamba-2; rounded up).
  if (n > 0)
    require_memory("capture", std::to_string(n) + " tokens of " + model_path,
                   static_cast<double>(n) * 8.0 * (256.0 + kCaptureActivationsPerLayer * c.n_layers * c.d_model),
                   "reduce --tokens");
  const std::vector<std::uint8_t> tokens = runtime::read_text_slice(text_path, offset, n);
  const Arch arch = parse_arch(c.arch);

  h5::AtomicOutput out(out_path);
  h5::File& f = out.file();
  write_dump_header(f, arch, arch == Arch::gdn ? 1.0 / std::sqrt(double(c.K)) : 0.0);
  f.set_attr("/meta", "model", model_path);
  f.set_attr("/meta", "text", text_path);
  f.set_attr("/meta", "text_id", runtime::text_id(text_path));
  f.set_attr("/meta", "offset", static_cast<std::int64_t>(offset));
  f.set_attr("/meta", "n_tokens", static_cast<std::int64_t>(tokens.size()));
  f.set_attr("/meta", "n_layers", c.n_layers);
  f.set_attr("/meta", "d_model", c.d_model);
  f.set_attr("/meta", "inputs_dtype", f32 ? "float32" : "float64");
  f.set_attr("/meta", "outputs", "/layers/<i>/o: float64 recurrence outputs of the FP64 inputs (before any rounding)");
  if (arch == Arch::gdn) {
    for (const auto& [k, v] : {std::pair{"Hk", c.Hk}, {"Hv", c.Hv}, {"K", c.K}, {"V", c.V}}) f.set_attr("/meta", k, v);
  } else {
    for (const auto& [k, v] : {std::pair{"H", c.H}, {"G", c.G}, {"P", c.P}, {"N", c.N}}) f.set_attr("/meta", k, v);
  }
  f.write("/tokens", {tokens.size()}, tokens.data());

  runtime::ReferenceBackend backend(threads);
  runtime::ForwardOptions opt;
  opt.threads = threads;
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = runtime::teacher_force(
      model, tokens, backend, opt,
      [&](int layer, const ref::GdnInputs* g, const ref::Mamba2Inputs* m, const ref::LayerOutputs& o) {
        const std::string name = std::to_string(layer);
        if (!dump_layers) return;
        if (g) {
          write_gdn_layer(f, name, *g, f32);
          f.write("/layers/" + name + "/o", {u(g->T), u(g->Hv), u(g->V)}, o.o.data());
        } else {
          write_mamba2_layer(f, name, *m, f32);
          f.write("/layers/" + name + "/o", {u(m->T), u(m->H), u(m->P)}, o.o.data());
        }
      });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (vm["logprobs"].as<bool>()) f.write("/logprobs", {tokens.size(), 256}, res.logprobs.data());
  // Mean next-byte NLL over the slice (predictions of bytes 1..T-1), bits per byte.
  double nll = 0.0;
  for (std::size_t t = 0; t + 1 < tokens.size(); ++t) nll -= res.logprobs(Eigen::Index(t), tokens[t + 1]);
  // A one-token slice has no next-byte target: no bits/byte (absent, with the reason), never a made-up 0.
  const double bpb = tokens.size() > 1 ? nll / double(tokens.size() - 1) / std::log(2.0) : std::nan("");
  if (tokens.size() > 1)
    f.set_attr("/meta", "bits_per_byte", bpb);
  else
    f.set_attr("/meta", "bits_per_byte_absent", "a one-token slice has no next-byte target");
  f.set_attr("/meta", "backend", backend.name());
  f.set_attr("/meta", "seconds", secs);
  f.set_attr("/meta", "seconds_recurrence", res.seconds_recurrence);
  f.set_attr("/meta", "threads", threads);
  h5::write_provenance(f, command_line(), resolved_options(vm), "cpu");
  out.commit();
  std::cout << "capture: " << c.arch << " " << c.n_layers << " layers, T=" << tokens.size() << ", "
            << (tokens.size() > 1 ? std::to_string(bpb) + " bits/byte" : std::string("no bits/byte (one token)")) << ", " << secs << " s (" << res.seconds_recurrence << " s recurrence, " << threads
            << " threads) -> " << out.final_path() << "\n";
  return kExitOk;
}

const Registrar reg{{"capture", "teacher-force a tiny model over text in FP64 and dump its SSM recurrence inputs",
                     add_options, run,
                     "replayssm capture --model datasets/models/tiny_gdn.h5 --text datasets/pg19/test/10146.txt "
                     "--offset 32768 --tokens 4096 --out acts.h5"}};

}  // namespace
}  // namespace replayssm::cli
