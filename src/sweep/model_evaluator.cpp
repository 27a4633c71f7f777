// ModelEvaluator: the sweep's view of the tiny-model runtime (src/runtime). The reference path runs the FP64
// recurrence; a mode path swaps each SSM layer's recurrence for a decode backend through ModeRecurrence.
#include <thread>

#include "runtime/forward.h"
#include "runtime/model.h"
#include "sweep/sweep_runner.h"

namespace replayssm::sweep {

struct ModelEvaluator::Impl {
  runtime::TinyModel model;
  // Layer 0's recurrence inputs and gate for the text of the last reference_logp (they do not depend on the mode):
  // filled there, read-only in mode_logp (which may run on several threads at once).
  runtime::FirstLayerCache layer0;
};

namespace {

// Adapts ModeRecurrence (one layer through a decode backend) to the runtime's pluggable recurrence.
class ModeBackend : public runtime::RecurrenceBackend {
 public:
  ModeBackend(emu::DecodeBackend& be, const emu::Mode& m, std::vector<LayerDrift>* drifts)
      : mr_(be, m), mode_(m), drifts_(drifts) {}
  std::string name() const override { return "mode " + mode_.name(); }
  ref::LayerOutputs run_gdn(const ref::GdnInputs& in) override {
    LayerDrift d;
    auto out = mr_.run_gdn(in, &d);
    if (drifts_) drifts_->push_back(std::move(d));
    return out;
  }
  ref::LayerOutputs run_mamba2(const ref::Mamba2Inputs& in) override {
    LayerDrift d;
    auto out = mr_.run_mamba2(in, &d);
    if (drifts_) drifts_->push_back(std::move(d));
    return out;
  }

 private:
  ModeRecurrence mr_;
  emu::Mode mode_;
  std::vector<LayerDrift>* drifts_;
};

std::vector<double> flatten(const runtime::Mat& m) {
  return std::vector<double>(m.data(), m.data() + m.size());  // row-major [T][256]
}

std::vector<std::uint8_t> inputs_of(const TextSlice& text) {
  return std::vector<std::uint8_t>(text.bytes.begin(), text.bytes.begin() + text.tokens);
}

}  // namespace

ModelEvaluator::ModelEvaluator(const std::string& path) : impl_(std::make_unique<Impl>()), path_(path) {
  impl_->model = runtime::TinyModel::load(path);
  const auto slash = path.find_last_of('/');
  name_ = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = name_.rfind(".h5");
  if (dot != std::string::npos) name_.resize(dot);
}

ModelEvaluator::~ModelEvaluator() = default;

emu::Arch ModelEvaluator::arch() const { return impl_->model.cfg.is_gdn() ? emu::Arch::gdn : emu::Arch::mamba2; }

int ModelEvaluator::layers() const { return impl_->model.cfg.n_layers; }

std::pair<int, int> ModelEvaluator::state_shape() const {
  const auto& c = impl_->model.cfg;
  return c.is_gdn() ? std::pair<int, int>{c.V, c.K} : std::pair<int, int>{c.P, c.N};
}

std::vector<double> ModelEvaluator::reference_logp(const TextSlice& text) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  runtime::ReferenceBackend be(threads);
  runtime::ForwardOptions opt;
  opt.threads = threads;
  impl_->layer0 = runtime::FirstLayerCache{};
  opt.fill_layer0 = &impl_->layer0;
  return flatten(runtime::teacher_force(impl_->model, inputs_of(text), be, opt).logprobs);
}

std::vector<double> ModelEvaluator::mode_logp(const TextSlice& text, emu::DecodeBackend& backend,
                                              const emu::Mode& mode, std::vector<LayerDrift>* drifts) {
  if (drifts) drifts->clear();
  ModeBackend be(backend, mode, drifts);
  runtime::ForwardOptions opt;
  opt.use_layer0 = &impl_->layer0;  // used only when filled for exactly these tokens
  return flatten(runtime::teacher_force(impl_->model, inputs_of(text), be, opt).logprobs);
}

}  // namespace replayssm::sweep
