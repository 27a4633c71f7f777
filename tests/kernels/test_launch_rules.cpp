// The tuned kernel's host-side launch rules (kernels/common/decode_kernel.h), on the CPU: which heads share a CTA in
// the ReplaySSM non-flush op (v12), and which kernel layout an op runs (v13). A wrong rule would put heads of two groups in one CTA (wrong shared k) or starve
// the grid at batch 1; the GPU tests check the results, this checks the choice.
#include <utility>

#include "catch.hpp"
#include "kernels/common/decode_kernel.h"

using replayssm::kern::group_heads_rule;
using replayssm::kern::kernel_split_rule;
using replayssm::kern::kMinGroupCtasPerSm;
using replayssm::kern::kMinGroupDrafts;

TEST_CASE("group heads: a power of two dividing H / G, so that a CTA's heads share one group", "[kernels]") {
  const int big = 1 << 20;
  CHECK(group_heads_rule(256, 16, 32, 8, big, 132) == 2);   // Qwen3.5 GDN: two value heads per key head
  CHECK(group_heads_rule(256, 8, 128, 8, big, 132) == 16);  // Nemotron-H Mamba-2: 16 heads per group
  CHECK(group_heads_rule(1, 8, 128, 1, big, 132) == 16);    // a cap ignores the grid size and the op (tests force it)
  CHECK(group_heads_rule(4, 2, 12, 8, big, 132) == 2);      // 6 heads per group: 2 divides it, 4 does not
  CHECK(group_heads_rule(4, 3, 9, 8, big, 132) == 1);       // 3 heads per group: no power of two above 1
  CHECK(group_heads_rule(4, 4, 4, 8, big, 132) == 1);       // one head per group
  CHECK(group_heads_rule(4, 3, 8, 8, big, 132) == 1);       // H not a multiple of G
  CHECK(group_heads_rule(4, 0, 8, 8, big, 132) == 1);
  CHECK(group_heads_rule(256, 8, 128, 8, 4, 132) == 4);     // cap
  CHECK(group_heads_rule(256, 8, 128, 8, 1, 132) == 1);
  CHECK(group_heads_rule(256, 8, 128, 8, 3, 132) == 2);     // a cap that is no power of two rounds down
}

TEST_CASE("group heads: the automatic rule groups multi-draft ops and keeps the grid full", "[kernels]") {
  const int sms = 132;
  const auto enough = [&](int B, int H, int g) {
    return static_cast<long long>(B) * H / g >= kMinGroupCtasPerSm * sms;
  };
  for (const int B : {1, 2, 16, 64, 256, 512}) {
    for (const auto& gh : {std::pair<int, int>{16, 32}, {8, 128}}) {
      CHECK(group_heads_rule(B, gh.first, gh.second, 1, 0, sms) == 1);  // one draft: a CTA per head
      for (const int T : {kMinGroupDrafts, 8}) {
        const int g = group_heads_rule(B, gh.first, gh.second, T, 0, sms);
        INFO("B " << B << " G " << gh.first << " H " << gh.second << " T " << T << " -> " << g);
        CHECK(g >= 1);
        CHECK((gh.second / gh.first) % g == 0);
        CHECK((g == 1 || enough(B, gh.second, g)));  // the grid stays full
        CHECK((2 * g > gh.second / gh.first || !enough(B, gh.second, 2 * g)));  // and g is the largest that does
      }
    }
  }
  CHECK(group_heads_rule(1, 8, 128, 8, 0, sms) == 1);     // batch 1: a CTA per head
  CHECK(group_heads_rule(256, 8, 128, 8, 0, sms) == 16);  // the bench's B = 256 verify: whole groups
  CHECK(group_heads_rule(256, 16, 32, 8, 0, sms) == 2);
  CHECK(group_heads_rule(256, 16, 32, 1, 0, sms) == 1);   // the bench's B = 256 decode step: a CTA per head
}

TEST_CASE("kernel layout: the split kernels where they measured faster", "[kernels]") {
  // PERF_NOTES "seventh pass": split for verify of >= 2 drafts (the group path lives there, u=recompute included) and
  // for low-precision checkpoints; combined for the FP32 one-draft step (decode and verify T = 1) and for the
  // u=recompute one-draft step.
  CHECK_FALSE(kernel_split_rule(32, 1, false));
  for (const int T : {2, 4, 8}) CHECK(kernel_split_rule(32, T, false));
  for (const int bits : {4, 8, 16}) {
    CHECK(kernel_split_rule(bits, 1, false));
    CHECK(kernel_split_rule(bits, 8, false));
  }
  for (const int bits : {8, 32}) {
    CHECK_FALSE(kernel_split_rule(bits, 1, true));
    for (const int T : {2, 8}) CHECK(kernel_split_rule(bits, T, true));
  }
}
