#pragma once
// The index maps of the grouped verify's form 2 (fast_verify_rows_tc.cuh), host and device, so that the
// properties its speed rests on -- bijections, and the lanes of one shared-memory wavefront on distinct banks -- are
// unit-tested on the CPU (tests/kernels/test_launch_rules.cpp) as well as timed on the device.
#include "formats/hd.h"

namespace replayssm::kern::fast {

// The dot runs over K = 128 in 16 MMA steps of k8; any bijection of K serves if A and B share it. Lane (g = lane / 4,
// t = lane % 4) holds at step s the MMA's logical columns t and t + 4 (A: rows g, g + 8; B: column g), here the
// physical elements 32 t + 2 s and 32 t + 2 s + 1: a lane's B values are 32 contiguous floats of its row.
inline constexpr int kTcVerifyK = 128, kTcVerifySteps = kTcVerifyK / 8;

// The verify ring's 16-byte chunk slot (form 2): chunk c (0..31) of stage row r at 8 (c / 8) + ((c % 8) ^ (c / 8 +
// 4 (r % 2)) % 8), so that the 8 lanes of a quarter warp (rows of both parities x 4 lane groups t, each reading chunk
// 8 t + i of its row at step i) hit 8 distinct bank quads (unswizzled all 8 sat on one: rows 512 B apart, t 128 B).
REPLAYSSM_HD int tc_ring_slot(int r, int c) {
  const int t = c >> 3;
  return 8 * t + ((c & 7) ^ ((t + 4 * (r & 1)) & 7));
}

// Entry x (0..511) of the A-fragment build: step s = x % 16, lane ln with ln % 8 = (x % 8 + x / 16) % 8 and ln / 8 =
// x / 128, a bijection under which the 16 lanes of a half warp read 16 different steps of one vector (sQ's rows are 128
// floats apart: consecutive lanes there 32-way conflicted, 12M extra wavefronts in a GDN T = 8 verify) and the 8 lanes
// of a quarter warp store to 8 different bank quads of a block.
REPLAYSSM_HD int tc_entry_s(int x) { return x & 15; }
REPLAYSSM_HD int tc_entry_lane(int x) { return (((x & 7) + (x >> 4)) & 7) | ((x >> 7) << 3); }

// Floats of one A block (a step's big or small terms): kAW floats per lane g < nd (4 nd lanes).
REPLAYSSM_HD int tc_block_floats(int nd, int aw) { return 4 * nd * aw; }
// Whether A's fragments fit the verify's sK and sQ ((records + T) K floats): 31 of the 32 blocks there, the last in
// registers; T = 1..8 drafts at K = 128.
REPLAYSSM_HD bool tc_verify_fits(int T, int K, int records, int aw) {
  return T >= 1 && T <= 8 && K == kTcVerifyK &&
         (2 * kTcVerifySteps - 1) * tc_block_floats(T, aw) <= (records + T) * K;
}

}  // namespace replayssm::kern::fast
