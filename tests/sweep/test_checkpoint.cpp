// Checkpoints of a run's evolving state: a decode backend saved mid-sequence and loaded into a fresh one continues
// bit for bit (outputs, stores, state, flushes and its next blob) across the policies, formats, roundings, record
// formats and both recurrences; a blob of another mode or shape is refused. Then whole runs: evaluate_run resumed
// from its checkpoint file gives the uninterrupted run's bits, and a damaged or foreign checkpoint is handled.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/errors.h"
#include "emulation/decode_api.h"
#include "sweep/metrics.h"
#include "sweep/run_checkpoint.h"
#include "sweep/sweep_runner.h"
#include "backend_checkpoint_checks.h"
#include "run_checks.h"

using namespace replayssm;
using namespace replayssm::sweep;
using namespace replayssm::testing;

TEST_CASE("backend checkpoints: a loaded backend continues bit for bit", "[checkpoint]") {
  struct Case {
    emu::Arch arch;
    const char* mode;
  };
  const std::vector<Case> cases = {
      {emu::Arch::gdn, "conventional_shared/fp32"},
      {emu::Arch::gdn, "conventional_shared/bf16/sr/seed=7"},
      {emu::Arch::gdn, "conventional_shared/fp8_e4m3/row/sr"},
      {emu::Arch::gdn, "conventional_shared/int8_ef"},
      {emu::Arch::gdn, "replay_shared/fp8_e4m3/row/L=8"},
      {emu::Arch::gdn, "replay_shared/bf16/sr/rec=bf16/L=5"},
      {emu::Arch::gdn, "replay_split/fp8_e4m3/row/sr/u=hp"},
      {emu::Arch::gdn, "replay_split/nvfp4/u=recompute/rec=bf16"},
      {emu::Arch::gdn, "replay_split/bf16/u=lp/L=4"},
      {emu::Arch::mamba2, "conventional_shared/fp8_e4m3/row"},
      {emu::Arch::mamba2, "conventional_shared/bf16/sr"},
      {emu::Arch::mamba2, "replay_shared/fp32/rec=bf16"},
      {emu::Arch::mamba2, "replay_split/fp8_e4m3/row/sr/L=8"},
      {emu::Arch::mamba2, "replay_split/nvfp4/rec=bf16"},
  };
  emu::Dims d;
  d.B = 2, d.G = 1, d.H = 2, d.K = 32, d.V = 8;
  for (const Case& c : cases) {
    const emu::Mode m = emu::parse_mode(c.mode, c.arch);
    INFO(emu::arch_name(c.arch) << " " << c.mode);
    for (const int cut : {5, 16, 23})  // mid-window, on a flush, past one
      check_backend_resume(emu::make_emulated_backend, d, m, cut);
  }
}

TEST_CASE("backend checkpoints: a blob of another mode, shape or a damaged one is refused", "[checkpoint]") {
  emu::Dims d;
  d.B = 1, d.G = 1, d.H = 2, d.K = 32, d.V = 8;
  const emu::Mode m = emu::parse_mode("replay_split/fp8_e4m3/row/u=hp", emu::Arch::gdn);
  auto a = emu::make_emulated_backend();
  a->init(d, m, nullptr);
  std::mt19937 rng(5);
  std::vector<float> o(d.heads() * d.V);
  for (int s = 0; s < 7; ++s) a->step(random_tokens(d, 1, rng).view(), o.data());
  std::vector<std::uint8_t> blob;
  a->save(blob);
  for (const char* other : {"replay_split/bf16/u=hp", "replay_split/fp8_e4m3/row/u=recompute",
                            "replay_shared/fp8_e4m3/row", "replay_split/fp8_e4m3/row/u=hp/L=8",
                            "replay_split/fp8_e4m3/row/sr/u=hp"}) {
    INFO(other);
    auto b = emu::make_emulated_backend();
    b->init(d, emu::parse_mode(other, emu::Arch::gdn), nullptr);
    CHECK_THROWS_AS(b->load(blob.data(), blob.size()), std::invalid_argument);
  }
  emu::Dims d2 = d;
  d2.H = 4;
  auto b = emu::make_emulated_backend();
  b->init(d2, m, nullptr);
  CHECK_THROWS_AS(b->load(blob.data(), blob.size()), std::invalid_argument);
  auto c = emu::make_emulated_backend();
  c->init(d, m, nullptr);
  CHECK_THROWS_AS(c->load(blob.data(), blob.size() - 3), std::invalid_argument);  // truncated
  std::vector<std::uint8_t> longer = blob;
  longer.push_back(0);
  CHECK_THROWS_AS(c->load(longer.data(), longer.size()), std::invalid_argument);  // trailing bytes
  c->load(blob.data(), blob.size());  // the refusals left it usable
}

namespace {

std::string temp_dir() {
  const auto p = std::filesystem::temp_directory_path() / ("replayssm-ckpt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(p);
  return p.string();
}

}  // namespace

TEST_CASE("run checkpoints: evaluate_run resumed from its checkpoint gives the uninterrupted bits", "[checkpoint]") {
  const TextSlice text = load_text(pg19_book_path(), 1000, 70);
  const auto edges = power_of_two_edges(text.tokens);
  const std::string dir = temp_dir();
  for (const std::string arch : {"gdn", "mamba2"}) {
    const ModelEvaluator model(tiny_model_path(arch));
    const std::vector<double> logp_ref = model.reference_stream(1)->next(text.bytes.data(), std::size_t(text.tokens));
    std::vector<std::unique_ptr<emu::DecodeBackend>> owned;
    std::vector<emu::DecodeBackend*> layers;
    for (int l = 0; l < model.layers(); ++l) {
      owned.push_back(emu::make_emulated_backend());
      layers.push_back(owned.back().get());
    }
    SweepAxes axes;
    axes.formats = {parse_format_spec("fp8_e4m3:row"), parse_format_spec("bf16")};
    axes.roundings = {formats::Rounding::rne, formats::Rounding::sr};
    axes.policies = {emu::Policy::conventional_shared, emu::Policy::replay_split};
    axes.Ls = {16};
    axes.usources = {emu::USource::hp, emu::USource::recompute};
    for (const RunSpec& spec : expand_plan({{model.name(), model.path(), model.arch()}}, axes)) {
      INFO(spec.id);
      const RunResult whole = evaluate_run(spec, model, text, in_memory(logp_ref), layers, edges, 70);
      std::vector<std::string> notes;
      RunCheckpointing ck{run_checkpoint_path(dir, spec.id), 24, false, {{"run", spec.id}}, nullptr};
      ck.note = [&](const std::string& s) { notes.push_back(s); };
      // Chunks of 8: checkpoints after 24 and 48 positions; the file keeps the one at 48 (none at the end).
      check_same_run(evaluate_run(spec, model, text, in_memory(logp_ref), layers, edges, 8, &ck), whole);
      REQUIRE(std::filesystem::exists(ck.path));
      ck.resume = true;
      check_same_run(evaluate_run(spec, model, text, in_memory(logp_ref), layers, edges, 5, &ck), whole);
      REQUIRE(notes.size() == 1);
      CHECK(notes[0] == "run " + spec.id + " resumes at position 48");
      // Another run's checkpoint: ignored, said why, and the run starts over (same bits).
      RunCheckpointing other = ck;
      other.key = {{"run", "another"}};
      check_same_run(evaluate_run(spec, model, text, in_memory(logp_ref), layers, edges, 70, &other), whole);
      REQUIRE(notes.size() == 2);
      CHECK(notes[1].find("ignored (run is " + spec.id + ", this run's is another)") != std::string::npos);
      std::filesystem::remove(ck.path);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("run checkpoints: a damaged file is refused naming the file and the field", "[checkpoint]") {
  const std::string dir = temp_dir();
  const std::string path = run_checkpoint_path(dir, "r");
  RunCheckpointData d;
  d.position = 2;
  d.kl = {0.5, 0.25};
  d.nll = {1.0, 2.0};
  d.top1 = {1.0, 0.0};
  d.stream = {1, 2, 3, 4, 5};
  const CheckpointKey key = {{"run", "r"}, {"mode", "m"}};
  write_run_checkpoint(path, key, d);
  std::string why;
  const auto back = read_run_checkpoint(path, key, &why);
  REQUIRE(back);
  CHECK(back->position == 2);
  CHECK(same_bits(back->kl, d.kl));
  CHECK(back->stream == d.stream);
  CHECK_FALSE(read_run_checkpoint(path, {{"run", "r"}, {"mode", "x"}}, &why));
  CHECK(why == "mode is m, this run's is x");
  CHECK_FALSE(read_run_checkpoint(dir + "/absent.ckpt", key, &why));

  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto write = [&](const std::vector<char>& b) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), std::streamsize(b.size()));
  };
  const auto refusal = [&]() -> std::string {
    try {
      read_run_checkpoint(path, key, &why);
    } catch (const UserError& e) {
      CHECK(e.code() == kExitBadInput);
      return e.what();
    }
    return "accepted";
  };
  std::vector<char> b = bytes;
  b[b.size() - 2] ^= 1;  // a body byte
  write(b);
  CHECK(refusal() == path + ": body: checksum mismatch (the file was changed)");
  write(std::vector<char>(bytes.begin(), bytes.end() - 4));
  CHECK(refusal().rfind(path + ": body: length ", 0) == 0);  // "... runs past the end"
  b = bytes;
  b[0] = 'X';
  write(b);
  CHECK(refusal() == path + ": magic: not a replayssm run checkpoint");
  std::filesystem::remove_all(dir);
}
