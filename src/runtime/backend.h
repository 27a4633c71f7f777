#pragma once
// The pluggable recurrence of the model runtime. The runtime computes everything around the SSM recurrence in FP64
// (projections, conv, gates, norms, MLP, head) and hands each layer's recurrence inputs to a backend, which returns
// the layer's outputs o ([T][Hv][V] or [T][H][P]) and final state. The FP64 reference is the default; emulated
// formats / ReplaySSM policies and CUDA kernels implement the same interface.
#include <memory>
#include <string>

#include "reference/layer_inputs.h"

namespace replayssm::runtime {

struct RecurrenceBackend {
  virtual ~RecurrenceBackend() = default;
  virtual std::string name() const = 0;
  // Each call is one layer of one sequence, starting from the zero state.
  virtual ref::LayerOutputs run_gdn(const ref::GdnInputs& in) = 0;
  virtual ref::LayerOutputs run_mamba2(const ref::Mamba2Inputs& in) = 0;
};

// ref::gdn_recurrent / ref::mamba2_recurrent (the FP64 spec). threads > 1 splits a layer's heads over threads
// (heads are independent; results are bit-identical to threads = 1).
class ReferenceBackend : public RecurrenceBackend {
 public:
  explicit ReferenceBackend(int threads = 1) : threads_(threads < 1 ? 1 : threads) {}
  std::string name() const override { return "reference-fp64"; }
  ref::LayerOutputs run_gdn(const ref::GdnInputs& in) override;
  ref::LayerOutputs run_mamba2(const ref::Mamba2Inputs& in) override;

 private:
  int threads_;
};

}  // namespace replayssm::runtime
