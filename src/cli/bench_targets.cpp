// The targets of `replayssm bench`, read from kernels/bench/targets.ini (bench_targets.h).
#include "cli/bench_targets.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/errors.h"
#include "emulation/decode_api.h"
#include "formats/format_id.h"

namespace replayssm::cli {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") + 1 - b);
}

// Reports one problem of the file: "FILE:LINE: TARGET.FIELD: what".
struct Where {
  const std::string& path;
  int line;
  std::string target;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw input_error(path + ":" + std::to_string(line), target.empty() ? field : target + "." + field, what);
  }
};

int positive_int(const Where& w, const std::string& field, const std::string& v) {
  std::size_t used = 0;
  long n = 0;
  try {
    n = std::stol(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || n < 1 || n > 1 << 20)
    w.fail(field, "expected a positive integer, got '" + v + "'");
  return static_cast<int>(n);
}

// "kernel=decode policy=replay_shared format=fp32 T=1 B=256 L=16 [dots=exact|tc] [u=hp|lp|recompute]"
TargetRow parse_row(const Where& w, const std::string& field, const std::string& text) {
  TargetRow r;
  std::set<std::string> seen;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t b = text.find_first_not_of(" \t", i);
    if (b == std::string::npos) break;
    std::size_t e = text.find_first_of(" \t", b);
    if (e == std::string::npos) e = text.size();
    const std::string tok = text.substr(b, e - b);
    i = e;
    const std::size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == tok.size())
      w.fail(field, "expected key=value words (kernel, policy, format, T, B, L, dots, u), got '" + tok + "'");
    const std::string k = tok.substr(0, eq), v = tok.substr(eq + 1), f = field + "." + k;
    if (!seen.insert(k).second) w.fail(f, "given twice");
    if (k == "kernel") {
      if (v != "decode" && v != "verify") w.fail(f, "expected decode or verify, got '" + v + "'");
      r.kernel = v;
    } else if (k == "policy") {
      std::string p = v;
      for (char& c : p)
        if (c == '-') c = '_';
      try {
        r.policy = emu::policy_name(emu::parse_policy(p));
      } catch (const std::invalid_argument& ex) {
        w.fail(f, ex.what());
      }
    } else if (k == "format") {
      const std::size_t colon = v.find(':');
      try {
        r.format = formats::format_name(formats::parse_format(v.substr(0, colon)));
        if (colon != std::string::npos) r.scaling = formats::scaling_name(formats::parse_scaling(v.substr(colon + 1)));
      } catch (const std::invalid_argument& ex) {
        w.fail(f, ex.what());
      }
    } else if (k == "u") {
      try {
        r.usource = emu::usource_name(emu::parse_usource(v));
      } catch (const std::invalid_argument& ex) {
        w.fail(f, ex.what());
      }
    } else if (k == "dots") {
      if (v != "exact" && v != "tc") w.fail(f, "expected exact or tc, got '" + v + "'");
      r.dots = v;
    } else if (k == "T") {
      r.T = positive_int(w, f, v);
    } else if (k == "B") {
      r.B = positive_int(w, f, v);
    } else if (k == "L") {
      r.L = positive_int(w, f, v);
    } else {
      w.fail(f, "unknown key (expected kernel, policy, format, T, B, L, dots or u)");
    }
  }
  for (const char* k : {"kernel", "policy", "format", "T", "B", "L"})
    if (!seen.count(k)) w.fail(field + "." + k, "missing");
  return r;
}

double positive_number(const Where& w, const std::string& field, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x <= 0)
    w.fail(field, "expected a number > 0, got '" + v + "'");
  return x;
}

struct Section {
  std::string name;
  int line = 0;
  std::map<std::string, std::pair<std::string, int>> fields;  // key -> (value, line)
};

TargetSpec make_spec(const std::string& path, const Section& s) {
  TargetSpec t;
  t.name = s.name;
  auto get = [&](const std::string& k, bool required) -> const std::pair<std::string, int>* {
    const auto it = s.fields.find(k);
    if (it != s.fields.end()) return &it->second;
    if (required) Where{path, s.line, s.name}.fail(k, "missing");
    return nullptr;
  };
  auto at = [&](const std::pair<std::string, int>* f) { return Where{path, f->second, s.name}; };
  const auto* arch = get("arch", true);
  if (arch->first != "gdn" && arch->first != "mamba2") at(arch).fail("arch", "expected gdn or mamba2, got '" + arch->first + "'");
  t.arch = arch->first;
  const auto* metric = get("metric", true);
  if (metric->first != "pct_roofline" && metric->first != "speedup" && metric->first != "ratio")
    at(metric).fail("metric", "expected pct_roofline, speedup or ratio, got '" + metric->first + "'");
  t.metric = metric->first;
  const auto* row = get("row", true);
  t.row = parse_row(at(row), "row", row->first);
  const auto* base = get("baseline", t.metric != "pct_roofline");
  if (base && t.metric == "pct_roofline") at(base).fail("baseline", "not used by metric pct_roofline");
  if (base) {
    t.baseline = parse_row(at(base), "baseline", base->first);
    t.has_baseline = true;
  }
  const auto* thr = get("threshold", true);
  t.threshold = positive_number(at(thr), "threshold", thr->first);
  const auto* dir = get("direction", true);
  if (dir->first != "higher" && dir->first != "lower")
    at(dir).fail("direction", "expected higher or lower, got '" + dir->first + "'");
  t.higher_better = dir->first == "higher";
  return t;
}

bool valid_name(const std::string& n) {
  if (n.empty() || n.front() == '-') return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

}  // namespace

bool TargetRow::matches(const std::string& arch, const kbench::Row& r) const {
  return r.arch == arch && r.kernel == kernel && r.policy == policy && r.format == format && r.B == B && r.L == L &&
         r.T == T && r.dots == dots && (scaling.empty() || r.scaling == scaling) &&
         (usource.empty() || r.usource == usource) && r.records == "fp32";
}

std::string TargetRow::label(const std::string& arch) const {
  std::string s = arch + " " + kernel + " " + policy + " " + format + (scaling.empty() ? "" : ":" + scaling) +
                  " T=" + std::to_string(T) + " B=" + std::to_string(B) + " L=" + std::to_string(L);
  if (dots != "exact") s += " dots=" + dots;
  if (!usource.empty()) s += " u=" + usource;
  return s;
}

std::string targets_file() {
  if (const char* p = std::getenv("REPLAYSSM_BENCH_TARGETS")) return p;
#ifdef REPLAYSSM_SOURCE_DIR
  return REPLAYSSM_SOURCE_DIR "/kernels/bench/targets.ini";
#else
  return "kernels/bench/targets.ini";
#endif
}

std::vector<TargetSpec> load_targets(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw UserError(path + ": cannot read the bench targets (REPLAYSSM_BENCH_TARGETS names the file; the source "
                    "tree's is kernels/bench/targets.ini)");
  std::vector<Section> sections;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    // a '#' or ';' at the start of a line, or '#' after a blank, starts a comment
    std::string s = text;
    for (std::size_t h = s.find('#'); h != std::string::npos; h = s.find('#', h + 1))
      if (h == 0 || s[h - 1] == ' ' || s[h - 1] == '\t') {
        s.erase(h);
        break;
      }
    s = trim(s);
    if (s.empty() || s.front() == ';') continue;
    const Where w{path, line, sections.empty() ? std::string() : sections.back().name};
    if (s.front() == '[') {
      if (s.back() != ']') Where{path, line, ""}.fail("section", "expected [name], got '" + s + "'");
      const std::string name = trim(s.substr(1, s.size() - 2));
      if (!valid_name(name))
        Where{path, line, ""}.fail("section", "target name '" + name + "': expected lower-case letters, digits and '-'");
      for (const Section& o : sections)
        if (o.name == name)
          Where{path, line, ""}.fail("section", "target '" + name + "' defined twice (line " + std::to_string(o.line) + ")");
      sections.push_back(Section{name, line, {}});
      continue;
    }
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos) w.fail("line", "expected key = value or [name], got '" + s + "'");
    const std::string key = trim(s.substr(0, eq)), value = trim(s.substr(eq + 1));
    if (sections.empty()) w.fail(key, "before the first [name] section");
    static const std::set<std::string> known{"arch", "row", "baseline", "metric", "threshold", "direction"};
    if (!known.count(key)) w.fail(key, "unknown field (expected arch, row, baseline, metric, threshold, direction)");
    if (!sections.back().fields.emplace(key, std::make_pair(value, line)).second) w.fail(key, "given twice");
  }
  if (in.bad()) throw UserError(path + ": read error");
  if (sections.empty()) throw input_error(path, "sections", "no target ([name] section) in the file");
  std::vector<TargetSpec> out;
  for (const Section& s : sections) out.push_back(make_spec(path, s));
  return out;
}

std::string variant_label(const kbench::Row& r) {
  std::string s = r.policy + "/" + r.format;
  if (r.scaling != "none" && r.scaling != "-") s += ":" + r.scaling;
  if (r.usource != "-") s += "/u=" + r.usource;
  if (r.dots == "tc") s += "/tc-dots";
  if (r.records != "fp32") s += "/records=" + r.records;
  return s;
}

std::vector<BenchTarget> check_targets(const kbench::Result& res, const std::vector<TargetSpec>& specs) {
  auto find = [&](const std::string& arch, const TargetRow& want) {
    const kbench::Row* best = nullptr;
    for (const auto& r : res.rows)
      if (want.matches(arch, r) && r.median_us > 0 && (!best || r.median_us < best->median_us)) best = &r;
    return best;
  };
  std::vector<BenchTarget> out;
  for (const TargetSpec& s : specs) {
    BenchTarget t;
    t.name = s.name;
    t.metric = s.metric;
    t.threshold = s.threshold;
    t.higher_better = s.higher_better;
    const kbench::Row* r = find(s.arch, s.row);
    const kbench::Row* b = s.has_baseline ? find(s.arch, s.baseline) : nullptr;
    if (!r) {
      t.missing = "no row " + s.row.label(s.arch);
    } else if (s.has_baseline && !b) {
      t.missing = "no baseline row " + s.baseline.label(s.arch);
    } else {
      t.present = true;
      t.measured_row = r->arch + " B=" + std::to_string(r->B) + " L=" + std::to_string(r->L) + " " + r->kernel +
                       " T=" + std::to_string(r->T) + " " + variant_label(*r);
      if (s.metric == "pct_roofline") {
        t.value = r->pct_roofline;
        t.model_bound = 100.0;
      } else if (s.metric == "speedup") {
        t.value = b->median_us / r->median_us;
        t.model_bound = r->model_bytes > 0 ? b->model_bytes / r->model_bytes : 0.0;
      } else {  // ratio
        t.value = r->median_us / b->median_us;
        t.model_bound = b->model_bytes > 0 ? r->model_bytes / b->model_bytes : 0.0;
      }
      t.met = t.higher_better ? t.value >= t.threshold : t.value <= t.threshold;
    }
    out.push_back(t);
  }
  return out;
}

std::vector<BenchTarget> check_targets(const kbench::Result& res) {
  return check_targets(res, load_targets(targets_file()));
}

std::string target_line(const BenchTarget& t) {
  if (!t.present) return "[not measured] " + t.name + (t.missing.empty() ? "" : " (" + t.missing + ")");
  char bound[32] = "-";
  if (t.model_bound > 0) std::snprintf(bound, sizeof bound, "%.2f", t.model_bound);
  char buf[512];
  std::snprintf(buf, sizeof buf, "[%s] %s: %.3f (%s %.2f; byte model %s%s)", t.met ? "MET   " : "MISSED", t.name.c_str(),
                t.value, t.higher_better ? ">=" : "<=", t.threshold, bound, t.beyond_model() ? ", target beyond it" : "");
  return buf;
}

}  // namespace replayssm::cli
