// `replayssm reference-cache`: fills a reference cache directory (datasets/README.md, "FP64 reference cache") with the
// FP64 model's per-position log-probs of each model on a text slice, so that the shards of a sweep (or later sweeps)
// that name the same directory with `--reference-cache` read it instead of each computing it. A file already there
// for the same key is checked and reused.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "cli/default_inputs.h"
#include "cli/fp64_option.h"
#include "core/errors.h"
#include "runtime/forward.h"
#include "sweep/reference_cache.h"
#include "sweep/sweep_runner.h"

namespace replayssm::cli {
namespace {

void add_options(po::options_description& d) {
  d.add_options()
    ("dir", po::value<std::string>()->required(), "cache directory (created if missing); give the same to `sweep "
                                                  "--reference-cache`")
    ("model", po::value<std::vector<std::string>>()->composing(),
     "model file(s) (.h5); default: both tiny models in datasets/models/ (as `sweep`)")
    ("text", po::value<std::string>(), "text file; default: the first PG-19 test book (as `sweep`)")
    ("offset", po::value<long long>()->default_value(0), "byte offset of the slice in the text")
    ("tokens", po::value<int>()->default_value(32768), "positions (the same as the sweep's --tokens)")
    ("chunk", po::value<int>()->default_value(sweep::kDefaultChunk),
     "positions teacher-forced at a time: memory grows with it, the file does not change by a bit")
    ("fp64", po::value<std::string>()->default_value("auto"), kFp64OptionHelp);
}

int run(const po::variables_map& vm) {
  runtime::keep_freed_memory();
  const std::string dir = vm["dir"].as<std::string>();
  const int tokens = vm["tokens"].as<int>(), chunk = vm["chunk"].as<int>();
  const long long offset = vm["offset"].as<long long>();
  if (dir.empty()) throw UserError("--dir: empty path");
  if (tokens < 1) throw UserError("--tokens must be >= 1");
  if (offset < 0) throw UserError("--offset must be >= 0");
  if (chunk < 1) throw UserError("--chunk must be >= 1");
  const std::vector<std::string> models =
      vm.count("model") ? vm["model"].as<std::vector<std::string>>() : default_models();
  const std::string text_path = vm.count("text") ? vm["text"].as<std::string>() : default_text();
  const sweep::TextSlice text = sweep::load_text(text_path, offset, tokens);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) throw UserError("--dir " + dir + ": cannot create the directory");
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::unique_ptr<runtime::Fp64Device> fp64 = make_fp64_device(vm["fp64"].as<std::string>());
  std::cout << "reference: FP64 model on " << fp64_device_name(fp64.get()) << "\n";
  for (const std::string& path : models) {
    sweep::ModelEvaluator model(path);
    model.use_fp64_device(fp64.get());
    const sweep::ReferenceFile rf = sweep::ensure_reference(model, text, dir, std::min(chunk, tokens), threads,
                                                            {command_line(), resolved_options(vm)});
    std::cout << "reference: " << (rf.reused ? "reused " : "computed " + model.name() + " in " +
                                                               std::to_string(rf.seconds) + " s, wrote ")
              << rf.path << "\n";
  }
  return kExitOk;
}

const Registrar reg{{"reference-cache",
                     "FP64 reference of models on a text slice, into a cache directory that sweeps and shards reuse",
                     add_options, run,
                     "replayssm reference-cache --dir /shared/refcache --tokens 131072\n"
                     "  then every shard: replayssm sweep --tokens 131072 --reference-cache /shared/refcache ..."}};

}  // namespace
}  // namespace replayssm::cli
