#pragma once
// Teacher forcing of a tiny model over a byte sequence, layer by layer, FP64 everywhere: projections as batched
// products over time (runtime/gemm.h: one fma chain per element), conv, gates and norms row-wise; the SSM recurrence
// through a pluggable RecurrenceBackend. Results do not depend on the thread count, and a prefix of a sequence gets
// bit-for-bit the values of the longer run (given a backend with the same property, as the reference has).
#include <cstdint>
#include <functional>
#include <vector>

#include "reference/layer_inputs.h"
#include "runtime/backend.h"
#include "runtime/model.h"

namespace replayssm::runtime {

// The first layer's recurrence inputs and its gate z depend only on the tokens, not on any recurrence backend: a caller
// that runs many backends over the same tokens (the sweep) computes them once. The values are those teacher_force
// computes itself.
struct FirstLayerCache {
  std::vector<std::uint8_t> tokens;
  bool filled = false;
  ref::GdnInputs gdn;
  ref::Mamba2Inputs mamba2;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> z;
};

struct ForwardOptions {
  int threads = 1;  // std::threads for the projections (row blocks over time); the backend has its own setting
  FirstLayerCache* fill_layer0 = nullptr;       // if given and not filled: filled by this call
  const FirstLayerCache* use_layer0 = nullptr;  // if given, filled, and for these tokens: layer 0's inputs from it
};

// Called once per SSM layer after its recurrence: exactly one of gdn / mamba2 is non-null (the inputs handed to
// the backend), out is what the backend returned.
using LayerObserver = std::function<void(int layer, const ref::GdnInputs* gdn, const ref::Mamba2Inputs* mamba2,
                                         const ref::LayerOutputs& out)>;

struct ForwardResult {
  Mat logprobs;                     // [T, 256]: row t = log p(next byte | bytes 0..t)
  double seconds_dense = 0.0;       // everything but the recurrence
  double seconds_recurrence = 0.0;  // inside the backend
};

// The recurrence inputs of one layer from its normed input x [T, d_model] (also used by tests and tools).
ref::GdnInputs gdn_layer_inputs(const TinyModel& m, int layer, const Mat& x, Mat* z, int threads = 1);
ref::Mamba2Inputs mamba2_layer_inputs(const TinyModel& m, int layer, const Mat& x, Mat* z, int threads = 1);

// Process-wide, opt-in (CLI commands call it once): keep freed memory in the malloc heap (glibc: no mmap for large
// blocks, no trim). teacher_force allocates and frees [T, ~1500] float64 arrays per layer; at T = 131072 re-faulting
// those fresh pages was a third of the run (kernel time). Costs ~10% more peak memory. Also one malloc arena for all
// threads (a thread arena mmaps blocks past 64 MiB regardless). A no-op off glibc, or when REPLAYSSM_DEFAULT_MALLOC is set.
void keep_freed_memory();

// tokens: bytes; T = tokens.size() >= 1.
ForwardResult teacher_force(const TinyModel& m, const std::vector<std::uint8_t>& tokens, RecurrenceBackend& backend,
                            const ForwardOptions& opt = {}, const LayerObserver& observer = {});

}  // namespace replayssm::runtime
