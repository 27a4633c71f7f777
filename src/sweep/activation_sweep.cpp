#include "sweep/activation_sweep.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/activation_dump.h"
#include "core/errors.h"
#include "core/h5.h"
#include "sweep/metrics.h"
#include "sweep/mode_recurrence.h"
#include "sweep/results.h"

namespace replayssm::sweep {
namespace {

namespace fs = std::filesystem;
using std::size_t;

size_t z(int v) { return static_cast<size_t>(v); }
int layer_T(const DumpLayer& l, Arch a) { return a == Arch::gdn ? l.gdn.T : l.mamba2.T; }

// The first T positions of a layer (for --tokens, and to re-measure the prefix before a divergence).
ref::GdnInputs prefix(const ref::GdnInputs& in, int T) {
  ref::GdnInputs p = in;
  p.T = T;
  p.q.resize(z(T * in.Hk * in.K));
  p.k.resize(z(T * in.Hk * in.K));
  p.v.resize(z(T * in.Hv * in.V));
  p.g.resize(z(T * in.Hv));
  p.beta.resize(z(T * in.Hv));
  return p;
}
ref::Mamba2Inputs prefix(const ref::Mamba2Inputs& in, int T) {
  ref::Mamba2Inputs p = in;
  p.T = T;
  p.x.resize(z(T * in.H * in.P));
  p.B.resize(z(T * in.G * in.N));
  p.C.resize(z(T * in.G * in.N));
  p.dt.resize(z(T * in.H));
  return p;
}

emu::Dims dims_of(const DumpLayer& l, Arch a) {
  emu::Dims d;
  if (a == Arch::gdn) {
    d.G = l.gdn.Hk, d.H = l.gdn.Hv, d.K = l.gdn.K, d.V = l.gdn.V;
  } else {
    d.G = l.mamba2.G, d.H = l.mamba2.H, d.K = l.mamba2.N, d.V = l.mamba2.P;
  }
  return d;
}

LayerDrift run_layer(emu::DecodeBackend& be, const emu::Mode& mode, const DumpLayer& l, Arch a, int T) {
  ModeRecurrence rec(be, mode);
  LayerDrift d;
  if (a == Arch::gdn)
    rec.run_gdn(prefix(l.gdn, T), &d);
  else
    rec.run_mamba2(prefix(l.mamba2, T), &d);
  return d;
}

struct Outcome {
  RunResult r;
  std::vector<double> od_binned;  // [layers][bins][4]
};

// One run: every layer in the mode. A layer whose output stops being finite is a result (like the model sweep):
// drift up to the first non-finite position, NaN after, and the run's `diverged_at` is the earliest such position.
Outcome evaluate(const RunSpec& spec, const ActivationDump& dump, int T, emu::DecodeBackend& be,
                 const std::vector<std::int64_t>& edges, const std::string& text_id) {
  const auto t0 = std::chrono::steady_clock::now();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Outcome out;
  RunResult& r = out.r;
  r.id = spec.id;
  r.index = spec.index;
  r.layers = static_cast<int>(dump.layers.size());
  for (std::int64_t s = spec.mode.L; s <= T; s += spec.mode.L) r.flush_steps.push_back(s);
  std::int64_t diverged_at = -1;
  for (const auto& l : dump.layers) {
    std::vector<double> od(z(T), nan), sd(r.flush_steps.size(), nan);
    LayerDrift d;
    try {
      d = run_layer(be, spec.mode, l, dump.arch, T);
    } catch (const Diverged& e) {
      diverged_at = diverged_at < 0 ? e.position : std::min(diverged_at, e.position);
      if (e.position > 0) d = run_layer(be, spec.mode, l, dump.arch, static_cast<int>(e.position));
    }
    std::copy(d.output.begin(), d.output.end(), od.begin());
    std::copy(d.state.begin(), d.state.end(), sd.begin());
    const std::vector<double> b = binned_stats(od, edges);
    out.od_binned.insert(out.od_binned.end(), b.begin(), b.end());
    r.output_drift.insert(r.output_drift.end(), od.begin(), od.end());
    r.state_drift.insert(r.state_drift.end(), sd.begin(), sd.end());
  }
  r.attrs = run_attrs(spec, text_id, diverged_at);
  r.attrs["metrics"] = kActivationMetrics;
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// The model sweep's run group minus what needs a model head (results.h's write_run always writes kl/nll/top1).
void write_activation_run(h5::File& f, const std::string& g, const Outcome& o, size_t nbins) {
  write_drift_and_attrs(f, g, o.r);
  f.write(g + "/output_drift_binned", {z(o.r.layers), nbins, z(kStats)}, o.od_binned.data());
  f.set_attr(g, "output_drift_binned_columns", "mean,p50,p95,max");
}

void print_table(const std::vector<Outcome>& runs, const std::vector<std::int64_t>& edges) {
  const size_t nb = edges.size() - 1;
  int w = 52;  // run ids carry the dump's name: widen the column to the longest
  for (const auto& o : runs) w = std::max(w, static_cast<int>(o.r.id.size()));
  std::printf("\nmean output drift ||o_mode - o_fp64|| / ||o_fp64|| over layers, by position bin "
              "(activation dump: layer-local, no model head, so no KL/NLL/top-1)\n%-*s", w, "run");
  std::vector<size_t> cols;
  for (size_t b = 0; b < nb; ++b)
    if (edges[b] >= 16 && (b % 2 == 0 || b + 1 == nb)) cols.push_back(b);
  for (auto b : cols) std::printf(" %9s", ("<" + std::to_string(edges[b + 1])).c_str());
  std::printf(" %9s %9s\n", "all", "S drift");
  for (const auto& o : runs) {
    const RunResult& r = o.r;
    const size_t L = z(r.layers), T = L ? r.output_drift.size() / L : 0;
    std::printf("%-*s", w, r.id.c_str());
    for (auto b : cols) {
      double s = 0;
      for (size_t l = 0; l < L; ++l) s += o.od_binned[(l * nb + b) * z(kStats)];
      std::printf(" %9.2e", s / static_cast<double>(L));
    }
    double all = 0, sd = 0;
    for (double x : r.output_drift) all += x;
    for (double x : r.state_drift) sd += x;
    std::printf(" %9.2e %9.2e", all / static_cast<double>(L * T),
                r.state_drift.empty() ? 0.0 : sd / static_cast<double>(r.state_drift.size()));
    const auto div = r.attrs.find("diverged_at");
    if (div != r.attrs.end() && div->second != "-1") std::printf("  diverged at position %s", div->second.c_str());
    std::printf("\n");
  }
}

std::string stem(const std::string& path) {
  std::string s = fs::path(path).filename().string();
  const auto dot = s.rfind('.');
  return dot == std::string::npos || dot == 0 ? s : s.substr(0, dot);
}

}  // namespace

int run_activation_sweep(const ActivationSweepJob& job, std::vector<std::unique_ptr<emu::DecodeBackend>>& backends) {
  h5::refuse_output_over_input(job.out_path, {job.dump_path});
  const fs::path out_dir = fs::absolute(job.out_path).parent_path();
  if (!fs::is_directory(out_dir) || ::access(out_dir.c_str(), W_OK) != 0)
    throw UserError(job.out_path + ": output directory does not exist or is not writable");
  const ActivationDump dump = read_activation_dump(job.dump_path);
  const int T_dump = layer_T(dump.layers.front(), dump.arch);
  for (const auto& l : dump.layers) {
    const std::string g = "/layers/" + l.name;
    if (layer_T(l, dump.arch) != T_dump)
      throw input_error(job.dump_path, g, "has " + std::to_string(layer_T(l, dump.arch)) + " positions, layer " +
                                              dump.layers.front().name + " has " + std::to_string(T_dump));
    if (l.initial_state)  // ModeRecurrence starts every layer from a zero state
      throw input_error(job.dump_path, g + "/initial_state", "not supported by sweep --activations (zero start only)");
  }
  if (job.tokens > T_dump)
    throw UserError("--tokens " + std::to_string(job.tokens) + " is more than the " + std::to_string(T_dump) +
                    " positions of " + job.dump_path);
  const int T = job.tokens > 0 ? job.tokens : T_dump;

  std::string text_id = stem(job.dump_path);
  {
    const h5::File f = h5::File::open_read(job.dump_path);
    if (f.has_attr("/meta", "text_id")) text_id = f.attr_string("/meta", "text_id");
  }
  const emu::Arch arch = dump.arch == Arch::gdn ? emu::Arch::gdn : emu::Arch::mamba2;
  const auto plan = expand_plan({ModelRef{stem(job.dump_path), job.dump_path, arch}}, job.axes);
  for (const auto& spec : plan)  // every mode must fit every layer's dims before any work starts
    for (const auto& l : dump.layers) try {
        emu::check_mode(spec.mode, dims_of(l, dump.arch));
      } catch (const std::invalid_argument& e) {
        throw input_error(job.dump_path, "/layers/" + l.name, "run " + spec.id + ": " + e.what());
      }

  SweepHeader header;
  header.config = job.config;
  header.config["source"] = "activations";
  header.config["model"] = stem(job.dump_path);
  header.config["text"] = text_id;
  header.config["tokens"] = std::to_string(T);
  header.config["backend"] = job.backend_name;
  header.config_hash = hash_config(header.config);
  header.bins = power_of_two_edges(T);
  for (const auto& r : plan) header.plan.push_back(r.id);
  const size_t nbins = header.bins.size() - 1;
  if (!job.quiet)
    std::cerr << "sweep: " << plan.size() << " run(s) on " << dump.layers.size() << " " << arch_name(dump.arch)
              << " layer(s) x " << T << " positions of " << job.dump_path << ", backend " << job.backend_name << " ("
              << job.device << "), " << std::min(backends.size(), plan.size()) << " job(s)\n";

  std::vector<Outcome> results(plan.size());
  std::atomic<size_t> next{0}, finished{0};
  std::mutex mu;
  std::exception_ptr failure;
  auto worker = [&](size_t w) {
    for (;;) {
      const size_t i = next++;
      if (i >= plan.size()) return;
      try {
        Outcome o = evaluate(plan[i], dump, T, *backends[w], header.bins, text_id);
        o.r.attrs["backend"] = job.backend_name;
        o.r.attrs["device"] = job.device;
        std::lock_guard<std::mutex> lock(mu);
        results[i] = std::move(o);
        if (!job.quiet) std::cerr << "sweep: [" << ++finished << "/" << plan.size() << "] " << plan[i].id << "\n";
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        next = plan.size();
        return;
      }
    }
  };
  const size_t jobs = std::max<size_t>(1, std::min(backends.size(), plan.size()));
  std::vector<std::thread> pool;
  for (size_t w = 1; w < jobs; ++w) pool.emplace_back(worker, w);  // independent runs on independent backends
  worker(0);
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);

  h5::AtomicOutput out(job.out_path);
  h5::File& f = out.file();
  write_header(f, header);
  std::vector<std::string> layer_names;
  for (const auto& l : dump.layers) layer_names.push_back(l.name);
  f.write_strings("/config/layers", layer_names);
  for (const auto& o : results) write_activation_run(f, "/runs/" + o.r.id, o, nbins);
  h5::write_provenance(f, job.command, job.options, job.device);
  f.set_attr("/", "shard", "none");
  f.set_attr("/", "source", "activations");
  f.set_attr("/", "activations", job.dump_path);
  f.set_attr("/", "metrics", kActivationMetrics);
  out.commit();
  if (!job.quiet) print_table(results, header.bins);
  std::cout << "sweep: " << results.size() << " run(s) on " << dump.layers.size() << " layer(s) of "
            << job.dump_path << " -> " << job.out_path << " (output and state drift only: no model head, no KL)\n";
  return kExitOk;
}

}  // namespace replayssm::sweep
