#include "emulation/validation.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "emulation/mode_aware_backend.h"
#include "emulation/validation_detail.h"
#include "emulation/tolerances.h"
#include "reference/head_record.h"
#include "reference/mode_aware.h"

namespace replayssm::emu {

using detail::accepted_of;
using detail::base_row;
using detail::case_memory;
using detail::zero_guard;

std::vector<Shape> shapes_for(const std::string& which, Arch arch) {
  std::vector<Shape> out;
  const bool all = which == "all";
  if (which != "small" && which != "nemotron-h" && which != "qwen3.5" && !all)
    throw std::invalid_argument("unknown shapes '" + which + "' (expected small, nemotron-h, qwen3.5 or all)");
  if (which == "small" || all) {
    if (arch == Arch::gdn) out.push_back({"small", arch, Dims{2, 2, 4, 64, 32}});
    else out.push_back({"small", arch, Dims{2, 2, 4, 64, 16}});
  }
  if ((which == "qwen3.5" || all) && arch == Arch::gdn) out.push_back({"qwen3.5", arch, Dims{1, 16, 32, 128, 128}});
  if ((which == "nemotron-h" || all) && arch == Arch::mamba2)
    out.push_back({"nemotron-h", arch, Dims{1, 8, 128, 128, 64}});
  return out;
}

Case two_early_flushes_case(int L, int D) {
  Case c{"two early flushes", std::vector<Op>(std::size_t(L - 1), Op{}), -2.0, -0.01, false};
  c.ops.push_back(Op{D, true, D - 1});  // sequence b accepts (D - 1 + b) % (D + 1): D - 1, D
  c.ops.push_back(Op{std::min(4, D), true, 1});
  c.ops.push_back(Op{});
  return c;
}

Case step_at_capacity_case(int L, int D) {
  Case c{"step at capacity", std::vector<Op>(std::size_t(L - 1), Op{}), -2.0, -0.01, false};
  c.ops.push_back(Op{D, true, D});  // sequence b accepts (D + b) % (D + 1): D, 0
  for (int i = 0; i < 3; ++i) c.ops.push_back(Op{});
  return c;
}

std::vector<Case> cases_for(int L, int D, bool full, int long_steps) {
  auto steps = [](int n) { return std::vector<Op>(std::size_t(n), Op{}); };
  std::vector<Case> cs;
  cs.push_back({"T=1", steps(1), -2.0, -0.01, false});
  if (full) {
    cs.push_back({"T=1,zero-init", steps(1), -2.0, -0.01, true});
    cs.push_back({"T=L-1", steps(L - 1), -2.0, -0.01, false});
    cs.push_back({"T=L", steps(L), -2.0, -0.01, false});
  }
  cs.push_back({"T=L+1", steps(L + 1), -2.0, -0.01, false});
  cs.push_back({"long", steps(long_steps), -1.0, -0.01, false});
  if (full) {
    cs.push_back({"decay~0", steps(L + 3), -12.0, -6.0, false});
    cs.push_back({"decay~1", steps(2 * L + 5), -1e-4, -1e-6, false});
  }
  const int T = std::min(4, D);
  for (int a = 0; a <= T; ++a) {
    if (!full && a != 2) continue;
    Case c{"verify T=" + std::to_string(T) + " a=" + std::to_string(a), steps(L / 2 + 3), -2.0, -0.01, false};
    c.ops.push_back(Op{T, true, a});
    for (int i = 0; i < L; ++i) c.ops.push_back(Op{});
    c.ops.push_back(Op{T, true, (a + 1) % (T + 1)});
    c.ops.push_back(Op{});
    cs.push_back(c);
  }
  {
    // Verify of one draft (the tuned kernels run it grouped, in the split layout): accepted drafts take the window past
    // L - 1 records without a flush (a step would have flushed), then a rejected one, then steps that flush.
    Case c{"verify T=1", steps(L - 2), -2.0, -0.01, false};
    c.ops.push_back(Op{1, true, 1});
    c.ops.push_back(Op{1, true, 1});
    c.ops.push_back(Op{1, true, 0});
    c.ops.push_back(Op{});
    c.ops.push_back(Op{});
    cs.push_back(c);
  }
  if (full) {
    // Fill the buffer to capacity with accepted drafts, then a verify that must flush early first.
    Case c{"verify overflow", steps(L - 1), -2.0, -0.01, false};
    c.ops.push_back(Op{D, true, D});
    c.ops.push_back(Op{std::min(4, D), true, 2});
    c.ops.push_back(Op{});
    c.ops.push_back(Op{D, true, D});
    c.ops.push_back(Op{});
    c.ops.push_back(Op{});
    cs.push_back(c);
  }
  return cs;
}

std::vector<Case> tree_cases(int L, const std::vector<int>& parents, const std::string& label) {
  const int T = int(parents.size());
  const std::vector<int> depth = tree_depths(parents.data(), T);  // checks the tree
  const int deepest = int(std::max_element(depth.begin(), depth.end()) - depth.begin());
  auto steps = [](int n) { return std::vector<Op>(std::size_t(n), Op{}); };
  std::vector<Case> cs;
  Case c{"tree " + label + " a=deepest", steps(L / 2 + 3), -2.0, -0.01, false};
  c.ops.push_back(Op{T, true, deepest, parents});
  for (int i = 0; i < L; ++i) c.ops.push_back(Op{});
  c.ops.push_back(Op{T, true, T - 1, parents});
  c.ops.push_back(Op{});
  cs.push_back(c);
  // The window at L - 1 records, a path accepted on top: the next tree cannot fit and flushes early first.
  Case o{"tree " + label + " overflow", steps(L - 1), -2.0, -0.01, false};
  o.ops.push_back(Op{T, true, deepest, parents});
  o.ops.push_back(Op{T, true, 0, parents});
  o.ops.push_back(Op{});
  o.ops.push_back(Op{T, true, -1, parents});
  o.ops.push_back(Op{});
  cs.push_back(o);
  return cs;
}

Mode tree_mode(Mode m, int T) {
  m.max_drafts = T;
  return m;
}

namespace {

void fill_tokens(const Shape& s, const Case& c, int T, std::mt19937_64& rng, TokenData& td) {
  const Dims& d = s.dims;
  std::normal_distribution<double> nrm(0.0, 1.0);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const std::size_t BT = std::size_t(d.B) * T;
  td.B = d.B;
  td.T = T;
  td.a.resize(BT * d.H);
  td.v.resize(BT * d.H * d.V);
  td.k.resize(BT * d.G * d.K);
  td.q.resize(BT * d.G * d.K);
  for (auto& a : td.a) a = float(std::exp(c.g_lo + (c.g_hi - c.g_lo) * uni(rng)));
  if (s.arch == Arch::gdn) {
    td.beta.resize(BT * d.H);
    for (auto& b : td.beta) b = float(1.0 / (1.0 + std::exp(-nrm(rng))));
    for (auto& v : td.v) v = float(nrm(rng));
    const double qs = 1.0 / std::sqrt(double(d.K));
    for (std::size_t i = 0; i < BT * d.G; ++i) {
      for (auto* arr : {&td.k, &td.q}) {
        std::vector<double> x(std::size_t(d.K));
        double nn = 0.0;
        for (auto& e : x) e = nrm(rng), nn += e * e;
        nn = std::sqrt(nn);
        for (int j = 0; j < d.K; ++j)
          (*arr)[i * d.K + j] = float(x[std::size_t(j)] / nn * (arr == &td.q ? qs : 1.0));
      }
    }
  } else {
    td.skip.resize(td.v.size());
    for (std::size_t i = 0; i < BT * d.H; ++i) {
      const double dt = std::log1p(std::exp(nrm(rng) - 1.0));
      for (int p = 0; p < d.V; ++p) {
        const double x = nrm(rng);
        td.v[i * d.V + p] = float(dt * x);
        td.skip[i * d.V + p] = float(0.5 * x);
      }
    }
    const double bs = 1.0 / std::sqrt(double(d.K));
    for (auto& e : td.k) e = float(nrm(rng) * bs);
    for (auto& e : td.q) e = float(nrm(rng));
  }
}

ref::HeadToken head_token(const Shape& s, const TokenData& td, int b, int t, int h) {
  const Dims& d = s.dims;
  const std::size_t bt = std::size_t(b) * td.T + t;
  const int g = h / (d.H / d.G);
  ref::HeadToken tok;
  tok.a = td.a[bt * d.H + h];
  tok.beta = td.beta.empty() ? 1.0 : double(td.beta[bt * d.H + h]);
  tok.v = Eigen::Map<const Eigen::VectorXf>(td.v.data() + (bt * d.H + h) * d.V, d.V).cast<double>();
  tok.k = Eigen::Map<const Eigen::VectorXf>(td.k.data() + (bt * d.G + g) * d.K, d.K).cast<double>();
  tok.q = Eigen::Map<const Eigen::VectorXf>(td.q.data() + (bt * d.G + g) * d.K, d.K).cast<double>();
  if (!td.skip.empty())
    tok.skip = Eigen::Map<const Eigen::VectorXf>(td.skip.data() + (bt * d.H + h) * d.V, d.V).cast<double>();
  return tok;
}

// Outputs of one head over an op's drafts, [B][T][H][V].
std::size_t draft_index(const Dims& d, int T, int b, int t, int h) {
  return ((std::size_t(b) * std::size_t(T) + std::size_t(t)) * std::size_t(d.H) + std::size_t(h)) * std::size_t(d.V);
}

}  // namespace

CaseInputs make_inputs(const Shape& s, const Case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  CaseInputs in;
  in.shape = s;
  in.op_list = c.ops;
  in.S0.assign(s.dims.state_elems(), 0.0f);
  if (!c.zero_init) {
    std::normal_distribution<double> nrm(0.0, 0.5);
    for (auto& x : in.S0) x = float(nrm(rng));
  }
  for (const Op& op : c.ops) {
    in.ops.emplace_back();
    fill_tokens(s, c, op.T, rng, in.ops.back());
  }
  return in;
}

CaseInputs inputs_from_tokens(const Shape& s, const TokenData& steps, int max_tokens) {
  CaseInputs in;
  in.shape = s;
  in.S0.assign(s.dims.state_elems(), 0.0f);
  const Dims& d = s.dims;
  const int T = std::min(steps.T, max_tokens);
  for (int t = 0; t < T; ++t) {
    TokenData td;
    td.B = 1;
    td.T = 1;
    auto slice = [&](const std::vector<float>& src, std::size_t per, std::vector<float>& dst) {
      if (src.empty()) return;
      dst.assign(src.begin() + std::ptrdiff_t(t * per), src.begin() + std::ptrdiff_t((t + 1) * per));
    };
    slice(steps.a, std::size_t(d.H), td.a);
    slice(steps.beta, std::size_t(d.H), td.beta);
    slice(steps.v, std::size_t(d.H) * d.V, td.v);
    slice(steps.k, std::size_t(d.G) * d.K, td.k);
    slice(steps.q, std::size_t(d.G) * d.K, td.q);
    slice(steps.skip, std::size_t(d.H) * d.V, td.skip);
    in.ops.push_back(std::move(td));
    in.op_list.push_back(Op{});
  }
  return in;
}

int accepted_node(const Op& op, int b) { return (op.accept + 1 + b) % (op.T + 1) - 1; }

int committed_by(const Op& op, int b) {
  if (!op.verify) return 1;
  if (op.tree.empty()) return accepted_of(op, b);
  return int(tree_path(op.tree.data(), accepted_node(op, b)).size());
}

CaseOutputs run_reference(const CaseInputs& in) {
  const Shape& s = in.shape;
  const Dims& d = s.dims;
  const ref::Recurrence rec = s.arch == Arch::gdn ? ref::Recurrence::kGdn : ref::Recurrence::kMamba2;
  std::vector<Eigen::MatrixXd> S(d.heads());
  for (std::size_t hh = 0; hh < d.heads(); ++hh)
    S[hh] = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                in.S0.data() + hh * d.V * d.K, d.V, d.K)
                .cast<double>();
  CaseOutputs out;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const Op& op = in.op_list[i];
    const TokenData& td = in.ops[i];
    std::vector<double> o(std::size_t(d.B) * op.T * d.H * d.V);
    for (int b = 0; b < d.B; ++b)
      for (int h = 0; h < d.H; ++h) {
        const std::size_t hh = std::size_t(b) * d.H + h;
        if (!op.tree.empty()) {  // every node stepped from its parent's state; the accepted node's is kept
          std::vector<Eigen::MatrixXd> node_S(std::size_t(op.T));
          for (int t = 0; t < op.T; ++t) {
            const int p = op.tree[std::size_t(t)];
            node_S[std::size_t(t)] = p < 0 ? S[hh] : node_S[std::size_t(p)];
            const Eigen::VectorXd ot = ref::recurrent_step(rec, node_S[std::size_t(t)], head_token(s, td, b, t, h));
            for (int r = 0; r < d.V; ++r) o[draft_index(d, op.T, b, t, h) + std::size_t(r)] = ot[r];
          }
          if (accepted_node(op, b) >= 0) S[hh] = node_S[std::size_t(accepted_node(op, b))];
          continue;
        }
        Eigen::MatrixXd Sw = S[hh];
        const int keep = op.verify ? accepted_of(op, b) : 1;
        for (int t = 0; t < op.T; ++t) {
          const Eigen::VectorXd ot = ref::recurrent_step(rec, Sw, head_token(s, td, b, t, h));
          for (int r = 0; r < d.V; ++r) o[((std::size_t(b) * op.T + t) * d.H + h) * d.V + r] = ot[r];
          if (t + 1 == keep) S[hh] = Sw;
        }
      }
    out.o.insert(out.o.end(), o.begin(), o.end());
    out.n_tokens += committed_by(op, 0);
  }
  out.state.resize(d.state_elems());
  for (std::size_t hh = 0; hh < d.heads(); ++hh)
    for (int r = 0; r < d.V; ++r)
      for (int c = 0; c < d.K; ++c) out.state[(hh * d.V + r) * d.K + c] = S[hh](r, c);
  return out;
}

CaseOutputs run_backend(DecodeBackend& be, const Mode& m, const CaseInputs& in) {
  const Dims& d = in.shape.dims;
  Mode mm = m;
  mm.arch = in.shape.arch;
  be.init(d, mm, in.S0.data());
  CaseOutputs out;
  std::vector<float> o;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const Op& op = in.op_list[i];
    o.assign(std::size_t(d.B) * op.T * d.H * d.V, 0.0f);
    if (op.verify && !op.tree.empty()) {
      be.verify_tree(in.ops[i].view(), op.tree.data(), o.data());
      std::vector<int> node(std::size_t(d.B));
      for (int b = 0; b < d.B; ++b) node[std::size_t(b)] = accepted_node(op, b);
      be.accept_path(node.data());
      out.n_tokens += committed_by(op, 0);
    } else if (op.verify) {
      be.verify(in.ops[i].view(), o.data());
      std::vector<int> acc(std::size_t(d.B));
      for (int b = 0; b < d.B; ++b) acc[std::size_t(b)] = accepted_of(op, b);
      be.accept(acc.data());
      out.n_tokens += acc[0];
    } else {
      be.step(in.ops[i].view(), o.data());
      out.n_tokens += 1;
    }
    out.o.insert(out.o.end(), o.begin(), o.end());
  }
  std::vector<float> S(d.state_elems());
  be.state(S.data());
  out.state.assign(S.begin(), S.end());
  be.stored(out.codes, out.scales);
  out.flushes = be.flushes();
  return out;
}

CheckRow check_vs_reference(const Mode& m, const Case& c, const CaseInputs& in, const CaseOutputs& ref,
                            const CaseOutputs& got) {
  CheckRow row = base_row(m, c, in, "fp64");
  Mode mm = m;
  mm.arch = in.shape.arch;
  row.tol = tolerance_vs_fp64(mm, in.shape.dims.V, in.shape.dims.K, ref.n_tokens, case_memory(c));
  row.out = compare(ref.o, got.o, row.tol);
  row.state = compare(ref.state, got.state, row.tol);
  row.why = zero_guard(ref, got);
  row.pass = row.out.pass && row.state.pass && ref.n_tokens == got.n_tokens && row.why.empty();
  return row;
}

CheckRow check_vs_emulation(const Mode& m, const Case& c, const CaseInputs& in, const CaseOutputs& emu,
                            const CaseOutputs& got) {
  CheckRow row = base_row(m, c, in, "emulated");
  row.tol = kEmulationTolerance;
  row.out = compare(emu.o, got.o, row.tol);
  row.state = compare(emu.state, got.state, row.tol);
  std::size_t same = 0, n = 0;
  if (emu.codes.size() == got.codes.size() && emu.scales.size() == got.scales.size()) {
    for (std::size_t i = 0; i < emu.codes.size(); ++i) same += emu.codes[i] == got.codes[i];
    for (std::size_t i = 0; i < emu.scales.size(); ++i) same += emu.scales[i] == got.scales[i];
    n = emu.codes.size() + emu.scales.size();
  }
  row.bits_identical = n ? double(same) / double(n) : 0.0;
  row.pass = row.out.pass && row.state.pass && row.bits_identical >= kMinIdenticalBytes && emu.flushes == got.flushes;
  return row;
}

std::vector<Mode> modes_for(Arch a, bool main_only) {
  using formats::FormatId;
  using formats::Rounding;
  using formats::Scaling;
  struct F {
    FormatId f;
    Scaling s;
    Rounding r;
  };
  std::vector<F> fs = {{FormatId::fp32, Scaling::none, Rounding::rne},
                       {FormatId::bf16, Scaling::none, Rounding::rne},
                       {FormatId::fp8_e4m3, Scaling::row, Rounding::rne},
                       {FormatId::nvfp4, Scaling::block, Rounding::rne}};
  if (!main_only) {
    fs.push_back({FormatId::fp16, Scaling::none, Rounding::rne});
    fs.push_back({FormatId::bf16, Scaling::none, Rounding::sr});
    fs.push_back({FormatId::fp8_e4m3, Scaling::head, Rounding::rne});
    fs.push_back({FormatId::fp8_e4m3, Scaling::block, Rounding::rne});
    fs.push_back({FormatId::fp8_e4m3, Scaling::row, Rounding::sr});
    fs.push_back({FormatId::fp8_e4m3, Scaling::row, Rounding::philox});
    fs.push_back({FormatId::bf16, Scaling::none, Rounding::philox});
    fs.push_back({FormatId::fp8_e5m2, Scaling::row, Rounding::rne});
    fs.push_back({FormatId::int8, Scaling::row, Rounding::rne});
    fs.push_back({FormatId::int8, Scaling::head, Rounding::rne});
    fs.push_back({FormatId::nvfp4, Scaling::block, Rounding::sr});
    fs.push_back({FormatId::mxfp8, Scaling::block, Rounding::rne});
    fs.push_back({FormatId::mxfp4, Scaling::block, Rounding::rne});
    fs.push_back({FormatId::int8, Scaling::column, Rounding::rne});
    fs.push_back({FormatId::int8, Scaling::column, Rounding::sr});
    fs.push_back({FormatId::fp8_e4m3, Scaling::column, Rounding::rne});
    fs.push_back({FormatId::fp8_e4m3, Scaling::column, Rounding::sr});
    fs.push_back({FormatId::fp8_e4m3, Scaling::tile, Rounding::rne});
    fs.push_back({FormatId::fp8_e4m3, Scaling::tile, Rounding::sr});
  }
  std::vector<formats::FormatSpec> specs;
  for (const F& f : fs) specs.push_back({f.f, f.s, f.r});
  return modes_of(a, specs);
}

std::vector<Mode> fine_modes_for(Arch a) {
  using formats::FormatId;
  using formats::Rounding;
  using formats::Scaling;
  return modes_of(a, {{FormatId::int16, Scaling::column, Rounding::rne},
                      {FormatId::int16, Scaling::column, Rounding::sr},
                      {FormatId::int16, Scaling::row, Rounding::rne},
                      {FormatId::bf16x2, Scaling::none, Rounding::rne},
                      {FormatId::int8_ef, Scaling::column, Rounding::rne},
                      {FormatId::int8_ef, Scaling::row, Rounding::rne}});
}

std::vector<Mode> records_modes_for(Arch a) {
  using formats::FormatId;
  using formats::Rounding;
  using formats::Scaling;
  std::vector<Mode> out;
  for (Mode m : modes_of(a, {{FormatId::fp32, Scaling::none, Rounding::rne},
                             {FormatId::fp8_e4m3, Scaling::row, Rounding::rne}}))
    if (m.replay()) {
      m.records = Records::bf16;
      out.push_back(m);
    }
  return out;
}

std::vector<Mode> modes_of(Arch a, const std::vector<formats::FormatSpec>& specs) {
  std::vector<Mode> out;
  for (const formats::FormatSpec& f : specs) {
    Mode m;
    m.arch = a;
    m.format = f.format;
    m.scaling = f.scaling;
    m.rounding = f.rounding;
    m.seed = 1234;
    for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split}) {
      m.policy = p;
      if (a == Arch::gdn && p == Policy::replay_split) {
        for (USource u : {USource::hp, USource::lp, USource::recompute}) {
          m.usource = u;
          out.push_back(m);
        }
        m.usource = USource::hp;
      } else {
        out.push_back(m);
      }
    }
  }
  return out;
}

namespace detail {

int accepted_of(const Op& op, int b) { return (op.accept + b) % (op.T + 1); }
// "all-zero output" / "all-zero state" where the reference's is not zero: fails whatever the tolerance says.
std::string zero_guard(const CaseOutputs& ref, const CaseOutputs& got) {
  auto all_zero = [](const std::vector<double>& x) {
    return std::all_of(x.begin(), x.end(), [](double e) { return e == 0.0; });
  };
  std::string why;
  if (!ref.o.empty() && all_zero(got.o) && !all_zero(ref.o)) why += "all-zero output; ";
  if (!ref.state.empty() && all_zero(got.state) && !all_zero(ref.state)) why += "all-zero state; ";
  return why;
}

// The effective memory 1 / (1 - a_max) of a case's decays.
double case_memory(const Case& c) { return 1.0 / std::max(1e-12, 1.0 - std::exp(c.g_hi)); }

CheckRow base_row(const Mode& m, const Case& c, const CaseInputs& in, const char* against) {
  CheckRow row;
  row.arch = arch_name(in.shape.arch);
  bool verify = false, tree = false;
  for (const Op& op : in.op_list) verify = verify || op.verify, tree = tree || !op.tree.empty();
  row.kernel = std::string(arch_name(in.shape.arch)) + (tree ? ".tree" : verify ? ".verify" : ".decode");
  Mode mm = m;
  mm.arch = in.shape.arch;
  row.mode = mm.name();
  row.case_name = c.name;
  row.shape = in.shape.name;
  row.against = against;
  return row;
}
}  // namespace detail

}  // namespace replayssm::emu
