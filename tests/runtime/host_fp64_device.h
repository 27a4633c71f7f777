// runtime::Fp64Device on the host: kernels/fp64/fp64_ops.h's per-thread functions run over the CUDA kernels' grids
// in a barrier-respecting order (every thread's staging of a k-step before any thread's products), so a CPU test
// checks the device arithmetic's order of operations against the CPU paths without a GPU.
#pragma once
#include <stdexcept>
#include <vector>

#include "kernels/fp64/fp64_ops.h"
#include "runtime/fp64_device.h"

namespace replayssm::testsupport {

class HostFp64Device final : public runtime::Fp64Device {
 public:
  std::string name() const override { return "host emulation of the FP64 device kernels"; }

  void gemm_nt(const double* X, const double* W, double* Y, std::size_t m, std::size_t n, std::size_t k) override {
    using namespace fp64dev;
    if (m == 0 || n == 0) return;
    const GemmArgs g{X, W, Y, int(m), int(n), int(k)};
    const Dim2 grid = gemm_grid(g.m, g.n);
    struct Acc {
      double v[kPerThread][kPerThread];
    };
    std::vector<Acc> acc(kSide * kSide);
    Stage xs, ws;
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        for (Acc& a : acc)
          for (auto& row : a.v)
            for (double& x : row) x = 0.0;
        for (int k0 = 0; k0 < g.k; k0 += kStepK) {
          for (int tid = 0; tid < kSide * kSide; ++tid) gemm_stage(g, bx, by, tid, k0, xs, ws);
          for (int ty = 0; ty < kSide; ++ty)
            for (int tx = 0; tx < kSide; ++tx)
              gemm_accumulate(g, tx, ty, k0, xs, ws, acc[std::size_t(ty * kSide + tx)].v);
        }
        for (int ty = 0; ty < kSide; ++ty)
          for (int tx = 0; tx < kSide; ++tx) gemm_store(g, bx, by, tx, ty, acc[std::size_t(ty * kSide + tx)].v);
      }
  }

  bool recurrence_fits(int, int) const override { return true; }

  void recurrence(const runtime::RecurrenceJob& job) override {
    using namespace fp64dev;
    // the device's check of a job (fp64_device.cu), so that a job it would refuse fails here too
    if (!runtime::snapshots_valid(job)) throw std::invalid_argument("FP64 device: recurrence job with bad snapshots");
    const int snaps = runtime::snapshot_count(job.T, job.snapshot_period, job.snapshot_offset);
    RecurrenceArgs a{job.T, job.H, job.G, job.V, job.K, job.block_cols, job.a, job.beta, job.v, job.k, job.q,
                     job.skip, job.state, job.o, snaps ? job.snapshot_period : 0, job.snapshot_offset,
                     snaps ? job.snapshots : nullptr};
    const Dim2 grid = recurrence_grid(job.H, job.V);
    std::vector<double> S(std::size_t(job.K) * kRowsPerCta);
    for (unsigned bx = 0; bx < grid.x; ++bx)
      for (unsigned by = 0; by < grid.y; ++by)
        for (int lane = 0; lane < kRowsPerCta; ++lane) {
          const int row = recurrence_row_of(by, lane);
          if (row >= job.V) continue;
          if (job.gdn)
            recurrence_row<true>(a, int(bx), row, S.data() + lane, kRowsPerCta);
          else
            recurrence_row<false>(a, int(bx), row, S.data() + lane, kRowsPerCta);
        }
  }
};

}  // namespace replayssm::testsupport
