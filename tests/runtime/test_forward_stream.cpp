// Chunked teacher forcing (runtime::ForwardStream) against the whole sequence in one call: the same bits for any
// chunking, on both tiny models, with the reference recurrence carried from chunk to chunk.
#include <cstdlib>
#include <string>
#include <vector>

#include "catch.hpp"
#include "runtime/backend.h"
#include "runtime/forward.h"
#include "runtime/model.h"
#include "runtime/text.h"

using namespace replayssm;

namespace {

std::string src_dir() {
  const char* s = std::getenv("REPLAYSSM_SOURCE_DIR");
  return s ? s : ".";
}

// Log-probs of `tokens` fed in chunks of `chunk` (the last one shorter), rows stacked.
runtime::Mat chunked(const runtime::TinyModel& m, const std::vector<std::uint8_t>& tokens, std::size_t chunk,
                     int threads, std::vector<std::vector<double>>* layer_outputs) {
  runtime::ReferenceBackend be(threads);
  runtime::ForwardOptions opt;
  opt.threads = threads;
  runtime::LayerObserver observe;
  if (layer_outputs) {
    layer_outputs->assign(std::size_t(m.cfg.n_layers), {});
    observe = [&](int l, const ref::GdnInputs*, const ref::Mamba2Inputs*, const ref::LayerOutputs& o) {
      auto& dst = (*layer_outputs)[std::size_t(l)];
      dst.insert(dst.end(), o.o.begin(), o.o.end());
    };
  }
  runtime::ForwardStream stream(m, be, opt, observe);
  runtime::Mat out(Eigen::Index(tokens.size()), 256);
  for (std::size_t t0 = 0; t0 < tokens.size(); t0 += chunk) {
    const std::size_t n = std::min(chunk, tokens.size() - t0);
    out.middleRows(Eigen::Index(t0), Eigen::Index(n)) = stream.next(tokens.data() + t0, n);
  }
  CHECK(stream.position() == std::int64_t(tokens.size()));
  return out;
}

}  // namespace

TEST_CASE("forward stream: any chunking gives the whole sequence's log-probs bit for bit", "[runtime][stream]") {
  const auto text = runtime::read_text_slice(src_dir() + "/datasets/pg19/test/10146.txt", 2000, 150);
  for (const std::string arch : {"gdn", "mamba2"}) {
    const auto m = runtime::TinyModel::load(src_dir() + "/datasets/models/tiny_" + arch + ".h5");
    std::vector<std::vector<double>> whole_layers;
    runtime::ReferenceBackend be(1);
    const auto whole = runtime::teacher_force(
        m, text, be, {}, [&](int, const ref::GdnInputs*, const ref::Mamba2Inputs*, const ref::LayerOutputs& o) {
          whole_layers.push_back(o.o);
        });
    for (const std::size_t chunk : {std::size_t(1), std::size_t(3), std::size_t(17), text.size() + 5}) {
      for (const int threads : {1, 2}) {
        INFO(arch << " chunk " << chunk << " threads " << threads);
        std::vector<std::vector<double>> layers;
        const runtime::Mat got = chunked(m, text, chunk, threads, &layers);
        // operator== on doubles: every element exactly equal (no tolerance); bools, so that a failure does not
        // print whole arrays.
        const bool same_logprobs = got == whole.logprobs;
        CHECK(same_logprobs);
        REQUIRE(layers.size() == whole_layers.size());
        for (std::size_t l = 0; l < layers.size(); ++l) {
          const bool same_layer = layers[l] == whole_layers[l];
          CHECK(same_layer);
        }
      }
    }
  }
}

TEST_CASE("forward stream: a chunk after a different history gives different log-probs", "[runtime][stream]") {
  // The carried state matters: the same bytes after other bytes are predicted differently (so the equality above
  // is not that of a model that ignores its past).
  const auto text = runtime::read_text_slice(src_dir() + "/datasets/pg19/test/10146.txt", 2000, 64);
  for (const std::string arch : {"gdn", "mamba2"}) {
    const auto m = runtime::TinyModel::load(src_dir() + "/datasets/models/tiny_" + arch + ".h5");
    runtime::ReferenceBackend a(1), b(1);
    runtime::ForwardStream fresh(m, a), continued(m, b);
    continued.next(text.data(), 32);
    const runtime::Mat x = fresh.next(text.data() + 32, 32), y = continued.next(text.data() + 32, 32);
    const bool differs = x != y;
    CHECK(differs);
  }
}
