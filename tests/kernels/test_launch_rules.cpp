// The rules the tuned kernels' launch plan (kernels/launch_plan.h) composes, on the CPU: which heads share a CTA in
// the non-flush op, which layout an op runs, slices per flush CTA, the fused grid's mapping, and the shared-memory
// layout's invariants (replay_smem.h). A wrong rule would put heads of two groups in one CTA (wrong shared k) or starve
// the grid at batch 1; the GPU tests check the results, this checks the choice. The plan itself (override parser,
// defaults at the bench's shapes, committed table) is in test_launch_plan.cpp.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "emulation/device_backend.h"
#include "kernels/common/decode_kernel.h"
#include "kernels/common/replay_smem.h"
#include "kernels/common/tc_verify_layout.h"

using replayssm::kern::flush_slices_rule;
using replayssm::kern::step_flush_slices;
using replayssm::kern::kStepFixedRecords;
using replayssm::kern::step_fixed_applies;
using replayssm::kern::group_heads_rule;
using replayssm::kern::kFlushCtasPerSm;
using replayssm::kern::kernel_split_rule;
using replayssm::kern::kMinGroupCtasPerSm;
using replayssm::kern::kMinGroupDrafts;
using replayssm::kern::kMinPairCtasPerSmX2;

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

TEST_CASE("group heads: the automatic rule groups verify ops and keeps the grid full", "[kernels]") {
  const int sms = 132;
  const auto enough = [&](int B, int H, int g) {
    return static_cast<long long>(B) * H / g >= kMinGroupCtasPerSm * sms;
  };
  const auto pair_enough = [&](int B, int H) {  // two heads per CTA from 1.5 CTAs per SM
    return 2 * (static_cast<long long>(B) * H / 2) >= kMinPairCtasPerSmX2 * sms;
  };
  for (const int B : {1, 2, 16, 64, 256, 512}) {
    for (const auto& gh : {std::pair<int, int>{16, 32}, {8, 128}}) {
      CHECK(group_heads_rule(B, gh.first, gh.second, 0, 0, sms) == 1);  // a step: a CTA per head
      for (const int T : {kMinGroupDrafts, 2, 8}) {
        const int g = group_heads_rule(B, gh.first, gh.second, T, 0, sms);
        INFO("B " << B << " G " << gh.first << " H " << gh.second << " T " << T << " -> " << g);
        CHECK(g >= 1);
        CHECK((gh.second / gh.first) % g == 0);
        CHECK((g == 1 || enough(B, gh.second, g) || (g == 2 && pair_enough(B, gh.second))));  // the grid stays full
        CHECK((2 * g > gh.second / gh.first || !enough(B, gh.second, 2 * g)));  // and g is the largest that does
        CHECK((g > 1 || !pair_enough(B, gh.second)));  // a CTA per head only where pairs would starve the grid
      }
    }
  }
  CHECK(group_heads_rule(1, 8, 128, 8, 0, sms) == 1);     // batch 1: a CTA per head
  CHECK(group_heads_rule(256, 8, 128, 8, 0, sms) == 16);  // the bench's B = 256 verify: whole groups
  CHECK(group_heads_rule(256, 16, 32, 8, 0, sms) == 2);
  CHECK(group_heads_rule(256, 16, 32, 0, 0, sms) == 1);   // the bench's B = 256 decode step: a CTA per head
  CHECK(group_heads_rule(256, 8, 128, 1, 0, sms) == 16);  // verify of one draft groups too
  // two heads per CTA below 8 CTAs per SM, down to 1.5 (the measured GDN B = 16..64, Mamba-2 B = 4..16)
  CHECK(group_heads_rule(64, 16, 32, 8, 0, sms) == 2);    // GDN: 1024 pair CTAs
  CHECK(group_heads_rule(16, 16, 32, 8, 0, sms) == 2);    // GDN: 256 pair CTAs
  CHECK(group_heads_rule(8, 16, 32, 8, 0, sms) == 1);     // GDN: 128 pair CTAs, slower than 256 per-head ones
  CHECK(group_heads_rule(4, 8, 128, 2, 0, sms) == 2);     // Mamba-2: 256 pair CTAs
  CHECK(group_heads_rule(16, 8, 128, 8, 0, sms) == 2);    // Mamba-2: 1024 pair CTAs (4 per CTA: 512, too few)
  CHECK(group_heads_rule(64, 8, 128, 8, 0, sms) == 4);    // Mamba-2: 2048 CTAs of 4 heads, as before
  CHECK(group_heads_rule(2, 8, 128, 8, 0, sms) == 1);     // Mamba-2: 128 pair CTAs
}

TEST_CASE("flush slices: whole heads per flush CTA only where the slices outnumber the resident CTAs", "[kernels]") {
  const int sms = 132;
  CHECK(flush_slices_rule(16, 32, 4, sms) == 4);   // the bench's GDN step at B = 256: 2048 slices on 528 CTAs
  CHECK(flush_slices_rule(16, 128, 2, sms) == 2);  // Mamba-2 at B = 256: 4096 slices, at most the head's 2
  CHECK(flush_slices_rule(32, 32, 4, sms) == 4);   // B = 512: capped at the head's slices
  CHECK(flush_slices_rule(4, 32, 4, sms) == 1);    // B = 64: 512 slices fit the grid
  CHECK(flush_slices_rule(1, 32, 4, sms) == 1);    // small batches keep a CTA per slice
  CHECK(flush_slices_rule(0, 32, 4, sms) == 1);    // nothing flushes
  CHECK(flush_slices_rule(100, 32, 1, sms) == 1);  // one slice per head
  for (long long seqs = 0; seqs <= 64; ++seqs)
    for (const int nsplit : {1, 2, 3, 4, 8}) {
      const int fs = flush_slices_rule(seqs, 32, nsplit, sms);
      INFO("seqs " << seqs << " nsplit " << nsplit << " -> " << fs);
      CHECK(fs >= 1);
      CHECK(fs <= std::max(1, nsplit));
      const long long ctas = seqs * 32 * ((nsplit + fs - 1) / fs);
      // more than one slice per CTA only where a CTA per slice would not fit the resident grid
      CHECK((fs == 1 || seqs * 32 * nsplit > static_cast<long long>(kFlushCtasPerSm) * sms));
      // and then no more than needed to fit it (or the whole head)
      CHECK((fs == nsplit || fs == 1 || ctas <= static_cast<long long>(kFlushCtasPerSm) * sms));
      // and the fewest that do: one slice fewer per CTA would not fit it
      if (fs > 1) CHECK(seqs * 32 * ((nsplit + fs - 2) / (fs - 1)) > static_cast<long long>(kFlushCtasPerSm) * sms);
    }
}

TEST_CASE("flush slices of an op: several per CTA only for lean step flushes with no early flush", "[kernels]") {
  const int sms = 132;
  CHECK(step_flush_slices(0, 16, 0, true, 32, 4, sms) == 4);   // the bench's GDN step at B = 256 (early_hint 0)
  CHECK(step_flush_slices(0, 16, -1, true, 32, 4, sms) == 1);  // a caller that does not know of early flushes
  CHECK(step_flush_slices(0, 16, 1, true, 32, 4, sms) == 1);   // an early flush in the op (a step at capacity)
  CHECK(step_flush_slices(0, 16, 0, false, 32, 4, sms) == 1);  // no lean step flush (V % 4 != 0)
  for (const int forced : {2, 4, 1 << 20}) {                   // the tests' forced whole heads and pairs
    CHECK(step_flush_slices(forced, 1, 0, true, 32, 4, sms) == std::min(forced, 4));
    CHECK(step_flush_slices(forced, 1, 1, true, 32, 4, sms) == 1);
    CHECK(step_flush_slices(forced, 1, -1, true, 32, 4, sms) == 1);
    CHECK(step_flush_slices(forced, 1, 0, false, 32, 4, sms) == 1);
    CHECK(step_flush_slices(forced, 1, 0, true, 32, 1, sms) == 1);
  }
}

TEST_CASE("step records: head_step_kernel's fixed-records form exactly where a step's window holds 15", "[kernels]") {
  CHECK(kStepFixedRecords == 15);
  CHECK(step_fixed_applies(16, 23, true));    // the bench's L = 16 (cap = L - 1 + 8 drafts)
  CHECK(step_fixed_applies(16, 15, true));    // no drafts: cap = L - 1
  CHECK_FALSE(step_fixed_applies(16, 23, false));  // turned off (records=generic)
  CHECK_FALSE(step_fixed_applies(8, 15, true));    // 7 records: the generic form
  CHECK_FALSE(step_fixed_applies(32, 39, true));   // 31 records
  // The rule alone (the backend's cap is L - 1 + drafts >= L - 1, so these do not occur): min(L - 1, cap) decides.
  CHECK(step_fixed_applies(32, 15, true));
  CHECK_FALSE(step_fixed_applies(16, 14, true));
}

TEST_CASE("kernel layout: the split kernels where they measured faster", "[kernels]") {
  // Split for verify (the group path lives there, u=recompute included; drafts = T), for low-precision checkpoints
  // and for the FP32 step that head_step_kernel runs (the real dims); combined for the u=recompute step and any other
  // FP32 step.
  CHECK_FALSE(kernel_split_rule(32, 0, false));
  CHECK(kernel_split_rule(32, 0, false, true));  // the FP32 step where head_step_kernel runs it
  CHECK_FALSE(kernel_split_rule(32, 0, true, true));
  for (const int T : {1, 2, 4, 8}) CHECK(kernel_split_rule(32, T, false));
  for (const int bits : {4, 8, 16}) {
    CHECK(kernel_split_rule(bits, 0, false));
    CHECK(kernel_split_rule(bits, 1, false));
    CHECK(kernel_split_rule(bits, 8, false));
  }
  for (const int bits : {8, 32}) {
    CHECK_FALSE(kernel_split_rule(bits, 0, true));
    for (const int T : {1, 2, 8}) CHECK(kernel_split_rule(bits, T, true));
  }
}

TEST_CASE("shared-memory layout: every table inside, none overlapping, 16-byte rows, the ring where measured",
          "[kernels]") {
  // The flush paths' layout (cap + T records, every table) and the non-flush one (cap records, the most it holds: a
  // step's L - 1 is fewer; no flush-only tables, skip rows only with a skip input) over the shapes the launcher
  // accepts (K <= 128, K % 4 == 0, V <= 256, cap <= 64, cap + T <= 256). The GPU tests check the results on a few
  // shapes; this checks the offsets on all of them, so a table that grows into its neighbour fails here first.
  using replayssm::kern::fast::kGroupRingMod;
  using replayssm::kern::fast::kHeadRingMod;
  using replayssm::kern::fast::kRows;
  using replayssm::kern::fast::ring_offset;
  using replayssm::kern::fast::Smem;
  struct Region {
    const char* name;
    int at, len;
  };
  long checked = 0, failures = 0;
  for (int cap = 2; cap <= 64; cap += (cap < 24 ? 1 : 5))
    for (int T = 1; T <= 8; ++T)
      for (int K = 4; K <= 128; K += (K < 16 ? 4 : 28))
        for (int R : {kRows, 2 * kRows, 4 * kRows, 8 * kRows})
          for (int mask = 0; mask < 8; ++mask) {
            const bool rec = mask & 1, skip = mask & 2, flush = mask & 4;
            const int NR = flush ? cap + T : cap;
            const Smem L{NR, T, K, rec, R, skip, flush};
            const Region rs[] = {{"a", L.oA(), NR},
                                 {"beta", L.oB(), NR},
                                 {"k", L.oK(), NR * K},
                                 {"q", L.oQ(), T * K},
                                 {"w", L.oW(), NR * R},
                                 {"raw v", L.oVr(), rec && flush ? NR * R : 0},
                                 {"draft v", L.oVt(), T * R},
                                 {"skip", L.oSk(), skip ? T * R : 0},
                                 {"totals", L.oTot(), T + 1 + (flush ? NR : 0)},
                                 {"decays", L.oGd(), T * NR},
                                 {"coef u", L.oCU(), T * NR},
                                 {"coef o", L.oCO(), T * NR},
                                 {"Gm", L.oGm(), flush ? NR : 0},
                                 {"GR", L.oGR(), rec && flush ? NR * NR : 0},
                                 {"row dots", L.oD(), 2 * T * R}};
            bool ok = true;
            for (const Region& a : rs) {
              ok = ok && a.at >= 0 && a.at + a.len <= L.size();
              for (const Region& b : rs)
                if (&a < &b && a.len > 0 && b.len > 0) ok = ok && (a.at + a.len <= b.at || b.at + b.len <= a.at);
            }
            // float4 / 16-byte cp.async accesses: k rows, q, w rows, draft v / skip rows, row dots
            for (const int o : {L.oK(), L.oQ(), L.oW(), L.oVt(), L.oSk(), L.oD()}) ok = ok && o % 4 == 0;
            // the non-flush layout never needs more than the flush one
            ok = ok && Smem{cap, T, K, rec, R, skip, false}.size() <= Smem{cap + T, T, K, rec, R, true, true}.size();
            for (const int mod : {kHeadRingMod, kGroupRingMod}) {
              const int r = ring_offset(L.size(), mod);
              ok = ok && r >= L.size() && r - L.size() < 32 && r % 32 == mod && r % 4 == 0;
            }
            ++checked;
            if (!ok && ++failures <= 5)
              FAIL_CHECK("layout cap " << cap << " T " << T << " K " << K << " R " << R << " rec " << rec << " skip "
                                       << skip << " flush " << flush);
          }
  INFO(checked << " layouts");
  CHECK(checked > 10000);
  CHECK(failures == 0);
  // The ring offsets themselves (kernels/PERF_NOTES.md): 112 B past a 128-byte boundary for replay_head, 0 for
  // replay_group; 16-byte aligned, as cp.async needs.
  CHECK(kHeadRingMod * 4 == 112);
  CHECK(kGroupRingMod == 0);
  for (int end = 0; end < 100; ++end) CHECK(ring_offset(end, kHeadRingMod) - end < 32);
}

// The tensor-core verify's index maps (tc_verify_layout.h). The kernel's bits do not depend on them (a wrong map gives
// wrong dots, which [tc-verify] catches on the device), its speed does: these are the properties the bank-conflict
// counts in kernels/PERF_NOTES.md rest on.
TEST_CASE("verify form 2: the ring's chunk slots and the A build's entries are bijections without bank conflicts",
          "[kernels]") {
  using namespace replayssm::kern::fast;
  // tc_ring_slot: for each row parity a permutation of a row's 32 chunks that keeps each lane group's 8 chunks
  // together; at every step i the 8 lanes of a quarter warp (g in {2q, 2q + 1} -> rows of both parities, t = 0..3,
  // each reading chunk 8 t + i of its row; rows 512 B apart) hit 8 distinct 16-byte bank quads.
  for (int r = 0; r < 4; ++r) {
    std::vector<int> seen(32, 0);
    for (int c = 0; c < 32; ++c) {
      const int s = tc_ring_slot(r, c);
      REQUIRE(s >= 0);
      REQUIRE(s < 32);
      CHECK(s / 8 == c / 8);
      ++seen[s];
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == 32);
  }
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < 8; ++i) {
      std::vector<int> quads;
      for (int g : {2 * q, 2 * q + 1})
        for (int t = 0; t < 4; ++t) quads.push_back(tc_ring_slot(g & 3, 8 * t + i) % 8);
      std::sort(quads.begin(), quads.end());
      INFO("quarter " << q << " step " << i);
      CHECK(std::unique(quads.begin(), quads.end()) == quads.end());
    }
  // tc_entry_s / tc_entry_lane: a bijection of [0, 512) onto 16 steps x 32 lanes; each half warp (16 consecutive
  // entries) reads 16 different steps (one vector, 2 floats apart: 16 bank pairs); each quarter warp stores to 8
  // different lanes mod 8 (8 bank quads of a lane-contiguous block).
  std::vector<int> seen(512, 0);
  for (int x = 0; x < 512; ++x) {
    const int s = tc_entry_s(x), ln = tc_entry_lane(x);
    REQUIRE(s >= 0);
    REQUIRE(s < kTcVerifySteps);
    REQUIRE(ln >= 0);
    REQUIRE(ln < 32);
    ++seen[s * 32 + ln];
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == 512);
  for (int h = 0; h < 512; h += 16) {
    std::vector<int> steps;
    for (int x = h; x < h + 16; ++x) steps.push_back(tc_entry_s(x));
    std::sort(steps.begin(), steps.end());
    CHECK(std::unique(steps.begin(), steps.end()) == steps.end());
  }
  for (int qw = 0; qw < 512; qw += 8) {
    std::vector<int> lanes;
    for (int x = qw; x < qw + 8; ++x) lanes.push_back(tc_entry_lane(x) % 8);
    std::sort(lanes.begin(), lanes.end());
    CHECK(std::unique(lanes.begin(), lanes.end()) == lanes.end());
  }
}

TEST_CASE("verify form 2: A's fragments fit sK and sQ where the launcher runs it", "[kernels]") {
  using replayssm::kern::fast::tc_verify_fits;
  // records = the verify's cap = L - 1 + max drafts; GDN's A has 4 floats per lane, Mamba-2's 2
  CHECK(tc_verify_fits(8, 128, 15 + 8, 4));       // GDN T = 8 at L = 16: 31 x 128 = 3968 = (23 + 8) 128, exactly
  CHECK_FALSE(tc_verify_fits(8, 128, 7 + 8, 4));  // at L = 8 it does not (the launcher keeps form 1)
  for (int T = 4; T <= 8; ++T) CHECK(tc_verify_fits(T, 128, 15 + 8, 4));
  for (int T = 1; T <= 8; ++T) CHECK(tc_verify_fits(T, 128, 7 + 8, 2));  // Mamba-2 fits everywhere from L = 8
  CHECK_FALSE(tc_verify_fits(9, 128, 15 + 9, 4));  // at most 8 drafts (one m16 tile of q and k)
  CHECK_FALSE(tc_verify_fits(8, 64, 23, 4));       // the real head dims only
}

TEST_CASE("fused step grid: every flush row and every sequence exactly once, the flush rows spread", "[kernels]") {
  using replayssm::kern::fused_flush_row;
  using replayssm::kern::fused_step_seq;
  using replayssm::kern::fused_stride_rule;
  CHECK(fused_stride_rule(256, 16, 50) == 8);  // the bench's B = 256, L = 16: rows 0, 8, ..., 120 of 272
  CHECK(fused_stride_rule(256, 16, 0) == 1);   // every flush row first (the split layout's order)
  CHECK(fused_stride_rule(256, 0, 50) == 1);
  for (int B : {1, 2, 3, 16, 255, 256, 257, 512}) {
    for (int F : {1, 2, 7, 16, 32, 256}) {
      if (F > B) continue;
      for (int spread : {0, 25, 50, 75, 100}) {
        const int k = fused_stride_rule(B, F, spread);
        INFO("B " << B << " F " << F << " spread " << spread << " stride " << k);
        REQUIRE(k >= 1);
        std::vector<int> flush(F, 0), seq(B, 0);
        int last_flush = -1;
        for (int y = 0; y < B + F; ++y) {
          if (fused_flush_row(y, F, k)) {
            REQUIRE(y / k < F);
            ++flush[y / k];
            last_flush = y;
          } else {
            const int b = fused_step_seq(y, F, k);
            REQUIRE(b >= 0);
            REQUIRE(b < B);
            ++seq[b];
          }
        }
        for (int j = 0; j < F; ++j) CHECK(flush[j] == 1);
        for (int b = 0; b < B; ++b) CHECK(seq[b] == 1);
        // the last flush row within the first spread % of the grid (at least the F rows themselves)
        CHECK(last_flush < std::max(F, spread * (B + F) / 100 + 1));
      }
    }
  }
}
