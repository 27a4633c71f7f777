// `replayssm sweep`: the main job. PG-19 teacher forcing through the tiny models, FP64 reference vs every decode
// mode; per-position KL, NLL, top-1 agreement, and per-layer drift, written to one self-describing HDF5 file.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/command.h"
#include "cli/default_inputs.h"
#include "cli/fp64_option.h"
#include "cli/sweep_backends.h"
#include "cli/sweep_progress.h"
#include "cli/sweep_tree.h"
#include "cli/sweep_table.h"
#include "core/errors.h"
#include "core/memory_budget.h"
#include "emulation/device_backend.h"
#include "runtime/forward.h"
#include "sweep/activation_sweep.h"
#include "sweep/gate.h"
#include "sweep/metrics.h"
#include "sweep/reference_cache.h"
#include "sweep/run_checkpoint.h"
#include "sweep/sweep_runner.h"

namespace replayssm::cli {
namespace {
namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;
// Peak memory of a model sweep (streaming: a chunk of positions at a time), calibrated on measured sweeps (8192
// positions, 2 jobs: 192 MiB peak with 1024-position chunks, 623 MiB with 8192) and rounded up: a fixed base (code,
// models, HDF5), per job one chunk's activations and one run's per-position results (KL, NLL, top-1, drift per
// layer), and per model the reference NLL every run's header keeps.
constexpr double kSweepBaseBytes = 160.0 * 1024 * 1024, kSweepBytesPerChunkPosition = 48.0 * 1024,
                 kSweepBytesPerPositionJob = 256.0, kSweepBytesPerPositionModel = 16.0;

void add_options(po::options_description& d) {
  d.add_options()
    ("model", po::value<std::vector<std::string>>()->multitoken(),
     "model file(s) (.h5); default: both tiny models in datasets/models/")
    ("text", po::value<std::string>(), "text file (bytes); default: the first PG-19 test book in datasets/pg19/test/")
    ("offset", po::value<long long>()->default_value(0), "byte offset of the slice in the text")
    ("tokens", po::value<int>()->default_value(32768), "positions to evaluate (the article uses 131072)")
    ("formats", po::value<std::string>()->default_value("fp32,bf16,fp8_e4m3:row,nvfp4"),
     "stored-state formats, FORMAT[:SCALING] (scaling none|head|row|block|column; default per format)")
    ("policies", po::value<std::string>()->default_value("conventional-shared,replay-shared,replay-split"),
     "precision policies")
    ("rounding", po::value<std::string>()->default_value("rne"), "rounding modes: rne, sr, philox (comma list)")
    ("L", po::value<std::string>()->default_value("16"), "flush intervals (comma list)")
    ("u-source", po::value<std::string>()->default_value("hp"), "GDN replay-split u source(s): hp, lp, recompute")
    ("records", po::value<std::string>()->default_value("fp32"),
     "replay-buffer record formats: fp32, bf16 (k and u / dt x stored in BF16; replay policies only; comma list)")
    ("seed", po::value<unsigned long long>()->default_value(0), "stochastic-rounding seed")
    ("backend", po::value<std::string>()->default_value("auto"), "auto (CUDA if a GPU is present), cuda, emulated")
    ("fp64", po::value<std::string>()->default_value("auto"), kFp64OptionHelp)
    ("jobs", po::value<int>()->default_value(0), "runs evaluated in parallel (emulated backend; 0 = all cores)")
    ("chunk", po::value<int>()->default_value(sweep::kDefaultChunk),
     "positions teacher-forced at a time: memory grows with it, results do not change by a bit")
    ("checkpoint-every", po::value<int>()->default_value(16384),
     "positions between checkpoints of a run (rounded up to whole chunks, tree sweeps: to whole rounds; 0 = none): "
     "a killed sweep's --resume continues each unfinished run from its last checkpoint, with the same result bits")
    ("reference-cache", po::value<std::string>(),
     "directory (created if missing) of FP64 reference files keyed by model, text slice and tool version: reused "
     "when present, else "
     "computed and written there (default: a temporary file in <out>.runs/reference/, removed at the end)")
    ("out", po::value<std::string>()->default_value("results.h5"), "results file (written atomically)")
    ("config", po::value<std::string>(), "experiment file (.ini, same option names); the command line overrides it")
    ("resume", po::bool_switch(),
     "continue a killed sweep: keep the finished runs in <out>.runs/, continue unfinished ones from their checkpoints")
    ("shard", po::value<std::string>(), "i/n: run only shard i of n (formats, policies and models dealt evenly over the shards; "
     "combine with `replayssm merge`)")
    ("activations", po::value<std::string>(),
     "activation dump (.h5): run every mode on its layers instead of a model (drift only, no KL)")
    ("tree", po::value<std::string>(),
     "draft-tree shape: chain[:T], binary[:DEPTH], star[:T] or a branching list like 4,2,2,1 (at most 64 nodes). "
     "Teacher-forced tree verification rounds instead of token-by-token decoding: the true bytes form one path, the "
     "FP64 model's runner-up bytes the other branches; adds the rejected branches' KL (emulated backend)")
    ("gate", po::bool_switch(),
     "then judge --out as `replayssm gate` does (default thresholds) and print its verdict table; the exit status "
     "stays the sweep's (`replayssm gate --require` for a failing status and the verdict file)")
    ("quiet,q", po::bool_switch(), "no progress output");
}

std::string policy_arg(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

template <class T, class F>
std::vector<T> parse_each(const std::string& option, const std::string& csv, F&& parse) {
  std::vector<T> out;
  std::vector<std::string> items;
  for (const auto& item : sweep::split_list(csv)) {
    if (item.empty()) throw UserError("--" + option + ": empty item in '" + csv + "'");
    try {
      out.push_back(parse(item));
    } catch (const std::invalid_argument& e) {
      throw UserError("--" + option + ": " + e.what());
    }
    // A repeated value (also under another spelling, e.g. fp8_e4m3 and fp8_e4m3:row) would be dropped from the plan.
    for (std::size_t j = 0; j + 1 < out.size(); ++j)
      if (out[j] == out.back())
        throw UserError("--" + option + ": '" + item + "' repeats '" + items[j] + "' in '" + csv + "'");
    items.push_back(item);
  }
  if (out.empty()) throw UserError("--" + option + ": empty list");
  return out;
}

po::variables_map with_config_file(const po::variables_map& cli) {
  if (!cli.count("config")) return cli;
  const std::string path = cli["config"].as<std::string>();
  po::variables_map merged;
  for (const auto& kv : cli)
    if (!kv.second.defaulted()) merged.insert(kv);
  po::options_description d;
  add_options(d);
  {
    // A configuration is a few lines: refuse what is not a regular file of sane size (/dev/zero never ends).
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (!ec && !fs::is_regular_file(status))
      throw UserError(path + ": --config is not a regular file");
    if (!ec && fs::file_size(path, ec) > kMaxConfigBytes)
      throw UserError(path + ": --config is larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  }
  try {
    // The command line wins: drop the file's entries for options given there (Boost refuses to store twice).
    po::parsed_options parsed = po::parse_config_file<char>(path.c_str(), d, false);
    auto& opts = parsed.options;
    opts.erase(std::remove_if(opts.begin(), opts.end(),
                              [&](const po::option& o) { return merged.count(o.string_key) > 0; }),
               opts.end());
    po::store(parsed, merged);
    check_option_values(parsed, merged);
  } catch (const UserError& e) {
    throw UserError(path + ": " + e.what());
  } catch (const po::reading_file&) {
    throw UserError(path + ": cannot read the experiment file");
  } catch (const po::error& e) {
    throw UserError(path + ": " + e.what());
  }
  for (const auto& kv : cli)
    if (kv.second.defaulted() && !merged.count(kv.first)) merged.insert(kv);
  po::notify(merged);
  return merged;
}

int run(const po::variables_map& cli) {
  const po::variables_map vm = with_config_file(cli);
  runtime::keep_freed_memory();  // every run reallocates the same [T, d] activations: keep them in the heap
  const bool quiet = vm["quiet"].as<bool>();
  const std::string out_path = vm["out"].as<std::string>();
  const int tokens = vm["tokens"].as<int>();
  if (tokens < 1) throw UserError("--tokens must be >= 1");
  const long long offset = vm["offset"].as<long long>();
  if (offset < 0) throw UserError("--offset must be >= 0");
  if (vm["jobs"].as<int>() < 0) throw UserError("--jobs must be >= 0 (0: all cores)");
  const int chunk = vm["chunk"].as<int>();
  if (chunk < 1) throw UserError("--chunk must be >= 1");
  int checkpoint_every = vm["checkpoint-every"].as<int>();
  if (checkpoint_every < 0) throw UserError("--checkpoint-every must be >= 0 (0: no checkpoints)");
  h5::refuse_output_over_input(out_path, {});  // before any work: an empty, directory or unwritable --out

  sweep::SweepAxes axes;
  axes.formats = parse_each<sweep::FormatSpec>("formats", vm["formats"].as<std::string>(), sweep::parse_format_spec);
  axes.roundings = parse_each<formats::Rounding>("rounding", vm["rounding"].as<std::string>(), formats::parse_rounding);
  axes.policies = parse_each<emu::Policy>("policies", vm["policies"].as<std::string>(),
                                          [](const std::string& s) {
                                            try {
                                              return emu::parse_policy(policy_arg(s));
                                            } catch (const std::invalid_argument&) {
                                              throw std::invalid_argument("unknown policy '" + s +
                                                                          "' (expected conventional-shared, "
                                                                          "replay-shared or replay-split)");
                                            }
                                          });
  axes.Ls = parse_each<int>("L", vm["L"].as<std::string>(), [](const std::string& s) {
    std::size_t pos = 0;
    int L = 0;
    try {
      L = std::stoi(s, &pos);
    } catch (const std::logic_error&) {  // not a number, or out of int's range
      pos = 0;
    }
    if (pos == 0 || pos != s.size() || L < 1 || L > 256) throw std::invalid_argument("L '" + s + "' must be in 1..256");
    return L;
  });
  axes.usources = parse_each<emu::USource>("u-source", vm["u-source"].as<std::string>(), emu::parse_usource);
  axes.records = parse_each<emu::Records>("records", vm["records"].as<std::string>(), emu::parse_records);
  axes.seed = vm["seed"].as<unsigned long long>();
  std::optional<TreeSweep> tree = tree_option(vm);  // exit 2 naming --tree
  std::pair<int, int> shard{0, 1};
  if (vm.count("shard")) shard = sweep::parse_shard(vm["shard"].as<std::string>());

  if (vm.count("activations")) {  // layer-local sweep of a dump: sweep/activation_sweep.h
    if (vm["resume"].as<bool>() || vm.count("shard") || vm.count("model") || vm.count("text") ||
        !vm["offset"].defaulted() || !vm["checkpoint-every"].defaulted() || vm.count("reference-cache"))
      throw UserError("--activations: --resume, --shard, --model, --text, --offset, --checkpoint-every and "
                      "--reference-cache do not apply to a dump sweep");
    sweep::ActivationSweepJob job{vm["activations"].as<std::string>(), out_path, axes,
                                  vm["tokens"].defaulted() ? 0 : tokens, quiet, resolved_options(vm),
                                  resolved_options(vm), command_line(), "", ""};
    if (vm["gate"].as<bool>())
      throw UserError("--gate: an activation-dump sweep has no KL or top-1 to judge (no model head)");
    for (const char* k : {"out", "resume", "shard", "quiet", "jobs", "config", "activations", "tokens", "offset", "gate",
                          "chunk", "checkpoint-every", "reference-cache", "fp64"})
      job.config.erase(k);
    int jobs = vm["jobs"].as<int>();
    if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    Backends be = make_backends(vm["backend"].as<std::string>(), jobs, 1, quiet);
    const h5::OutputLock out_lock(out_path);
    job.backend_name = be.name;
    job.device = be.device;
    if (be.name == "cuda") job.options["plan"] = be.plan.empty() ? "none" : be.plan;
    return sweep::run_activation_sweep(job, be.pool);
  }

  const std::vector<std::string> model_paths =
      vm.count("model") ? vm["model"].as<std::vector<std::string>>() : default_models();
  const std::string text_path = vm.count("text") ? vm["text"].as<std::string>() : default_text();
  {
    std::vector<std::string> inputs = model_paths;
    inputs.push_back(text_path);
    h5::refuse_output_over_input(out_path, inputs);
  }
  if (vm.count("reference-cache")) {  // created if missing, as `reference-cache --dir` does (shards share a new one)
    const std::string dir = vm["reference-cache"].as<std::string>();
    std::error_code ec;
    if (!dir.empty()) fs::create_directories(dir, ec);
    if (!fs::is_directory(dir, ec))
      throw UserError(dir + ": --reference-cache is not a directory and cannot be created");
  }
  const sweep::TextSlice text = sweep::load_text(text_path, offset, tokens);
  const h5::OutputLock out_lock(out_path);  // one sweep per --out; removes what a killed one left behind

  std::vector<std::unique_ptr<sweep::ModelEvaluator>> models;
  std::vector<sweep::ModelRef> refs;
  for (const auto& p : model_paths) {
    models.push_back(std::make_unique<sweep::ModelEvaluator>(p));
    for (const auto& r : refs)  // run ids carry the model's name: a second model of the same name would be dropped
      if (r.name == models.back()->name())
        throw UserError("--model: " + p + " and " + r.path + " have the same name '" + r.name +
                        "' (run ids must differ: rename one)");
    refs.push_back({models.back()->name(), p, models.back()->arch()});
  }
  const auto plan = sweep::expand_plan(refs, axes);
  std::vector<sweep::RunSpec> mine;
  const std::vector<int> shard_of = sweep::assign_shards(plan, shard.second);
  for (const auto& r : plan)
    if (shard_of[static_cast<std::size_t>(r.index)] == shard.first) mine.push_back(r);

  int jobs = vm["jobs"].as<int>();
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(std::max<std::size_t>(1, mine.size())));
  // Teacher forcing streams a chunk at a time: only per-position bookkeeping grows with the positions.
  const int chunk_used = std::min(chunk, tokens);
  const double peak = kSweepBaseBytes +
                      jobs * (kSweepBytesPerChunkPosition * chunk_used + kSweepBytesPerPositionJob * tokens) +
                      kSweepBytesPerPositionModel * static_cast<double>(models.size()) * tokens;
  require_memory("sweep", std::to_string(tokens) + " positions, " + std::to_string(models.size()) + " model(s), " +
                              std::to_string(jobs) + " job(s) of " + std::to_string(chunk_used) + "-position chunks",
                 peak + tree_reference_bytes(tree, tokens) * static_cast<double>(models.size()), "reduce --chunk or --jobs");
  int max_layers = 1;
  for (const auto& m : models) max_layers = std::max(max_layers, m->layers());
  Backends be = make_backends(tree ? "emulated" : vm["backend"].as<std::string>(), jobs, max_layers, quiet);
  if (be.name == "cuda") jobs = 1;
  // Tree rounds run the FP64 model through runtime::TreeForward on the CPU: all of it stays there.
  if (tree && vm["fp64"].as<std::string>() == "cuda")
    throw UserError("--fp64 cuda: tree sweeps run the FP64 model on the CPU (--fp64 auto or cpu)");
  const std::unique_ptr<runtime::Fp64Device> fp64 = make_fp64_device(tree ? "cpu" : vm["fp64"].as<std::string>());
  const std::string fp64_name = fp64_device_name(fp64.get());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& m : models) {
    m->use_fp64_device(fp64.get());
    m->set_mode_threads(std::max(1, cores / jobs));  // the CUDA backend's single run gets every core
  }

  // Checkpoints fall at chunk ends; a tree sweep's at the end of the round that completes the interval.
  const long long checkpoint_interval =
      tree ? checkpoint_every : (checkpoint_every + chunk_used - 1LL) / chunk_used * chunk_used;

  sweep::SweepHeader header;
  header.config = resolved_options(vm);
  for (const char* volatile_key :
       {"out", "resume", "shard", "quiet", "jobs", "config", "gate", "chunk", "checkpoint-every", "reference-cache",
        "fp64"})
    header.config.erase(volatile_key);
  header.config["backend"] = be.name;
  header.config["model"] = [&] {
    std::string s;
    for (const auto& r : refs) s += (s.empty() ? "" : ",") + r.name;
    return s;
  }();
  header.config["text"] = text.id;
  header.config_hash = sweep::hash_config(header.config);
  header.bins = sweep::power_of_two_edges(tokens);
  for (const auto& r : plan) header.plan.push_back(r.id);

  const std::string work = out_path + ".runs";
  {
    std::error_code ec;
    if (!vm["resume"].as<bool>()) fs::remove_all(work, ec);
    if (!ec) fs::create_directories(work, ec);
    if (ec) throw UserError(work + ": cannot create the sweep's work folder (" + ec.message() + ")");
    sweep::remove_checkpoint_temps(work);  // under the output lock: a killed writer's
  }
  if (!quiet)
    std::cerr << "sweep: " << mine.size() << " run(s)" << (shard.second > 1 ? " in shard " + vm["shard"].as<std::string>() : "")
              << ", " << refs.size() << " model(s), " << tokens << " positions of " << text.id << ", backend "
              << be.name << " (" << be.device << "), FP64 model on " << fp64_name << ", " << jobs << " job(s), "
              << chunk_used
              << "-position chunks, "
              << (checkpoint_every ? "checkpoints every " + std::to_string(checkpoint_interval) + " positions, "
                                   : std::string())
              << "peak memory about " << format_bytes(peak) << "\n";

  // FP64 reference once per model, into a file every run reads a chunk at a time.
  // Without --reference-cache: a folder of the work folder (whose top level holds only run files), removed with it.
  const std::string cache_dir =
      vm.count("reference-cache") ? vm["reference-cache"].as<std::string>() : work + "/reference";
  {
    std::error_code ec;
    fs::create_directories(cache_dir, ec);
    if (ec) throw UserError(cache_dir + ": cannot create the sweep's reference folder (" + ec.message() + ")");
  }
  const int ref_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> ref_files;
  try {
    for (const auto& m : models) {
      const sweep::ReferenceFile rf = sweep::ensure_reference(*m, text, cache_dir, chunk_used, ref_threads,
                                                              {command_line(), resolved_options(vm)});
      if (!quiet)
        std::cerr << "sweep: reference: "
                  << (rf.reused ? "reused " : "computed " + m->name() + " in " + std::to_string(rf.seconds) + " s, wrote ")
                  << rf.path << "\n";
      ref_files.push_back(rf.path);
      header.references.push_back(rf.summary);
    }
  } catch (const UserError&) {
    std::error_code ec;
    if (!vm["resume"].as<bool>()) fs::remove_all(work, ec);  // nothing of this sweep's is there yet
    throw;
  }
  if (tree) {  // the tree rounds rank their runner-up bytes by the chain reference: the whole [T][256] per model
    std::vector<std::vector<double>> logp_ref;
    for (const auto& path : ref_files)
      logp_ref.push_back(sweep::reference_rows(path)(0, static_cast<std::size_t>(tokens)));
    tree->prepare(model_paths, text, logp_ref, quiet);
    tree->branches.resize(mine.size());
  }

  // Each finished run's file stays in the work folder; memory keeps its table row only.
  std::vector<RunSummary> results(mine.size());
  std::vector<char> done(mine.size(), 0);
  std::size_t resumed = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const std::string f = work + "/" + mine[i].id + ".h5";
    if (!fs::exists(f)) continue;
    std::error_code ec;
    try {
      auto file = h5::File::open_read(f);
      if (file.attr_string("/", "config_hash") != header.config_hash) continue;
      sweep::RunResult r = sweep::read_run(file, "/run");
      // A run file of this configuration has this sweep's positions and bins; anything else is recomputed (the
      // table and the results file index the bins by the header's edges).
      if (r.kl.size() != static_cast<std::size_t>(tokens) ||
          r.kl_binned.size() != (header.bins.size() - 1) * sweep::kStats ||
          r.flip_rate_binned.size() != header.bins.size() - 1 || !std::isfinite(r.bytes_per_element))
        continue;
      if (tree) tree->branches[i] = sweep::read_tree_branches(file, "/run");
      results[i] = summarize(r);
      done[i] = 1;
      fs::remove(sweep::run_checkpoint_path(work, mine[i].id), ec);  // left if the kill came between the two
      ++resumed;
    } catch (const UserError&) {
      // a run file from an older or killed attempt: recompute it
    }
  }
  if (resumed && !quiet) std::cerr << "sweep: resuming, " << resumed << " run(s) already finished\n";

  Progress progress(mine.size(), resumed, quiet);
  // Workers take runs longest-first so that no long run starts last and leaves the other cores idle (results keep the
  // plan's order). Rough cost: Mamba-2 > GDN (larger state per token); conventional LP modes re-encode the whole state
  // every token; split keeps a second copy.
  std::vector<std::size_t> order(mine.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto cost = [](const sweep::RunSpec& r) {
    const bool lp = r.mode.format != formats::FormatId::fp32;
    return (r.mode.arch == emu::Arch::mamba2 ? 4 : 0) + (lp && !r.mode.replay() ? 2 : 0) + (r.mode.split() ? 1 : 0);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost(mine[a]) > cost(mine[b]); });
  // A run's checkpoint key: its id and mode, the inputs' hashes, the build and the sweep's configuration.
  std::vector<sweep::CheckpointKey> model_keys;
  for (const auto& m : models) {
    const sweep::ReferenceKey k = sweep::reference_key(m->path(), text);
    model_keys.push_back({{"model_hash", k.model_hash}, {"text_hash", k.text_hash}, {"text", text.id},
                          {"tool_version", k.tool_version}, {"config_hash", header.config_hash}, {"backend", be.name}});
  }
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::exception_ptr failure;
  auto worker = [&](int w) {
    for (;;) {
      const std::size_t k = next++;
      if (k >= mine.size()) return;
      const std::size_t i = order[k];
      if (done[i]) continue;
      try {
        const auto& spec = mine[i];
        std::size_t m = 0;
        while (models[m]->name() != spec.model) ++m;
        sweep::RunCheckpointing ck{sweep::run_checkpoint_path(work, spec.id), checkpoint_every,
                                   vm["resume"].as<bool>(), model_keys[m], nullptr};
        ck.key.insert(ck.key.begin(), {{"run", spec.id}, {"mode", spec.mode.name()}});
        ck.note = [&](const std::string& line) {
          // resuming is progress (quiet hides it); an ignored checkpoint is work lost, always said
          if (quiet && line.find(" ignored (") == std::string::npos) return;
          std::lock_guard<std::mutex> lock(mu);
          std::cerr << "sweep: " << line << "\n";
        };
        sweep::RunResult r = tree ? tree->evaluate(spec, m, text, header.bins, i, &ck)
                                  : sweep::evaluate_run(spec, *models[m], text, sweep::reference_rows(ref_files[m]),
                                                        be.of_worker(w), header.bins, chunk_used, &ck);
        r.attrs["backend"] = be.name;
        r.attrs["device"] = be.device;
        r.attrs["fp64_device"] = fp64_name;
        h5::AtomicOutput f(work + "/" + spec.id + ".h5");
        f.file().set_attr("/", "config_hash", header.config_hash);
        sweep::write_run(f.file(), "/run", r);
        if (tree) sweep::write_tree_branches(f.file(), "/run", tree->branches[i]);
        f.commit();
        std::error_code ec;
        fs::remove(ck.path, ec);  // the result is stored: the checkpoint has nothing left to give
        RunSummary row = summarize(r);
        r = sweep::RunResult{};  // the per-position arrays are in the run's file
        std::lock_guard<std::mutex> lock(mu);
        results[i] = std::move(row);
        progress.finished(spec.id);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        next = mine.size();
        return;
      }
    }
  };
  if (jobs > 1 && be.name == "emulated") {
    // Independent runs on independent backends (ModelEvaluator keeps no per-run state in the mode path).
    std::vector<std::thread> pool;
    for (int w = 0; w < jobs; ++w) pool.emplace_back(worker, w);
    for (auto& t : pool) t.join();
  } else {
    worker(0);
  }
  if (failure) std::rethrow_exception(failure);
  progress.close();

  h5::AtomicOutput out(out_path);
  sweep::write_header(out.file(), header);
  for (std::size_t i = 0; i < mine.size(); ++i) {  // one run in memory at a time, read back as --resume reads it
    const auto f = h5::File::open_read(work + "/" + mine[i].id + ".h5");
    sweep::write_run(out.file(), "/runs/" + mine[i].id, sweep::read_run(f, "/run"));
    if (tree) sweep::write_tree_branches(out.file(), "/runs/" + mine[i].id, tree->branches[i]);
  }
  auto opts = resolved_options(vm);
  if (be.name == "cuda") opts["plan"] = be.plan.empty() ? "none" : be.plan;
  h5::write_provenance(out.file(), command_line(), opts, be.device);
  out.file().set_attr("/", "shard", shard.second > 1 ? vm["shard"].as<std::string>() : "none");
  out.commit();
  fs::remove_all(work);
  if (!quiet) print_table(results, header.bins);
  if (!quiet && tree) print_tree_table(results, tree->branches, header.bins);
  std::cout << "sweep: " << results.size() << " run(s) -> " << out_path << "\n";
  if (vm["gate"].as<bool>()) {
    // Judged from the file just written, so the verdicts are those `replayssm gate` gives on it.
    const auto written = h5::File::open_read(out_path);
    std::cout << "\n" << sweep::format_gate_table(sweep::judge_results(written, sweep::GateThresholds{}), {});
  }
  return kExitOk;
}

const Registrar reg{{"sweep", "PG-19 teacher-forcing precision sweep: per-length KL and drift (the main job)",
                     add_options, run,
                     "replayssm sweep --formats bf16,fp8_e4m3:row,nvfp4 --tokens 131072 --out results.h5\n"
                     "  replayssm sweep --activations acts.h5 --out drift.h5   (every mode on a captured dump)\n"
                     "  replayssm sweep --tree 4,2,2,1 --tokens 2048 --out tree.h5   (tree verification rounds)"}};

}  // namespace
}  // namespace replayssm::cli
