#pragma once
// The CUDA timing harness behind `replayssm bench`. Host-side interface, no CUDA types, so the CLI
// (src/cli/bench_command.cpp) depends on it and not on the kernels. Defined in kernels/bench/bench_harness.cu, built
// only with CUDA.
//
// What it times (all on device-resident inputs, CUDA-graph captured, CUDA events around each graph replay):
//   copy      the copy roofline: cudaMemcpyAsync D2D and a 16-byte vectorised copy kernel, bytes read + written
//   decode    one standard decode step (T = 1) of the decode kernels' launch plan (kernels/launch_plan.h)
//             for a (policy, format, u-source); replay rows sit at staggered
//             buffer positions n_b = (b + s) mod L, so 1/L of them flush at every step s (steady state)
//   verify    one chain speculative verify of T drafts (conventional store-all: T snapshots; replay: T records)
// Several steps per graph (a multiple of L, so even B = 1 sees exactly one flush per L steps), rotating over
// enough independent state/input sets that every graph replay touches more than l2_factor x the L2 size.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "emulation/decode_api.h"
#include "formats/format_id.h"

namespace replayssm::kbench {

// One (policy, format, u-source) timed as a decode step (and, if asked, as verify).
struct Variant {
  emu::Policy policy = emu::Policy::conventional_shared;
  emu::USource usource = emu::USource::hp;
  formats::FormatSpec format;
  bool tc_dots = false;  // the row dots on the tensor cores (not the emulation's bits)
  emu::Records records = emu::Records::fp32;  // the replay buffer's record vectors (ReplaySSM policies only)
};

struct Config {
  std::vector<emu::Arch> archs;
  std::vector<int> batches;
  std::vector<int> Ls;
  std::vector<int> spec_T;        // verify draft counts (empty: no verify rows)
  std::vector<Variant> variants;  // decode variants; conventional fp32 is always timed (it is the baseline)
  std::vector<Variant> verify_variants;
  // draft trees timed as tree verify (reference kernel) for every verify variant: label (as given) and parents
  struct Tree {
    std::string label;
    std::vector<int> parents;
  };
  std::vector<Tree> trees;
  // each GDN decode variant whose step runs head_step_kernel's 8-bit row dots (row-scaled E4M3, replay-shared or
  // replay-split u=lp) is also timed with tc_dots (--step-dots exact,tc), beside the bit-exact form
  bool tc_dots = false;
  std::string plan;  // the kernels' launch-plan override, key=value,... (with REPLAYSSM_PLAN; kernels/launch_plan.h)
  int gdn_Hk = 16, gdn_Hv = 32, gdn_K = 128, gdn_V = 128;        // Qwen3.5
  int m2_H = 128, m2_P = 64, m2_N = 128, m2_G = 8;               // Nemotron-H
  int max_reps = 50;            // timed graph replays per case (upper bound)
  int min_reps = 5;             // lower bound, even for slow cases
  double case_ms = 150.0;       // timed-replay budget per case: reps = clamp(case_ms / graph time, min, max)
  int min_steps = 16;           // steps per graph >= this (rounded up to a multiple of L and >= rotation sets)
  double l2_factor = 2.5;       // each graph replay touches >= l2_factor x L2 bytes
  double max_seconds = 0.0;     // > 0: stop starting new cases after this wall time (rows left out are listed)
  std::uint64_t seed = 20240601ull;
  std::function<void(const std::string&)> log;  // progress lines (may be empty)
};

struct Row {
  std::string arch, kernel, policy, usource, format, scaling;  // kernel: copy_memcpy | copy_kernel | decode | verify
  int B = 0, L = 0, T = 0;
  int sets = 0, steps_per_graph = 0, reps = 0;
  double median_us = 0, p10_us = 0, p90_us = 0, min_us = 0;  // per step (decode), per verify, per copy
  double model_bytes = 0;       // DESIGN section 6 byte model for one step / verify / copy (state + records + tokens)
  double state_bytes = 0;       // the state / checkpoint / snapshot part alone
  double gbps = 0;              // model_bytes / median
  double pct_roofline = 0;      // gbps / copy roofline
  double speedup_vs_conv = 0;   // conventional fp32 decode (same arch, B, L) time / this time
  double vs_own_step = 0;       // verify: this time / the same variant's decode step time
  double vs_conv_step = 0;      // verify: this time / conventional fp32 decode step time
  double flush_fraction = 0;    // measured share of row-steps that flushed (decode, replay)
  long nonfinite = 0;           // non-finite outputs after timing (must be 0)
  std::string dots = "exact";   // "exact" (the emulation's bits) or "tc" (the tensor-core row dots)
  std::string records = "fp32"; // the record vectors' format: fp32, or bf16 (2-byte records in the byte model)
  std::string plan;             // the launch plan(s) the row ran (kernels/launch_plan.h: to_string)
  std::string note;
};

struct Result {
  std::string device;
  int sm_count = 0;
  double l2_bytes = 0, hbm_bytes = 0;
  int sm_clock_khz = 0, mem_clock_khz = 0;
  double roofline_gbps = 0;  // max of the two copy rows
  std::vector<Row> rows;
  std::vector<std::string> skipped;  // cases not run (time budget, memory)
};

// 0 and the device name in *desc, or 3 (replayssm::kExitNoDevice) with the reason in *desc.
int probe_device(std::string* desc);

// Runs the whole sweep. Throws std::runtime_error on a CUDA failure (naming the case).
Result run(const Config& cfg);

}  // namespace replayssm::kbench
