#pragma once
// Teacher forcing of a tiny model over a byte sequence, layer by layer, FP64 everywhere: projections as batched
// products over time (runtime/gemm.h: one fma chain per element), conv, gates and norms row-wise; the SSM recurrence
// through a pluggable RecurrenceBackend. Results do not depend on the thread count, and a prefix of a sequence gets
// bit-for-bit the values of the longer run (given a backend with the same property, as the reference has).
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "reference/layer_inputs.h"
#include "runtime/backend.h"
#include "runtime/model.h"

namespace replayssm::runtime {

struct ForwardOptions {
  int threads = 1;  // std::threads for the projections (row blocks over time); the backend has its own setting
  Fp64Device* device = nullptr;  // the projections on this device (not owned), the same bits; null: the CPU
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

// The pre-conv rows a layer's causal convolutions still need from earlier positions: the last (width - 1) rows of
// each convolved stream (GDN q, k, v; Mamba-2 x, B, C). Empty at the start of a sequence.
using ConvTails = std::array<Mat, 3>;

// The recurrence inputs of one layer from its normed input x [T, d_model] (also used by tests and tools). With
// tails, x continues the positions the tails were left by; the tails move on to the end of x.
ref::GdnInputs gdn_layer_inputs(const TinyModel& m, int layer, const Mat& x, Mat* z, int threads = 1,
                                ConvTails* tails = nullptr, Fp64Device* device = nullptr);
ref::Mamba2Inputs mamba2_layer_inputs(const TinyModel& m, int layer, const Mat& x, Mat* z, int threads = 1,
                                      ConvTails* tails = nullptr, Fp64Device* device = nullptr);

// Process-wide, opt-in (CLI commands call it once): keep freed memory in the malloc heap (glibc: no mmap for large
// blocks, no trim). teacher_force allocates and frees [T, ~1500] float64 arrays per layer; at T = 131072 re-faulting
// those fresh pages was a third of the run (kernel time). Costs ~10% more peak memory. Also one malloc arena for all
// threads (a thread arena mmaps blocks past 64 MiB regardless). A no-op off glibc, or when REPLAYSSM_DEFAULT_MALLOC is set.
void keep_freed_memory();

// Teacher forcing in consecutive chunks of one sequence: every chunk runs through all layers, each layer carrying
// its conv tails and (in the StreamingRecurrence) its recurrence state to the next chunk. Every projection, conv,
// norm and gate is row-wise, so the log-probs of a chunk are bit for bit those rows of a whole-sequence run, whatever
// the chunk sizes; memory is proportional to the chunk, not to the sequence.
class ForwardStream {
 public:
  // Calls rec.start(layers): the recurrence of every layer starts from the zero state.
  ForwardStream(const TinyModel& m, StreamingRecurrence& rec, const ForwardOptions& opt = {},
                LayerObserver observer = {});
  // Log-probs [n, 256] of the next n >= 1 positions (row i: log p(next byte | every byte so far through tokens[i])).
  Mat next(const std::uint8_t* tokens, std::size_t n);
  std::int64_t position() const { return position_; }  // positions consumed so far
  // Checkpoints: the position, every layer's conv tails and the recurrence's blob appended to `out`; load() into a
  // stream of the same model and recurrence kind that has not run yet, and next() continues bit for bit.
  // std::invalid_argument on a blob that does not fit this model.
  void save(std::vector<std::uint8_t>& out) const;
  void load(const std::uint8_t* blob, std::size_t size);
  double seconds_dense() const { return seconds_dense_; }
  double seconds_recurrence() const { return seconds_recurrence_; }

 private:
  const TinyModel& m_;
  StreamingRecurrence& rec_;
  ForwardOptions opt_;
  LayerObserver observer_;
  std::vector<ConvTails> tails_;  // per layer
  std::int64_t position_ = 0;
  double seconds_dense_ = 0.0, seconds_recurrence_ = 0.0;
};

// The whole sequence as one chunk through a RecurrenceBackend. tokens: bytes; T = tokens.size() >= 1.
ForwardResult teacher_force(const TinyModel& m, const std::vector<std::uint8_t>& tokens, RecurrenceBackend& backend,
                            const ForwardOptions& opt = {}, const LayerObserver& observer = {});

}  // namespace replayssm::runtime
