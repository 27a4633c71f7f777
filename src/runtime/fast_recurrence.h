#pragma once
// ref::recurrent_step (reference/head_record.h) bit for bit, without Eigen temporaries or allocations: the FP64 step
// of the sweep's shadow recurrence and of the runtime's reference backend.
//   S *= a; [GDN: u = beta (v - S k)]; S += w k^T (w = u, Mamba-2 w = v); o = S q (+ skip)
// The state is an Eigen::MatrixXd's storage: column-major [K][V], element (r, c) at c * V + r.
namespace replayssm::runtime {

struct StepHead {
  double* S;  // [K][V] column-major, updated in place
  double a, beta;
  const double *v, *k, *q, *skip;  // [V], [K], [K], [V] (skip may be null)
  double* o;                       // [V] out
};

// Whether recurrent_step_fast reproduces ref::recurrent_step for these dims with the Eigen this is built with
// (Eigen 3.4 and V > 1); otherwise use ref::recurrent_step.
bool recurrent_step_fast_ok(int V, int K);

// The columns of each partial sum of the S x products (Eigen's gemv blocking for a [V][K] state).
int recurrent_step_block_cols(int V, int K);

// One step of one head. scratch: 2 * V doubles.
void recurrent_step_fast(bool gdn, const StepHead& h, int V, int K, double* scratch);

}  // namespace replayssm::runtime
