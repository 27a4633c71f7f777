// The launch plan (launch_plan.h): the override's parser and plan_launch, host code only (built with or without CUDA).
#include "kernels/launch_plan.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace replayssm::kern {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

int parse_count(const std::string& key, const std::string& v, const char* accepts) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > (1 << 20))
    throw std::invalid_argument("plan: " + key + "=" + v + ": expected " + accepts);
  return static_cast<int>(n);
}

bool is_real(const Problem& p) { return real_head_dims(p.gdn(), p.K, p.V); }
int state_bits(formats::FormatId f) {
  return f == formats::FormatId::fp32 ? 32 : (f == formats::FormatId::bf16 || f == formats::FormatId::fp16) ? 16 : 8;
}

}  // namespace

PlanOverride parse_plan_override(const std::string& s) {
  PlanOverride o;
  if (trim(s).empty()) return o;
  for (const std::string& item_raw : split(s, ',')) {
    const std::string item = trim(item_raw);
    const auto eq = item.find('=');
    if (item.empty() || eq == std::string::npos)
      throw std::invalid_argument("plan: '" + item + "': expected key=value (keys: kernel, layout, heads, slices, hint, "
                                  "records, dots, pdl, step, conv)");
    const std::string key = trim(item.substr(0, eq)), v = trim(item.substr(eq + 1));
    if (key == "kernel") {
      if (v != "auto" && v != "reference") throw std::invalid_argument("plan: kernel=" + v + ": expected auto|reference");
      o.reference = v == "reference";
    } else if (key == "layout") {
      using L = PlanOverride::Layout;
      if (v == "auto") o.layout = L::automatic;
      else if (v == "combined") o.layout = L::combined;
      else if (v == "split") o.layout = L::split;
      else if (v == "fused") o.layout = L::fused;
      else throw std::invalid_argument("plan: layout=" + v + ": expected auto|combined|split|fused");
    } else if (key == "heads") {
      o.heads = parse_count(key, v, "a count >= 0 (0: the rule)");
    } else if (key == "slices") {
      o.slices = v == "whole" ? kWholeHead : parse_count(key, v, "whole or a count >= 0 (0: the rule)");
    } else if (key == "hint") {
      if (v == "exact") o.hint = kExactHint;
      else if (v == "unknown") o.hint = kUnknownHint;
      else {
        o.hint = parse_count(key, v, "exact, unknown or a count >= 1");
        if (o.hint < 1) throw std::invalid_argument("plan: hint=" + v + ": expected exact, unknown or a count >= 1");
      }
    } else if (key == "records") {
      if (v != "auto" && v != "generic") throw std::invalid_argument("plan: records=" + v + ": expected auto|generic");
      o.generic_records = v == "generic";
    } else if (key == "dots") {
      if (v != "exact" && v != "tc") throw std::invalid_argument("plan: dots=" + v + ": expected exact|tc");
      o.tc_dots = v == "tc";
    } else if (key == "pdl") {
      if (v != "auto" && v != "off") throw std::invalid_argument("plan: pdl=" + v + ": expected auto|off");
      o.no_pdl = v == "off";
    } else if (key == "step") {
      using S = PlanOverride::Step;
      if (v == "auto") o.step = S::automatic;
      else if (v == "head") o.step = S::head;
      else if (v == "slice") o.step = S::slice;
      else throw std::invalid_argument("plan: step=" + v + ": expected auto|head|slice");
    } else if (key == "conv") {
      using Cv = PlanOverride::Conv;
      if (v == "auto") o.conv = Cv::automatic;
      else if (v == "lane") o.conv = Cv::lane;
      else if (v == "row8") o.conv = Cv::row8;
      else if (v == "row8x2") o.conv = Cv::row8x2;
      else if (v == "row8x4") o.conv = Cv::row8x4;
      else throw std::invalid_argument("plan: conv=" + v + ": expected auto|lane|row8|row8x2|row8x4");
    } else {
      throw std::invalid_argument("plan: unknown key '" + key +
                                  "' (keys: kernel, layout, heads, slices, hint, records, dots, pdl, step, conv)");
    }
  }
  o.text = to_string(o);
  return o;
}

std::string to_string(const PlanOverride& o) {
  std::vector<std::string> w;
  if (o.reference) w.push_back("kernel=reference");
  static const char* const kLayouts[] = {"auto", "combined", "split", "fused"};
  if (o.layout != PlanOverride::Layout::automatic) w.push_back(std::string("layout=") + kLayouts[int(o.layout)]);
  if (o.heads > 0) w.push_back("heads=" + std::to_string(o.heads));
  if (o.slices > 0) w.push_back(o.slices >= kWholeHead ? "slices=whole" : "slices=" + std::to_string(o.slices));
  if (o.hint == kUnknownHint) w.push_back("hint=unknown");
  else if (o.hint > 0) w.push_back("hint=" + std::to_string(o.hint));
  if (o.generic_records) w.push_back("records=generic");
  if (o.tc_dots) w.push_back("dots=tc");
  if (o.no_pdl) w.push_back("pdl=off");
  if (o.step != PlanOverride::Step::automatic)
    w.push_back(o.step == PlanOverride::Step::head ? "step=head" : "step=slice");
  static const char* const kConv[] = {"auto", "lane", "row8", "row8x2", "row8x4"};
  if (o.conv != PlanOverride::Conv::automatic) w.push_back(std::string("conv=") + kConv[int(o.conv)]);
  std::string s;
  for (const auto& x : w) s += (s.empty() ? "" : ",") + x;
  return s;
}

PlanOverride plan_override_from_env() {
  const char* e = std::getenv("REPLAYSSM_PLAN");
  try {
    return parse_plan_override(e ? e : "");
  } catch (const std::invalid_argument& ex) {
    throw std::invalid_argument(std::string("REPLAYSSM_PLAN: ") + ex.what());
  }
}

PlanOverride resolve_plan_override(const std::string& option) {
  PlanOverride env = plan_override_from_env();
  if (trim(option).empty()) return env;
  const std::string joined = env.text.empty() ? option : env.text + "," + option;  // later keys win
  return parse_plan_override(joined);
}

Problem make_problem(const emu::Mode& m, const emu::Dims& d, Op op, int T, long long flushing, int early) {
  Problem p;
  p.arch = m.arch, p.op = op, p.format = m.format, p.scaling = m.scaling, p.rounding = m.rounding;
  p.policy = m.policy, p.usource = m.usource, p.records = m.records;
  p.B = d.B, p.G = d.G, p.H = d.H, p.K = d.K, p.V = d.V, p.T = T, p.L = m.L, p.cap = m.capacity();
  p.max_drafts = m.max_drafts, p.flushing = flushing, p.early = early;
  return p;
}

void assume_layouts_fit(Problem& p) {
  p.head_fits = p.V % 4 == 0;
  p.group_fits = p.V % 4 == 0;
  p.tc_verify_fits = is_real(p);
}

const char* layout_name(Layout l) {
  static const char* const k[] = {"none", "conventional", "combined", "split", "fused"};
  return k[int(l)];
}
const char* hot_name(Hot h) {
  static const char* const k[] = {"none", "head", "group", "head_step", "group_verify", "slice_step"};
  return k[int(h)];
}
const char* flush_name(Flush f) {
  static const char* const k[] = {"none", "generic", "fold_shared", "fold_split"};
  return k[int(f)];
}

std::string to_string(const LaunchPlan& p) {
  if (p.engine == Engine::reference) return "reference (" + p.reason + ")";
  std::ostringstream s;
  s << "layout=" << layout_name(p.layout);
  if (p.layout == Layout::conventional || p.layout == Layout::combined) {
    if (p.conv_row8) s << " row8";
    if (p.conv_row8 && p.conv_groups > 1) s << "x" << p.conv_groups;
    if (p.real_dims) s << " real";
    return s.str();
  }
  s << " hot=" << hot_name(p.hot) << " flush=" << flush_name(p.flush);
  if (p.tc_dots) s << " dots=tc";
  if (p.fixed_records) s << " records=fixed";
  if (p.real_dims) s << " real";
  s << " heads=" << p.group_heads << " slices=" << p.flush_slices << " flush_seqs=" << p.flush_seqs;
  if (p.layout == Layout::fused) s << " fused_rows=" << p.fused_rows << " stride=" << p.fused_stride;
  if (p.pdl) s << " pdl";
  return s.str();
}

bool tuned_applies(const Problem& p, std::string* why) {
  const auto no = [&](const char* r) {
    if (why) *why = r;
    return false;
  };
  using formats::FormatId;
  const bool every_op = p.format == FormatId::fp32 || p.format == FormatId::fp8_e4m3;
  const bool conventional = p.format == FormatId::bf16 || p.format == FormatId::fp16 ||
                            p.format == FormatId::fp8_e5m2 || p.format == FormatId::int8;
  if (!every_op && !(conventional && !p.replay())) return no("format not instantiated in the tuned kernels");
  if (p.op == Op::state) return no("materialise op");
  if (p.op == Op::tree) return no("tree verify");
  if (p.K > 128 || p.K % 4 != 0) return no("K > 128 or K % 4 != 0");
  if (p.V > 8 * 32) return no("V > 256");
  if (p.L < 2) return no("L < 2");
  if (p.cap > 64) return no("buffer capacity > 64");
  if (p.scaling == formats::Scaling::head) return no("head scaling");
  if (p.scaling == formats::Scaling::column || p.scaling == formats::Scaling::tile) return no("column or tile scaling");
  if (p.op == Op::verify && p.T > p.max_drafts) return no("T > max_drafts");
  if (p.cap + p.T > 256) return no("records + drafts > 256");
  if (p.replay() && (static_cast<long long>(p.B) * p.H > (1LL << 17) || p.B > 65535 || p.H > 65535))
    return no("B H > 131072 heads");
  return true;
}

bool conv_row8_rule(int state_bits, bool step, long long ctas, int sms) {
  return state_bits < 32 || (step && ctas <= 2LL * sms);
}

int conv_slices_cap(int state_bits, int nsplit, int want) {
  int g = std::min(want, state_bits == 8 ? 4 : state_bits == 16 ? 2 : 1);
  while (g > nsplit) g /= 2;
  return std::max(1, g);
}

int conv_slices_rule(formats::FormatId f, int nsplit, long long heads, int sms) {
  const int bits = state_bits(f);
  if (f == formats::FormatId::int8 || bits >= 32) return 1;
  int g = conv_slices_cap(bits, nsplit, 4);
  if (bits == 8)
    while (g > 1 && 2 * heads * ((nsplit + g - 1) / g) < sms) g /= 2;  // the launcher's grid at g slices per CTA
  return g;
}

int group_heads_rule(int B, int G, int H, int drafts, int cap, int sms) {
  if (G <= 0 || H <= 0 || H % G != 0) return 1;
  const int per = H / G;
  int g = per & -per;
  if (cap > 0) {
    while (g > cap) g /= 2;
    return g;
  }
  if (drafts < kMinGroupDrafts) return 1;
  const long long heads = static_cast<long long>(B) * H;
  while (g > 2 && heads / g < static_cast<long long>(kMinGroupCtasPerSm) * sms) g /= 2;
  if (g == 2 && heads / 2 < static_cast<long long>(kMinGroupCtasPerSm) * sms &&
      2 * (heads / 2) < static_cast<long long>(kMinPairCtasPerSmX2) * sms)
    g = 1;
  return g;
}

bool kernel_split_rule(int state_bits, int drafts, bool recompute, bool fp32_step_kernel) {
  if (drafts >= 1) return true;
  if (recompute) return false;
  return state_bits < 32 || fp32_step_kernel;
}

int flush_slices_rule(long long flushing_seqs, int H, int nsplit, int sms) {
  const long long slices = flushing_seqs * H * nsplit, slots = static_cast<long long>(kFlushCtasPerSm) * sms;
  if (nsplit <= 1 || slots <= 0 || slices <= slots) return 1;
  int fs = static_cast<int>(std::min<long long>(nsplit, (slices + slots - 1) / slots));
  while (fs < nsplit && flushing_seqs * H * ((nsplit + fs - 1) / fs) > slots) ++fs;  // the fewest CTAs that fit
  return fs;
}

bool slice_step_rule(int B, int H, int nsplit, int sms) {
  return nsplit > 2 && static_cast<long long>(B) * H < static_cast<long long>(kSliceStepHeadsPerSm) * sms;
}

int fp32_flush_slices_rule(long long flushing_seqs, int B, int H, int nsplit, int sms) {
  if (nsplit <= 1 || flushing_seqs >= B) return 1;
  if (flushing_seqs * H * nsplit >= sms) return nsplit;
  return std::max(1, nsplit / 2);
}

int step_flush_slices(int forced, long long flushing_seqs, int early_hint, bool lean_flush, int H, int nsplit,
                      int sms, int fp32_batch) {
  if (early_hint != 0 || !lean_flush || nsplit <= 1) return 1;
  if (forced > 0) return std::min(forced, nsplit);
  if (fp32_batch > 0) return fp32_flush_slices_rule(flushing_seqs, fp32_batch, H, nsplit, sms);
  return flush_slices_rule(flushing_seqs, H, nsplit, sms);
}

int fused_stride_rule(int B, int F, int spread) {
  if (F <= 0) return 1;
  const long long k = static_cast<long long>(spread) * (B + F) / (100LL * F);
  return k < 1 ? 1 : static_cast<int>(k);
}

namespace {

// The codes head_step_kernel is instantiated for: FP32, and 8-bit block codecs with row scales.
bool step_codes(const Problem& p) {
  return state_bits(p.format) == 32 || p.scaling == formats::Scaling::row;
}

// head_step_kernel: a one-token step at the real dims, not GDN split u=hp / u=recompute, a CTA per head.
bool head_step_applies(const Problem& p, int group_heads) {
  const bool other_u = p.gdn() && p.policy == emu::Policy::replay_split && p.usource != emu::USource::lp;
  return step_codes(p) && is_real(p) && p.op == Op::step && p.T == 1 && !other_u && group_heads == 1;
}

// The folded step flush (0: the generic flush; 1 replay-shared; 2 replay-split): a one-token step at the real dims,
// FP32 or row-scaled RNE 8-bit codes, GDN split only with u=lp, no early flush (every item then takes the lean path).
int fold_applies(const Problem& p) {
  const bool split = p.policy == emu::Policy::replay_split;
  if (!is_real(p) || p.op != Op::step || p.T != 1) return 0;
  if (p.early != 0 || p.V % 4 != 0) return 0;
  if (p.gdn() && split && p.usource != emu::USource::lp) return 0;
  const bool codes = state_bits(p.format) == 32 ||
                     (p.scaling == formats::Scaling::row && p.rounding == formats::Rounding::rne);
  return codes ? (split ? 2 : 1) : 0;
}

}  // namespace

bool bf16_records_tuned(Op op, const LaunchPlan& plan) {
  if (plan.engine != Engine::tuned || !plan.real_dims || plan.tc_dots) return false;
  if (op == Op::verify)
    return plan.layout == Layout::split && plan.flush == Flush::none &&
           (plan.hot == Hot::head || plan.hot == Hot::group || plan.hot == Hot::group_verify);
  const bool layout = plan.layout == Layout::split || plan.layout == Layout::fused;
  const bool hot = plan.hot == Hot::head_step || plan.hot == Hot::slice_step;
  const bool flush = plan.flush == Flush::none || plan.flush == Flush::fold_shared || plan.flush == Flush::fold_split;
  return op == Op::step && layout && hot && flush;
}

namespace {

LaunchPlan plan_any_records(const Problem& p, const Device& dev, const PlanOverride& o) {
  LaunchPlan plan;
  if (o.reference) {
    plan.reason = "plan override kernel=reference";
    return plan;
  }
  if (!tuned_applies(p, &plan.reason)) return plan;
  plan.engine = Engine::tuned;
  plan.real_dims = is_real(p);
  if (!p.replay()) {
    plan.layout = Layout::conventional;
    using Cv = PlanOverride::Conv;
    const int bits = state_bits(p.format);
    const long long ctas = 1LL * p.B * p.H * p.nsplit();  // one slice per CTA
    plan.conv_row8 = o.conv == Cv::automatic ? conv_row8_rule(bits, p.op == Op::step, ctas, dev.sms)
                                             : o.conv != Cv::lane;
    if (p.op == Op::step && plan.conv_row8) {
      if (o.conv == Cv::automatic) plan.conv_groups = conv_slices_rule(p.format, p.nsplit(), 1LL * p.B * p.H, dev.sms);
      else if (o.conv == Cv::row8x2 || o.conv == Cv::row8x4)
        plan.conv_groups = conv_slices_cap(bits, p.nsplit(), o.conv == Cv::row8x4 ? 4 : 2);
    }
    return plan;
  }
  const int bits = state_bits(p.format), nsplit = p.nsplit();
  const bool real = plan.real_dims;
  const long long seqs = p.flushing >= 0 ? std::min<long long>(p.flushing, p.B) : p.B;

  bool split = false;
  if (o.layout == PlanOverride::Layout::combined) split = false;
  else if (o.layout != PlanOverride::Layout::automatic) split = true;
  else {
    const bool fp32_step_kernel = bits == 32 && head_step_applies(p, 1);
    split = kernel_split_rule(bits, p.drafts(), p.recompute(), fp32_step_kernel);
  }
  if (!p.head_fits || !split) {
    plan.layout = Layout::combined;
    return plan;
  }

  plan.layout = Layout::split;
  plan.flush_slices = p.op == Op::step && !p.recompute()
                          ? step_flush_slices(o.slices, seqs, p.early, p.V % 4 == 0, p.H, nsplit, dev.sms,
                                              bits == 32 && p.flushing >= 0 ? p.B : 0)
                          : 1;
  plan.group_heads = group_heads_rule(p.B, p.G, p.H, p.drafts(), o.heads, dev.sms);
  if (plan.group_heads > 1 && !p.group_fits) plan.group_heads = 1;
  plan.flush_seqs = seqs;  // 0: the caller knows that none flushes, no flush kernel
  plan.hot = plan.group_heads > 1 ? Hot::group : Hot::head;

  const bool step_kernel = head_step_applies(p, plan.group_heads);
  if (step_kernel) {
    plan.hot = Hot::head_step;
    plan.fixed_records = step_fixed_applies(p.L, p.cap, !o.generic_records);
    plan.tc_dots = o.tc_dots && bits == 8 && p.gdn();  // the tensor-core step dots: GDN's 8-bit codes only
  }
  const bool hp = p.gdn() && p.policy == emu::Policy::replay_split && p.usource == emu::USource::hp;
  if (bits == 32 && plan.group_heads > 1 && real && p.op == Op::verify && !hp && p.T >= 2 && p.T <= 8) {
    plan.hot = Hot::group_verify;
    plan.tc_dots = o.tc_dots && p.T >= tc_verify_min_drafts(p.gdn()) && p.tc_verify_fits;
  }
  const int fold = plan.flush_seqs > 0 ? fold_applies(p) : 0;
  plan.flush = plan.flush_seqs == 0 ? Flush::none
               : fold == 1         ? Flush::fold_shared
               : fold == 2         ? Flush::fold_split
                                   : Flush::generic;
  // The FP32 step kernel with a CTA per row group (split layout only: the fused grid's step rows are whole heads).
  using Step = PlanOverride::Step;
  const bool slice = plan.hot == Hot::head_step && bits == 32 && nsplit > 1 && o.layout != PlanOverride::Layout::fused &&
                     (o.step == Step::slice || (o.step == Step::automatic && slice_step_rule(p.B, p.H, nsplit, dev.sms)));
  if (slice) plan.hot = Hot::slice_step;
  // The FP32 step and its folded flush in one grid, with whole-head flush items (the default wherever it applies).
  if (bits == 32 && fold > 0 && step_kernel && !slice && plan.flush_slices == nsplit &&
      o.layout != PlanOverride::Layout::split) {
    plan.layout = Layout::fused;
    plan.fused_rows = static_cast<int>(seqs);
    plan.fused_stride = fused_stride_rule(p.B, plan.fused_rows, kFusedSpread);
    return plan;
  }
  plan.pdl = plan.flush_seqs > 0 && dev.cc_major >= 9 && !o.no_pdl;
  return plan;
}

}  // namespace

LaunchPlan plan_launch(const Problem& p, const Device& dev, const PlanOverride& o) {
  LaunchPlan plan = plan_any_records(p, dev, o);
  if (p.records == emu::Records::bf16 && p.replay() && plan.engine == Engine::tuned &&
      !(state_bits(p.format) == 32 && bf16_records_tuned(p.op, plan))) {
    plan = LaunchPlan{};
    plan.reason = "BF16 records outside the FP32 step and verify kernels";
  }
  return plan;
}

}  // namespace replayssm::kern

namespace replayssm::emu {

std::string resolved_plan_override(const std::string& option) { return kern::resolve_plan_override(option).text; }

std::string plan_table(const std::string& option) {
  using kern::Op;
  const kern::PlanOverride o = kern::resolve_plan_override(option);
  const kern::Device dev;
  std::ostringstream s;
  s << "# launch plans of the tuned kernels (H200: " << dev.sms << " SMs), at the bench's real head shapes, L = 16, "
    << "steady state (B / 16 sequences flush per step, none early)";
  if (!o.text.empty()) s << "; override " << o.text;
  s << "\n# arch op format policy [records] B: plan\n";
  struct Variant {
    formats::FormatId f;
    formats::Scaling sc;
    Policy pol;
    USource u;
    Records rec = Records::fp32;  // the record vectors' format (`replayssm bench --records`)
  };
  const Variant vars[] = {
      {formats::FormatId::fp32, formats::Scaling::none, Policy::conventional_shared, USource::hp},
      {formats::FormatId::fp32, formats::Scaling::none, Policy::replay_shared, USource::hp},
      {formats::FormatId::fp8_e4m3, formats::Scaling::row, Policy::conventional_shared, USource::hp},
      {formats::FormatId::fp8_e4m3, formats::Scaling::row, Policy::replay_shared, USource::hp},
      {formats::FormatId::fp8_e4m3, formats::Scaling::row, Policy::replay_split, USource::lp},
      {formats::FormatId::fp8_e4m3, formats::Scaling::row, Policy::replay_split, USource::hp},
      {formats::FormatId::fp8_e4m3, formats::Scaling::row, Policy::replay_split, USource::recompute},
      {formats::FormatId::bf16, formats::Scaling::none, Policy::replay_shared, USource::hp},
      {formats::FormatId::fp32, formats::Scaling::none, Policy::replay_shared, USource::hp, Records::bf16},
      {formats::FormatId::fp8_e4m3, formats::Scaling::row, Policy::replay_shared, USource::hp, Records::bf16},
      {formats::FormatId::fp8_e4m3, formats::Scaling::row, Policy::replay_split, USource::lp, Records::bf16},
  };
  for (const Arch arch : {Arch::gdn, Arch::mamba2}) {
    Dims d;
    d.B = 1;
    if (arch == Arch::gdn) d.G = 16, d.H = 32, d.K = 128, d.V = 128;
    else d.G = 8, d.H = 128, d.K = 128, d.V = 64;
    for (const Variant& v : vars) {
      if (arch == Arch::mamba2 && v.pol == Policy::replay_split && v.u != USource::hp) continue;  // GDN's u-sources
      Mode m;
      m.arch = arch, m.policy = v.pol, m.usource = v.u, m.format = v.f, m.scaling = v.sc, m.L = 16, m.max_drafts = 8;
      m.records = v.rec;
      std::string label = std::string(arch_name(arch)) + " " + formats::format_name(v.f);
      if (v.sc != formats::Scaling::none) label += std::string(":") + formats::scaling_name(v.sc);
      label += std::string(" ") + policy_name(v.pol);
      if (arch == Arch::gdn && v.pol == Policy::replay_split) label += std::string(" u=") + usource_name(v.u);
      if (v.rec != Records::fp32) label += std::string(" records=") + records_name(v.rec);
      for (const int T : {0, 1, 2, 4, 8}) {  // 0: a step
        if (T > 0 && v.pol == Policy::replay_split) continue;  // the bench times verify for these policies only
        for (const int B : {1, 16, 64, 256, 512}) {
          d.B = B;
          const long long flushing = T == 0 && m.replay() ? (B + 15) / 16 : 0;
          kern::Problem p = kern::make_problem(m, d, T == 0 ? Op::step : Op::verify, T == 0 ? 1 : T, flushing, 0);
          kern::assume_layouts_fit(p);
          s << label << (T == 0 ? " step" : " verify T=" + std::to_string(T)) << " B=" << B << ": "
            << kern::to_string(kern::plan_launch(p, dev, o)) << "\n";
        }
      }
    }
  }
  return s.str();
}

}  // namespace replayssm::emu
