#pragma once
// The cases one `replayssm bench` run times at one shape and L (host only; kernels/bench/bench_harness.cu runs them):
// conventional FP32 decode first (the baseline of every ratio), each decode variant (and its tensor-core form where
// one exists), each verify variant at every draft count and every draft tree.
#include <algorithm>
#include <string>
#include <vector>

#include "bench/bench_api.h"
#include "formats/format_id.h"
#include "kernels/bench/bench_model.h"
#include "kernels/launch_plan.h"

namespace replayssm::kbench {

// A tree row's kernel column: "tree:" and the tree as given, commas as '/' (the CSV stays one field per column).
inline std::string tree_kernel_name(std::string label) {
  std::replace(label.begin(), label.end(), ',', '/');
  return "tree:" + label;
}

inline std::string case_name(const Case& c) {
  std::string s = std::string(emu::arch_name(c.s.arch)) + " B=" + std::to_string(c.s.d.B) + " L=" + std::to_string(c.L) +
                  (c.op == Op::verify ? " verify T=" + std::to_string(c.T)
                   : c.op == Op::tree ? " " + tree_kernel_name(c.tree_label) + " T=" + std::to_string(c.T)
                                      : " decode") + " " +
                  emu::policy_name(c.v.policy) + "/" + formats::format_name(c.v.format.format) + "/" +
                  formats::scaling_name(c.v.format.scaling);
  if (c.s.arch == Arch::gdn && c.v.policy == Policy::replay_split) s += std::string("/u=") + emu::usource_name(c.v.usource);
  if (c.v.records == emu::Records::bf16) s += "/records=bf16";
  if (c.v.tc_dots) s += " (tensor-core row dots)";
  return s;
}

inline std::vector<Case> cases_for(const Config& cfg, const Shape& sh, int L) {
  const Arch a = sh.arch;
  Variant base;  // conventional fp32: always timed first, the baseline of every ratio
  base.format = formats::parse_format_spec("fp32");
  std::vector<Case> cases;
  cases.push_back(Case{sh, L, base, Op::decode, 1, {}, ""});
  // Mamba-2 has no u: its split variants differ only in the u-source label, keep one of them; conventional decode
  // keeps no records
  auto norm = [&](Variant v) {
    if (a == Arch::mamba2 || v.policy != Policy::replay_split) v.usource = USource::hp;
    if (v.policy == Policy::conventional_shared) v.records = emu::Records::fp32;
    return v;
  };
  auto same = [](const Variant& x, const Variant& y) {
    return x.policy == y.policy && x.usource == y.usource && x.format.format == y.format.format &&
           x.format.scaling == y.format.scaling && x.format.rounding == y.format.rounding &&
           x.tc_dots == y.tc_dots && x.records == y.records;
  };
  // the variants whose step runs head_step_kernel's 8-bit row dots (the tensor-core form exists for them:
  // GDN only)
  auto tc_applies = [&](const Variant& v) {
    return a == Arch::gdn && v.format.format == formats::FormatId::fp8_e4m3 &&
           v.format.scaling == formats::Scaling::row && v.format.rounding == formats::Rounding::rne &&
           v.policy != Policy::conventional_shared &&
           !(v.policy == Policy::replay_split && v.usource != USource::lp);
  };
  std::vector<Variant> seen{base};
  for (const Variant& v0 : cfg.variants) {
    const Variant v = norm(v0);
    if (std::any_of(seen.begin(), seen.end(), [&](const Variant& x) { return same(x, v); })) continue;
    seen.push_back(v);
    cases.push_back(Case{sh, L, v, Op::decode, 1, {}, ""});
    if (cfg.tc_dots && !v.tc_dots && tc_applies(v)) {
      Variant t = v;
      t.tc_dots = true;
      seen.push_back(t);
      cases.push_back(Case{sh, L, t, Op::decode, 1, {}, ""});
    }
  }
  std::vector<Variant> vseen;
  for (const Variant& v0 : cfg.verify_variants) {
    const Variant v = norm(v0);
    if (std::any_of(vseen.begin(), vseen.end(), [&](const Variant& x) { return same(x, v); })) continue;
    vseen.push_back(v);
    for (int T : cfg.spec_T) cases.push_back(Case{sh, L, v, Op::verify, T, {}, ""});
    for (const Config::Tree& t : cfg.trees)
      cases.push_back(Case{sh, L, v, Op::tree, int(t.parents.size()), t.parents, t.label});
    // the grouped FP32 verify's tensor-core form (row dots as 3xTF32; not GDN u=hp), from the draft count
    // where the plan runs it up to 8
    const bool tc_verify = v.format.format == formats::FormatId::fp32 &&
                           v.policy != Policy::conventional_shared &&
                           !(a == Arch::gdn && v.policy == Policy::replay_split && v.usource == USource::hp);
    if (cfg.tc_dots && !v.tc_dots && tc_verify) {
      Variant t = v;
      t.tc_dots = true;
      vseen.push_back(t);
      for (int T : cfg.spec_T)
        if (T >= kern::tc_verify_min_drafts(a == Arch::gdn) && T <= 8)
          cases.push_back(Case{sh, L, t, Op::verify, T, {}, ""});
    }
  }
  return cases;
}

}  // namespace replayssm::kbench
