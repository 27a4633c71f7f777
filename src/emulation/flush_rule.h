#pragma once
// The ReplaySSM buffer rule in one place, for the CPU emulation, the CUDA backend and the kernels: when an op flushes
// early (its records would overflow the buffer), when a step fills the window (a step flush), and how many records
// the window holds after a step. Verify never flushes but early; accept appends the accepted drafts' records.
#include "formats/hd.h"

namespace replayssm::emu {

// An op of T records first flushes the n buffered ones where n + T exceeds the buffer (capacity = L - 1 + max drafts).
REPLAYSSM_HD bool flushes_early(int n, int T, int capacity) { return n + T > capacity; }
// A step whose window (n records before it, its own after) reaches L records materialises and stores the state.
REPLAYSSM_HD bool step_fills_window(int n, int L) { return n + 1 >= L; }
// The window after a step from n records (n = 0 after an early flush): empty where it flushed, else one more.
REPLAYSSM_HD int window_after_step(int n, int L) { return step_fills_window(n, L) ? 0 : n + 1; }

}  // namespace replayssm::emu
