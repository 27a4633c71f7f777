#pragma once
// Mamba-2 in the chunked SSD form: within a chunk a masked decay "attention" O = ((C B^T) o D) X_dt plus the
// inter-chunk term diag(Gamma) C S_0^T; the state passes between chunks as S = Gamma_C S_0 + X_dt^T diag(d) B.
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

// Any chunk >= 1: chunks need not divide T, and chunk > T is one chunk.
LayerOutputs mamba2_chunked(const Mamba2Inputs& in, int chunk, const std::vector<double>* initial_state = nullptr);

}  // namespace replayssm::ref
