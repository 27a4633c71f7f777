#pragma once
// Launch interface of the decode kernels (host side, no CUDA types), shared by kernels/{gdn,mamba2}/*.cu and the
// backend (kernels/common/cuda_backend.cu). All pointers are device pointers; layouts as in
// src/emulation/decode_api.h and the emulation's stores (kernels/README.md).
#include <cstddef>
#include <cstdint>

#include "emulation/decode_api.h"

namespace replayssm::kern {

enum class Op : int { step = 0, verify = 1, state = 2 };

struct KParams {
  int B = 0, G = 0, H = 0, K = 0, V = 0;
  int L = 16, cap = 23, max_drafts = 8, T = 1;
  emu::Policy policy = emu::Policy::conventional_shared;
  emu::USource usource = emu::USource::hp;
  formats::Scaling scaling = formats::Scaling::none;
  formats::Rounding rounding = formats::Rounding::rne;
  std::uint64_t seed = 0;
  Op op = Op::step;
  // token batch [B][T]...
  const float *a = nullptr, *beta = nullptr, *v = nullptr, *k = nullptr, *q = nullptr, *skip = nullptr;
  float* o = nullptr;          // step [B][H][V], verify [B][T][H][V]
  float* state_out = nullptr;  // Op::state: [B][H][V][K]
  // stores, per head hh = b * H + h
  std::uint8_t* codes = nullptr;
  std::uint8_t* scales = nullptr;
  std::size_t code_bytes = 0, scale_bytes = 0;
  float* hp = nullptr;  // split: [heads][V][K]
  std::uint8_t* snap_codes = nullptr;  // conventional verify: [heads][max_drafts][code_bytes]
  std::uint8_t* snap_scales = nullptr;
  float *ra = nullptr, *rbeta = nullptr, *rk = nullptr, *rw = nullptr, *rv = nullptr;  // [heads][cap](x K | V)
  // per sequence
  const int* n = nullptr;      // valid records before this op
  const int* early = nullptr;  // 1: flush the n records first (the op would overflow the buffer)
  const int* tok = nullptr;    // committed tokens (SR step index)
  // set by the fast launcher (fast_kernel.cuh): replay_head's dynamic shared memory in floats, 0 = not used
  int head_floats = 0;
  // set by the fast launcher: log2(H / G) where that is a power of two, else -1 (the group of head h without the two
  // integer divisions that were 2-4% of the replay kernel's instructions, PERF_NOTES v11)
  int group_shift = -1;
};

// Both return a cudaError_t as int (0 = success).
int launch_gdn(formats::FormatId f, const KParams& p, void* stream);
int launch_mamba2(formats::FormatId f, const KParams& p, void* stream);
// The tuned kernels (common/fast_kernel.cuh): -1 where they do not apply (the launchers above then use the reference
// kernel), else a cudaError_t. REPLAYSSM_REFERENCE_KERNEL=1 in the environment forces the reference kernel.
int launch_fast_gdn(formats::FormatId f, const KParams& p, void* stream);
int launch_fast_mamba2(formats::FormatId f, const KParams& p, void* stream);

}  // namespace replayssm::kern
