// runtime::Fp64Device on CUDA: kernels/fp64/fp64_ops.h's per-thread arithmetic launched over its grids, the host
// arrays copied in and out per call (the CPU paths' bits: fp64_ops.h says why).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/common/device_probe.h"
#include "kernels/fp64/fp64_ops.h"
#include "runtime/fp64_device.h"

namespace replayssm::runtime {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("FP64 device: ") + what + ": " + cudaGetErrorString(e));
}

// A device buffer that only grows.
struct DeviceBuffer {
  double* p = nullptr;
  std::size_t n = 0;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  double* reserve(std::size_t count) {
    if (count > n) {
      if (p) cudaFree(p);
      p = nullptr;
      n = 0;
      check(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(double)), "cudaMalloc");
      n = count;
    }
    return p;
  }
  double* upload(const double* host, std::size_t count) {
    double* d = reserve(count);
    if (count) check(cudaMemcpy(d, host, count * sizeof(double), cudaMemcpyHostToDevice), "copy to device");
    return d;
  }
};

void download(double* host, const double* dev, std::size_t count) {
  if (count) check(cudaMemcpy(host, dev, count * sizeof(double), cudaMemcpyDeviceToHost), "copy to host");
}

using namespace fp64dev;

__global__ void __launch_bounds__(kSide* kSide) gemm_nt_kernel(GemmArgs g) {
  __shared__ Stage xs, ws;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kSide + tx;
  double acc[kPerThread][kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) acc[i][j] = 0.0;
  for (int k0 = 0; k0 < g.k; k0 += kStepK) {
    gemm_stage(g, blockIdx.x, blockIdx.y, tid, k0, xs, ws);
    __syncthreads();
    gemm_accumulate(g, tx, ty, k0, xs, ws, acc);
    __syncthreads();
  }
  gemm_store(g, blockIdx.x, blockIdx.y, tx, ty, acc);
}

// A warp per 32 rows of one head; the rows' state in shared memory, [K][32] (a warp's accesses to one column are
// consecutive). No barriers: each thread owns its row.
template <bool kGdn>
__global__ void __launch_bounds__(kRowsPerCta) recurrence_kernel(RecurrenceArgs j) {
  extern __shared__ double S[];
  const int row = recurrence_row_of(blockIdx.y, threadIdx.x);
  if (row < j.V) recurrence_row<kGdn>(j, blockIdx.x, row, S + threadIdx.x, kRowsPerCta);
}

class CudaFp64Device final : public Fp64Device {
 public:
  explicit CudaFp64Device(std::string name) : name_(std::move(name)) {
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&smem_optin_, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "shared memory limit");
  }
  std::string name() const override { return name_; }

  void gemm_nt(const double* X, const double* W, double* Y, std::size_t m, std::size_t n, std::size_t k) override {
    if (m == 0 || n == 0) return;
    if (m > INT32_MAX / 2 || n > INT32_MAX / 2 || k > INT32_MAX / 2)
      throw std::invalid_argument("FP64 device: gemm_nt dimensions beyond int range");
    std::lock_guard<std::mutex> lock(mu_);
    const double* dx = x_.upload(X, m * k);
    const double* dw = w_.upload(W, n * k);
    double* dy = y_.reserve(m * n);
    const Dim2 g2 = gemm_grid(int(m), int(n));
    gemm_nt_kernel<<<dim3(g2.x, g2.y), dim3(kSide, kSide)>>>(GemmArgs{dx, dw, dy, int(m), int(n), int(k)});
    check(cudaGetLastError(), "gemm_nt launch");
    download(Y, dy, m * n);
  }

  bool recurrence_fits(int V, int K) const override {
    (void)V;
    return std::size_t(K) * kRowsPerCta * sizeof(double) <= std::size_t(smem_optin_);
  }

  void recurrence(const RecurrenceJob& job) override {
    if (!runtime::snapshots_valid(job)) throw std::invalid_argument("FP64 device: recurrence job with bad snapshots");
    if (job.T < 0 || job.H < 1 || job.G < 1 || job.H % job.G != 0 || job.V < 1 || job.K < 1 || job.block_cols < 1)
      throw std::invalid_argument("FP64 device: recurrence job with bad dimensions");
    if (!recurrence_fits(job.V, job.K)) throw std::invalid_argument("FP64 device: recurrence state rows do not fit");
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t T = std::size_t(job.T), H = std::size_t(job.H), G = std::size_t(job.G);
    const std::size_t V = std::size_t(job.V), K = std::size_t(job.K);
    RecurrenceArgs a{};
    a.T = job.T, a.H = job.H, a.G = job.G, a.V = job.V, a.K = job.K, a.bc = job.block_cols;
    a.a = a_.upload(job.a, T * H);
    a.beta = job.gdn ? beta_.upload(job.beta, T * H) : nullptr;
    a.v = v_.upload(job.v, T * H * V);
    a.k = k_.upload(job.k, T * G * K);
    a.q = q_.upload(job.q, T * G * K);
    a.skip = job.skip ? skip_.upload(job.skip, T * H * V) : nullptr;
    a.state = state_.upload(job.state, H * V * K);
    a.o = o_.reserve(T * H * V);
    const int snaps = snapshot_count(job.T, job.snapshot_period, job.snapshot_offset);
    a.snap_period = snaps ? job.snapshot_period : 0;
    a.snap_offset = job.snapshot_offset;
    a.snaps = snaps ? snaps_.reserve(std::size_t(snaps) * H * V * K) : nullptr;
    const std::size_t smem = K * kRowsPerCta * sizeof(double);
    const Dim2 g2 = recurrence_grid(job.H, job.V);
    const dim3 grid(g2.x, g2.y);
    if (job.gdn) {
      check(cudaFuncSetAttribute(recurrence_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
            "shared memory opt-in");
      recurrence_kernel<true><<<grid, kRowsPerCta, smem>>>(a);
    } else {
      check(cudaFuncSetAttribute(recurrence_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
            "shared memory opt-in");
      recurrence_kernel<false><<<grid, kRowsPerCta, smem>>>(a);
    }
    check(cudaGetLastError(), "recurrence launch");
    download(job.o, a.o, T * H * V);
    download(job.state, a.state, H * V * K);
    if (snaps) download(job.snapshots, a.snaps, std::size_t(snaps) * H * V * K);
  }

 private:
  std::string name_;
  int smem_optin_ = 48 * 1024;
  std::mutex mu_;
  DeviceBuffer x_, w_, y_, a_, beta_, v_, k_, q_, skip_, state_, o_, snaps_;
};

}  // namespace

std::unique_ptr<Fp64Device> make_cuda_fp64_device(std::string* why_not) {
  cudaDeviceProp prop{};
  if (!kern::probe_device0(&prop, why_not)) return nullptr;
  return std::make_unique<CudaFp64Device>(std::string("cuda ") + prop.name);
}

}  // namespace replayssm::runtime
