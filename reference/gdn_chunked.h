#pragma once
// GDN in the chunked WY / UT-transform form of FLA's chunk_gated_delta_rule, in FP64. Within a chunk the u's
// solve (I + A) U = beta V - diag(beta Gamma) K S_0^T with A strictly lower, A_ij = beta_i gamma_{j+1:i} k_j^T k_i;
// as in FLA the inverse T = (I + A)^{-1} is formed once and applied to beta V and beta Gamma K, so
// U = T beta V - (T beta Gamma K) S_0^T. Outputs and the next chunk's state then follow as in SSD.
// Differences from FLA that matter only at rounding level: decays are running products of alpha (FLA: exp of
// differences of cumulative g), and the state is [V][K] (FLA: [K][V]).
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

// Any chunk >= 1: chunks need not divide T, and chunk > T is one chunk.
LayerOutputs gdn_chunked(const GdnInputs& in, int chunk, const std::vector<double>* initial_state = nullptr);

}  // namespace replayssm::ref
