#pragma once
// A batch of sequences is a vector of per-sequence inputs; each sequence runs independently (its own state),
// exactly as the per-sequence functions do. initial_states, when given, holds one state per sequence
// (an empty vector entry means zero).
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

using StateBatch = std::vector<std::vector<double>>;

std::vector<LayerOutputs> gdn_recurrent_batch(const std::vector<GdnInputs>& in, const StateBatch* initial_states = nullptr);
std::vector<LayerOutputs> gdn_chunked_batch(const std::vector<GdnInputs>& in, int chunk,
                                            const StateBatch* initial_states = nullptr);
std::vector<LayerOutputs> gdn_replay_decode_batch(const std::vector<GdnInputs>& in, int L,
                                                  const StateBatch* initial_states = nullptr);
std::vector<LayerOutputs> mamba2_recurrent_batch(const std::vector<Mamba2Inputs>& in,
                                                 const StateBatch* initial_states = nullptr);
std::vector<LayerOutputs> mamba2_chunked_batch(const std::vector<Mamba2Inputs>& in, int chunk,
                                               const StateBatch* initial_states = nullptr);
std::vector<LayerOutputs> mamba2_replay_decode_batch(const std::vector<Mamba2Inputs>& in, int L,
                                                     const StateBatch* initial_states = nullptr);

}  // namespace replayssm::ref
