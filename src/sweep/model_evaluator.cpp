// ModelEvaluator: the sweep's view of the tiny-model runtime (src/runtime). The reference path runs the FP64
// recurrence; a mode path swaps each SSM layer's recurrence for a decode backend through ModeLayerStream. Both run
// as runtime::ForwardStreams, a chunk of positions at a time.
#include <stdexcept>

#include "core/blob.h"

#include "runtime/forward.h"
#include "runtime/model.h"
#include "sweep/sweep_runner.h"

namespace replayssm::sweep {

struct ModelEvaluator::Impl {
  runtime::TinyModel model;
};

namespace {

// Each SSM layer through its own decode backend (a backend holds one layer's state from chunk to chunk).
class ModeLayers : public runtime::StreamingRecurrence {
 public:
  ModeLayers(const std::vector<emu::DecodeBackend*>& be, const emu::Mode& m, std::vector<LayerDrift>* drifts,
             runtime::Fp64Device* device)
      : backends_(be), mode_(m), drifts_(drifts), device_(device) {}
  std::string name() const override { return "mode " + mode_.name(); }
  void start(int layers) override {
    if (backends_.size() < static_cast<std::size_t>(layers))
      throw std::invalid_argument("mode_stream: " + std::to_string(layers) + " layers need as many decode backends, got " +
                                  std::to_string(backends_.size()));
    streams_.clear();
    for (int l = 0; l < layers; ++l) streams_.emplace_back(*backends_[static_cast<std::size_t>(l)], mode_, device_);
    if (drifts_) drifts_->assign(static_cast<std::size_t>(layers), LayerDrift{});
  }
  ref::LayerOutputs gdn_chunk(int layer, const ref::GdnInputs& in) override {
    return streams_.at(static_cast<std::size_t>(layer)).gdn(in, drift(layer));
  }
  ref::LayerOutputs mamba2_chunk(int layer, const ref::Mamba2Inputs& in) override {
    return streams_.at(static_cast<std::size_t>(layer)).mamba2(in, drift(layer));
  }

  void save(std::vector<std::uint8_t>& out) const override {
    BlobWriter w(out);
    w.pod(std::uint64_t(streams_.size()));
    std::vector<std::uint8_t> blob;
    for (const auto& s : streams_) {
      blob.clear();
      s.save(blob);
      w.bytes(blob.data(), blob.size());
    }
    w.pod(std::uint8_t(drifts_ != nullptr));
    if (drifts_)
      for (const LayerDrift& d : *drifts_) {
        w.vec(d.output);
        w.vec(d.steps);
        w.vec(d.state);
      }
  }
  void load(const std::uint8_t* blob, std::size_t size) override {
    BlobReader r(blob, size, "mode layers checkpoint");
    if (r.pod<std::uint64_t>("layers") != streams_.size()) r.fail("layers", "not this model's layer count");
    for (auto& s : streams_) {
      const auto b = r.bytes("layer");
      s.load(b.first, b.second);
    }
    const bool with_drifts = r.pod<std::uint8_t>("drifts") != 0;
    if (with_drifts != (drifts_ != nullptr)) r.fail("drifts", "kept by one of the blob and this stream only");
    if (drifts_)
      for (LayerDrift& d : *drifts_) {
        d.output = r.vec<double>("output drift");
        d.steps = r.vec<std::int64_t>("state drift steps");
        d.state = r.vec<double>("state drift");
      }
    r.finish();
  }

 private:
  LayerDrift* drift(int layer) { return drifts_ ? &(*drifts_)[static_cast<std::size_t>(layer)] : nullptr; }
  std::vector<emu::DecodeBackend*> backends_;
  emu::Mode mode_;
  std::vector<LayerDrift>* drifts_;
  runtime::Fp64Device* device_;
  std::vector<ModeLayerStream> streams_;
};

// A recurrence and the forward stream that runs it (the stream keeps a reference to the recurrence).
template <class Recurrence>
class LogpStream : public ModelEvaluator::Stream {
 public:
  template <class... Args>
  LogpStream(const runtime::TinyModel& m, int threads, runtime::Fp64Device* device, Args&&... args)
      : rec_(std::forward<Args>(args)...), fwd_(m, rec_, runtime::ForwardOptions{threads, device}) {}
  std::vector<double> next(const std::uint8_t* tokens, std::size_t n) override {
    const runtime::Mat lp = fwd_.next(tokens, n);
    return std::vector<double>(lp.data(), lp.data() + lp.size());  // row-major [n][256]
  }
  void save(std::vector<std::uint8_t>& out) const override { fwd_.save(out); }
  void load(const std::uint8_t* blob, std::size_t size) override { fwd_.load(blob, size); }

 private:
  Recurrence rec_;
  runtime::ForwardStream fwd_;
};

}  // namespace

void ModelEvaluator::Stream::save(std::vector<std::uint8_t>&) const {
  throw std::runtime_error("this stream has no checkpoints");
}
void ModelEvaluator::Stream::load(const std::uint8_t*, std::size_t) {
  throw std::runtime_error("this stream has no checkpoints");
}

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

std::unique_ptr<ModelEvaluator::Stream> ModelEvaluator::reference_stream(int threads) const {
  return std::make_unique<LogpStream<runtime::ReferenceBackend>>(impl_->model, threads, device_, threads, device_);
}

std::unique_ptr<ModelEvaluator::Stream> ModelEvaluator::mode_stream(const std::vector<emu::DecodeBackend*>& layer_backends,
                                                                    const emu::Mode& mode,
                                                                    std::vector<LayerDrift>* drifts) const {
  return std::make_unique<LogpStream<ModeLayers>>(impl_->model, mode_threads_, device_, layer_backends, mode, drifts,
                                                   device_);
}

}  // namespace replayssm::sweep
