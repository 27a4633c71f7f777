// The tiny model over draft trees (runtime/tree_forward.h) against teacher forcing of the same byte sequences: with the
// FP64 recurrence, every node of every round has teacher_force's log-probs of the prefix + its root path, bit for bit.
#include <string>
#include <vector>

#include "catch.hpp"
#include "reference/tree_verify.h"
#include "runtime/backend.h"
#include "runtime/forward.h"
#include "runtime/model.h"
#include "runtime/text.h"
#include "runtime/tree_forward.h"
#include "source_paths.h"

using namespace replayssm;

namespace {

using testing::tiny_model_path;

std::vector<std::uint8_t> book_bytes(std::int64_t n) { return runtime::read_text_slice(testing::pg19_book_path(), 0, n); }

// A round's bytes: child 0 of an on-path node is the text's byte at that depth, child c >= 1 another byte.
struct Round {
  std::vector<std::uint8_t> tokens;
  std::vector<char> on_path;
  std::vector<int> depth;
  int accept = -1;
};
Round make_round(const ref::DraftTree& t, const std::vector<std::uint8_t>& text, std::int64_t start) {
  Round r;
  std::vector<int> children(std::size_t(t.size()) + 1, 0);
  for (int i = 0; i < t.size(); ++i) {
    const int p = t.parent[std::size_t(i)], c = children[std::size_t(p + 1)]++;
    const int d = t.depth(i);
    const std::uint8_t truth = text[std::size_t(start + d - 1)];
    r.tokens.push_back(std::uint8_t(truth + 7 * c));
    r.depth.push_back(d);
    r.on_path.push_back(c == 0 && (p < 0 || r.on_path[std::size_t(p)]) ? 1 : 0);
    if (r.on_path.back() && (r.accept < 0 || d > r.depth[std::size_t(r.accept)])) r.accept = i;
  }
  return r;
}

runtime::Mat teacher_forced(const runtime::TinyModel& m, const std::vector<std::uint8_t>& bytes) {
  runtime::ReferenceBackend be;
  return runtime::teacher_force(m, bytes, be).logprobs;
}

// Rounds of `shape` over the first n bytes; every node checked against teacher forcing of prefix + its path (the
// on-path nodes against one teacher-forced run of the text).
void check_rounds(const std::string& arch, const std::string& shape, std::int64_t n) {
  const runtime::TinyModel m = runtime::TinyModel::load(tiny_model_path(arch));
  const std::vector<std::uint8_t> text = book_bytes(n + 8);
  const runtime::Mat chain = teacher_forced(m, text);
  const ref::DraftTree tree = ref::tree_from_text(shape);
  const auto rec = runtime::make_reference_tree_recurrence(m.cfg);
  runtime::TreeForward fwd(m, *rec);
  int branches_checked = 0;
  while (fwd.committed() < n) {
    const std::int64_t start = fwd.committed();
    const Round r = make_round(tree, text, start);
    const runtime::Mat lp = fwd.verify(r.tokens, tree.parent);
    for (int i = 0; i < tree.size(); ++i) {
      if (r.on_path[std::size_t(i)]) {
        INFO(arch << " " << shape << " round at " << start << " node " << i);
        CHECK(lp.row(i) == chain.row(start + r.depth[std::size_t(i)] - 1));
      } else if (branches_checked < 3 && r.depth[std::size_t(i)] == tree.depth(tree.size() - 1)) {
        // a deepest branch: its path has off-path ancestors whenever the shape branches below the root
        std::vector<std::uint8_t> seq(text.begin(), text.begin() + start);
        for (int j : tree.path(i)) seq.push_back(r.tokens[std::size_t(j)]);
        INFO(arch << " " << shape << " round at " << start << " branch node " << i);
        CHECK(lp.row(i) == teacher_forced(m, seq).row(Eigen::Index(seq.size()) - 1));
        ++branches_checked;
      }
    }
    fwd.accept_path(r.accept);
  }
  CHECK(fwd.committed() >= n);
  CHECK(branches_checked > 0);
}

}  // namespace

TEST_CASE("tree forward: FP64 nodes equal teacher forcing of prefix + path, bit for bit", "[runtime][tree]") {
  for (const char* arch : {"gdn", "mamba2"}) {
    check_rounds(arch, "4,2,2,1", 24);  // the first round starts at byte 0: the conv's skipped taps too
    check_rounds(arch, "binary:2", 12);
    check_rounds(arch, "star:3", 6);
  }
}

TEST_CASE("tree forward: a chain tree is teacher forcing in rounds", "[runtime][tree]") {
  const runtime::TinyModel m = runtime::TinyModel::load(tiny_model_path("gdn"));
  const std::vector<std::uint8_t> text = book_bytes(20);
  const runtime::Mat chain = teacher_forced(m, text);
  for (int k : {1, 3, 5}) {
    const auto rec = runtime::make_reference_tree_recurrence(m.cfg);
    runtime::TreeForward fwd(m, *rec);
    const ref::DraftTree tree = ref::DraftTree::chain(k);
    while (fwd.committed() + k <= 20) {
      const std::int64_t start = fwd.committed();
      const std::vector<std::uint8_t> toks(text.begin() + start, text.begin() + start + k);
      const runtime::Mat lp = fwd.verify(toks, tree.parent);
      CHECK(lp == chain.middleRows(start, k));
      fwd.accept_path(k - 1);
    }
  }
}

TEST_CASE("tree forward: bad trees and accepts are refused", "[runtime][tree]") {
  const runtime::TinyModel m = runtime::TinyModel::load(tiny_model_path("mamba2"));
  const auto rec = runtime::make_reference_tree_recurrence(m.cfg);
  runtime::TreeForward fwd(m, *rec);
  CHECK_THROWS_AS(fwd.accept_path(0), std::logic_error);
  CHECK_THROWS_AS(fwd.verify({1, 2}, {-1, 1}), std::invalid_argument);
  CHECK_THROWS_AS(fwd.verify({1, 2, 3}, {-1, 0}), std::invalid_argument);
  fwd.verify({1, 2}, {-1, -1});
  CHECK_THROWS_AS(fwd.accept_path(2), std::invalid_argument);
  fwd.accept_path(-1);
  CHECK(fwd.committed() == 0);
}
