#pragma once
// The tuned ReplaySSM paths' launch constants and shared-memory layout (floats), host and device, no CUDA types: the
// kernels (fast_rows.cuh and the paths that include it) and a CPU test of the layout's invariants
// (tests/kernels/test_launch_rules.cpp) share this one definition.
#include "formats/hd.h"

namespace replayssm::kern::fast {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = 8;
inline constexpr int kRPW = 4;                // rows per warp
inline constexpr int kRows = kWarps * kRPW;   // rows per CTA

// NR records: cap + T in the flush paths (an early flush stages the old window and the drafts); in the non-flush
// replay_head / replay_group cap for verify and L - 1 for a step (head_records, fast_replay_head.cuh).
struct Smem {
  int NR, T, K;
  bool rec;  // u = recompute
  int R = kRows;  // rows staged per CTA (w / v / skip / row dots): kRows, or the whole head (replay_head)
  bool skip = true;   // room for the drafts' skip rows (replay_head / replay_group: only where p.skip is set)
  bool flush = true;  // room for the flush-only tables: raw v (u=recompute), totR, Gm, GR (not the non-flush op)
  REPLAYSSM_HD int oA() const { return 0; }
  REPLAYSSM_HD int oB() const { return NR; }
  REPLAYSSM_HD int oK() const { return (2 * NR + 3) / 4 * 4; }  // 16-byte aligned rows
  REPLAYSSM_HD int oQ() const { return oK() + NR * K; }
  REPLAYSSM_HD int oW() const { return oQ() + T * K; }
  REPLAYSSM_HD int oVr() const { return oW() + NR * R; }
  REPLAYSSM_HD int oVt() const { return oVr() + (rec && flush ? NR * R : 0); }  // draft v [T][rows]
  REPLAYSSM_HD int oSk() const { return oVt() + T * R; }                          // draft skip [T][rows]
  REPLAYSSM_HD int oTot() const { return oSk() + (skip ? T * R : 0); }  // T drafts + totm (+ NR totR: flush)
  REPLAYSSM_HD int oGd() const { return oTot() + T + 1 + (flush ? NR : 0); }
  REPLAYSSM_HD int oCU() const { return oGd() + T * NR; }
  REPLAYSSM_HD int oCO() const { return oCU() + T * NR; }
  REPLAYSSM_HD int oGm() const { return oCO() + T * NR; }
  REPLAYSSM_HD int oGR() const { return oGm() + (flush ? NR : 0); }
  // lean path: row dots [2][T][rows] (16-byte aligned: float4 accesses)
  REPLAYSSM_HD int oD() const { return (oGR() + (rec && flush ? NR * NR : 0) + 3) / 4 * 4; }
  REPLAYSSM_HD int size() const { return oD() + 2 * T * R; }
};

// Where the non-flush op's cp.async ring starts (floats): the first offset >= the tables' end that is mod_floats past
// a 128-byte boundary. Measured (kernels/PERF_NOTES.md): the ring's offset modulo 128 B moves the FP32 non-flush op
// by up to 11%, and not through the total size (padding the end changed nothing) nor through counted bank conflicts
// (ncu: equal). replay_head is fastest at 112 B (kHeadRingMod), replay_group at 0 (kGroupRingMod); FP8 rings are
// insensitive. The offsets are from the dynamic base: in the combined kernel (where kHeadRingMod was measured)
// replay_flush's static shared variable may sit before it, in replay_hot_kernel (kGroupRingMod) nothing does.
inline constexpr int kHeadRingMod = 28, kGroupRingMod = 0;
REPLAYSSM_HD int ring_offset(int end, int mod_floats) {
  return (end - mod_floats + 31) / 32 * 32 + mod_floats;  // any end >= 0, 0 <= mod_floats < 32
}

}  // namespace replayssm::kern::fast
