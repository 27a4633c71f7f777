#pragma once
// The tiny byte-level SSM language models (datasets/models/tiny_{gdn,mamba2}.h5, trained by datasets/train_tiny.py):
// config and every tensor, loaded into FP64 Eigen matrices. File layout and the math: datasets/README.md.
#include <Eigen/Core>
#include <string>
#include <vector>

namespace replayssm::runtime {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;

struct ModelConfig {
  std::string arch;  // "gdn" or "mamba2"
  int vocab = 256, d_model = 0, n_layers = 0, d_ff = 0, conv_kernel = 0;
  double norm_eps = 0.0, gated_norm_eps = 0.0;
  // GDN
  int Hk = 0, Hv = 0, K = 0, V = 0;
  double l2norm_eps = 0.0;
  // Mamba-2
  int H = 0, G = 0, P = 0, N = 0, d_inner = 0;
  bool is_gdn() const { return arch == "gdn"; }
};

// Linear weights are [out, in] (y = x W^T); conv weights [channels, kernel] (causal, depthwise).
struct GdnWeights {
  Mat in_q, in_k, in_v, in_z, in_a, in_b;
  Mat conv_q, conv_k, conv_v;
  Vec A_log, dt_bias, norm;  // [Hv], [Hv], [V]
  Mat out;                   // [d_model, Hv*V]
  Mat in_fused;              // rows [in_q; in_k; in_v; in_z; in_a; in_b] (built by load: one product per layer)
};

struct Mamba2Weights {
  Mat in_z, in_x, in_B, in_C, in_dt;
  Mat conv_x, conv_B, conv_C;
  Vec conv_bias_x, conv_bias_B, conv_bias_C;
  Vec A_log, dt_bias, D, norm;  // [H], [H], [H], [d_inner]
  Mat out;                      // [d_model, d_inner]
  Mat in_fused;                 // rows [in_z; in_x; in_B; in_C; in_dt] (built by load)
};

struct LayerWeights {
  Vec norm1, norm2;
  GdnWeights gdn;            // arch == gdn
  Mamba2Weights mamba2;      // arch == mamba2
  Mat w_gate, w_up, w_down;  // SwiGLU: [d_ff, d], [d_ff, d], [d, d_ff]
  Mat w_gate_up;             // rows [w_gate; w_up] (built by load)
};

struct TinyModel {
  std::string path;
  ModelConfig cfg;
  Mat embed;  // [vocab, d_model]
  std::vector<LayerWeights> layers;
  Vec final_norm;
  Mat lm_head;  // [vocab, d_model], untied

  // Any problem (missing config attribute or tensor, wrong shape, NaN/Inf, unknown arch) is a one-line UserError
  // naming the file and the tensor (exit 2).
  static TinyModel load(const std::string& path);
};

}  // namespace replayssm::runtime
