#include "reference/batch.h"

#include <stdexcept>

#include "reference/gdn_chunked.h"
#include "reference/gdn_recurrent.h"
#include "reference/gdn_replay.h"
#include "reference/mamba2_chunked.h"
#include "reference/mamba2_recurrent.h"
#include "reference/mamba2_replay.h"

namespace replayssm::ref {
namespace {

template <class In, class Fn>
std::vector<LayerOutputs> each(const std::vector<In>& in, const StateBatch* init, Fn&& fn) {
  if (init && init->size() != in.size())
    throw std::invalid_argument("initial_states: need one entry per sequence");
  std::vector<LayerOutputs> out;
  out.reserve(in.size());
  for (std::size_t b = 0; b < in.size(); ++b) {
    const std::vector<double>* s = init && !(*init)[b].empty() ? &(*init)[b] : nullptr;
    out.push_back(fn(in[b], s));
  }
  return out;
}

}  // namespace

std::vector<LayerOutputs> gdn_recurrent_batch(const std::vector<GdnInputs>& in, const StateBatch* init) {
  return each(in, init, [](const GdnInputs& x, const std::vector<double>* s) { return gdn_recurrent(x, s); });
}
std::vector<LayerOutputs> gdn_chunked_batch(const std::vector<GdnInputs>& in, int chunk, const StateBatch* init) {
  return each(in, init, [&](const GdnInputs& x, const std::vector<double>* s) { return gdn_chunked(x, chunk, s); });
}
std::vector<LayerOutputs> gdn_replay_decode_batch(const std::vector<GdnInputs>& in, int L, const StateBatch* init) {
  return each(in, init, [&](const GdnInputs& x, const std::vector<double>* s) { return gdn_replay_decode(x, L, s); });
}
std::vector<LayerOutputs> mamba2_recurrent_batch(const std::vector<Mamba2Inputs>& in, const StateBatch* init) {
  return each(in, init, [](const Mamba2Inputs& x, const std::vector<double>* s) { return mamba2_recurrent(x, s); });
}
std::vector<LayerOutputs> mamba2_chunked_batch(const std::vector<Mamba2Inputs>& in, int chunk, const StateBatch* init) {
  return each(in, init,
              [&](const Mamba2Inputs& x, const std::vector<double>* s) { return mamba2_chunked(x, chunk, s); });
}
std::vector<LayerOutputs> mamba2_replay_decode_batch(const std::vector<Mamba2Inputs>& in, int L,
                                                     const StateBatch* init) {
  return each(in, init,
              [&](const Mamba2Inputs& x, const std::vector<double>* s) { return mamba2_replay_decode(x, L, s); });
}

}  // namespace replayssm::ref
