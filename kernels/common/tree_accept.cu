// Accepting a draft tree's root-to-node path under ReplaySSM: a copy of records (never of states). Node path[d] of the
// last tree verify sits in slot n + path[d]; it moves to slot n + d, so the window reads as if the path had been
// verified as a chain. path[d] >= d and strictly increases with d, so no move reads a slot an earlier one wrote; a
// move may write the slot an earlier one read, hence the barrier between moves.
#include <cuda_runtime.h>

#include "emulation/decode_math.h"
#include "kernels/common/decode_kernel.h"

namespace replayssm::kern {
namespace {

// R: the record vectors' element type (records_of); a move copies their bits.
template <class R>
__global__ void accept_path_kernel(KParams p, const int* path, const int* len) {
  const int hh = blockIdx.x, b = hh / p.H;
  const bool recompute = p.rv != nullptr;
  R* rk = records_of<R>(p.rk);
  R* rw = records_of<R>(p.rw);
  R* rv = records_of<R>(p.rv);
  const std::size_t base = std::size_t(hh) * p.cap;
  for (int d = 0; d < len[b]; ++d) {
    const int from = path[std::size_t(b) * p.max_drafts + d];
    if (from != d) {
      const std::size_t src = base + std::size_t(p.n[b] + from), dst = base + std::size_t(p.n[b] + d);
      if (threadIdx.x == 0) {
        p.ra[dst] = p.ra[src];
        p.rbeta[dst] = p.rbeta[src];
      }
      for (int c = threadIdx.x; c < p.K; c += blockDim.x) rk[dst * p.K + c] = rk[src * p.K + c];
      for (int r = threadIdx.x; r < p.V; r += blockDim.x) {
        rw[dst * p.V + r] = rw[src * p.V + r];
        if (recompute) rv[dst * p.V + r] = rv[src * p.V + r];
      }
    }
    __syncthreads();
  }
}

}  // namespace

int launch_accept_path(const KParams& p, const int* path, const int* len, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (p.records == emu::Records::bf16)
    accept_path_kernel<emu::RecordBf16><<<unsigned(p.B * p.H), 128, 0, s>>>(p, path, len);
  else
    accept_path_kernel<float><<<unsigned(p.B * p.H), 128, 0, s>>>(p, path, len);
  return int(cudaGetLastError());
}

}  // namespace replayssm::kern
