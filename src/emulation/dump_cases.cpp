#include "emulation/dump_cases.h"

#include <algorithm>
#include <cmath>

#include "core/activation_dump.h"
#include "core/errors.h"

namespace replayssm::emu {

TokenData gdn_tokens(int B, int T, int Hk, int Hv, int K, int V, double scale, const double* q, const double* k,
                     const double* v, const double* g, const double* beta) {
  TokenData td;
  td.B = B;
  td.T = T;
  const std::size_t bt = std::size_t(B) * std::size_t(T), nh = bt * std::size_t(Hv), nk = bt * std::size_t(Hk) * K;
  for (std::size_t i = 0; i < nh; ++i) td.a.push_back(float(std::exp(g[i])));
  for (std::size_t i = 0; i < nh; ++i) td.beta.push_back(float(beta[i]));
  for (std::size_t i = 0; i < nh * std::size_t(V); ++i) td.v.push_back(float(v[i]));
  for (std::size_t i = 0; i < nk; ++i) td.k.push_back(float(k[i]));
  for (std::size_t i = 0; i < nk; ++i) td.q.push_back(float(scale * q[i]));
  return td;
}

TokenData mamba2_tokens(int B, int T, int G, int H, int N, int P, const double* x, const double* Bm, const double* C,
                        const double* dt, const double* A, const double* D) {
  TokenData td;
  td.B = B;
  td.T = T;
  const std::size_t bt = std::size_t(B) * std::size_t(T);
  for (std::size_t t = 0; t < bt; ++t)
    for (std::size_t h = 0; h < std::size_t(H); ++h) {
      const double d = dt[t * H + h];
      td.a.push_back(float(std::exp(d * A[h])));
      for (std::size_t p = 0; p < std::size_t(P); ++p) {
        const double xv = x[(t * H + h) * P + p];
        td.v.push_back(float(d * xv));
        if (D) td.skip.push_back(float(D[h] * xv));
      }
    }
  const std::size_t nk = bt * std::size_t(G) * N;
  for (std::size_t i = 0; i < nk; ++i) td.k.push_back(float(Bm[i]));
  for (std::size_t i = 0; i < nk; ++i) td.q.push_back(float(C[i]));
  return td;
}

namespace {

DumpLayerCase finish_case(const std::string& layer, Arch arch, const Dims& dims, TokenData td,
                          const std::vector<double>* init) {
  DumpLayerCase c;
  c.layer = layer;
  c.shape.name = "acts layer " + layer;
  c.shape.arch = arch;
  c.shape.dims = dims;
  c.S0.assign(dims.state_elems(), 0.0f);
  if (init)
    for (std::size_t i = 0; i < c.S0.size(); ++i) c.S0[i] = float((*init)[i]);
  for (float a : td.a) c.a_max = std::max(c.a_max, double(a));
  c.tokens = std::move(td);
  return c;
}

}  // namespace

DumpLayerCase gdn_layer_case(const std::string& layer, const ref::GdnInputs& in, const std::vector<double>* init) {
  return finish_case(layer, Arch::gdn, Dims{1, in.Hk, in.Hv, in.K, in.V},
                     gdn_tokens(1, in.T, in.Hk, in.Hv, in.K, in.V, in.scale, in.q.data(), in.k.data(), in.v.data(),
                                in.g.data(), in.beta.data()),
                     init);
}

DumpLayerCase mamba2_layer_case(const std::string& layer, const ref::Mamba2Inputs& in,
                                const std::vector<double>* init) {
  return finish_case(layer, Arch::mamba2, Dims{1, in.G, in.H, in.N, in.P},
                     mamba2_tokens(1, in.T, in.G, in.H, in.N, in.P, in.x.data(), in.B.data(), in.C.data(),
                                   in.dt.data(), in.A.data(), in.D.empty() ? nullptr : in.D.data()),
                     init);
}

std::vector<DumpLayerCase> load_dump_cases(const std::string& path) {
  const ActivationDump dump = read_activation_dump(path);
  std::vector<DumpLayerCase> out;
  for (const DumpLayer& l : dump.layers) {
    const std::vector<double>* init = l.initial_state ? &*l.initial_state : nullptr;
    const bool gdn = dump.arch == ::replayssm::Arch::gdn;
    const int K = gdn ? l.gdn.K : l.mamba2.N;
    if (K % 4 != 0)
      throw UserError(path + ": /layers/" + l.name + (gdn ? "/q" : "/B") + ": the decode emulation needs " +
                      (gdn ? "K" : "N") + " a multiple of 4 (got " + std::to_string(K) + ")");
    out.push_back(gdn ? gdn_layer_case(l.name, l.gdn, init) : mamba2_layer_case(l.name, l.mamba2, init));
  }
  return out;
}

CaseInputs dump_case_inputs(const DumpLayerCase& l, int max_tokens) {
  CaseInputs in = inputs_from_tokens(l.shape, l.tokens, max_tokens);
  in.S0 = l.S0;
  return in;
}

Case dump_case(const DumpLayerCase& l, const CaseInputs& in) {
  Case c;
  c.name = l.shape.name;
  c.ops = in.op_list;
  c.g_lo = -1.0;
  c.g_hi = std::log(std::max(l.a_max, 1e-30));
  c.zero_init = std::all_of(l.S0.begin(), l.S0.end(), [](float x) { return x == 0.0f; });
  return c;
}

}  // namespace replayssm::emu
