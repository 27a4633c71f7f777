#include "sweep/results.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/fnv1a.h"
#include "sweep/metrics.h"

namespace replayssm::sweep {

namespace {
std::size_t sz(std::size_t v) { return v; }

// A decimal integer that fits: uint64 for the seed, int64 otherwise (what write_drift_and_attrs stores).
bool integer_text(const std::string& v, bool is_unsigned) {
  if (v.empty() || (is_unsigned && v[0] == '-')) return false;
  errno = 0;
  char* end = nullptr;
  if (is_unsigned)
    (void)std::strtoull(v.c_str(), &end, 10);
  else
    (void)std::strtoll(v.c_str(), &end, 10);
  return errno == 0 && end == v.c_str() + v.size() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
}
}  // namespace

void write_run(h5::File& f, const std::string& g, const RunResult& r) {
  const std::size_t T = r.kl.size();
  f.write(g + "/kl", {T}, r.kl.data());
  f.write(g + "/nll", {T}, r.nll.data());
  f.write(g + "/top1", {T}, r.top1.data());
  f.write(g + "/kl_binned", {r.kl_binned.size() / kStats, sz(kStats)}, r.kl_binned.data());
  if (!r.flip_rate_binned.empty()) {
    f.write(g + "/flip_rate_binned", {r.flip_rate_binned.size()}, r.flip_rate_binned.data());
    f.set_attr(g, "first_flip", r.first_flip);
  }
  write_drift_and_attrs(f, g, r);
  f.set_attr(g, "kl_binned_columns", "mean,p50,p95,max");
  if (std::isfinite(r.bytes_per_element)) {
    f.set_attr(g, "bytes_per_element", r.bytes_per_element);
    f.set_attr(g, "capacity_vs_fp32", r.capacity_vs_fp32);
  }
}

void write_drift_and_attrs(h5::File& f, const std::string& g, const RunResult& r) {
  const std::size_t L = static_cast<std::size_t>(r.layers), F = r.flush_steps.size();
  f.write(g + "/output_drift", {L, L ? r.output_drift.size() / L : 0}, r.output_drift.data());
  f.write(g + "/flush_steps", {F}, r.flush_steps.data());
  f.write(g + "/state_drift", {L, F}, r.state_drift.data());
  for (const auto& [k, v] : r.attrs) {
    if (k == "seed")
      f.set_attr_u64(g, k, std::stoull(v));
    else if (k == "L" || k == "diverged_at")
      f.set_attr(g, k, static_cast<std::int64_t>(std::stoll(v)));
    else
      f.set_attr(g, k, v);
  }
  f.set_attr(g, "id", r.id);
  f.set_attr(g, "index", r.index);
  f.set_attr(g, "elapsed_s", r.elapsed_s);
}

RunResult read_run(const h5::File& f, const std::string& g) {
  RunResult r;
  // Shapes are checked against each other: write_run trusts them (a short buffer would be read past its end).
  auto kl = f.read_f64(g + "/kl", false);  // NaN marks positions after a divergence
  h5::require_shape(f, g + "/kl", kl.shape, {0});
  const std::size_t T = kl.dim(0);
  r.kl = std::move(kl.data);
  auto nll = f.read_f64(g + "/nll", false), top1 = f.read_f64(g + "/top1", false),
       kb = f.read_f64(g + "/kl_binned", false);
  h5::require_shape(f, g + "/nll", nll.shape, {T});
  h5::require_shape(f, g + "/top1", top1.shape, {T});
  h5::require_shape(f, g + "/kl_binned", kb.shape, {0, sz(kStats)});
  r.nll = std::move(nll.data);
  r.top1 = std::move(top1.data);
  r.kl_binned = std::move(kb.data);
  if (f.exists(g + "/flip_rate_binned")) {
    auto fr = f.read_f64(g + "/flip_rate_binned", false);  // NaN marks bins of a diverged run
    h5::require_shape(f, g + "/flip_rate_binned", fr.shape, {kb.dim(0)});
    r.flip_rate_binned = std::move(fr.data);
    r.first_flip = f.attr_int(g, "first_flip");
    if (r.first_flip < -1 || r.first_flip >= static_cast<std::int64_t>(T))
      f.fail(g + "/@first_flip", "expected -1 or a position below " + std::to_string(T));
  }
  if (f.has_attr(g, "bytes_per_element")) {
    r.bytes_per_element = f.attr_double(g, "bytes_per_element");
    r.capacity_vs_fp32 = f.attr_double(g, "capacity_vs_fp32");
    if (!(r.bytes_per_element > 0.0) || !std::isfinite(r.bytes_per_element))
      f.fail(g + "/@bytes_per_element", "expected a positive number");
  }
  auto od = f.read_f64(g + "/output_drift", false);
  h5::require_shape(f, g + "/output_drift", od.shape, {0, 0});
  r.layers = static_cast<int>(od.dim(0));
  if (r.layers > 0) h5::require_shape(f, g + "/output_drift", od.shape, {od.dim(0), T});
  r.output_drift = std::move(od.data);
  auto fs = f.read_i64(g + "/flush_steps");
  h5::require_shape(f, g + "/flush_steps", fs.shape, {0});
  auto sd = f.read_f64(g + "/state_drift", false);
  h5::require_shape(f, g + "/state_drift", sd.shape, {od.dim(0), fs.dim(0)});
  r.flush_steps = std::move(fs.data);
  r.state_drift = std::move(sd.data);
  r.id = f.attr_string(g, "id");
  r.index = f.attr_int(g, "index");
  r.elapsed_s = f.attr_double(g, "elapsed_s");
  for (const char* k : {"model", "text", "format", "scaling", "rounding", "policy", "L", "u_source", "records", "backend",
                        "device", "fp64_device", "seed", "mode", "diverged_at"})
    if (f.has_attr(g, k)) r.attrs[k] = f.attr_text(g, k);  // L, seed, diverged_at: numbers (strings in older files)
  for (const char* k : {"L", "seed", "diverged_at"}) {
    const auto it = r.attrs.find(k);
    if (it != r.attrs.end() && !integer_text(it->second, std::string(k) == "seed"))
      f.fail(g + "/@" + k, "expected an integer, got '" + it->second + "'");
  }
  return r;
}

void write_reference(h5::File& f, const ReferenceSummary& s) {
  const std::string g = "/reference/" + s.model;
  f.write(g + "/nll", {s.nll.size()}, s.nll.data());
  double sum = 0;
  for (double x : s.nll) sum += x;
  // On the nll dataset, as the schema table says (its mean in bits); T >= 1 always (sweep --tokens >= 1).
  f.set_attr(g + "/nll", "bits_per_byte", sum / static_cast<double>(s.nll.size()) / 0.6931471805599453);
  f.set_attr(g, "backend", "FP64 Eigen reference");
}

ReferenceSummary read_reference(const h5::File& f, const std::string& model) {
  ReferenceSummary s;
  s.model = model;
  s.nll = f.read_f64("/reference/" + model + "/nll").data;
  return s;
}

std::string hash_config(const std::map<std::string, std::string>& config) {
  // FNV-1a over "key=value\n" in key order: stable across runs, machines and shards.
  Fnv1a h;
  for (const auto& [k, v] : config) h.add(k + "=" + v + "\n");
  return h.hex();
}

void write_header(h5::File& f, const SweepHeader& h) {
  f.ensure_group("/config");
  for (const auto& [k, v] : h.config) f.set_attr("/config", k, v);
  f.set_attr("/config", "config_hash", h.config_hash);
  f.write_strings("/config/plan", h.plan);
  f.write("/bins", {h.bins.size()}, h.bins.data());
  f.set_attr("/bins", "meaning", "1-based position bin edges: bin i holds positions [bins[i], bins[i+1])");
  for (const auto& r : h.references) write_reference(f, r);
}

SweepHeader read_header(const h5::File& f) {
  SweepHeader h;
  if (!f.exists("/config")) f.fail("/config", "missing group (not a replayssm sweep results file?)");
  h.config_hash = f.attr_string("/config", "config_hash");
  for (const auto& key : f.list_attrs("/config"))
    if (key != "config_hash") h.config[key] = f.attr_string("/config", key);
  h.plan = f.read_strings("/config/plan");
  h.bins = f.read_i64("/bins").data;
  if (f.exists("/reference"))
    for (const auto& m : f.list("/reference")) h.references.push_back(read_reference(f, m));
  return h;
}

}  // namespace replayssm::sweep
