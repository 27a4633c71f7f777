// Teacher-forced tree verification (sweep/tree_sweep.h): the rounds' trees, the FP64 tree reference against the chain
// reference, and runs of decode modes through tree verify.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "runtime/backend.h"
#include "runtime/forward.h"
#include "runtime/model.h"
#include "sweep/metrics.h"
#include "source_paths.h"
#include "sweep/tree_sweep.h"

using namespace replayssm;
using namespace replayssm::sweep;

namespace {

// KL between the FP64 model and a mode with FP32 state arithmetic: log-probs agree to ~1e-6, so KL is ~1e-12.
constexpr double kFp32KlBound = 1e-8;

// The FP64 chain reference of the whole slice, [T][256] (what the sweep's reference file holds).
std::vector<double> chain_reference(const runtime::TinyModel& model, const TextSlice& text) {
  runtime::ReferenceBackend be(2);
  runtime::ForwardOptions opt;
  opt.threads = 2;
  const std::vector<std::uint8_t> tokens(text.bytes.begin(), text.bytes.begin() + text.tokens);
  const runtime::Mat lp = runtime::teacher_force(model, tokens, be, opt).logprobs;
  return std::vector<double>(lp.data(), lp.data() + lp.size());
}

struct Fixture {
  std::unique_ptr<ModelEvaluator> eval;
  runtime::TinyModel model;
  TextSlice text;
  std::vector<double> logp_ref;
  Fixture(const std::string& arch, int tokens)
      : eval(std::make_unique<ModelEvaluator>(testing::tiny_model_path(arch))),
        model(runtime::TinyModel::load(testing::tiny_model_path(arch))),
        text(load_text(testing::pg19_book_path(), 0, tokens)),
        logp_ref(chain_reference(model, text)) {}
};

RunSpec spec_of(emu::Arch arch, emu::Policy p, formats::FormatId f) {
  RunSpec s;
  s.model = arch == emu::Arch::gdn ? "tiny_gdn" : "tiny_mamba2";
  s.mode.arch = arch;
  s.mode.policy = p;
  s.mode.format = f;
  s.mode.scaling = f == formats::FormatId::fp8_e4m3 ? formats::Scaling::row : formats::default_scaling(f);
  s.mode.max_drafts = 1;
  s.id = run_id(s.model, s.mode);
  return s;
}

TreeRunResult run_shape(Fixture& fx, const std::string& shape, const RunSpec& spec) {
  const auto rounds = plan_tree_rounds(ref::tree_from_text(shape), fx.text, fx.logp_ref);
  return evaluate_tree_run(spec, fx.model, fx.text, shape, rounds, tree_reference_logp(fx.model, rounds),
                           power_of_two_edges(fx.text.tokens));
}

}  // namespace

TEST_CASE("tree sweep: rounds cover the slice once with the true bytes on the path", "[sweep][tree]") {
  Fixture fx("gdn", 30);
  const auto rounds = plan_tree_rounds(ref::tree_from_text("4,2,2,1"), fx.text, fx.logp_ref);
  REQUIRE(rounds.front().parents == std::vector<int>{-1});  // byte 0 has no distribution to draft from
  std::vector<int> seen(30, 0);
  for (const auto& r : rounds) {
    REQUIRE(r.accept >= 0);
    for (std::size_t i = 0; i < r.parents.size(); ++i) {
      const std::int64_t pos = r.start + r.depth[i] - 1;
      REQUIRE(pos < 30);
      if (r.on_path[i]) {
        ++seen[std::size_t(pos)];
        CHECK(r.tokens[i] == fx.text.bytes[std::size_t(pos)]);
      } else if (r.parents[i] < 0 || r.on_path[std::size_t(r.parents[i])]) {
        CHECK(r.tokens[i] != fx.text.bytes[std::size_t(pos)]);  // an alternative to the true byte
      }
      for (std::size_t j = 0; j < i; ++j)  // siblings differ: every node's children take the same ranked bytes
        if (r.parents[j] == r.parents[i]) CHECK(r.tokens[j] != r.tokens[i]);
    }
    if (r.start > 0 && r.parents.size() == 44) {
      // depth-1 runner-ups: the two most likely bytes other than the truth, in order, under the last committed position
      const double* row = &fx.logp_ref[std::size_t(r.start - 1) * 256];
      const std::uint8_t truth = fx.text.bytes[std::size_t(r.start)];
      for (int c = 1; c < 4; ++c) {
        int better = 0;
        for (int b = 0; b < 256; ++b) better += b != truth && row[b] > row[r.tokens[std::size_t(c)]];
        CHECK(better == c - 1);
      }
    }
  }
  for (int n : seen) CHECK(n == 1);
  CHECK(rounds.back().start + rounds.back().depth[std::size_t(rounds.back().accept)] == 30);  // the last round is cut
}

TEST_CASE("tree sweep: the FP64 tree reference's accepted path is the chain reference, bit for bit", "[sweep][tree]") {
  for (const char* arch : {"gdn", "mamba2"}) {
    Fixture fx(arch, 40);
    for (const char* shape : {"chain:4", "4,2,2,1", "binary:3", "star:5", "chain:1"}) {
      const auto rounds = plan_tree_rounds(ref::tree_from_text(shape), fx.text, fx.logp_ref);
      const auto lp = tree_reference_logp(fx.model, rounds);
      for (std::size_t k = 0; k < rounds.size(); ++k)
        for (std::size_t i = 0; i < rounds[k].parents.size(); ++i) {
          if (!rounds[k].on_path[i]) continue;
          const std::size_t pos = std::size_t(rounds[k].start + rounds[k].depth[i] - 1);
          for (int b = 0; b < 256; ++b) {
            INFO(arch << " " << shape << " position " << pos << " byte " << b);
            REQUIRE(lp[k][i * 256 + std::size_t(b)] == fx.logp_ref[pos * 256 + std::size_t(b)]);
          }
        }
    }
  }
}

TEST_CASE("tree sweep: modes through tree verify give finite, non-negative KL on path and branches", "[sweep][tree]") {
  for (auto arch : {emu::Arch::gdn, emu::Arch::mamba2}) {
    Fixture fx(arch == emu::Arch::gdn ? "gdn" : "mamba2", 48);
    for (const char* shape : {"2,2", "binary:2", "star:3", "chain:1"}) {
      for (auto f : {formats::FormatId::fp32, formats::FormatId::fp8_e4m3}) {
        const TreeRunResult r = run_shape(fx, shape, spec_of(arch, emu::Policy::replay_shared, f));
        INFO(shape << " " << r.run.id);
        REQUIRE(r.run.kl.size() == 48);
        for (double x : r.run.kl) REQUIRE((std::isfinite(x) && x >= 0.0));
        for (double x : r.branches.kl) REQUIRE((std::isfinite(x) && x >= 0.0));
        CHECK(r.branches.kl.size() == r.branches.position.size());
        CHECK(r.run.attrs.at("diverged_at") == "-1");
        const bool chain = std::string(shape) == "chain:1";
        CHECK(r.branches.kl.empty() == chain);
        if (f == formats::FormatId::fp32)  // FP32 state arithmetic: KL of the order of the FP32 rounding
          for (double x : r.run.kl) CHECK(x < kFp32KlBound);
      }
    }
  }
}

TEST_CASE("tree sweep: the branches do not change the accepted path", "[sweep][tree]") {
  // A tree's on-path nodes read only the committed state and their own root path, so a mode's accepted path under
  // 4,2,2,1 is its accepted path under chain:4 (the same rounds), to the last bit.
  for (auto arch : {emu::Arch::gdn, emu::Arch::mamba2}) {
    Fixture fx(arch == emu::Arch::gdn ? "gdn" : "mamba2", 41);
    for (auto p : {emu::Policy::conventional_shared, emu::Policy::replay_shared, emu::Policy::replay_split}) {
      const RunSpec spec = spec_of(arch, p, formats::FormatId::fp8_e4m3);
      const TreeRunResult tree = run_shape(fx, "4,2,2,1", spec), chain = run_shape(fx, "chain:4", spec);
      INFO(spec.id);
      CHECK(tree.run.kl == chain.run.kl);
      CHECK(tree.run.nll == chain.run.nll);
      CHECK(chain.branches.kl.empty());
      CHECK(tree.branches.kl.size() == 40 / 4 * 40);
    }
  }
}

TEST_CASE("tree sweep: a run's results round-trip through its file (--resume reads them back)", "[sweep][tree]") {
  Fixture fx("gdn", 20);
  const TreeRunResult r =
      run_shape(fx, "2,2", spec_of(emu::Arch::gdn, emu::Policy::replay_shared, formats::FormatId::bf16));
  const std::string path = "/tmp/replayssm_tree_sweep_" + std::to_string(::getpid()) + ".h5";
  {
    auto f = h5::File::create(path);
    write_run(f, "/run", r.run);
    write_tree_branches(f, "/run", r.branches);
  }
  const auto f = h5::File::open_read(path);
  const RunResult run = read_run(f, "/run");
  const TreeBranches br = read_tree_branches(f, "/run");
  std::remove(path.c_str());
  CHECK(run.kl == r.run.kl);
  CHECK(run.layers == 0);
  CHECK(br.kl == r.branches.kl);
  CHECK(br.position == r.branches.position);
  CHECK(br.kl_binned == r.branches.kl_binned);
  CHECK(br.flip_rate_binned == r.branches.flip_rate_binned);
  CHECK((br.shape == "2,2" && br.nodes == 6 && br.depth == 2 && br.rounds == r.branches.rounds));
}

TEST_CASE("tree sweep: a run resumed from a checkpoint gives the uninterrupted run's bits", "[sweep][tree][checkpoint]") {
  // A run with checkpoints every few positions leaves its last one in place (the sweep removes it once the result is
  // stored); a second run resuming from it continues at that round. Both arches, every policy, an 8-bit format.
  for (auto arch : {emu::Arch::gdn, emu::Arch::mamba2}) {
    Fixture fx(arch == emu::Arch::gdn ? "gdn" : "mamba2", 45);
    const auto rounds = plan_tree_rounds(ref::tree_from_text("3,2"), fx.text, fx.logp_ref);
    const auto ref_tree = tree_reference_logp(fx.model, rounds);
    const auto edges = power_of_two_edges(fx.text.tokens);
    for (auto p : {emu::Policy::conventional_shared, emu::Policy::replay_shared, emu::Policy::replay_split}) {
      const RunSpec spec = spec_of(arch, p, formats::FormatId::fp8_e4m3);
      INFO(spec.id);
      const TreeRunResult whole = evaluate_tree_run(spec, fx.model, fx.text, "3,2", rounds, ref_tree, edges);
      const std::string path = "/tmp/replayssm_tree_ckpt_" + std::to_string(::getpid()) + ".ckpt";
      std::remove(path.c_str());
      const CheckpointKey key = {{"run", spec.id}};
      std::vector<std::string> notes;
      RunCheckpointing ck{path, 7, false, key, [&](const std::string& s) { notes.push_back(s); }};
      const TreeRunResult saving = evaluate_tree_run(spec, fx.model, fx.text, "3,2", rounds, ref_tree, edges, &ck);
      ck.resume = true;
      const TreeRunResult resumed = evaluate_tree_run(spec, fx.model, fx.text, "3,2", rounds, ref_tree, edges, &ck);
      std::remove(path.c_str());
      // The last checkpoint: at the first round start 7 or more positions past the previous one, before the last round.
      std::int64_t last = 0;
      for (std::size_t k = 0; k + 1 < rounds.size(); ++k)
        if (rounds[k + 1].start - last >= 7) last = rounds[k + 1].start;
      REQUIRE(notes.size() == 1);
      CHECK(last > 20);
      CHECK(notes[0] == "run " + spec.id + " resumes at position " + std::to_string(last));
      for (const TreeRunResult* r : {&saving, &resumed}) {
        CHECK(std::memcmp(r->run.kl.data(), whole.run.kl.data(), whole.run.kl.size() * sizeof(double)) == 0);
        CHECK(std::memcmp(r->run.nll.data(), whole.run.nll.data(), whole.run.nll.size() * sizeof(double)) == 0);
        CHECK(r->run.top1 == whole.run.top1);
        CHECK(r->branches.kl == whole.branches.kl);
        CHECK(r->branches.position == whole.branches.position);
        CHECK(r->branches.kl_binned == whole.branches.kl_binned);
      }
    }
  }
}
