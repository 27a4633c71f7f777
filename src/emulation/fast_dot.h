#pragma once
// canonical_dot (decode_math.h: the 32-lane tree) bit for bit, faster: an AVX2 + FMA version of the same tree where
// the CPU has it (runtime check) and K is a multiple of 128; the portable canonical_dot otherwise.
namespace replayssm::emu {

using DotFn = float (*)(const float* x, const float* y, int K);

// The fastest implementation this CPU runs (the same bits on every path).
DotFn canonical_dot_fn();

// "avx2-fma" or "portable".
const char* canonical_dot_path();

// canonical_dot(x, y, K) for many x against one y: prepare(y, K, prep) arranges y's lanes once (prep: K floats), then
// dot_prepared(x, prep, K) is canonical_dot(x, y, K) with half the shuffles. Same bits as DotFn.
struct PreparedDot {
  void (*prepare)(const float* y, int K, float* prep);
  float (*dot_prepared)(const float* x, const float* prep, int K);
};
PreparedDot canonical_dot_prepared_fns();

}  // namespace replayssm::emu
