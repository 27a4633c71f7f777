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
#include "run_checks.h"

using namespace replayssm;
using namespace replayssm::sweep;
using namespace replayssm::sweep::testing;

namespace {

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// T tokens of random inputs in the backend's head-token form (k normalised so GDN stays stable).
emu::TokenData tokens(const emu::Dims& d, int T, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), decay(0.85f, 0.999f), beta(0.1f, 0.9f);
  emu::TokenData t;
  t.B = d.B, t.T = T;
  const std::size_t bt = std::size_t(d.B) * T;
  for (std::size_t i = 0; i < bt * d.H; ++i) t.a.push_back(decay(rng)), t.beta.push_back(beta(rng));
  for (std::size_t i = 0; i < bt * d.H * d.V; ++i) t.v.push_back(u(rng)), t.skip.push_back(0.1f * u(rng));
  for (std::size_t i = 0; i < bt * d.G; ++i) {
    std::vector<float> k(std::size_t(d.K));
    float n = 0.0f;
    for (float& x : k) x = u(rng), n += x * x;
    for (float& x : k) t.k.push_back(x / std::sqrt(n));
    for (int c = 0; c < d.K; ++c) t.q.push_back(u(rng) / std::sqrt(float(d.K)));
  }
  return t;
}

// The next step of both backends on the same inputs: the same output bits.
void step_both(emu::DecodeBackend& a, emu::DecodeBackend& b, const emu::Dims& d, std::mt19937& rng) {
  const emu::TokenData t = tokens(d, 1, rng);
  std::vector<float> oa(d.heads() * d.V), ob(oa.size());
  a.step(t.view(), oa.data());
  b.step(t.view(), ob.data());
  REQUIRE(same_floats(oa, ob));
}

void check_same_state(emu::DecodeBackend& a, emu::DecodeBackend& b, const emu::Dims& d) {
  std::vector<std::uint8_t> ca, sa, cb, sb;
  a.stored(ca, sa);
  b.stored(cb, sb);
  CHECK(ca == cb);
  CHECK(sa == sb);
  std::vector<float> Sa(d.state_elems()), Sb(Sa.size());
  a.state(Sa.data());
  b.state(Sb.data());
  CHECK(same_floats(Sa, Sb));
  CHECK(a.flushes() == b.flushes());
  std::vector<std::uint8_t> ba, bb;
  a.save(ba);
  b.save(bb);
  CHECK(ba == bb);
}

}  // namespace

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
    for (const int cut : {5, 16, 23}) {  // mid-window, on a flush, past one
      INFO("saved after " << cut << " steps");
      std::mt19937 rng(1234);
      auto a = emu::make_emulated_backend();
      a->init(d, m, nullptr);
      std::vector<float> o(d.heads() * d.V);
      for (int s = 0; s < cut; ++s) a->step(tokens(d, 1, rng).view(), o.data());
      std::vector<std::uint8_t> blob;
      a->save(blob);
      auto b = emu::make_emulated_backend();
      b->init(d, m, nullptr);
      b->load(blob.data(), blob.size());
      check_same_state(*a, *b, d);
      for (int s = 0; s < 40; ++s) step_both(*a, *b, d, rng);
      check_same_state(*a, *b, d);

      // A pending verify is state too: saved before accept, both accept alike.
      const emu::TokenData t = tokens(d, 3, rng);
      std::vector<float> oa(3 * d.heads() * d.V), ob(oa.size());
      a->verify(t.view(), oa.data());
      blob.clear();
      a->save(blob);
      auto c2 = emu::make_emulated_backend();
      c2->init(d, m, nullptr);
      c2->load(blob.data(), blob.size());
      const int accepted[2] = {2, 3};
      a->accept(accepted);
      c2->accept(accepted);
      b->verify(t.view(), ob.data());
      b->accept(accepted);
      CHECK(same_floats(oa, ob));
      for (int s = 0; s < 9; ++s) step_both(*a, *c2, d, rng);
      check_same_state(*a, *c2, d);
    }
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
  for (int s = 0; s < 7; ++s) a->step(tokens(d, 1, rng).view(), o.data());
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
  const TextSlice text = load_text(src_dir() + "/datasets/pg19/test/10146.txt", 1000, 70);
  const auto edges = power_of_two_edges(text.tokens);
  const std::string dir = temp_dir();
  for (const std::string arch : {"gdn", "mamba2"}) {
    const ModelEvaluator model(model_file(arch));
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
