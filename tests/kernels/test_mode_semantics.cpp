// The store semantics of the decode modes (reference/README.md, "what each mode stores and reads"), each checked
// against the CPU emulation with a small FP64 computation of the claimed rule and of the alternative it excludes; and
// the mode-aware reference itself: with FP32 stores it is the plain FP64 recurrence (to the FP32 floor) in every
// policy, driven through the DecodeBackend interface over the validation cases.
#include <Eigen/Core>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"
#include "reference/head_record.h"
#include "reference/mode_aware.h"
#include "sweep/mode_recurrence.h"

using namespace replayssm;
using namespace replayssm::emu;
using formats::FormatId;

namespace {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Mode mode(Arch a, Policy p, FormatId f, USource u = USource::hp) {
  Mode m;
  m.arch = a;
  m.policy = p;
  m.usource = u;
  m.format = f;
  m.scaling = formats::default_scaling(f);
  m.seed = 77;
  return m;
}

// Token t of op `op`, sequence b, value head h, in FP64 (as the emulation reads the FP32 inputs).
ref::HeadToken tok_of(const CaseInputs& in, std::size_t op, int b, int t, int h) {
  const Dims& d = in.shape.dims;
  const TokenData& td = in.ops[op];
  const std::size_t bt = std::size_t(b) * std::size_t(td.T) + std::size_t(t), g = std::size_t(h / (d.H / d.G));
  const std::size_t hv = bt * std::size_t(d.H) + std::size_t(h);
  ref::HeadToken k;
  k.a = td.a[hv];
  k.beta = td.beta.empty() ? 1.0 : double(td.beta[hv]);
  k.v = Eigen::Map<const Eigen::VectorXf>(td.v.data() + hv * d.V, d.V).cast<double>();
  k.k = Eigen::Map<const Eigen::VectorXf>(td.k.data() + (bt * d.G + g) * d.K, d.K).cast<double>();
  k.q = Eigen::Map<const Eigen::VectorXf>(td.q.data() + (bt * d.G + g) * d.K, d.K).cast<double>();
  if (!td.skip.empty()) k.skip = Eigen::Map<const Eigen::VectorXf>(td.skip.data() + hv * d.V, d.V).cast<double>();
  return k;
}

Eigen::MatrixXd S0_of(const CaseInputs& in, std::size_t hh) {
  const Dims& d = in.shape.dims;
  return Eigen::Map<const RowMajorF>(in.S0.data() + hh * std::size_t(d.V) * std::size_t(d.K), d.V, d.K).cast<double>();
}

// The store round trip of mode m for head hh at SR step `step` (the shared codecs, on the state rounded to FP32).
Eigen::MatrixXd Q(const Mode& m, const Dims& d, const Eigen::MatrixXd& S, std::size_t hh, std::uint32_t step) {
  std::vector<std::uint8_t> c(store_layout(m, d.V, d.K).code_bytes), s(store_layout(m, d.V, d.K).scale_bytes);
  const ref::StoreFn fn = [&](const float* x, std::uint32_t st, float* out) {
    encode_head(m, x, d.V, d.K, std::uint32_t(hh), st == ref::kInitStoreStep ? kInitStep : st, c.data(), s.data());
    decode_head(m, c.data(), s.data(), d.V, d.K, out);
  };
  return ref::store_round_trip(fn, S, step);
}

Eigen::VectorXd out_of(const Eigen::MatrixXd& S, const ref::HeadToken& t) {
  Eigen::VectorXd o = S * t.q;
  if (t.skip.size()) o += t.skip;
  return o;
}

// The emulation's output of token (op, b, t, h) in a run's flat output array.
Eigen::VectorXd emu_out(const CaseOutputs& r, const CaseInputs& in, std::size_t op, int b, int t, int h) {
  const Dims& d = in.shape.dims;
  std::size_t base = 0;
  for (std::size_t i = 0; i < op; ++i) base += std::size_t(d.B) * std::size_t(in.op_list[i].T) * d.H * d.V;
  const std::size_t at = base + ((std::size_t(b) * std::size_t(in.op_list[op].T) + std::size_t(t)) * d.H + h) * d.V;
  return Eigen::Map<const Eigen::VectorXd>(r.o.data() + at, d.V);
}

// Accumulates ||got - claim|| and ||got - alternative|| over heads, relative to ||claim||.
struct Distances {
  double num_claim = 0.0, num_alt = 0.0, den = 0.0;
  void add(const Eigen::VectorXd& got, const Eigen::VectorXd& claim, const Eigen::VectorXd& alt) {
    num_claim += (got - claim).squaredNorm();
    num_alt += (got - alt).squaredNorm();
    den += claim.squaredNorm();
  }
  double claim() const { return std::sqrt(num_claim / den); }
  double alt() const { return std::sqrt(num_alt / den); }
};

Shape small(Arch a) { return shapes_for("small", a).at(0); }

}  // namespace

TEST_CASE("the mode-aware reference with FP32 stores is the FP64 recurrence, every policy and case", "[kernels]") {
  for (Arch a : {Arch::gdn, Arch::mamba2}) {
    const Shape s = small(a);
    const auto cases = cases_for(16, 8, true, 60);
    auto ref_be = make_mode_aware_reference();
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const CaseInputs in = make_inputs(s, cases[i], 300 + i);
      const CaseOutputs fp64 = run_reference(in);
      for (const Mode& m : modes_for(a, true)) {
        if (m.format != FormatId::fp32) continue;
        const CaseOutputs got = run_backend(*ref_be, m, in);
        const Tolerance tol = tolerance_vs_mode_aware(m, s.dims.V, s.dims.K, fp64.n_tokens, 100.0).out_state;
        const Comparison co = compare(fp64.o, got.o, tol), cs = compare(fp64.state, got.state, tol);
        INFO(arch_name(a) << " " << m.name() << " " << cases[i].name << "\n out " << co.summary() << "\n state "
                          << cs.summary());
        CHECK(co.pass);
        CHECK(cs.pass);
        CHECK(got.n_tokens == fp64.n_tokens);
      }
    }
  }
}

TEST_CASE("a storing step's output reads the state before it is re-quantised", "[kernels]") {
  // conventional: every step; replay-shared: the flush step (its state from the decoded checkpoint); replay-split: the
  // flush step reads the materialised HP state. Claim: o = S q + skip with S unquantised; alternative: Q(S) q + skip.
  for (Arch a : {Arch::gdn, Arch::mamba2}) {
    const Shape s = small(a);
    const Dims& d = s.dims;
    const int L = 16;
    const Case c{"L steps", std::vector<Op>(std::size_t(L), Op{}), -0.1, -0.005, false};
    const CaseInputs in = make_inputs(s, c, 17);
    auto emu = make_emulated_backend();
    for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split}) {
      const Mode m = mode(a, p, FormatId::fp8_e4m3);
      const CaseOutputs got = run_backend(*emu, m, in);
      Distances dist;
      for (int b = 0; b < d.B; ++b)
        for (int h = 0; h < d.H; ++h) {
          const std::size_t hh = std::size_t(b) * d.H + h;
          // replay-split starts its recurrence from S0 itself, the others from the stored S0
          Eigen::MatrixXd S = p == Policy::replay_split ? S0_of(in, hh) : Q(m, d, S0_of(in, hh), hh, kInitStep);
          const int op = p == Policy::conventional_shared ? 0 : L - 1;  // the first storing step
          for (int t = 0; t <= op; ++t) {
            const ref::HeadToken tk = tok_of(in, std::size_t(t), b, 0, h);
            const Eigen::VectorXd o = ref::recurrent_step(a == Arch::gdn ? ref::Recurrence::kGdn : ref::Recurrence::kMamba2, S, tk);
            if (t == op) dist.add(emu_out(got, in, std::size_t(op), b, 0, h), o, out_of(Q(m, d, S, hh, std::uint32_t(op)), tk));
          }
        }
      INFO(arch_name(a) << " " << m.name() << ": claim " << dist.claim() << ", alternative " << dist.alt());
      CHECK(dist.claim() < 1e-5);
      CHECK(dist.alt() > 100.0 * dist.claim());
    }
  }
}

TEST_CASE("conventional verify chains its drafts without re-quantising between them", "[kernels]") {
  const Shape s = small(Arch::gdn);
  const Dims& d = s.dims;
  Case c{"verify", {}, -0.1, -0.005, false};
  c.ops.push_back(Op{4, true, 4});
  const CaseInputs in = make_inputs(s, c, 18);
  const Mode m = mode(Arch::gdn, Policy::conventional_shared, FormatId::fp8_e4m3);
  auto emu = make_emulated_backend();
  const CaseOutputs got = run_backend(*emu, m, in);
  Distances dist;
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.H; ++h) {
      const std::size_t hh = std::size_t(b) * d.H + h;
      Eigen::MatrixXd S = Q(m, d, S0_of(in, hh), hh, kInitStep), Sq = S;
      for (int t = 0; t < 4; ++t) {
        const ref::HeadToken tk = tok_of(in, 0, b, t, h);
        const Eigen::VectorXd o = ref::recurrent_step(ref::Recurrence::kGdn, S, tk);
        const Eigen::VectorXd oq = ref::recurrent_step(ref::Recurrence::kGdn, Sq, tk);  // re-quantised each draft
        Sq = Q(m, d, Sq, hh, std::uint32_t(t));
        if (t == 3) dist.add(emu_out(got, in, 0, b, t, h), o, oq);
      }
    }
  INFO("claim " << dist.claim() << ", alternative " << dist.alt());
  CHECK(dist.claim() < 1e-5);
  CHECK(dist.alt() > 100.0 * dist.claim());
}

TEST_CASE("GDN split u=lp: the flushing step's own u comes from the LP copy", "[kernels]") {
  const Shape s = small(Arch::gdn);
  const Dims& d = s.dims;
  const int L = 16;
  const Case c{"L steps", std::vector<Op>(std::size_t(L), Op{}), -0.1, -0.005, false};
  const CaseInputs in = make_inputs(s, c, 19);
  const Mode m = mode(Arch::gdn, Policy::replay_split, FormatId::fp8_e4m3, USource::lp);
  auto emu = make_emulated_backend();
  const CaseOutputs got = run_backend(*emu, m, in);  // its state after the flush: the HP checkpoint
  double num_claim = 0, num_alt = 0, den = 0;
  for (std::size_t hh = 0; hh < d.heads(); ++hh) {
    const int b = int(hh) / d.H, h = int(hh) % d.H;
    const Eigen::MatrixXd HP = S0_of(in, hh), LP = Q(m, d, HP, hh, kInitStep);
    std::vector<ref::Record> recs(static_cast<std::size_t>(L));
    Eigen::MatrixXd S_claim, S_alt;
    for (int own_from_hp = 0; own_from_hp < 2; ++own_from_hp) {
      for (int i = 0; i < L; ++i) {
        const ref::HeadToken tk = tok_of(in, std::size_t(i), b, 0, h);
        const Eigen::MatrixXd& src = (i == L - 1 && own_from_hp) ? HP : LP;
        recs[std::size_t(i)] = ref::Record{tk.a, Eigen::VectorXd(), tk.k};
        recs[std::size_t(i)].w = tk.beta * (tk.v - tk.a * ref::window_apply(src * tk.k, recs, i, tk.k));
      }
      (own_from_hp ? S_alt : S_claim) = ref::window_state(HP, recs, L);
    }
    const Eigen::MatrixXd G = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        got.state.data() + hh * std::size_t(d.V) * d.K, d.V, d.K);
    num_claim += (G - S_claim).squaredNorm();
    num_alt += (G - S_alt).squaredNorm();
    den += S_claim.squaredNorm();
  }
  const double claim = std::sqrt(num_claim / den), alt = std::sqrt(num_alt / den);
  INFO("claim " << claim << ", alternative " << alt);
  CHECK(claim < 1e-5);
  CHECK(alt > 100.0 * claim);
}

TEST_CASE("GDN split u=recompute: LP u's between flushes (as u=lp), HP u's at the flush (as u=hp)", "[kernels]") {
  const Shape s = small(Arch::gdn);
  const int L = 16;
  auto emu = make_emulated_backend();
  const Case before{"L-1 steps", std::vector<Op>(std::size_t(L - 1), Op{}), -0.1, -0.005, false};
  const Case at{"L steps", std::vector<Op>(std::size_t(L), Op{}), -0.1, -0.005, false};
  for (FormatId f : {FormatId::bf16, FormatId::fp8_e4m3}) {
    const CaseInputs in1 = make_inputs(s, before, 20), in2 = make_inputs(s, at, 20);
    const CaseOutputs rc1 = run_backend(*emu, mode(Arch::gdn, Policy::replay_split, f, USource::recompute), in1);
    const CaseOutputs lp1 = run_backend(*emu, mode(Arch::gdn, Policy::replay_split, f, USource::lp), in1);
    const CaseOutputs hp1 = run_backend(*emu, mode(Arch::gdn, Policy::replay_split, f, USource::hp), in1);
    CHECK(rc1.o == lp1.o);  // non-flush outputs: bit for bit u=lp's
    CHECK(rc1.o != hp1.o);
    const CaseOutputs rc2 = run_backend(*emu, mode(Arch::gdn, Policy::replay_split, f, USource::recompute), in2);
    const CaseOutputs hp2 = run_backend(*emu, mode(Arch::gdn, Policy::replay_split, f, USource::hp), in2);
    const CaseOutputs lp2 = run_backend(*emu, mode(Arch::gdn, Policy::replay_split, f, USource::lp), in2);
    CHECK(rc2.state == hp2.state);  // the flush: bit for bit u=hp's HP state and LP copy
    CHECK(rc2.codes == hp2.codes);
    CHECK(rc2.state != lp2.state);
  }
}

TEST_CASE("state(): conventional and replay-shared give the stored (re-quantised) state after a flush, split its HP",
          "[kernels]") {
  for (Arch a : {Arch::gdn, Arch::mamba2}) {
    const Shape s = small(a);
    const Dims& d = s.dims;
    const Case c{"2L steps", std::vector<Op>(32, Op{}), -0.1, -0.005, false};
    const CaseInputs in = make_inputs(s, c, 21);
    auto emu = make_emulated_backend();
    for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split}) {
      const Mode m = mode(a, p, FormatId::fp8_e4m3);
      const CaseOutputs got = run_backend(*emu, m, in);
      const StoreLayout lay = store_layout(m, d.V, d.K);
      std::vector<float> dec(d.state_elems());
      for (std::size_t hh = 0; hh < d.heads(); ++hh)
        decode_head(m, got.codes.data() + hh * lay.code_bytes, got.scales.data() + hh * lay.scale_bytes, d.V, d.K,
                    dec.data() + hh * std::size_t(d.V) * d.K);
      const std::vector<double> stored(dec.begin(), dec.end());
      INFO(arch_name(a) << " " << m.name());
      if (p == Policy::replay_split) CHECK(got.state != stored);
      else CHECK(got.state == stored);
    }
  }
}

TEST_CASE("split state drift stays at the FP32 level for Mamba-2 and GDN u=hp / u=recompute, not for u=lp",
          "[kernels]") {
  const Case c{"long slow decay", std::vector<Op>(160, Op{}), -0.05, -0.001, false};
  auto emu = make_emulated_backend();
  for (Arch a : {Arch::gdn, Arch::mamba2}) {
    const CaseInputs in = make_inputs(small(a), c, 22);
    const CaseOutputs fp64 = run_reference(in);
    for (USource u : {USource::hp, USource::recompute, USource::lp}) {
      if (a == Arch::mamba2 && u != USource::hp) continue;
      const Mode m = mode(a, Policy::replay_split, FormatId::fp8_e4m3, u);
      const double drift = compare(fp64.state, run_backend(*emu, m, in).state, Tolerance{1e9, 1e9, 0}).rel_rms;
      INFO(arch_name(a) << " " << m.name() << " state drift " << drift);
      if (u == USource::lp) CHECK(drift > 1e-4);
      else CHECK(drift < 1e-5);
    }
  }
}

TEST_CASE("Mamba-2 output drift of the sweep includes the D x skip in numerator and denominator", "[kernels]") {
  ref::Mamba2Inputs in;
  in.T = 20, in.H = 2, in.G = 1, in.P = 16, in.N = 32;
  std::vector<double>* arrays[] = {&in.x, &in.B, &in.C, &in.dt};
  const std::size_t sizes[] = {std::size_t(in.T * in.H * in.P), std::size_t(in.T * in.G * in.N),
                               std::size_t(in.T * in.G * in.N), std::size_t(in.T * in.H)};
  unsigned seed = 5;
  auto rnd = [&]() { return double(seed = seed * 1103515245u + 12345u) / 4294967296.0 - 0.5; };
  for (int i = 0; i < 4; ++i) {
    arrays[i]->resize(sizes[i]);
    for (double& e : *arrays[i]) e = i == 3 ? 0.1 + 0.5 * (rnd() + 0.5) : 2.0 * rnd();  // dt in [0.1, 0.6)
  }
  in.A = {-0.5, -1.0};
  in.D = {20.0, -15.0};  // a large skip: it dominates ||o||
  Mode m = mode(Arch::mamba2, Policy::replay_shared, FormatId::fp8_e4m3);
  auto emu = make_emulated_backend();
  sweep::ModeRecurrence mr(*emu, m);
  sweep::LayerDrift drift;
  const ref::LayerOutputs out = mr.run_mamba2(in, &drift);
  // the FP64 shadow on the FP32-rounded inputs, outputs with and without the skip
  std::vector<Eigen::MatrixXd> S(2, Eigen::MatrixXd::Zero(in.P, in.N));
  for (int t = 0; t < in.T; ++t) {
    double num = 0, den_with = 0, den_without = 0;
    for (int h = 0; h < in.H; ++h) {
      const double dt = in.dt[std::size_t(t * in.H + h)];
      ref::HeadToken k;
      k.a = double(float(std::exp(dt * in.A[std::size_t(h)])));
      k.v.resize(in.P), k.skip.resize(in.P), k.k.resize(in.N), k.q.resize(in.N);
      for (int p = 0; p < in.P; ++p) {
        const double x = in.x[std::size_t((t * in.H + h) * in.P + p)];
        k.v[p] = double(float(dt * x));
        k.skip[p] = double(float(in.D[std::size_t(h)] * x));
      }
      for (int n = 0; n < in.N; ++n) {
        k.k[n] = double(float(in.B[std::size_t(t * in.N + n)]));
        k.q[n] = double(float(in.C[std::size_t(t * in.N + n)]));
      }
      const Eigen::VectorXd o = ref::recurrent_step(ref::Recurrence::kMamba2, S[std::size_t(h)], k);
      const Eigen::VectorXd got = Eigen::Map<const Eigen::VectorXd>(out.o.data() + std::size_t((t * in.H + h) * in.P), in.P);
      num += (got - o).squaredNorm();
      den_with += o.squaredNorm();
      den_without += (o - k.skip).squaredNorm();
    }
    const double with = std::sqrt(num / den_with), without = std::sqrt(num / den_without);
    INFO("t " << t << " drift " << drift.output[std::size_t(t)] << " with skip " << with << " without " << without);
    CHECK(std::fabs(drift.output[std::size_t(t)] - with) <= 1e-6 * with + 1e-15);
    if (with > 0) CHECK(without > 1.5 * with);
  }
}
