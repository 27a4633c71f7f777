#include "sweep/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <limits>
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

RunResult evaluate_run(const RunSpec& spec, ModelEvaluator& model, const TextSlice& text,
                       const std::vector<double>& logp_ref, emu::DecodeBackend& backend,
                       const std::vector<std::int64_t>& edges) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<LayerDrift> drifts;
  // A mode whose state blows up is a result: keep what it produced before the first non-finite output (the model is
  // causal, so a run over that prefix gives exactly those positions) and mark every later position NaN.
  const int T = text.tokens;
  int valid = T;
  std::int64_t diverged_at = -1;
  std::vector<double> logp;
  try {
    logp = model.mode_logp(text, backend, spec.mode, &drifts);
  } catch (const Diverged& d) {
    diverged_at = d.position;
    valid = static_cast<int>(d.position);
    drifts.clear();
    if (valid > 0) {
      TextSlice prefix = text;
      prefix.tokens = valid;
      prefix.bytes.resize(static_cast<std::size_t>(valid) + 1);
      logp = model.mode_logp(prefix, backend, spec.mode, &drifts);
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::uint8_t> targets(text.bytes.begin() + 1, text.bytes.end());
  PositionMetrics m;
  if (valid > 0) m = compare_distributions(logp_ref, logp, targets, valid, 256);
  m.kl.resize(static_cast<std::size_t>(T), nan);
  m.nll.resize(static_cast<std::size_t>(T), nan);
  m.top1.resize(static_cast<std::size_t>(T), nan);
  RunResult r;
  r.id = spec.id;
  r.index = spec.index;
  r.kl = m.kl;
  r.nll = m.nll;
  r.top1 = m.top1;
  r.kl_binned = binned_stats(m.kl, edges);
  r.flip_rate_binned = binned_flip_rate(m.top1, edges);
  r.first_flip = first_flip(m.top1);
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
