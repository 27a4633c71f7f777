// The FP64 reference (reference/): the recurrent spec, the chunked and ReplaySSM forms, and the speculative chain and
// tree verify, per sequence. The batch axis is looped in Python.
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "reference/conventional_head.h"
#include "reference/gdn_chunked.h"
#include "reference/gdn_recurrent.h"
#include "reference/gdn_replay.h"
#include "reference/head_record.h"
#include "reference/mamba2_chunked.h"
#include "reference/mamba2_recurrent.h"
#include "reference/mamba2_replay.h"
#include "reference/replay_head.h"
#include "reference/tree_verify.h"

namespace replayssm::py {
namespace {

using Outputs = std::tuple<Out<double>, Out<double>>;

std::optional<std::vector<double>> initial_of(const std::optional<In<double>>& s, std::size_t n) {
  if (!s) return std::nullopt;
  const double* p = data_of(*s, n, "initial_state");
  return std::vector<double>(p, p + n);
}

Outputs outputs(ref::LayerOutputs&& r, int T, int H, int V, int K) {
  auto z = [](int x) { return std::size_t(x); };
  return {to_numpy(std::move(r.o), {z(T), z(H), z(V)}), to_numpy(std::move(r.final_state), {z(H), z(V), z(K)})};
}

void check_form(const std::string& form) {
  if (form != "recurrent" && form != "chunked" && form != "replay")
    throw std::invalid_argument("form: expected 'recurrent', 'chunked' or 'replay', got '" + form + "'");
}

ref::GdnInputs gdn_inputs(const In<double>& q, const In<double>& k, const In<double>& v, const In<double>& g,
                          const In<double>& beta, int T, int Hk, int Hv, int K, int V, double scale) {
  ref::GdnInputs in;
  in.T = T, in.Hk = Hk, in.Hv = Hv, in.K = K, in.V = V, in.scale = scale;
  const std::size_t tk = std::size_t(T) * Hk * K, tv = std::size_t(T) * Hv * V, th = std::size_t(T) * Hv;
  auto copy = [](const In<double>& a, std::size_t n, const char* name) {
    const double* p = data_of(a, n, name);
    return std::vector<double>(p, p + n);
  };
  in.q = copy(q, tk, "q"), in.k = copy(k, tk, "k"), in.v = copy(v, tv, "v");
  in.g = copy(g, th, "g"), in.beta = copy(beta, th, "beta");
  in.validate();
  return in;
}

ref::Mamba2Inputs mamba2_inputs(const In<double>& x, const In<double>& B, const In<double>& C, const In<double>& dt,
                                const In<double>& A, const std::optional<In<double>>& D, int T, int H, int G, int P,
                                int N) {
  ref::Mamba2Inputs in;
  in.T = T, in.H = H, in.G = G, in.P = P, in.N = N;
  auto copy = [](const In<double>& a, std::size_t n, const char* name) {
    const double* p = data_of(a, n, name);
    return std::vector<double>(p, p + n);
  };
  in.x = copy(x, std::size_t(T) * H * P, "x");
  in.B = copy(B, std::size_t(T) * G * N, "B");
  in.C = copy(C, std::size_t(T) * G * N, "C");
  in.dt = copy(dt, std::size_t(T) * H, "dt");
  in.A = copy(A, std::size_t(H), "A");
  if (D) in.D = copy(*D, std::size_t(H), "D");
  in.validate();
  return in;
}

Outputs gdn(const In<double>& q, const In<double>& k, const In<double>& v, const In<double>& g,
            const In<double>& beta, int T, int Hk, int Hv, int K, int V, double scale,
            const std::optional<In<double>>& init, const std::string& form, int L, int chunk) {
  check_form(form);
  const ref::GdnInputs in = gdn_inputs(q, k, v, g, beta, T, Hk, Hv, K, V, scale);
  const auto s0 = initial_of(init, std::size_t(in.state_size()));
  const std::vector<double>* p = s0 ? &*s0 : nullptr;
  if (form == "recurrent") return outputs(ref::gdn_recurrent(in, p), T, Hv, V, K);
  if (form == "chunked") return outputs(ref::gdn_chunked(in, chunk, p), T, Hv, V, K);
  return outputs(ref::gdn_replay_decode(in, L, p), T, Hv, V, K);
}

Outputs mamba2(const In<double>& x, const In<double>& B, const In<double>& C, const In<double>& dt,
               const In<double>& A, const std::optional<In<double>>& D, int T, int H, int G, int P, int N,
               const std::optional<In<double>>& init, const std::string& form, int L, int chunk) {
  check_form(form);
  const ref::Mamba2Inputs in = mamba2_inputs(x, B, C, dt, A, D, T, H, G, P, N);
  const auto s0 = initial_of(init, std::size_t(in.state_size()));
  const std::vector<double>* p = s0 ? &*s0 : nullptr;
  if (form == "recurrent") return outputs(ref::mamba2_recurrent(in, p), T, H, P, N);
  if (form == "chunked") return outputs(ref::mamba2_chunked(in, chunk, p), T, H, P, N);
  return outputs(ref::mamba2_replay_decode(in, L, p), T, H, P, N);
}

using Parents = std::optional<std::vector<int>>;

// A verify of T drafts from the committed state (initial_state) per head, then accept(a): the drafts' outputs and the
// state after the a accepted drafts. form "recurrent": conventional store-all (ConventionalHead); "replay": ReplaySSM
// (ReplayHead with capacity L - 1 + T, its window empty at the start). With parents, a tree verify of that tree
// (reference/tree_verify.h) and accept is the accepted node (-1..T-1, its root path kept).
template <class TokenOf>
Outputs verify_heads(ref::Recurrence r, int T, int H, int V, int K, const std::optional<std::vector<double>>& s0,
                     int accept, const std::string& form, int L, const Parents& parents, TokenOf token_of) {
  if (form != "recurrent" && form != "replay")
    throw std::invalid_argument("form: expected 'recurrent' or 'replay', got '" + form + "'");
  const ref::DraftTree tree{parents ? *parents : std::vector<int>{}};
  if (parents) {
    tree.validate();
    if (tree.size() != T)
      throw std::invalid_argument("parents: " + std::to_string(tree.size()) + " nodes for T = " + std::to_string(T) +
                                  " drafts (one parent per draft)");
    if (accept < -1 || accept >= T)
      throw std::invalid_argument("accept_node: expected -1 <= node < T = " + std::to_string(T) + ", got " +
                                  std::to_string(accept));
  } else if (accept < 0 || accept > T) {
    throw std::invalid_argument("accept: expected 0 <= accept <= T = " + std::to_string(T) + ", got " +
                                std::to_string(accept));
  }
  if (L < 1) throw std::invalid_argument("L: expected >= 1, got " + std::to_string(L));
  std::vector<double> o(std::size_t(T) * H * V), S(std::size_t(H) * V * K);
  for (int h = 0; h < H; ++h) {
    Eigen::MatrixXd S0 = Eigen::MatrixXd::Zero(V, K);
    if (s0)
      for (int i = 0; i < V; ++i)
        for (int j = 0; j < K; ++j) S0(i, j) = (*s0)[(std::size_t(h) * V + i) * K + j];
    std::vector<ref::HeadToken> drafts;
    for (int t = 0; t < T; ++t) drafts.push_back(token_of(t, h));
    std::vector<Eigen::VectorXd> out;
    Eigen::MatrixXd after;
    const auto run = [&](auto& head) {
      if (parents) {
        out = head.verify_tree(drafts, tree);
        head.accept_path(accept);
      } else {
        out = head.verify(drafts);
        head.accept(accept);
      }
    };
    if (form == "recurrent") {
      ref::ConventionalHead head(r, V, K, &S0);
      run(head);
      after = head.state();
    } else {
      ref::ReplayHead head(r, V, K, L, T, &S0);
      run(head);
      after = head.materialize();
    }
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < V; ++i) o[(std::size_t(t) * H + h) * V + i] = out[std::size_t(t)](i);
    for (int i = 0; i < V; ++i)
      for (int j = 0; j < K; ++j) S[(std::size_t(h) * V + i) * K + j] = after(i, j);
  }
  auto z = [](int x) { return std::size_t(x); };
  return {to_numpy(std::move(o), {z(T), z(H), z(V)}), to_numpy(std::move(S), {z(H), z(V), z(K)})};
}

}  // namespace

void bind_reference(nb::module_& m) {
  m.def("reference_gdn", &gdn, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("g"), nb::arg("beta"),
        nb::arg("T"), nb::arg("Hk"), nb::arg("Hv"), nb::arg("K"), nb::arg("V"), nb::arg("scale"),
        nb::arg("initial_state").none(), nb::arg("form"), nb::arg("L"), nb::arg("chunk"));
  m.def("reference_mamba2", &mamba2, nb::arg("x"), nb::arg("B"), nb::arg("C"), nb::arg("dt"), nb::arg("A"),
        nb::arg("D").none(), nb::arg("T"), nb::arg("H"), nb::arg("G"), nb::arg("P"), nb::arg("N"),
        nb::arg("initial_state").none(), nb::arg("form"), nb::arg("L"), nb::arg("chunk"));
  m.def(
      "verify_gdn",
      [](const In<double>& q, const In<double>& k, const In<double>& v, const In<double>& g, const In<double>& beta,
         int T, int Hk, int Hv, int K, int V, double scale, const std::optional<In<double>>& init, int accept,
         const std::string& form, int L, const Parents& parents) {
        const ref::GdnInputs in = gdn_inputs(q, k, v, g, beta, T, Hk, Hv, K, V, scale);
        return verify_heads(ref::Recurrence::kGdn, T, Hv, V, K, initial_of(init, std::size_t(in.state_size())),
                            accept, form, L, parents, [&](int t, int h) { return ref::gdn_head_token(in, t, h); });
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("g"), nb::arg("beta"), nb::arg("T"), nb::arg("Hk"),
      nb::arg("Hv"), nb::arg("K"), nb::arg("V"), nb::arg("scale"), nb::arg("initial_state").none(),
      nb::arg("accept"), nb::arg("form"), nb::arg("L"), nb::arg("parents").none() = nb::none());
  m.def(
      "verify_mamba2",
      [](const In<double>& x, const In<double>& B, const In<double>& C, const In<double>& dt, const In<double>& A,
         const std::optional<In<double>>& D, int T, int H, int G, int P, int N,
         const std::optional<In<double>>& init, int accept, const std::string& form, int L, const Parents& parents) {
        const ref::Mamba2Inputs in = mamba2_inputs(x, B, C, dt, A, D, T, H, G, P, N);
        return verify_heads(ref::Recurrence::kMamba2, T, H, P, N, initial_of(init, std::size_t(in.state_size())),
                            accept, form, L, parents, [&](int t, int h) { return ref::mamba2_head_token(in, t, h); });
      },
      nb::arg("x"), nb::arg("B"), nb::arg("C"), nb::arg("dt"), nb::arg("A"), nb::arg("D").none(), nb::arg("T"),
      nb::arg("H"), nb::arg("G"), nb::arg("P"), nb::arg("N"), nb::arg("initial_state").none(), nb::arg("accept"),
      nb::arg("form"), nb::arg("L"), nb::arg("parents").none() = nb::none());
  m.def(
      "draft_tree",
      [](const std::string& text, int max_nodes) { return ref::tree_from_text(text, max_nodes).parent; },
      nb::arg("text"), nb::arg("max_nodes"));
}

}  // namespace replayssm::py
