#pragma once
// Layer-side preprocessing of real models, from the raw projections a capture hook sees to the inputs of the
// recurrences. Conventions follow Hugging Face qwen3_5 / qwen3_next (GDN) and nemotron_h (Mamba-2), evaluated
// in FP64 (the models evaluate them in FP32).
#include <limits>
#include <vector>

#include "reference/layer_inputs.h"

namespace replayssm::ref {

// torch.nn.functional.softplus(beta = 1, threshold = 20): x for x > 20, else log1p(exp(x)).
double softplus(double x);
// 1 / (1 + exp(-x)), evaluated without overflow for either sign.
double sigmoid(double x);

// FLA's l2norm and the HF torch fallback: x <- x / sqrt(sum x^2 + eps), eps = 1e-6 inside the square root.
// (Not torch F.normalize, which divides by max(||x||, eps).)
inline constexpr double kL2NormEps = 1e-6;
void l2_normalize(double* x, int n, double eps = kL2NormEps);

// GDN log decay g = -exp(A_log) * softplus(a_raw + dt_bias); alpha = exp(g).
double gdn_log_decay(double A_log, double a_raw, double dt_bias);
// Mamba-2: dt = clamp(softplus(dt_raw + dt_bias), dt_min, dt_max) (nemotron_h time_step_limit, default (0, inf)).
double mamba2_dt(double dt_raw, double dt_bias, double dt_min = 0.0,
                 double dt_max = std::numeric_limits<double>::infinity());
// Mamba-2: A = -exp(A_log).
double mamba2_A(double A_log);

struct GdnRawInputs {
  int T = 0, Hk = 0, Hv = 0, K = 0, V = 0;
  std::vector<double> q, k;         // [T][Hk][K], before L2 normalisation
  std::vector<double> v;            // [T][Hv][V]
  std::vector<double> a, b;         // [T][Hv]: decay and beta projections
  std::vector<double> A_log, dt_bias;  // [Hv]
};
// q, k L2-normalised (eps), g and beta per (t, h); scale <= 0 means 1/sqrt(K). Throws std::invalid_argument.
GdnInputs gdn_preprocess(const GdnRawInputs& raw, double scale = 0.0, double l2_eps = kL2NormEps);

struct Mamba2RawInputs {
  int T = 0, H = 0, G = 0, P = 0, N = 0;
  std::vector<double> x;             // [T][H][P]
  std::vector<double> B, C;          // [T][G][N]
  std::vector<double> dt_raw;        // [T][H]
  std::vector<double> dt_bias, A_log;  // [H]
  std::vector<double> D;             // [H] or empty
  double dt_min = 0.0, dt_max = std::numeric_limits<double>::infinity();
};
Mamba2Inputs mamba2_preprocess(const Mamba2RawInputs& raw);

}  // namespace replayssm::ref
