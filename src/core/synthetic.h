#pragma once
// Seeded random recurrence inputs with the statistics of real layers (unit-norm q/k, decays from the models'
// preprocessing), for `synth`, the demo and tests. Not a model: a stand-in when no capture is at hand.
#include <cstdint>

#include "reference/layer_inputs.h"

namespace replayssm {

struct DecayRange {
  double log_min = -5.0;  // g (or dt*A) drawn log-uniformly in magnitude between -exp(log_max) and -exp(log_min)
  double log_max = 0.0;
};

ref::GdnInputs random_gdn(int T, int Hk, int Hv, int K, int V, std::uint64_t seed, DecayRange decay = {});
ref::Mamba2Inputs random_mamba2(int T, int H, int G, int P, int N, std::uint64_t seed, DecayRange decay = {});

}  // namespace replayssm
