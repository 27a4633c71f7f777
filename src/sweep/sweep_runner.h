#pragma once
// Evaluating one model on one text slice: the FP64 reference once, then any decode mode, each giving next-byte
// log-probabilities for every position, plus per-layer drift of the mode's recurrences.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "emulation/decode_api.h"
#include "runtime/fp64_device.h"
#include "sweep/mode_recurrence.h"
#include "sweep/results.h"
#include "sweep/run_checkpoint.h"
#include "sweep/sweep_plan.h"

namespace replayssm::sweep {

// bytes[0 .. tokens] of the file from `offset`: position t reads bytes[0..t] and predicts bytes[t + 1].
struct TextSlice {
  std::string path, id;
  std::int64_t offset = 0;
  int tokens = 0;
  std::vector<std::uint8_t> bytes;  // tokens + 1
};
// Errors (missing file, empty text, offset/tokens beyond the end) are UserErrors naming the file.
TextSlice load_text(const std::string& path, std::int64_t offset, int tokens);

class ModelEvaluator {
 public:
  explicit ModelEvaluator(const std::string& path);  // UserError naming the tensor on a bad model file
  ~ModelEvaluator();
  ModelEvaluator(const ModelEvaluator&) = delete;
  ModelEvaluator& operator=(const ModelEvaluator&) = delete;
  emu::Arch arch() const;
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  int layers() const;
  // The per-head state of the SSM layers, [rows, cols]: GDN [V, K], Mamba-2 [P, N].
  std::pair<int, int> state_shape() const;
  // Next-byte log-probs of consecutive chunks of one text: each next(tokens, n) gives [n][256] row-major, rows
  // continuing where the previous call stopped (runtime::ForwardStream: bit for bit a whole-text run).
  class Stream {
   public:
    virtual ~Stream() = default;
    virtual std::vector<double> next(const std::uint8_t* tokens, std::size_t n) = 0;
    // Checkpoints (mode streams): the forward stream, every layer's recurrence and drifts so far as a byte blob;
    // load() into a fresh stream of the same model and mode, before its first next(). The base class throws
    // std::runtime_error; a blob that does not fit throws std::invalid_argument.
    virtual void save(std::vector<std::uint8_t>& out) const;
    virtual void load(const std::uint8_t* blob, std::size_t size);
  };
  // The FP64 model's projections (every stream) and the reference's recurrence on `device` (not owned; null: the
  // CPU). The same bits either way (runtime/fp64_device.h). Set it before making streams.
  void use_fp64_device(runtime::Fp64Device* device) { device_ = device; }
  runtime::Fp64Device* fp64_device() const { return device_; }
  // Threads for the row-wise FP64 work of each mode stream (norms, convolutions, gates, log-softmax; the bits do
  // not depend on it): 1 where runs go in parallel, more where one run at a time has the cores to itself.
  void set_mode_threads(int threads) { mode_threads_ = threads < 1 ? 1 : threads; }
  // The FP64 reference (threads: the recurrence's and the projections').
  std::unique_ptr<Stream> reference_stream(int threads) const;
  // Every SSM layer's recurrence run by its own backend (layer_backends[l], at least layers() of them) in `mode`;
  // drifts[l] per layer, grown chunk by chunk.
  std::unique_ptr<Stream> mode_stream(const std::vector<emu::DecodeBackend*>& layer_backends, const emu::Mode& mode,
                                      std::vector<LayerDrift>* drifts) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_, name_;
  runtime::Fp64Device* device_ = nullptr;
  int mode_threads_ = 1;
};

// Bytes per state element of a stored format at a head shape, scales included: bytes_per_state / (V K).
double bytes_per_state_element(formats::FormatId format, formats::Scaling scaling, int V, int K);

// The FP64 reference's [n][256] log-probs of positions [first, first + n) (a reference cache file, or memory).
using ReferenceRows = std::function<std::vector<double>(std::int64_t first, std::size_t n)>;

// Positions per chunk of a sweep's teacher forcing: memory is proportional to it, results do not depend on it.
inline constexpr int kDefaultChunk = 4096;

// One run: the mode's log-probs against the reference, all metrics binned, computed `chunk` positions at a time
// (memory: one chunk's activations plus O(T) per-position results). Deterministic, and the same bits whatever the
// chunk. layer_backends: one decode backend per SSM layer (ModelEvaluator::mode_stream).
// checkpoints (null: none): after every `every` positions (at the end of the chunk that reaches them) the run's
// state goes to the checkpoint file, and with `resume` a matching file makes the run continue from its position (a
// note "run X resumes at position P"; a file of another run: a note that it is ignored and why). The result is the
// same bits either way. A checkpoint that is damaged or does not fit the model is a UserError naming the file.
// The file is left in place: the caller removes it once the result is safely stored.
RunResult evaluate_run(const RunSpec& spec, const ModelEvaluator& model, const TextSlice& text,
                       const ReferenceRows& reference, const std::vector<emu::DecodeBackend*>& layer_backends,
                       const std::vector<std::int64_t>& edges, int chunk = kDefaultChunk,
                       const RunCheckpointing* checkpoints = nullptr);

}  // namespace replayssm::sweep
