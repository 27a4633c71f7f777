// Mutation tests of the checks against the mode-aware FP64 reference (CPU only): for every mode of the emulation's
// mode list (modes_for(arch, false)), the emulation run in a wrong mode -- a swapped format, scaling, policy, rounding,
// GDN u-source, a flush point moved to L - 1 or L + 1, another SR seed, another SR counter -- or with its outputs
// replaced by zeros, a constant or delayed by one step, must FAIL check_vs_mode_aware of the right mode; the right
// mode must PASS. A mutation whose run is bit-identical to the right one (another seed under RNE, u-source under
// fp32, ...) is no mutation: it is listed as n/a and must pass. Prints the table mode family x swap and fails on any
// swap that is not detected.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "emulation/decode_api.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"

using namespace replayssm;
using namespace replayssm::emu;
using formats::FormatId;
using formats::Rounding;
using formats::Scaling;

namespace {

// The emulation with value heads h and h ^ 1 exchanged inside every sequence (k and q are shared by the pair: H / G is
// even), and exchanged back on the way out: the same arithmetic, but each head's SR bits come from its neighbour's head
// index -- an SR counter that is off.
class HeadSwapBackend final : public DecodeBackend {
 public:
  std::string name() const override { return "emulated, SR head index swapped"; }
  std::string device() const override { return inner_->device(); }
  void init(const Dims& d, const Mode& m, const float* S0) override {
    REQUIRE((d.H / d.G) % 2 == 0);
    d_ = d;
    lay_ = store_layout(m, d.V, d.K);
    std::vector<float> s(S0, S0 + d.state_elems());
    swap_heads(s.data(), 1, std::size_t(d.V) * std::size_t(d.K));
    inner_->init(d, m, s.data());
  }
  void step(const TokenBatch& in, float* o) override {
    Swapped sw(*this, in);
    inner_->step(sw.view, o);
    swap_heads(o, 1, std::size_t(d_.V));
  }
  void verify(const TokenBatch& in, float* o) override {
    Swapped sw(*this, in);
    inner_->verify(sw.view, o);
    swap_heads(o, in.T, std::size_t(d_.V));
  }
  void accept(const int* a) override { inner_->accept(a); }
  void state(float* S) override {
    inner_->state(S);
    swap_heads(S, 1, std::size_t(d_.V) * std::size_t(d_.K));
  }
  void stored(std::vector<std::uint8_t>& c, std::vector<std::uint8_t>& s) override {
    inner_->stored(c, s);
    swap_heads(c.data(), 1, lay_.code_bytes);
    if (lay_.scale_bytes) swap_heads(s.data(), 1, lay_.scale_bytes);
  }
  long flushes() const override { return inner_->flushes(); }

 private:
  // x holds [B][T][H][per]: exchange the blocks of heads h and h ^ 1.
  template <class E>
  void swap_heads(E* x, int T, std::size_t per) const {
    for (std::size_t bt = 0; bt < std::size_t(d_.B) * std::size_t(T); ++bt)
      for (int h = 0; h < d_.H; h += 2)
        std::swap_ranges(x + (bt * std::size_t(d_.H) + std::size_t(h)) * per,
                         x + (bt * std::size_t(d_.H) + std::size_t(h) + 1) * per,
                         x + (bt * std::size_t(d_.H) + std::size_t(h) + 1) * per);
  }
  struct Swapped {
    std::vector<float> a, beta, v, skip;
    TokenBatch view;
    Swapped(const HeadSwapBackend& be, const TokenBatch& in) : view(in) {
      const Dims& d = be.d_;
      const std::size_t n = std::size_t(d.B) * std::size_t(in.T) * std::size_t(d.H);
      a.assign(in.a, in.a + n);
      be.swap_heads(a.data(), in.T, 1);
      view.a = a.data();
      if (in.beta) {
        beta.assign(in.beta, in.beta + n);
        be.swap_heads(beta.data(), in.T, 1);
        view.beta = beta.data();
      }
      v.assign(in.v, in.v + n * std::size_t(d.V));
      be.swap_heads(v.data(), in.T, std::size_t(d.V));
      view.v = v.data();
      if (in.skip) {
        skip.assign(in.skip, in.skip + n * std::size_t(d.V));
        be.swap_heads(skip.data(), in.T, std::size_t(d.V));
        view.skip = skip.data();
      }
    }
  };
  std::unique_ptr<DecodeBackend> inner_ = make_emulated_backend();
  Dims d_;
  StoreLayout lay_;
};

enum class OutputMut { none, zeros, constant, delay };

struct Mutation {
  std::string swap;   // the column of the table
  std::string label;  // what exactly
  Mode backend;       // the mode the emulation runs in
  bool head_swap = false;
  std::uint32_t ref_sr_offset = 0;  // SR step offset of the reference (the emulation's counter is not settable)
  OutputMut out = OutputMut::none;
};

// The mode-aware case of the mutations: slow decay (the policies' stores stay far apart), a random initial state,
// steps through two flushes at L = 15, 16 and 17, a verify that keeps a different number of drafts per sequence.
Case mutation_case() {
  Case c{"mutations", std::vector<Op>(20, Op{}), -0.1, -0.005, false};
  c.ops.push_back(Op{4, true, 2});  // sequence 0 keeps 2 drafts, sequence 1 keeps 3
  for (int i = 0; i < 14; ++i) c.ops.push_back(Op{});
  return c;
}

std::string fmt_label(const Mode& m) {
  return std::string(formats::format_name(m.format)) + "/" + formats::scaling_name(m.scaling) + "/" +
         formats::rounding_name(m.rounding);
}

std::vector<Mutation> mutations_of(const Mode& m) {
  std::vector<Mutation> out;
  auto add = [&](const std::string& swap, const std::string& label, const Mode& b) {
    Mutation mu;
    mu.swap = swap;
    mu.label = label;
    mu.backend = b;
    out.push_back(mu);
  };
  for (FormatId f : formats::kAllFormats) {
    if (f == m.format) continue;
    Mode b = m;
    b.format = f;
    b.scaling = formats::scaling_valid(f, m.scaling) ? m.scaling : formats::default_scaling(f);
    b.rounding = formats::rounding_valid(f, m.rounding) ? m.rounding : Rounding::rne;
    add("format", "format " + fmt_label(b), b);
  }
  for (Scaling s : formats::kAllScalings) {
    if (s == m.scaling || !formats::scaling_valid(m.format, s)) continue;
    Mode b = m;
    b.scaling = s;
    add("scaling", std::string("scaling ") + formats::scaling_name(s), b);
  }
  for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split}) {
    if (p == m.policy) continue;
    Mode b = m;
    b.policy = p;
    b.usource = USource::hp;
    if (!b.replay()) b.records = Records::fp32;  // conventional decode keeps no records
    add("policy", std::string("policy ") + policy_name(p), b);
  }
  for (int dl : {-1, +1}) {
    Mode b = m;
    b.L = m.L + dl;
    add("L+-1", "L = " + std::to_string(b.L), b);
  }
  if (m.arch == Arch::gdn && m.split())
    for (USource u : {USource::hp, USource::lp, USource::recompute}) {
      if (u == m.usource) continue;
      Mode b = m;
      b.usource = u;
      add("u-source", std::string("u=") + usource_name(u), b);
    }
  if (m.replay()) {
    Mode b = m;
    b.records = m.bf16_records() ? Records::fp32 : Records::bf16;
    add("records", std::string("records ") + records_name(b.records), b);
  }
  if (formats::rounding_valid(m.format, Rounding::sr)) {
    Mode b = m;
    b.rounding = m.rounding == Rounding::sr ? Rounding::rne : Rounding::sr;
    add("rounding", std::string("rounding ") + formats::rounding_name(b.rounding), b);
  }
  {
    Mode b = m;
    b.seed = m.seed + 1;
    add("SR seed", "seed + 1", b);
  }
  {
    Mutation mu;
    mu.swap = "SR counter";
    mu.label = "SR head index of the neighbouring head (emulation)";
    mu.backend = m;
    mu.head_swap = true;
    out.push_back(mu);
    mu.label = "SR step + 1 (reference)";
    mu.head_swap = false;
    mu.ref_sr_offset = 1;
    out.push_back(mu);
  }
  for (OutputMut o : {OutputMut::zeros, OutputMut::constant, OutputMut::delay}) {
    Mutation mu;
    mu.swap = o == OutputMut::zeros ? "out=0" : o == OutputMut::constant ? "out=const" : "out delayed";
    mu.label = mu.swap;
    mu.backend = m;
    mu.out = o;
    out.push_back(mu);
  }
  return out;
}

// The outputs of a run with every token's output replaced by the one of the token before it in its sequence (the
// first by zeros).
std::vector<double> delayed(const std::vector<double>& o, const CaseInputs& in) {
  const Dims& d = in.shape.dims;
  std::vector<double> out(o.size(), 0.0);
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.H; ++h) {
      std::size_t base = 0;
      std::int64_t prev = -1;
      for (const Op& op : in.op_list) {
        for (int t = 0; t < op.T; ++t) {
          const std::size_t at = base + ((std::size_t(b) * std::size_t(op.T) + std::size_t(t)) * std::size_t(d.H) +
                                         std::size_t(h)) *
                                            std::size_t(d.V);
          if (prev >= 0) std::copy(o.begin() + prev, o.begin() + prev + d.V, out.begin() + std::ptrdiff_t(at));
          prev = std::int64_t(at);
        }
        base += std::size_t(d.B) * std::size_t(op.T) * std::size_t(d.H) * std::size_t(d.V);
      }
    }
  return out;
}

bool same_run(const CaseOutputs& a, const CaseOutputs& b) {
  return a.o == b.o && a.state == b.state && a.codes == b.codes && a.scales == b.scales && a.flushes == b.flushes;
}

struct Cell {
  int detected = 0, missed = 0, identical = 0;
};

// Which criteria a detected mutation failed: o(utput), s(tate), c (stored codes: illegal, layout, too many flips),
// f(lush or token count), z(ero guard).
struct Reasons {
  int out = 0, state = 0, codes = 0, counts = 0, zero = 0;
  void add(const CheckRow& r) {
    out += r.out.pass ? 0 : 1;
    state += r.state.pass ? 0 : 1;
    codes += r.why.find("stored") != std::string::npos || r.why.find("flipped") != std::string::npos ? 1 : 0;
    counts += r.why.find("flushes") != std::string::npos || r.why.find("token") != std::string::npos ? 1 : 0;
    zero += r.why.find("all-zero") != std::string::npos ? 1 : 0;
  }
};

std::string family_of(const Mode& m) {
  std::string f = std::string(arch_name(m.arch)) + " " + policy_name(m.policy);
  if (m.arch == Arch::gdn && m.split()) f += std::string(" u=") + usource_name(m.usource);
  if (m.bf16_records()) f += " rec=bf16";
  return f;
}

void run_mutations(Arch arch) {
  const Shape s = shapes_for("small", arch).at(0);
  const Case c = mutation_case();
  const CaseInputs in = make_inputs(s, c, 4242);
  auto emu = make_emulated_backend();
  HeadSwapBackend swapped;
  const std::vector<std::string> cols = {"format",   "scaling",    "policy", "L+-1",  "u-source",  "records", "rounding",
                                         "SR seed",  "SR counter", "out=0",  "out=const", "out delayed"};
  std::map<std::string, std::map<std::string, Cell>> table;
  std::map<std::string, Reasons> reasons;  // per column
  std::vector<std::string> families, misses;
  int controls = 0, control_fails = 0;
  std::vector<Mode> modes = modes_for(arch, false);
  for (const Mode& m : records_modes_for(arch)) modes.push_back(m);
  for (const Mode& m : modes) {
    const std::string fam = family_of(m);
    if (std::find(families.begin(), families.end(), fam) == families.end()) families.push_back(fam);
    const ModeAwareRun right = run_mode_aware(*emu, m, c, in);
    const CheckRow rr = check_vs_mode_aware(m, c, in, right);
    ++controls;
    if (!rr.pass) {
      ++control_fails;
      std::printf("  CONTROL FAILS %s %s: %s\n", arch_name(arch), rr.mode.c_str(), rr.why.c_str());
    }
    for (const Mutation& mu : mutations_of(m)) {
      ModeAwareOptions opt;
      opt.backend_mode = &mu.backend;
      opt.reference_sr_step_offset = mu.ref_sr_offset;
      ModeAwareRun run = mu.out == OutputMut::none ? run_mode_aware(mu.head_swap ? static_cast<DecodeBackend&>(swapped)
                                                                                 : *emu,
                                                                    m, c, in, opt)
                                                   : right;
      bool identical = false;
      if (mu.out == OutputMut::zeros) {
        std::fill(run.got.o.begin(), run.got.o.end(), 0.0);
      } else if (mu.out == OutputMut::constant) {
        double rms = 0.0;
        for (double x : run.ref.o) rms += x * x;
        std::fill(run.got.o.begin(), run.got.o.end(), std::sqrt(rms / double(run.ref.o.size())));
      } else if (mu.out == OutputMut::delay) {
        run.got.o = delayed(run.got.o, in);
      } else if (mu.ref_sr_offset) {
        identical = same_run(run.ref, right.ref) && run.stores.flips == right.stores.flips;
      } else {
        identical = same_run(run.got, right.got);
      }
      const CheckRow r = check_vs_mode_aware(m, c, in, run);
      Cell& cell = table[fam][mu.swap];
      if (identical) {
        ++cell.identical;
        if (!r.pass) {  // the same run as the right mode's: it must pass as the right mode does
          ++control_fails;
          std::printf("  CONTROL FAILS %s %s (%s, bit-identical run): %s\n", arch_name(arch), rr.mode.c_str(),
                      mu.label.c_str(), r.why.c_str());
        }
      } else if (r.pass) {
        ++cell.missed;
        misses.push_back(std::string(arch_name(arch)) + " " + rr.mode + ": " + mu.label + " passes (out rel-RMS " +
                         std::to_string(r.out.rel_rms) + ", state " + std::to_string(r.state.rel_rms) + ", flips " +
                         std::to_string(r.stores.flips) + ")");
      } else {
        ++cell.detected;
        reasons[mu.swap].add(r);
      }
    }
  }
  std::printf("\n%s: mutations detected / run (n/a: bit-identical to the right mode, must pass; %d right-mode runs, %d "
              "failed)\n%-32s",
              arch_name(arch), controls, control_fails, "mode family");
  for (const std::string& col : cols) std::printf(" %11s", col.c_str());
  std::printf("\n");
  for (const std::string& fam : families) {
    std::printf("%-32s", fam.c_str());
    for (const std::string& col : cols) {
      const Cell& cell = table[fam][col];
      char buf[32];
      if (cell.detected + cell.missed == 0) std::snprintf(buf, sizeof buf, "n/a");
      else std::snprintf(buf, sizeof buf, "%d/%d%s", cell.detected, cell.detected + cell.missed, cell.missed ? "!" : "");
      std::printf(" %11s", buf);
    }
    std::printf("\n");
  }
  std::printf("%-32s", "failed criteria (o/s/c/f/z)");
  for (const std::string& col : cols) {
    const Reasons& re = reasons[col];
    char buf[48];
    std::snprintf(buf, sizeof buf, "%d/%d/%d/%d/%d", re.out, re.state, re.codes, re.counts, re.zero);
    std::printf(" %11s", buf);
  }
  std::printf("\n  (o output, s final state, c stored codes, f flush/token count, z all-zero guard: detections failing "
              "each criterion)\n");
  if (!misses.empty()) {
    std::printf("NOT DETECTED (%zu):\n", misses.size());
    for (const std::string& s2 : misses) std::printf("  %s\n", s2.c_str());
  }
  CHECK(control_fails == 0);
  CHECK(misses.empty());
}

}  // namespace

TEST_CASE("GDN: every mutation of every mode fails the mode-aware check, the right mode passes", "[kernels][mutations]") {
  run_mutations(Arch::gdn);
}

TEST_CASE("Mamba-2: every mutation of every mode fails the mode-aware check, the right mode passes",
          "[kernels][mutations]") {
  run_mutations(Arch::mamba2);
}
