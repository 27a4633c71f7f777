#pragma once
// The per-head "decay + rank-1" view shared by both recurrences, and the window algebra of DESIGN.md sec. 3.
//
// Every step of every head is S_t = a_t S_{t-1} + w_t k_t^T, o_t = S_t q_t (+ skip). Mamba-2: w_t = v_t = dt x.
// GDN: w_t = u_t = beta_t (v_t - a_t S_{t-1} k_t); caching u rather than v makes the GDN window linear in the
// checkpoint, so both recurrences replay with the same two formulas (window_state, window_apply).
#include <Eigen/Core>

#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

enum class Recurrence { kMamba2, kGdn };

// One step of one head, as the recurrence consumes it.
struct HeadToken {
  double a = 1.0;        // decay: GDN alpha_t = exp(g_t); Mamba-2 exp(dt_t A_h)
  double beta = 1.0;     // GDN write strength; ignored for Mamba-2
  Eigen::VectorXd v;     // [V]: GDN v_t; Mamba-2 dt_t x_t
  Eigen::VectorXd k;     // [K]: GDN k_t; Mamba-2 B_t
  Eigen::VectorXd q;     // [K]: GDN scale * q_t; Mamba-2 C_t
  Eigen::VectorXd skip;  // [V] added to the output (Mamba-2 D_h x_t); empty = none
};

// What the replay buffer caches per step: (a, w, k) with w = v (Mamba-2) or u (GDN).
struct Record {
  double a = 1.0;
  Eigen::VectorXd w;  // [V]
  Eigen::VectorXd k;  // [K]
};

// Token of value head h at step t (key head / group resolved, GDN q scaled, Mamba-2 D x as skip).
HeadToken gdn_head_token(const GdnInputs& in, int t, int h);
HeadToken mamba2_head_token(const Mamba2Inputs& in, int t, int h);

// The spec step: updates S in place and returns o_t = S_t q_t + skip.
// GDN is evaluated as FLA's fused recurrent kernel does: S <- a S; u = beta (v - S k); S <- S + u k^T.
Eigen::VectorXd recurrent_step(Recurrence r, Eigen::MatrixXd& S, const HeadToken& tok);

// gamma_{c+1:c+n} = a_1 ... a_n of the first n records (1 for n = 0).
double window_decay(const std::vector<Record>& recs, int n);

// S_{c+n} = gamma_{c+1:c+n} S_c + sum_j gamma_{j+1:c+n} w_j k_j^T over the first n records (exact; flushes).
Eigen::MatrixXd window_state(const Eigen::MatrixXd& S_c, const std::vector<Record>& recs, int n);

// S_{c+n} x = gamma_{c+1:c+n} (S_c x) + sum_j gamma_{j+1:c+n} (k_j^T x) w_j, given Sc_x = S_c x.
// The re-association (scalar k^T x first) is used for outputs and GDN's S_{t-1} k_t, never for the state.
Eigen::VectorXd window_apply(const Eigen::VectorXd& Sc_x, const std::vector<Record>& recs, int n,
                             const Eigen::VectorXd& x);

// GDN chain of T tokens after a state S_0: returns u_1..u_T by forward substitution of (I + A) U = W,
// A_ij = beta_i gamma_{j+1:i} (k_j^T k_i) (j < i), W_i = beta_i (v_i - gamma_{1:i} S_0 k_i),
// where S0_k[i] = S_0 k_i. Used by speculative verify and by any policy that recomputes a window's u's.
std::vector<Eigen::VectorXd> gdn_chain_u(const std::vector<HeadToken>& toks, const std::vector<Eigen::VectorXd>& S0_k);

}  // namespace replayssm::ref
