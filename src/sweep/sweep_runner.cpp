#include "sweep/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "formats/state_codec.h"
#include "runtime/text.h"
#include "sweep/metrics.h"

namespace replayssm::sweep {

TextSlice load_text(const std::string& path, std::int64_t offset, int tokens) {
  // Position t predicts byte t + 1, so T positions need T + 1 bytes.
  const auto need = static_cast<std::int64_t>(tokens) + 1;
  std::vector<std::uint8_t> bytes = runtime::read_text_slice(path, offset, need);
  TextSlice s;
  s.path = path;
  const auto slash = path.find_last_of('/');
  s.id = (slash == std::string::npos ? path : path.substr(slash + 1)) + "@" + std::to_string(offset) + "+" +
         std::to_string(tokens);
  s.offset = offset;
  s.tokens = tokens;
  s.bytes = std::move(bytes);
  return s;
}

double bytes_per_state_element(formats::FormatId format, formats::Scaling scaling, int V, int K) {
  return static_cast<double>(formats::bytes_per_state(format, V, K, scaling)) / (static_cast<double>(V) * K);
}

namespace {

// Per-position metrics and layer drifts of a run over positions [0, valid), `chunk` positions at a time; positions
// from valid on stay NaN. Throws Diverged (positions counted from the text's start) when the mode blows up.
// from: a checkpoint to continue from (its metrics are already in m); ck: where to write checkpoints.
void stream_run(const RunSpec& spec, const ModelEvaluator& model, const TextSlice& text, const ReferenceRows& reference,
                const std::vector<emu::DecodeBackend*>& layer_backends, int valid, int chunk, PositionMetrics& m,
                std::vector<LayerDrift>& drifts, const RunCheckpointData* from, const RunCheckpointing* ck) {
  const auto stream = model.mode_stream(layer_backends, spec.mode, &drifts);
  int t0 = 0;
  if (from) {
    try {
      stream->load(from->stream.data(), from->stream.size());
    } catch (const std::invalid_argument& e) {
      throw input_error(ck->path, "stream", e.what());
    }
    t0 = static_cast<int>(from->position);
  }
  int saved = t0;  // the position of the last checkpoint (or of the start)
  for (; t0 < valid; t0 += chunk) {
    const int n = std::min(chunk, valid - t0);
    const std::uint8_t* tokens = text.bytes.data() + t0;
    const std::vector<double> logp = stream->next(tokens, static_cast<std::size_t>(n));
    const std::vector<double> logp_ref = reference(t0, static_cast<std::size_t>(n));
    const std::vector<std::uint8_t> targets(tokens + 1, tokens + 1 + n);
    const PositionMetrics c = compare_distributions(logp_ref, logp, targets, n, 256);
    std::copy(c.kl.begin(), c.kl.end(), m.kl.begin() + t0);
    std::copy(c.nll.begin(), c.nll.end(), m.nll.begin() + t0);
    std::copy(c.top1.begin(), c.top1.end(), m.top1.begin() + t0);
    const int done = t0 + n;
    // Not at the end: the run's result file follows at once and replaces the checkpoint.
    if (ck && ck->every > 0 && done - saved >= ck->every && done < valid) {
      RunCheckpointData d;
      d.position = done;
      d.kl.assign(m.kl.begin(), m.kl.begin() + done);
      d.nll.assign(m.nll.begin(), m.nll.begin() + done);
      d.top1.assign(m.top1.begin(), m.top1.begin() + done);
      stream->save(d.stream);
      write_run_checkpoint(ck->path, ck->key, d);
      saved = done;
    }
  }
}

}  // namespace

RunResult evaluate_run(const RunSpec& spec, const ModelEvaluator& model, const TextSlice& text,
                       const ReferenceRows& reference, const std::vector<emu::DecodeBackend*>& layer_backends,
                       const std::vector<std::int64_t>& edges, int chunk, const RunCheckpointing* checkpoints) {
  if (chunk < 1) throw std::invalid_argument("evaluate_run: chunk must be >= 1");
  const auto t0 = std::chrono::steady_clock::now();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int T = text.tokens;
  const auto fresh = [&] {
    PositionMetrics m;
    m.kl.assign(static_cast<std::size_t>(T), nan);
    m.nll.assign(static_cast<std::size_t>(T), nan);
    m.top1.assign(static_cast<std::size_t>(T), nan);
    return m;
  };
  std::vector<LayerDrift> drifts;
  PositionMetrics m = fresh();
  // A mode whose state blows up is a result: keep what it produced before the first non-finite output (the model is
  // causal, so a run over that prefix gives exactly those positions) and mark every later position NaN.
  std::int64_t diverged_at = -1;
  std::optional<RunCheckpointData> from;
  if (checkpoints && checkpoints->resume) {
    std::string why;
    from = read_run_checkpoint(checkpoints->path, checkpoints->key, &why);
    if (from && from->position >= T) {
      why = "its position " + std::to_string(from->position) + " is not inside the run's " + std::to_string(T);
      from.reset();
    }
    if (from) {
      std::copy(from->kl.begin(), from->kl.end(), m.kl.begin());
      std::copy(from->nll.begin(), from->nll.end(), m.nll.begin());
      std::copy(from->top1.begin(), from->top1.end(), m.top1.begin());
    }
    if (checkpoints->note && from)
      checkpoints->note("run " + spec.id + " resumes at position " + std::to_string(from->position));
    else if (checkpoints->note && !why.empty())
      checkpoints->note("run " + spec.id + ": checkpoint " + checkpoints->path + " ignored (" + why + ")");
  }
  try {
    stream_run(spec, model, text, reference, layer_backends, T, chunk, m, drifts, from ? &*from : nullptr, checkpoints);
  } catch (const Diverged& d) {
    // Re-run from 0 over the valid prefix (no checkpoint holds a state past a divergence: none is written after one).
    diverged_at = d.position;
    const int valid = static_cast<int>(d.position);
    drifts.clear();
    m = fresh();
    if (valid > 0)
      stream_run(spec, model, text, reference, layer_backends, valid, chunk, m, drifts, nullptr, nullptr);
  }
  RunResult r;
  r.id = spec.id;
  r.index = spec.index;
  r.kl = std::move(m.kl);
  r.nll = std::move(m.nll);
  r.top1 = std::move(m.top1);
  r.kl_binned = binned_stats(r.kl, edges);
  r.flip_rate_binned = binned_flip_rate(r.top1, edges);
  r.first_flip = first_flip(r.top1);
  const auto [V, K] = model.state_shape();
  r.bytes_per_element = bytes_per_state_element(spec.mode.format, spec.mode.scaling, V, K);
  r.capacity_vs_fp32 = 4.0 / r.bytes_per_element;
  r.layers = drifts.empty() ? model.layers() : static_cast<int>(drifts.size());
  for (std::int64_t s = spec.mode.L; s <= T; s += spec.mode.L) r.flush_steps.push_back(s);
  for (int l = 0; l < r.layers; ++l) {
    std::vector<double> od(static_cast<std::size_t>(T), nan), sd(r.flush_steps.size(), nan);
    if (static_cast<std::size_t>(l) < drifts.size()) {
      std::copy(drifts[static_cast<std::size_t>(l)].output.begin(), drifts[static_cast<std::size_t>(l)].output.end(), od.begin());
      std::copy(drifts[static_cast<std::size_t>(l)].state.begin(), drifts[static_cast<std::size_t>(l)].state.end(), sd.begin());
    }
    r.output_drift.insert(r.output_drift.end(), od.begin(), od.end());
    r.state_drift.insert(r.state_drift.end(), sd.begin(), sd.end());
  }
  r.attrs = run_attrs(spec, text.id, diverged_at);
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace replayssm::sweep
