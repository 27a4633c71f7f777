#pragma once
// The pluggable recurrence of the model runtime. The runtime computes everything around the SSM recurrence in FP64
// (projections, conv, gates, norms, MLP, head) and hands each layer's recurrence inputs to a backend, which returns
// the layer's outputs o ([T][Hv][V] or [T][H][P]) and final state. The FP64 reference is the default; emulated
// formats / ReplaySSM policies and CUDA kernels implement the same interface.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/layer_inputs.h"
#include "runtime/fp64_device.h"

namespace replayssm::runtime {

struct RecurrenceBackend {
  virtual ~RecurrenceBackend() = default;
  virtual std::string name() const = 0;
  // Each call is one layer of one sequence, starting from the zero state.
  virtual ref::LayerOutputs run_gdn(const ref::GdnInputs& in) = 0;
  virtual ref::LayerOutputs run_mamba2(const ref::Mamba2Inputs& in) = 0;
};

// A recurrence fed one sequence in consecutive chunks (runtime::ForwardStream): each layer keeps its state from one
// chunk to the next, so the outputs are those of the whole sequence in one call.
struct StreamingRecurrence {
  virtual ~StreamingRecurrence() = default;
  virtual std::string name() const = 0;
  // Before the first chunk: `layers` layers, each from the zero state.
  virtual void start(int layers) = 0;
  // The next in.T positions of layer `layer`: outputs [in.T][heads][dim]; final_state may be left empty.
  virtual ref::LayerOutputs gdn_chunk(int layer, const ref::GdnInputs& in) = 0;
  virtual ref::LayerOutputs mamba2_chunk(int layer, const ref::Mamba2Inputs& in) = 0;
  // Checkpoints (ForwardStream::save / load): every layer's state after the chunks so far as a byte blob, restored
  // after start(). The base class throws std::runtime_error (a recurrence without checkpoints).
  virtual void save(std::vector<std::uint8_t>& out) const;
  virtual void load(const std::uint8_t* blob, std::size_t size);
};

// ref::gdn_recurrent / ref::mamba2_recurrent (the FP64 spec). threads > 1 splits a layer's heads over threads
// (heads are independent; results are bit-identical to threads = 1). As a StreamingRecurrence it continues each
// layer from the state its previous chunk ended in: one step per token either way, so the bits do not depend on
// the chunking. With a device (not owned) the fast step runs there, the same bits (runtime/fp64_device.h).
class ReferenceBackend : public RecurrenceBackend, public StreamingRecurrence {
 public:
  explicit ReferenceBackend(int threads = 1, Fp64Device* device = nullptr)
      : threads_(threads < 1 ? 1 : threads), device_(device) {}
  std::string name() const override { return "reference-fp64"; }
  ref::LayerOutputs run_gdn(const ref::GdnInputs& in) override;
  ref::LayerOutputs run_mamba2(const ref::Mamba2Inputs& in) override;
  void start(int layers) override;
  ref::LayerOutputs gdn_chunk(int layer, const ref::GdnInputs& in) override;
  ref::LayerOutputs mamba2_chunk(int layer, const ref::Mamba2Inputs& in) override;

 private:
  ref::LayerOutputs gdn(const ref::GdnInputs& in, const std::vector<double>* initial);
  ref::LayerOutputs mamba2(const ref::Mamba2Inputs& in, const std::vector<double>* initial);
  int threads_;
  Fp64Device* device_;
  std::vector<std::vector<double>> states_;  // per layer, [heads][V][K]; empty: the zero state
};

}  // namespace replayssm::runtime
