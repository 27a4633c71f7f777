// A run evaluated a chunk at a time (evaluate_run's chunk) against the same run in one chunk covering every
// position, and the reference cache file against the reference computed in memory: the same bits everywhere,
// including a run that diverges mid-chunk.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/errors.h"
#include "core/h5.h"
#include "sweep/metrics.h"
#include "sweep/reference_cache.h"
#include "sweep/sweep_runner.h"
#include "run_checks.h"

using namespace replayssm;
using namespace replayssm::sweep;
using namespace replayssm::testing;

namespace {

std::vector<RunSpec> specs(const ModelEvaluator& m) {
  SweepAxes axes;
  axes.formats = {parse_format_spec("nvfp4"), parse_format_spec("fp8_e4m3:row")};
  axes.roundings = {formats::Rounding::rne};
  axes.policies = {emu::Policy::conventional_shared, emu::Policy::replay_split};
  axes.Ls = {16};
  axes.usources = {emu::USource::hp};
  return expand_plan({{m.name(), m.path(), m.arch()}}, axes);
}

// A decode backend whose output turns NaN at its `at`-th step after init (0-based), as a state that blew up would.
class BlowsUp : public emu::DecodeBackend {
 public:
  explicit BlowsUp(int at) : inner_(emu::make_emulated_backend()), at_(at) {}
  std::string name() const override { return inner_->name(); }
  std::string device() const override { return inner_->device(); }
  void init(const emu::Dims& d, const emu::Mode& m, const float* S0) override {
    inner_->init(d, m, S0);
    steps_ = 0;
    width_ = std::size_t(d.B) * std::size_t(d.H) * std::size_t(d.V);
  }
  void step(const emu::TokenBatch& in, float* o) override {
    inner_->step(in, o);
    if (steps_++ >= at_) o[width_ / 2] = std::numeric_limits<float>::quiet_NaN();
  }
  void verify(const emu::TokenBatch& in, float* o) override { inner_->verify(in, o); }
  void accept(const int* accepted) override { inner_->accept(accepted); }
  void state(float* S) override { inner_->state(S); }
  void stored(std::vector<std::uint8_t>& c, std::vector<std::uint8_t>& s) override { inner_->stored(c, s); }
  long flushes() const override { return inner_->flushes(); }

 private:
  std::unique_ptr<emu::DecodeBackend> inner_;
  int at_, steps_ = 0;
  std::size_t width_ = 0;
};

}  // namespace

TEST_CASE("streamed runs: any chunk gives the one-chunk run bit for bit", "[sweep][stream]") {
  const TextSlice text = load_text(pg19_book_path(), 1000, 70);
  const auto edges = power_of_two_edges(text.tokens);
  for (const std::string arch : {"gdn", "mamba2"}) {
    const ModelEvaluator model(tiny_model_path(arch));
    const auto ref_stream = model.reference_stream(1);
    const std::vector<double> logp_ref = ref_stream->next(text.bytes.data(), std::size_t(text.tokens));
    std::vector<std::unique_ptr<emu::DecodeBackend>> owned;
    std::vector<emu::DecodeBackend*> layers;
    for (int l = 0; l < model.layers(); ++l) {
      owned.push_back(emu::make_emulated_backend());
      layers.push_back(owned.back().get());
    }
    for (const RunSpec& spec : specs(model)) {
      const RunResult one = evaluate_run(spec, model, text, in_memory(logp_ref), layers, edges, text.tokens);
      CHECK(one.attrs.at("diverged_at") == "-1");
      for (const int chunk : {1, 3, 17}) {
        INFO(spec.id << " chunk " << chunk);
        check_same_run(evaluate_run(spec, model, text, in_memory(logp_ref), layers, edges, chunk), one);
      }
    }
  }
}

TEST_CASE("streamed runs: a run that diverges mid-chunk keeps its finite prefix", "[sweep][stream]") {
  const TextSlice text = load_text(pg19_book_path(), 1000, 60);
  const auto edges = power_of_two_edges(text.tokens);
  const ModelEvaluator model(tiny_model_path("gdn"));
  const std::vector<double> logp_ref = model.reference_stream(2)->next(text.bytes.data(), std::size_t(text.tokens));
  const RunSpec spec = specs(model).front();
  std::vector<std::unique_ptr<emu::DecodeBackend>> owned;
  std::vector<emu::DecodeBackend*> healthy, blows;
  for (int l = 0; l < model.layers(); ++l) {
    owned.push_back(emu::make_emulated_backend());
    healthy.push_back(owned.back().get());
    // The last layer blows up at position 37: the second layer's output, not the first's.
    owned.push_back(l + 1 == model.layers() ? std::unique_ptr<emu::DecodeBackend>(new BlowsUp(37))
                                            : emu::make_emulated_backend());
    blows.push_back(owned.back().get());
  }
  const RunResult fine = evaluate_run(spec, model, text, in_memory(logp_ref), healthy, edges, text.tokens);
  const RunResult one = evaluate_run(spec, model, text, in_memory(logp_ref), blows, edges, text.tokens);
  CHECK(one.attrs.at("diverged_at") == "37");
  for (int t = 0; t < text.tokens; ++t) {
    const auto i = std::size_t(t);
    if (t < 37) {
      CHECK(one.kl[i] == fine.kl[i]);
      CHECK(one.output_drift[i] == fine.output_drift[i]);
    } else {
      CHECK(std::isnan(one.kl[i]));
      CHECK(std::isnan(one.top1[i]));
    }
  }
  for (const int chunk : {1, 5, 16, 40}) {
    INFO("chunk " << chunk);
    check_same_run(evaluate_run(spec, model, text, in_memory(logp_ref), blows, edges, chunk), one);
  }
}

TEST_CASE("reference cache: the file holds the in-memory reference and is reused or refused", "[sweep][stream]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("replayssm_refcache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const TextSlice text = load_text(pg19_book_path(), 500, 90);
  const ModelEvaluator model(tiny_model_path("mamba2"));
  const std::vector<double> logp_ref = model.reference_stream(1)->next(text.bytes.data(), std::size_t(text.tokens));
  const ReferenceFile computed = ensure_reference(model, text, dir.string(), 13, 2, {"test", {}});
  CHECK_FALSE(computed.reused);
  const ReferenceFile again = ensure_reference(model, text, dir.string(), 40, 1, {"test", {}});
  CHECK(again.reused);
  CHECK(again.path == computed.path);
  CHECK(same_bits(again.summary.nll, computed.summary.nll));
  const ReferenceRows rows = reference_rows(computed.path);
  CHECK(same_bits(rows(0, std::size_t(text.tokens)), logp_ref));
  CHECK(same_bits(rows(31, 7), std::vector<double>(logp_ref.begin() + 31 * 256, logp_ref.begin() + 38 * 256)));
  for (int t = 0; t < text.tokens; ++t)
    CHECK(computed.summary.nll[std::size_t(t)] == -logp_ref[std::size_t(t) * 256 + text.bytes[std::size_t(t) + 1]]);

  // Another slice has another key, so another file; a file whose recorded key differs from its name's is refused.
  const TextSlice other = load_text(pg19_book_path(), 501, 90);
  const std::string other_path = (dir / reference_key(model.path(), other).file_name(model.name())).string();
  CHECK(other_path != computed.path);
  fs::copy_file(computed.path, other_path);
  try {
    ensure_reference(model, other, dir.string(), 13, 1, {"test", {}});
    FAIL("a reference of another text slice was accepted");
  } catch (const UserError& e) {
    const std::string msg = e.what();
    CHECK(msg.find(other_path) != std::string::npos);
    CHECK(msg.find("text_hash") != std::string::npos);
    CHECK(e.code() == kExitBadInput);
  }
  fs::remove_all(dir);
}
