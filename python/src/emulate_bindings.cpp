// The CPU emulation of every decode mode (src/emulation/), and the mode-aware FP64 reference behind the same
// interface, step by step: what `validate` runs, fed the same bits (emu::gdn_tokens / mamba2_tokens).
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "emulation/decode_api.h"
#include "emulation/dump_cases.h"
#include "emulation/validation.h"

namespace replayssm::py {
namespace {

using namespace replayssm::emu;

class Decoder {
 public:
  Decoder(const std::string& arch, const std::string& mode, int B, int G, int H, int K, int V, int max_drafts,
          const std::optional<In<float>>& S0, const std::string& backend) {
    d_ = Dims{B, G, H, K, V};
    m_ = parse_mode(mode, parse_arch(arch));
    m_.max_drafts = max_drafts;
    check_mode(m_, d_);
    if (backend == "emulation") {
      be_ = make_emulated_backend();
    } else if (backend == "mode_aware") {
      be_ = make_mode_aware_reference();
    } else {
      throw std::invalid_argument("backend: expected 'emulation' or 'mode_aware', got '" + backend + "'");
    }
    be_->init(d_, m_, S0 ? data_of(*S0, d_.state_elems(), "initial_state") : nullptr);
  }

  Out<float> step(const TokenData& td) {
    if (pending_) throw std::invalid_argument("step: the last verify waits for accept()");
    if (td.T != 1) throw std::invalid_argument("step: one token per sequence (T = 1)");
    std::vector<float> o(std::size_t(d_.B) * d_.H * d_.V);
    be_->step(td.view(), o.data());
    return to_numpy(std::move(o), {std::size_t(d_.B), std::size_t(d_.H), std::size_t(d_.V)});
  }
  Out<float> verify(const TokenData& td) {
    if (pending_) throw std::invalid_argument("verify: the last verify waits for accept()");
    if (td.T < 1 || td.T > m_.max_drafts)
      throw std::invalid_argument("verify: T = " + std::to_string(td.T) + " drafts, expected 1.." +
                                  std::to_string(m_.max_drafts) + " (max_drafts)");
    std::vector<float> o(std::size_t(d_.B) * td.T * d_.H * d_.V);
    be_->verify(td.view(), o.data());
    pending_ = td.T;
    return to_numpy(std::move(o), {std::size_t(d_.B), std::size_t(td.T), std::size_t(d_.H), std::size_t(d_.V)});
  }
  void accept(const std::vector<int>& a) {
    if (!pending_) throw std::invalid_argument("accept: no verify is waiting");
    if (a.size() != std::size_t(d_.B))
      throw std::invalid_argument("accept: one count per sequence, expected " + std::to_string(d_.B));
    for (int x : a)
      if (x < 0 || x > pending_)
        throw std::invalid_argument("accept: counts must be in 0.." + std::to_string(pending_));
    be_->accept(a.data());
    pending_ = 0;
  }
  Out<float> state() {
    std::vector<float> S(d_.state_elems());
    be_->state(S.data());
    return to_numpy(std::move(S), {std::size_t(d_.B), std::size_t(d_.H), std::size_t(d_.V), std::size_t(d_.K)});
  }
  std::tuple<Out<std::uint8_t>, Out<std::uint8_t>> stored() {
    std::vector<std::uint8_t> c, s;
    be_->stored(c, s);
    const std::size_t heads = d_.heads(), cn = c.size() / heads, sn = s.size() / heads;
    return {to_numpy(std::move(c), {heads, cn}), to_numpy(std::move(s), {heads, sn})};
  }
  long flushes() const { return be_->flushes(); }
  std::string mode() const { return m_.name() + "/L=" + std::to_string(m_.L) + "/seed=" + std::to_string(m_.seed); }
  const Dims& dims() const { return d_; }

 private:
  Dims d_;
  Mode m_;
  std::unique_ptr<DecodeBackend> be_;
  int pending_ = 0;
};

}  // namespace

void bind_emulate(nb::module_& m) {
  nb::class_<TokenData>(m, "Tokens").def_ro("B", &TokenData::B).def_ro("T", &TokenData::T);
  m.def(
      "gdn_tokens",
      [](int B, int T, int Hk, int Hv, int K, int V, double scale, const In<double>& q, const In<double>& k,
         const In<double>& v, const In<double>& g, const In<double>& beta) {
        const std::size_t bt = std::size_t(B) * T;
        return gdn_tokens(B, T, Hk, Hv, K, V, scale, data_of(q, bt * Hk * K, "q"), data_of(k, bt * Hk * K, "k"),
                          data_of(v, bt * Hv * V, "v"), data_of(g, bt * Hv, "g"), data_of(beta, bt * Hv, "beta"));
      },
      nb::arg("B"), nb::arg("T"), nb::arg("Hk"), nb::arg("Hv"), nb::arg("K"), nb::arg("V"), nb::arg("scale"),
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("g"), nb::arg("beta"));
  m.def(
      "mamba2_tokens",
      [](int B, int T, int G, int H, int N, int P, const In<double>& x, const In<double>& Bm, const In<double>& C,
         const In<double>& dt, const In<double>& A, const std::optional<In<double>>& D) {
        const std::size_t bt = std::size_t(B) * T;
        return mamba2_tokens(B, T, G, H, N, P, data_of(x, bt * H * P, "x"), data_of(Bm, bt * G * N, "B"),
                             data_of(C, bt * G * N, "C"), data_of(dt, bt * H, "dt"), data_of(A, std::size_t(H), "A"),
                             D ? data_of(*D, std::size_t(H), "D") : nullptr);
      },
      nb::arg("B"), nb::arg("T"), nb::arg("G"), nb::arg("H"), nb::arg("N"), nb::arg("P"), nb::arg("x"),
      nb::arg("Bm"), nb::arg("C"), nb::arg("dt"), nb::arg("A"), nb::arg("D").none());
  m.def("parse_mode", [](const std::string& name, const std::string& arch) {
    const Mode md = parse_mode(name, parse_arch(arch));
    return md.name() + "/L=" + std::to_string(md.L) + "/seed=" + std::to_string(md.seed);
  });
  m.def("mode_names", [](const std::string& arch, bool main_only) {
    std::vector<std::string> out;
    for (const Mode& md : modes_for(parse_arch(arch), main_only)) out.push_back(md.name());
    return out;
  });
  nb::class_<Decoder>(m, "Decoder")
      .def(nb::init<const std::string&, const std::string&, int, int, int, int, int, int,
                    const std::optional<In<float>>&, const std::string&>(),
           nb::arg("arch"), nb::arg("mode"), nb::arg("B"), nb::arg("G"), nb::arg("H"), nb::arg("K"), nb::arg("V"),
           nb::arg("max_drafts"), nb::arg("initial_state").none(), nb::arg("backend"))
      .def("step", &Decoder::step)
      .def("verify", &Decoder::verify)
      .def("accept", &Decoder::accept)
      .def("state", &Decoder::state)
      .def("stored", &Decoder::stored)
      .def_prop_ro("flushes", &Decoder::flushes)
      .def_prop_ro("mode", &Decoder::mode);
}

}  // namespace replayssm::py
