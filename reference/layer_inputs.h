#pragma once
// Layer-level inputs and outputs of the FP64 reference: flat row-major std::vector<double> with explicit dims,
// so they fill straight from an HDF5 activation dump and compare element-wise with compare().
//
// State layout, everywhere in this library: per head [V][K] (Mamba-2: [P][N]), o = S q, S maps a key to a
// value. FLA stores the transpose h = S^T ([K][V]); transpose when exchanging states with FLA.
#include <Eigen/Core>

#include <vector>

namespace replayssm::ref {

// Gated DeltaNet, one sequence. Value head h reads key head h / (Hv / Hk) (Qwen3.5 / FLA repeat_interleave).
// q and k arrive already L2-normalised (preprocess.h); the output uses scale * q (scale is the caller's,
// normally 1/sqrt(K)).
struct GdnInputs {
  int T = 0, Hk = 0, Hv = 0, K = 0, V = 0;
  double scale = 0.0;
  std::vector<double> q;     // [T][Hk][K]
  std::vector<double> k;     // [T][Hk][K]
  std::vector<double> v;     // [T][Hv][V]
  std::vector<double> g;     // [T][Hv] log decay, alpha = exp(g) (g <= 0)
  std::vector<double> beta;  // [T][Hv]
  // Throws std::invalid_argument naming the first bad field (dims, head grouping, array sizes, NaN/Inf).
  void validate() const;
  int state_size() const { return Hv * V * K; }  // elements of one full state [Hv][V][K]
};

// Mamba-2 (SSD), one sequence. Head h reads group h / (H / G).
// a_t = exp(dt_t A_h), v_t = dt_t x_t, k_t = B_t, q_t = C_t, y_t = S_t C_t + D_h x_t.
struct Mamba2Inputs {
  int T = 0, H = 0, G = 0, P = 0, N = 0;
  std::vector<double> x;   // [T][H][P]
  std::vector<double> B;   // [T][G][N]
  std::vector<double> C;   // [T][G][N]
  std::vector<double> dt;  // [T][H], already softplus(dt_raw + dt_bias)
  std::vector<double> A;   // [H], negative
  std::vector<double> D;   // [H], or empty for no skip
  void validate() const;
  int state_size() const { return H * P * N; }  // elements of one full state [H][P][N]
};

struct LayerOutputs {
  std::vector<double> o;            // [T][Hv][V] (GDN) or [T][H][P] (Mamba-2)
  std::vector<double> final_state;  // [Hv][V][K] or [H][P][N]
};

// Throws std::invalid_argument("initial_state: ...") when present and not of the given size.
void validate_initial_state(const std::vector<double>* initial_state, int state_size);

// One head's state as an Eigen matrix (rows V, cols K) from / into a flat [heads][V][K] array.
Eigen::MatrixXd head_state(const std::vector<double>& flat, int h, int V, int K);
void put_head_state(std::vector<double>& flat, int h, const Eigen::MatrixXd& S);

}  // namespace replayssm::ref
