#pragma once
// Evaluating one model on one text slice: the FP64 reference once, then any decode mode, each giving next-byte
// log-probabilities for every position, plus per-layer drift of the mode's recurrences.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "emulation/decode_api.h"
#include "sweep/mode_recurrence.h"
#include "sweep/results.h"
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
  // [T][256] log-probs of the FP64 reference (T = slice.tokens).
  std::vector<double> reference_logp(const TextSlice& text);
  // [T][256] log-probs with every SSM layer's recurrence run by `backend` in `mode`; drifts[l] per layer.
  std::vector<double> mode_logp(const TextSlice& text, emu::DecodeBackend& backend, const emu::Mode& mode,
                                std::vector<LayerDrift>* drifts);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_, name_;
};

// Bytes per state element of a stored format at a head shape, scales included: bytes_per_state / (V K).
double bytes_per_state_element(formats::FormatId format, formats::Scaling scaling, int V, int K);

// One run: the mode's log-probs against the reference, all metrics binned. Deterministic.
RunResult evaluate_run(const RunSpec& spec, ModelEvaluator& model, const TextSlice& text,
                       const std::vector<double>& logp_ref, emu::DecodeBackend& backend,
                       const std::vector<std::int64_t>& edges);

}  // namespace replayssm::sweep
