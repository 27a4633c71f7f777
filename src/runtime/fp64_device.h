#pragma once
// The FP64 model's two heavy parts on an accelerator, with the CPU's bits:
// - the projections, under gemm.h's contract (every element one fma chain over k in order, starting from +0);
// - the FP64 recurrence, under fast_recurrence.h's operations. Each row of a head's state is its own chain there
//   (S *= a, the row's block sums of S k and S q, u_r = beta (v_r - (S k)_r), S_r += u_r k^T), so a GPU thread per
//   row repeats it exactly: no reduction across threads, nothing reordered.
// Implemented in kernels/fp64/ (CUDA); a build without CUDA links no_fp64_device.cpp, whose factory says why not.
#include <cstddef>
#include <memory>
#include <string>

namespace replayssm::runtime {

// T tokens of H heads of one layer, every head from `state` (its final state replaces it). Head h reads key / group
// row h / (H / G). Per token the values fast_recurrence.h's StepHead takes: a and beta (GDN; ignored for Mamba-2),
// v (Mamba-2: dt x), k, q (GDN: scaled), skip (Mamba-2's D x, or null).
struct RecurrenceJob {
  bool gdn = true;
  int T = 0, H = 0, G = 0, V = 0, K = 0;
  int block_cols = 0;            // recurrent_step_block_cols(V, K): the columns of one partial sum
  const double* a = nullptr;     // [T][H]
  const double* beta = nullptr;  // [T][H]
  const double* v = nullptr;     // [T][H][V]
  const double* k = nullptr;     // [T][G][K]
  const double* q = nullptr;     // [T][G][K]
  const double* skip = nullptr;  // [T][H][V] or null
  double* state = nullptr;       // [H][V][K] row-major, in and out
  double* o = nullptr;           // [T][H][V] out
  // Optional: the state after every token t with (snapshot_offset + t + 1) % snapshot_period == 0, in token order,
  // each [H][K][V] (a head's state column-major, as an Eigen::MatrixXd [V][K] stores it). period 0: none.
  int snapshot_period = 0, snapshot_offset = 0;
  double* snapshots = nullptr;
};

// How many snapshots a job takes: the tokens t < T with t = period - 1 - offset % period (mod period).
inline int snapshot_count(int T, int period, int offset) {
  if (period <= 0) return 0;
  const int first = period - 1 - offset % period;
  return first < T ? (T - 1 - first) / period + 1 : 0;
}
// Whether a job's snapshot fields are usable: period and offset >= 0, and a buffer where some snapshot is taken (a
// block that crosses no snapshot point may pass none).
inline bool snapshots_valid(const RecurrenceJob& j) {
  return j.snapshot_period >= 0 && j.snapshot_offset >= 0 &&
         (j.snapshots != nullptr || snapshot_count(j.T, j.snapshot_period, j.snapshot_offset) == 0);
}

class Fp64Device {
 public:
  virtual ~Fp64Device() = default;
  virtual std::string name() const = 0;  // e.g. "cuda NVIDIA H100 80GB HBM3"
  // Y = X W^T: X [m, k], W [n, k], Y [m, n], row-major host arrays (runtime/gemm.h's gemm_nt, the same bits).
  virtual void gemm_nt(const double* X, const double* W, double* Y, std::size_t m, std::size_t n, std::size_t k) = 0;
  // Whether recurrence() takes heads of this shape (a head's rows live in on-chip memory).
  virtual bool recurrence_fits(int V, int K) const = 0;
  // The recurrence of recurrent_step_fast token by token (callers check recurrent_step_fast_ok and
  // recurrence_fits first).
  virtual void recurrence(const RecurrenceJob& job) = 0;
};

// The FP64 model on CUDA device 0, or nullptr with *why_not set when there is no usable GPU (or no CUDA build).
// Calls from several threads are serialised.
std::unique_ptr<Fp64Device> make_cuda_fp64_device(std::string* why_not);

}  // namespace replayssm::runtime
