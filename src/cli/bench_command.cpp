// `replayssm bench`: decode-kernel performance at real shapes on one GPU. Times the copy roofline, then
// conventional vs ReplaySSM standard decode in steady state and chain verify for T drafts, all in one run, with the
// CUDA harness of kernels/bench/. Prints a table, writes HDF5 (atomically, with provenance) and CSV, and checks the
// named targets (kernels/bench/targets) at B=256, L=16. Without a GPU (or a CUDA build) it says so in one line and
// exits 3. --list-plans prints the kernels' launch plans of every case without a GPU.
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/errors.h"
#include "core/h5.h"
#include "emulation/decode_api.h"
#include "emulation/device_backend.h"
#include "formats/format_id.h"
#include "reference/tree_verify.h"
#if defined(REPLAYSSM_HAVE_CUDA)
#include "bench/bench_api.h"
#include "cli/bench_targets.h"
#endif

namespace replayssm::cli {
namespace {

void add_options(po::options_description& d) {
  d.add_options()("arch", po::value<std::string>()->default_value("all"), "gdn | mamba2 | all")(
      "batch", po::value<std::string>()->default_value("1,16,64,256,512"), "batch sizes (sequences), comma-separated")(
      "L", po::value<std::string>()->default_value("16,8,32"), "flush periods L, comma-separated")(
      "formats", po::value<std::string>()->default_value("fp32,fp8_e4m3"),
      "state formats of the decode variants: format[:scaling[:rounding]], comma-separated (fp32 conventional is "
      "always timed: it is the baseline)")(
      "policies", po::value<std::string>()->default_value("conventional,replay-shared,replay-split"),
      "policies of the decode variants: conventional | replay-shared | replay-split (split needs a non-fp32 format)")(
      "usource", po::value<std::string>()->default_value("lp,recompute,hp"),
      "GDN replay-split u-sources: hp | lp | recompute, comma-separated")(
      "records", po::value<std::string>()->default_value("fp32"),
      "replay buffer record formats of the ReplaySSM decode and verify variants: fp32 | bf16, comma-separated (bf16: "
      "k, w and raw v stored as BF16, 2 bytes an element in the byte model; conventional decode keeps no records)")(
      "spec-T", po::value<std::string>()->default_value("1..8"), "verify draft counts: 'a..b' or a comma list; 'none' skips verify")(
      "verify-policies", po::value<std::string>()->default_value("conventional,replay-shared"),
      "policies timed as chain verify (store-all vs ReplaySSM)")(
      "verify-formats", po::value<std::string>()->default_value("fp32"), "formats timed as chain verify")(
      "tree", po::value<std::vector<std::string>>()->composing(),
      "also time tree verify of this draft tree (repeatable) for every verify policy and format, on the reference "
      "kernel: chain[:T] | binary[:DEPTH] | star[:T] | a branching list per depth like 4,2,2,1; at most 64 nodes")(
      "step-dots", po::value<std::string>()->default_value("exact,tc"),
      "forms of the ReplaySSM row dots: exact (the emulation's bits) and/or tc (tensor cores, validated against FP64; "
      "rows for GDN's row-scaled fp8_e4m3 replay steps, split u=lp, and for the fp32 ReplaySSM verify, T = 4..8 for "
      "GDN and 6..8 for Mamba-2)")(
      "reps", po::value<int>()->default_value(50), "timed graph replays per case (most)")(
      "min-reps", po::value<int>()->default_value(5), "timed graph replays per case (least, also for slow cases)")(
      "case-ms", po::value<double>()->default_value(150.0), "timing budget per case in ms (sets reps between the two)")(
      "steps", po::value<int>()->default_value(16), "decode steps per captured graph (rounded up to a multiple of L)")(
      "l2-factor", po::value<double>()->default_value(2.5), "every graph replay touches at least this many L2 sizes of data")(
      "max-seconds", po::value<double>()->default_value(0.0), "stop starting cases after this wall time (0: no limit)")(
      "gdn-shape", po::value<std::string>()->default_value("16,32,128,128"), "GDN Hk,Hv,K,V (Qwen3.5)")(
      "mamba2-shape", po::value<std::string>()->default_value("128,64,128,8"), "Mamba-2 H,P,N,G (Nemotron-H)")(
      "seed", po::value<unsigned long long>()->default_value(20240601ull), "seed of the random states and inputs")(
      "plan", po::value<std::string>()->default_value(""),
      "override of the kernels' launch plan, key=value,... (kernels/README.md; adds to REPLAYSSM_PLAN)")(
      "list-plans", po::bool_switch(), "print the launch plan of every bench case (no GPU needed) and exit")(
      "out", po::value<std::string>()->default_value("bench.h5"), "HDF5 results ('' to skip)")(
      "csv", po::value<std::string>()->default_value("bench.csv"), "CSV results ('' to skip)")(
      "quiet,q", po::bool_switch(), "no per-case progress lines");
}

// The items of an option's list, trimmed; a blank list gives none, an empty item ("a,,b", "a,") is an error naming
// the option instead of being dropped.
std::vector<std::string> split(const std::string& opt, const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  if (s.find_first_not_of(" \t") == std::string::npos) return out;
  std::string cur;
  std::istringstream in(s + sep);  // the trailing separator makes a final empty item visible
  while (std::getline(in, cur, sep)) {
    cur.erase(0, cur.find_first_not_of(" \t"));
    cur.erase(cur.find_last_not_of(" \t") + 1);
    if (cur.empty()) throw UserError("--" + opt + ": empty item in '" + s + "'");
    out.push_back(cur);
  }
  return out;
}

int parse_int(const std::string& opt, const std::string& s, int lo, int hi) {
  std::size_t pos = 0;
  long v = 0;
  try {
    v = std::stol(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != s.size() || v < lo || v > hi)
    throw UserError("--" + opt + ": '" + s + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return int(v);
}

std::vector<int> parse_ints(const std::string& opt, const std::string& s, int lo, int hi) {
  std::vector<int> out;
  for (const std::string& tok : split(opt, s)) {
    const std::size_t dots = tok.find("..");
    if (dots != std::string::npos) {
      const int a = parse_int(opt, tok.substr(0, dots), lo, hi), b = parse_int(opt, tok.substr(dots + 2), lo, hi);
      if (b < a) throw UserError("--" + opt + ": empty range '" + tok + "'");
      for (int i = a; i <= b; ++i) out.push_back(i);
    } else {
      out.push_back(parse_int(opt, tok, lo, hi));
    }
  }
  if (out.empty()) throw UserError("--" + opt + ": no values");
  return out;
}

std::string policy_key(const std::string& s) {  // accept dashes or underscores, and the short names
  std::string k = s;
  std::replace(k.begin(), k.end(), '-', '_');
  if (k == "conventional" || k == "conv") return "conventional_shared";
  if (k == "shared") return "replay_shared";
  if (k == "split") return "replay_split";
  return k;
}

formats::FormatSpec parse_spec(const std::string& opt, const std::string& tok) {
  const std::vector<std::string> parts = split(opt, tok, ':');
  try {
    return formats::parse_format_spec(parts.at(0), parts.size() > 1 ? parts[1] : "", parts.size() > 2 ? parts[2] : "");
  } catch (const std::exception& e) {
    throw UserError("--" + opt + ": '" + tok + "': " + e.what());
  }
}

#if defined(REPLAYSSM_HAVE_CUDA)
std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

void print_table(const kbench::Result& res, std::ostream& os) {
  std::vector<const kbench::Row*> rows;
  for (const auto& r : res.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](const kbench::Row* a, const kbench::Row* b) {
    if (a->kernel.rfind("copy", 0) == 0 || b->kernel.rfind("copy", 0) == 0)
      return (a->kernel.rfind("copy", 0) == 0) > (b->kernel.rfind("copy", 0) == 0);
    if (a->arch != b->arch) return a->arch < b->arch;
    if (a->L != b->L) return a->L < b->L;
    if (a->B != b->B) return a->B < b->B;
    if (a->kernel != b->kernel) return a->kernel < b->kernel;
    return false;
  });
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-6s %4s %3s %-7s %2s %-44s %11s %11s %9s %8s %6s %8s %8s %8s", "arch", "B", "L", "kernel",
                "T", "variant", "median_us", "p10-p90_us", "model_MB", "GB/s", "%roof", "x_conv", "x_step", "x_cstep");
  os << buf << "\n";
  for (const kbench::Row* r : rows) {
    std::snprintf(buf, sizeof buf, "%-6s %4d %3d %-7s %2d %-44s %11.2f %5.1f-%-5.1f %9.2f %8.1f %6.1f %8s %8s %8s%s%s",
                  r->arch.c_str(), r->B, r->L, r->kernel.substr(0, 7).c_str(), r->T, variant_label(*r).c_str(),
                  r->median_us, r->p10_us, r->p90_us, r->model_bytes / 1e6, r->gbps, r->pct_roofline,
                  r->speedup_vs_conv > 0 ? fmt("%.3f", r->speedup_vs_conv).c_str() : "-",
                  r->vs_own_step > 0 ? fmt("%.3f", r->vs_own_step).c_str() : "-",
                  r->vs_conv_step > 0 ? fmt("%.3f", r->vs_conv_step).c_str() : "-", r->note.empty() ? "" : "  ",
                  r->note.c_str());
    os << buf << "\n";
  }
}

void write_csv(const std::string& path, const kbench::Result& res) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw UserError("--csv " + path + ": cannot open for writing");
    f << "arch,kernel,policy,usource,format,scaling,dots,records,B,L,T,median_us,p10_us,p90_us,min_us,reps,sets,steps_per_graph,"
         "model_bytes,state_bytes,gbps,pct_roofline,speedup_vs_conv,verify_vs_own_step,verify_vs_conv_step,"
         "flush_fraction,nonfinite,note\n";
    for (const auto& r : res.rows) {
      char buf[1024];
      std::snprintf(buf, sizeof buf,
                    "%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%d,%d,%d,%.0f,%.0f,%.2f,%.3f,%.4f,%.4f,%.4f,%.5f,%ld,\"%s\"\n",
                    r.arch.c_str(), r.kernel.c_str(), r.policy.c_str(), r.usource.c_str(), r.format.c_str(),
                    r.scaling.c_str(), r.dots.c_str(), r.records.c_str(), r.B, r.L, r.T, r.median_us, r.p10_us, r.p90_us, r.min_us, r.reps, r.sets,
                    r.steps_per_graph, r.model_bytes, r.state_bytes, r.gbps, r.pct_roofline, r.speedup_vs_conv,
                    r.vs_own_step, r.vs_conv_step, r.flush_fraction, r.nonfinite, r.note.c_str());
      f << buf;
    }
    if (!f) throw UserError("--csv " + path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw UserError("--csv " + path + ": cannot rename from " + tmp);
}

void write_h5(const std::string& path, const kbench::Result& res, const std::vector<BenchTarget>& targets,
              const po::variables_map& vm) {
  h5::AtomicOutput out(path);
  h5::File& f = out.file();
  const std::size_t n = res.rows.size();
  auto strings = [&](const std::string& name, auto get) {
    std::vector<std::string> v;
    for (const auto& r : res.rows) v.push_back(get(r));
    f.write_strings("/rows/" + name, v);
  };
  auto doubles = [&](const std::string& name, auto get) {
    std::vector<double> v;
    for (const auto& r : res.rows) v.push_back(double(get(r)));
    f.write("/rows/" + name, {n}, v.data());
  };
  auto ints = [&](const std::string& name, auto get) {
    std::vector<std::int64_t> v;
    for (const auto& r : res.rows) v.push_back(std::int64_t(get(r)));
    f.write("/rows/" + name, {n}, v.data());
  };
  using R = kbench::Row;
  strings("arch", [](const R& r) { return r.arch; });
  strings("kernel", [](const R& r) { return r.kernel; });
  strings("policy", [](const R& r) { return r.policy; });
  strings("usource", [](const R& r) { return r.usource; });
  strings("format", [](const R& r) { return r.format; });
  strings("scaling", [](const R& r) { return r.scaling; });
  strings("dots", [](const R& r) { return r.dots; });
  strings("records", [](const R& r) { return r.records; });
  strings("note", [](const R& r) { return r.note; });
  strings("plan", [](const R& r) { return r.plan; });
  ints("B", [](const R& r) { return r.B; });
  ints("L", [](const R& r) { return r.L; });
  ints("T", [](const R& r) { return r.T; });
  ints("reps", [](const R& r) { return r.reps; });
  ints("sets", [](const R& r) { return r.sets; });
  ints("steps_per_graph", [](const R& r) { return r.steps_per_graph; });
  ints("nonfinite", [](const R& r) { return r.nonfinite; });
  doubles("median_us", [](const R& r) { return r.median_us; });
  doubles("p10_us", [](const R& r) { return r.p10_us; });
  doubles("p90_us", [](const R& r) { return r.p90_us; });
  doubles("min_us", [](const R& r) { return r.min_us; });
  doubles("model_bytes", [](const R& r) { return r.model_bytes; });
  doubles("state_bytes", [](const R& r) { return r.state_bytes; });
  doubles("gbps", [](const R& r) { return r.gbps; });
  doubles("pct_roofline", [](const R& r) { return r.pct_roofline; });
  doubles("speedup_vs_conv", [](const R& r) { return r.speedup_vs_conv; });
  doubles("verify_vs_own_step", [](const R& r) { return r.vs_own_step; });
  doubles("verify_vs_conv_step", [](const R& r) { return r.vs_conv_step; });
  doubles("flush_fraction", [](const R& r) { return r.flush_fraction; });
  f.set_attr("/rows", "n_rows", std::int64_t(n));
  f.set_attr("/rows", "units", "median/p10/p90/min_us: microseconds per decode step (per verify, per copy); "
                               "model_bytes: DESIGN section 6 byte model per step incl. records (their k once per group; k, w and raw v "
                               "at 2 bytes an element where records = bf16) and token I/O; "
                               "gbps = model_bytes / median; pct_roofline vs the measured copy roofline");
  f.ensure_group("/device");
  f.set_attr("/device", "name", res.device);
  f.set_attr("/device", "sm_count", std::int64_t(res.sm_count));
  f.set_attr("/device", "l2_bytes", res.l2_bytes);
  f.set_attr("/device", "hbm_bytes", res.hbm_bytes);
  f.set_attr("/device", "sm_clock_khz", std::int64_t(res.sm_clock_khz));
  f.set_attr("/device", "mem_clock_khz", std::int64_t(res.mem_clock_khz));
  f.set_attr("/device", "roofline_gbps", res.roofline_gbps);
  std::vector<std::string> tn, tr;
  std::vector<double> tv, tt, tb;
  std::vector<std::int64_t> tm, tp;
  for (const auto& t : targets) {
    tn.push_back(t.name);
    tr.push_back(t.measured_row);
    tv.push_back(t.value);
    tt.push_back(t.threshold);
    tb.push_back(t.model_bound);
    tm.push_back(t.met ? 1 : 0);
    tp.push_back(t.present ? 1 : 0);
  }
  f.write_strings("/targets/name", tn);
  f.write_strings("/targets/row", tr);
  f.write("/targets/value", {tv.size()}, tv.data());
  f.write("/targets/threshold", {tt.size()}, tt.data());
  f.write("/targets/model_bound", {tb.size()}, tb.data());
  f.set_attr("/targets", "model_bound",
             "the value the byte model allows at equal bandwidth (100 for a % of roofline; for speedups and verify "
             "ratios the ratio of modelled bytes); 0 = not measured");
  f.write("/targets/met", {tm.size()}, tm.data());
  f.write("/targets/measured", {tp.size()}, tp.data());
  f.set_attr("/targets", "where", targets_file());
  std::vector<std::string> sk = res.skipped;
  if (sk.empty()) sk.push_back("(none)");
  f.write_strings("/skipped", sk);
  auto opts = resolved_options(vm);
  const std::string plan = emu::resolved_plan_override(vm["plan"].as<std::string>());  // with REPLAYSSM_PLAN
  opts["plan"] = plan.empty() ? "none" : plan;
  h5::write_provenance(f, command_line(), opts, res.device);
  out.commit();
}
#endif

int run(const po::variables_map& vm) {
  // Options first (bad options exit 2 even without a GPU).
  std::string plan;
  try {
    plan = emu::resolved_plan_override(vm["plan"].as<std::string>());
    if (vm["list-plans"].as<bool>()) {
      std::cout << emu::plan_table(vm["plan"].as<std::string>());
      return kExitOk;
    }
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("--plan: ") + e.what());
  }
  std::vector<emu::Arch> archs;
  const std::string arch = vm["arch"].as<std::string>();
  if (arch == "all")
    archs = {emu::Arch::gdn, emu::Arch::mamba2};
  else if (arch == "gdn" || arch == "mamba2")
    archs = {emu::parse_arch(arch)};
  else
    throw UserError("--arch: '" + arch + "' (expected gdn, mamba2 or all)");
  const std::vector<int> batches = parse_ints("batch", vm["batch"].as<std::string>(), 1, 1 << 16);
  const std::vector<int> Ls = parse_ints("L", vm["L"].as<std::string>(), 1, 56);
  std::vector<int> spec_T;
  if (vm["spec-T"].as<std::string>() != "none") spec_T = parse_ints("spec-T", vm["spec-T"].as<std::string>(), 1, 32);
  std::vector<formats::FormatSpec> fmts, vfmts;
  for (const std::string& t : split("formats", vm["formats"].as<std::string>())) fmts.push_back(parse_spec("formats", t));
  for (const std::string& t : split("verify-formats", vm["verify-formats"].as<std::string>())) vfmts.push_back(parse_spec("verify-formats", t));
  std::vector<emu::USource> usrc;
  for (const std::string& t : split("usource", vm["usource"].as<std::string>())) {
    try {
      usrc.push_back(emu::parse_usource(t));
    } catch (const std::invalid_argument& e) {
      throw UserError(std::string("--usource: ") + e.what());
    }
  }
  if (usrc.empty()) usrc.push_back(emu::USource::hp);
  std::vector<emu::Records> recs;
  for (const std::string& t : split("records", vm["records"].as<std::string>())) {
    try {
      const emu::Records r = emu::parse_records(t);
      if (std::find(recs.begin(), recs.end(), r) == recs.end()) recs.push_back(r);
    } catch (const std::invalid_argument& e) {
      throw UserError(std::string("--records: ") + e.what());
    }
  }
  if (recs.empty()) throw UserError("--records: no values");
  auto policies = [&](const std::string& opt) {
    std::vector<emu::Policy> out;
    for (const std::string& t : split(opt, vm[opt].as<std::string>())) {
      try {
        out.push_back(emu::parse_policy(policy_key(t)));
      } catch (const std::invalid_argument& e) {
        throw UserError("--" + opt + ": " + e.what());
      }
    }
    return out;
  };
  const std::vector<emu::Policy> pols = policies("policies"), vpols = policies("verify-policies");
  const std::vector<emu::USource> hp_only{emu::USource::hp};
  auto variants = [&](const std::vector<emu::Policy>& ps, const std::vector<formats::FormatSpec>& fs) {
    std::vector<
#if defined(REPLAYSSM_HAVE_CUDA)
        kbench::Variant
#else
        int
#endif
        >
        out;
    for (emu::Policy p : ps)
      for (const formats::FormatSpec& f : fs) {
        if (p == emu::Policy::replay_split && f.format == formats::FormatId::fp32) continue;  // LP copy = HP copy
        const std::vector<emu::USource>& us = p == emu::Policy::replay_split ? usrc : hp_only;
        const std::vector<emu::Records> rs =
            p == emu::Policy::conventional_shared ? std::vector<emu::Records>{emu::Records::fp32} : recs;
        for (emu::USource u : us)
          for (emu::Records r : rs) {
#if defined(REPLAYSSM_HAVE_CUDA)
            kbench::Variant v;
            v.policy = p;
            v.usource = u;
            v.format = f;
            v.records = r;
            out.push_back(v);
#else
            (void)u;
            (void)r;
            out.push_back(0);
#endif
          }
      }
    return out;
  };
  const auto var = variants(pols, fmts), vvar = variants(vpols, vfmts);
  bool dots_exact = false, dots_tc = false;
  for (const std::string& t : split("step-dots", vm["step-dots"].as<std::string>())) {
    if (t == "exact") dots_exact = true;
    else if (t == "tc") dots_tc = true;
    else throw UserError("--step-dots: '" + t + "' (expected exact, tc or both, comma-separated)");
  }
  if (!dots_exact) throw UserError("--step-dots: exact is needed (the baseline rows and the targets read it)");
  auto shape4 = [&](const std::string& opt) {
    const std::vector<int> v = parse_ints(opt, vm[opt].as<std::string>(), 1, 4096);
    if (v.size() != 4) throw UserError("--" + opt + ": expected 4 comma-separated integers");
    return v;
  };
  const std::vector<int> gs = shape4("gdn-shape"), ms = shape4("mamba2-shape");
  if (gs[1] % gs[0] != 0) throw UserError("--gdn-shape: Hv must be a multiple of Hk");
  if (ms[0] % ms[3] != 0) throw UserError("--mamba2-shape: H must be a multiple of G");
  if (gs[2] % 4 != 0 || ms[2] % 4 != 0) throw UserError("--gdn-shape / --mamba2-shape: K and N must be multiples of 4");
  if (vm["reps"].as<int>() < 1 || vm["min-reps"].as<int>() < 1 || vm["steps"].as<int>() < 1)
    throw UserError("--reps, --min-reps and --steps must be >= 1");
  std::vector<std::pair<std::string, std::vector<int>>> trees;
  if (vm.count("tree"))
    for (const std::string& t : vm["tree"].as<std::vector<std::string>>()) {
      try {
        trees.emplace_back(t, ref::tree_from_text(t, ref::kMaxTreeNodes).parent);
      } catch (const std::invalid_argument& e) {
        throw UserError(std::string("--tree: ") + e.what());
      }
    }

#if !defined(REPLAYSSM_HAVE_CUDA)
  (void)var;
  (void)vvar;
  (void)dots_tc;
  (void)trees;
  throw UserError("bench: no CUDA device: this build has no CUDA kernels (configure with -DREPLAYSSM_CUDA=ON)",
                  kExitNoDevice);
#else
  std::string desc;
  if (kbench::probe_device(&desc) != 0) throw UserError("bench: " + desc, kExitNoDevice);

  kbench::Config cfg;
  cfg.archs = archs;
  cfg.batches = batches;
  cfg.Ls = Ls;
  cfg.spec_T = spec_T;
  cfg.variants = var;
  cfg.verify_variants = vvar;
  for (const auto& [label, parents] : trees) cfg.trees.push_back(kbench::Config::Tree{label, parents});
  cfg.tc_dots = dots_tc;
  cfg.gdn_Hk = gs[0], cfg.gdn_Hv = gs[1], cfg.gdn_K = gs[2], cfg.gdn_V = gs[3];
  cfg.m2_H = ms[0], cfg.m2_P = ms[1], cfg.m2_N = ms[2], cfg.m2_G = ms[3];
  cfg.max_reps = std::max(vm["reps"].as<int>(), vm["min-reps"].as<int>());
  cfg.min_reps = vm["min-reps"].as<int>();
  cfg.case_ms = vm["case-ms"].as<double>();
  cfg.min_steps = vm["steps"].as<int>();
  cfg.l2_factor = vm["l2-factor"].as<double>();
  cfg.max_seconds = vm["max-seconds"].as<double>();
  cfg.seed = vm["seed"].as<unsigned long long>();
  cfg.plan = vm["plan"].as<std::string>();
  if (!vm["quiet"].as<bool>()) cfg.log = [](const std::string& s) { std::cerr << "bench: " << s << std::endl; };
  std::cerr << "bench: device " << desc << "; launch plan override: " << (plan.empty() ? "none" : plan) << std::endl;

  kbench::Result res;
  try {
    res = kbench::run(cfg);
  } catch (const std::runtime_error& e) {
    throw UserError(std::string("bench: ") + e.what(), kExitInternal);
  }
  const std::vector<BenchTarget> targets = check_targets(res);

  std::cout << "device: " << res.device << "; copy roofline " << fmt("%.1f", res.roofline_gbps) << " GB/s\n";
  print_table(res, std::cout);
  std::cout << "\ntargets (" << targets_file() << "):\n";
  for (const BenchTarget& t : targets) std::cout << "  " << target_line(t) << "\n";
  if (!res.skipped.empty()) {
    std::cout << "\nnot run:\n";
    for (const std::string& s : res.skipped) std::cout << "  " << s << "\n";
  }
  long bad = 0;
  for (const auto& r : res.rows) bad += r.nonfinite;
  if (bad) std::cout << "WARNING: " << bad << " non-finite outputs (see the note column)\n";

  const std::string out = vm["out"].as<std::string>(), csv = vm["csv"].as<std::string>();
  if (!out.empty()) write_h5(out, res, targets, vm), std::cout << "wrote " << out << "\n";
  if (!csv.empty()) write_csv(csv, res), std::cout << "wrote " << csv << "\n";
  return kExitOk;
#endif
}

const Registrar reg{{"bench", "decode-kernel timings at real shapes: copy roofline, conventional vs ReplaySSM, verify",
                     add_options, run,
                     "replayssm bench --arch gdn --batch 1,256 --L 16 --formats fp32,fp8_e4m3 --spec-T 1..8 "
                     "--out bench.h5 --csv bench.csv"}};

}  // namespace
}  // namespace replayssm::cli
