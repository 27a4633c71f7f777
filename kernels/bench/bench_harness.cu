// The CUDA timing harness of `replayssm bench` (src/bench/bench_api.h). It times the decode kernels through their
// launch interface (kernels/common/decode_kernel.h: plan_op / launch_planned on device pointers), so every launch
// below is the exact kernel plan the DecodeBackend runs for the same op under the same plan override.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulation/decode_api.h"
#include "bench/bench_api.h"
#include "kernels/bench/bench_device.cuh"  // first: bench_model.h sizes sets with its Arena
#include "kernels/bench/bench_cases.h"
#include "kernels/bench/bench_model.h"
#include "kernels/common/decode_kernel.h"

namespace replayssm::kbench {
namespace {

using emu::Arch;
using emu::Policy;
using emu::USource;

struct Runner {
  const Config& cfg;
  Result& res;
  cudaStream_t stream = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  int max_drafts = 8;
  unsigned long long* d_count = nullptr;
  std::chrono::steady_clock::time_point t_start = std::chrono::steady_clock::now();
  kern::PlanOverride plan_override_;  // the run's (Config::plan with REPLAYSSM_PLAN)

  Runner(const Config& c, Result& r) : cfg(c), res(r), plan_override_(kern::resolve_plan_override(c.plan)) {
    ck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    ck(cudaEventCreate(&e0), "event");
    ck(cudaEventCreate(&e1), "event");
    ck(cudaMalloc(&d_count, sizeof(unsigned long long)), "cudaMalloc counter");
    for (int T : cfg.spec_T) max_drafts = std::max(max_drafts, T);
  }
  ~Runner() {
    cudaFree(d_count);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(stream);
  }

  void log(const std::string& s) const {
    if (cfg.log) cfg.log(s);
  }
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  }

  void fill(float* p, std::size_t n, float lo, float hi, std::uint64_t seed) {
    if (!p || !n) return;
    fill_uniform<<<1024, 256, 0, stream>>>(p, n, lo, hi, seed);
    ck(cudaGetLastError(), "fill");
  }
  // A record vector buffer of n elements in the format r (kern::records_of).
  void fill_records(float* p, std::size_t n, float lo, float hi, std::uint64_t seed, emu::Records r) {
    if (!p || !n) return;
    if (r == emu::Records::bf16)
      fill_uniform<<<1024, 256, 0, stream>>>(kern::records_of<emu::RecordBf16>(p), n, lo, hi, seed);
    else
      fill_uniform<<<1024, 256, 0, stream>>>(p, n, lo, hi, seed);
    ck(cudaGetLastError(), "fill");
  }
  // A record vector buffer of count elements of rec bytes each, typed as KParams holds it.
  static float* take_records(Arena& A, std::size_t count, std::size_t rec) {
    return reinterpret_cast<float*>(A.take<std::uint8_t>(count * rec));
  }

  // Tiles `per`-byte blocks [0, per * nsrc) of dst over dst[0, per * count) by doubling copies.
  void tile(std::uint8_t* dst, std::size_t per, std::size_t nsrc, std::size_t count) {
    if (!dst || !per) return;
    std::size_t have = std::min(nsrc, count);
    while (have < count) {
      const std::size_t n = std::min(have, count - have);
      ck(cudaMemcpyAsync(dst + have * per, dst, n * per, cudaMemcpyDeviceToDevice, stream), "tile");
      have += n;
    }
  }

  // ----- copy roofline
  void copy_roofline() {
    std::size_t free_b = 0, total_b = 0;
    ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    std::size_t bytes = std::size_t(1) << 30;  // 1 GiB each way, ~18x the L2
    while (bytes * 2 > free_b / 2 && bytes > (std::size_t(64) << 20)) bytes /= 2;
    float *src = nullptr, *dst = nullptr;
    ck(cudaMalloc(&src, bytes), "cudaMalloc copy src");
    ck(cudaMalloc(&dst, bytes), "cudaMalloc copy dst");
    fill(src, bytes / 4, -1.0f, 1.0f, cfg.seed);
    fill(dst, bytes / 4, -1.0f, 1.0f, cfg.seed + 1);
    const std::size_t n4 = bytes / 16;
    for (int variant = 0; variant < 2; ++variant) {
      auto launch = [&] {
        if (variant == 0)
          ck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "memcpy");
        else {
          copy_v4<<<unsigned(res.sm_count * 8), 256, 0, stream>>>(reinterpret_cast<const float4*>(src),
                                                                    reinterpret_cast<float4*>(dst), n4);
          ck(cudaGetLastError(), "copy_v4");
        }
      };
      for (int w = 0; w < 3; ++w) launch();
      ck(cudaStreamSynchronize(stream), "copy warm-up");
      std::vector<double> us;
      const int reps = std::max(cfg.min_reps, 30);
      for (int r = 0; r < reps; ++r) {
        ck(cudaEventRecord(e0, stream), "event");
        launch();
        ck(cudaEventRecord(e1, stream), "event");
        ck(cudaEventSynchronize(e1), "copy");
        float ms = 0;
        ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        us.push_back(double(ms) * 1e3);
      }
      Row row;
      row.arch = "-";
      row.kernel = variant == 0 ? "copy_memcpy" : "copy_kernel";
      row.policy = row.usource = row.scaling = "-";
      row.format = "fp32";
      row.reps = reps;
      row.sets = 1;
      row.steps_per_graph = 1;
      row.median_us = percentile(us, 0.5);
      row.p10_us = percentile(us, 0.1);
      row.p90_us = percentile(us, 0.9);
      row.min_us = *std::min_element(us.begin(), us.end());
      row.model_bytes = row.state_bytes = 2.0 * double(bytes);
      row.gbps = row.model_bytes / (row.median_us * 1e3);
      row.note = std::to_string(bytes >> 20) + " MiB read + written";
      res.rows.push_back(row);
      res.roofline_gbps = std::max(res.roofline_gbps, row.gbps);
      log("copy roofline " + row.kernel + ": " + std::to_string(row.gbps) + " GB/s");
    }
    for (Row& r : res.rows) r.pct_roofline = 100.0 * r.gbps / res.roofline_gbps;
    ck(cudaFree(src), "free");
    ck(cudaFree(dst), "free");
  }

  // ----- one decode / verify case
  void run_case(const Case& c) {
    const emu::Dims& d = c.s.d;
    const bool gdn = c.s.arch == Arch::gdn;
    const bool drafts = c.op != Op::decode, tree = c.op == Op::tree;
    const int md = drafts ? std::max(max_drafts, c.T) : max_drafts;
    emu::Mode m = mode_of(c, md);
    emu::check_mode(m, d);
    const int max_cap = tree ? kern::kMaxRecords : 64;  // trees run on the reference kernel
    if (m.capacity() > max_cap)
      throw std::invalid_argument("L - 1 + max drafts must be <= " + std::to_string(max_cap) + " (kernel limit)");
    const emu::StoreLayout lay = emu::store_layout(m, d.V, d.K);
    const int T = drafts ? c.T : 1;
    Sizes z{};
    z.heads = d.heads();
    z.VK = std::size_t(d.V) * d.K;
    z.code = lay.code_bytes;
    z.scale = lay.scale_bytes;
    z.cap = std::size_t(m.capacity());
    z.split = m.split();
    z.replay = m.replay();
    z.recompute = m.recompute();
    z.gdn = gdn;
    z.rec = kern::record_elem_bytes(m.records);
    z.snaps = (!z.replay && drafts) ? std::size_t(T) : 0;
    z.BT = std::size_t(d.B) * T;
    const std::size_t per_set = set_bytes(z, d), touched = std::max<std::size_t>(touched_bytes(z, d), 1);
    int R = int(std::ceil(cfg.l2_factor * res.l2_bytes / double(touched)));
    R = std::max(R, 1);
    std::size_t free_b = 0, total_b = 0;
    ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const std::size_t budget = free_b / 10 * 8;
    std::string note;
    if (std::size_t(R) * per_set > budget) {
      const int Rfit = int(budget / per_set);
      if (Rfit < 1) throw std::runtime_error("does not fit in device memory (" + std::to_string(per_set >> 20) + " MiB)");
      note = "rotation cut to fit memory; ";
      R = Rfit;
    }
    int S = std::max(cfg.min_steps, R);
    S = (S + c.L - 1) / c.L * c.L;

    // allocate and fill the sets
    std::vector<Arena> arenas(static_cast<std::size_t>(R));
    std::vector<SetPtrs> sets(static_cast<std::size_t>(R));
    const std::size_t tokH = z.BT * d.H, tokG = z.BT * d.G;
    // a few distinct head states, encoded on the host with the shared codecs, tiled over every head
    const std::size_t nsrc = std::min<std::size_t>(4, z.heads);
    std::vector<std::uint8_t> hcodes(nsrc * z.code), hscales(nsrc * z.scale);
    {
      std::mt19937_64 rng(cfg.seed);
      std::uniform_real_distribution<float> u(-0.1f, 0.1f);
      std::vector<float> x(z.VK);
      for (std::size_t i = 0; i < nsrc; ++i) {
        for (float& e : x) e = u(rng);
        emu::encode_head(m, x.data(), d.V, d.K, std::uint32_t(i), emu::kInitStep, hcodes.data() + i * z.code,
                         hscales.data() + i * z.scale);
      }
    }
    const float ksc = std::sqrt(3.0f / float(d.K));  // |k| ~ 1
    for (int r = 0; r < R; ++r) {
      Arena& A = arenas[std::size_t(r)];
      A.alloc(per_set, "state set");
      SetPtrs& P = sets[std::size_t(r)];
      P.codes = A.take<std::uint8_t>(z.heads * z.code);
      P.scales = A.take<std::uint8_t>(z.heads * z.scale);
      if (z.snaps) {
        P.snap_codes = A.take<std::uint8_t>(z.heads * z.snaps * z.code);
        P.snap_scales = A.take<std::uint8_t>(z.heads * z.snaps * z.scale);
      }
      if (z.split) P.hp = A.take<float>(z.heads * z.VK);
      if (z.replay) {
        P.ra = A.take<float>(z.heads * z.cap);
        P.rbeta = A.take<float>(z.heads * z.cap);
        P.rk = take_records(A, z.heads * z.cap * d.K, z.rec);
        P.rw = take_records(A, z.heads * z.cap * d.V, z.rec);
        if (z.recompute) P.rv = take_records(A, z.heads * z.cap * d.V, z.rec);
      }
      P.a = A.take<float>(tokH);
      P.beta = A.take<float>(tokH);
      P.v = A.take<float>(tokH * d.V);
      P.skip = A.take<float>(tokH * d.V);
      P.k = A.take<float>(tokG * d.K);
      P.q = A.take<float>(tokG * d.K);
      P.o = A.take<float>(tokH * d.V);
      const std::uint64_t sd = cfg.seed * 1000003ull + std::uint64_t(r) * 7919ull;
      ck(cudaMemcpyAsync(P.codes, hcodes.data(), hcodes.size(), cudaMemcpyHostToDevice, stream), "upload codes");
      tile(P.codes, z.code, nsrc, z.heads);
      if (z.scale) {
        ck(cudaMemcpyAsync(P.scales, hscales.data(), hscales.size(), cudaMemcpyHostToDevice, stream), "upload scales");
        tile(P.scales, z.scale, nsrc, z.heads);
      }
      fill(P.hp, z.split ? z.heads * z.VK : 0, -0.1f, 0.1f, sd + 1);
      if (z.replay) {
        fill(P.ra, z.heads * z.cap, 0.9f, 0.999f, sd + 2);
        fill(P.rbeta, z.heads * z.cap, 0.2f, 0.8f, sd + 3);
        fill_records(P.rk, z.heads * z.cap * d.K, -ksc, ksc, sd + 4, m.records);
        fill_records(P.rw, z.heads * z.cap * d.V, -0.05f, 0.05f, sd + 5, m.records);
        fill_records(P.rv, z.recompute ? z.heads * z.cap * d.V : 0, -0.5f, 0.5f, sd + 6, m.records);
      }
      fill(P.a, tokH, 0.9f, 0.999f, sd + 7);
      fill(P.beta, tokH, 0.2f, 0.8f, sd + 8);
      fill(P.v, tokH * d.V, -0.5f, 0.5f, sd + 9);
      fill(P.skip, tokH * d.V, -0.1f, 0.1f, sd + 10);
      fill(P.k, tokG * d.K, -ksc, ksc, sd + 11);
      fill(P.q, tokG * d.K, -ksc / std::sqrt(float(d.K)) * 4.0f, ksc / std::sqrt(float(d.K)) * 4.0f, sd + 12);
      fill(P.o, tokH * d.V, -1.0f, 1.0f, sd + 13);
    }
    // per-step window lengths: n_b = (b + s) mod L (1/L of the rows flush at each step); no early flush
    std::vector<int> hn(std::size_t(S) * d.B), step_flushes(std::size_t(S), 0);
    long flushes = 0;
    for (int s = 0; s < S; ++s)
      for (int b = 0; b < d.B; ++b) {
        const int n = (b + s) % c.L;
        hn[std::size_t(s) * d.B + b] = n;
        if (emu::step_fills_window(n, c.L)) ++flushes, ++step_flushes[std::size_t(s)];
      }
    Arena ctl;
    ctl.alloc(Arena::round(hn.size() * 4) + 2 * Arena::round(std::size_t(d.B) * 4), "control");
    int* dn = ctl.take<int>(hn.size());
    int* dzero = ctl.take<int>(std::size_t(d.B));
    int* dtok = ctl.take<int>(std::size_t(d.B));
    ck(cudaMemcpyAsync(dn, hn.data(), hn.size() * 4, cudaMemcpyHostToDevice, stream), "upload n");
    ck(cudaMemsetAsync(dzero, 0, std::size_t(d.B) * 4, stream), "memset");
    ck(cudaMemsetAsync(dtok, 0, std::size_t(d.B) * 4, stream), "memset");
    // tree verify's scratch, shared by every set (written before it is read in each launch) and the tree itself
    Arena tscratch;
    float *node_states = nullptr, *pa = nullptr, *pk = nullptr, *pw = nullptr;
    int* dparents = nullptr;
    if (tree) {
      const std::size_t nodes = z.replay ? 0 : z.heads * std::size_t(T) * z.VK;
      const std::size_t path = z.replay ? z.heads * z.cap : 0;
      tscratch.alloc(Arena::round(nodes * 4) + Arena::round(path * 4) + Arena::round(path * d.K * z.rec) +
                         Arena::round(path * d.V * z.rec) + Arena::round(std::size_t(T) * 4),
                     "tree scratch");
      if (nodes) node_states = tscratch.take<float>(nodes);
      if (path) {
        pa = tscratch.take<float>(path);
        pk = take_records(tscratch, path * d.K, z.rec);
        pw = take_records(tscratch, path * d.V, z.rec);
      }
      dparents = tscratch.take<int>(std::size_t(T));
      ck(cudaMemcpyAsync(dparents, c.parents.data(), std::size_t(T) * 4, cudaMemcpyHostToDevice, stream), "tree");
    }
    ck(cudaStreamSynchronize(stream), "case setup");

    auto params = [&](int s) {
      const SetPtrs& P = sets[std::size_t(s % R)];
      kern::KParams p;
      p.B = d.B, p.G = d.G, p.H = d.H, p.K = d.K, p.V = d.V;
      p.L = c.L, p.cap = m.capacity(), p.max_drafts = z.snaps ? T : md, p.T = T;
      p.policy = m.policy, p.usource = m.usource, p.scaling = m.scaling, p.rounding = m.rounding, p.seed = m.seed;
      p.records = m.records;
      p.op = c.op == Op::verify ? kern::Op::verify : tree ? kern::Op::tree : kern::Op::step;
      p.parents = dparents, p.node_states = node_states, p.pa = pa, p.pk = pk, p.pw = pw;
      p.a = P.a, p.beta = gdn ? P.beta : nullptr, p.v = P.v, p.k = P.k, p.q = P.q, p.skip = gdn ? nullptr : P.skip;
      p.o = P.o;
      p.codes = P.codes, p.scales = P.scales, p.code_bytes = z.code, p.scale_bytes = z.scale;
      p.hp = P.hp, p.snap_codes = P.snap_codes, p.snap_scales = P.snap_scales;
      p.ra = P.ra, p.rbeta = P.rbeta, p.rk = P.rk, p.rw = P.rw, p.rv = P.rv;
      p.n = dn + std::size_t(s) * d.B, p.early = dzero, p.tok = dtok;
      p.flush_hint = drafts ? 0 : step_flushes[std::size_t(s)];  // as the backend passes it
      p.early_hint = 0;  // steady state: no buffer overflows
      return p;
    };
    // The plan override of this row: the run's, with the tensor-core row dots for a tc row and never for an exact
    // one. A row labelled "tc" is checked to have planned that form.
    kern::PlanOverride ovr = plan_override_;
    ovr.tc_dots = c.v.tc_dots;
    bool tc_ran = false;
    std::vector<std::string> plans;
    auto launch = [&](int s) {
      const kern::KParams p = params(s);
      const kern::LaunchPlan plan = kern::plan_op(c.s.arch, m.format, p, ovr);
      tc_ran = tc_ran || plan.tc_dots;
      const std::string text = kern::to_string(plan);
      if (std::find(plans.begin(), plans.end(), text) == plans.end()) plans.push_back(text);
      ck(cudaError_t(kern::launch_planned(c.s.arch, m.format, p, plan, stream)), "decode launch");
    };
    // one plain launch first (sets the kernel's shared-memory attribute outside capture, catches launch errors)
    launch(0);
    ck(cudaStreamSynchronize(stream), "first launch");
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ck(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "begin capture");
    for (int s = 0; s < S; ++s) launch(s);
    ck(cudaStreamEndCapture(stream, &graph), "end capture");
    ck(cudaGraphInstantiate(&exec, graph, 0ull), "instantiate");
    auto replay_ms = [&] {
      ck(cudaEventRecord(e0, stream), "event");
      ck(cudaGraphLaunch(exec, stream), "graph launch");
      ck(cudaEventRecord(e1, stream), "event");
      ck(cudaEventSynchronize(e1), "graph replay");
      float ms = 0;
      ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
      return double(ms);
    };
    ck(cudaGraphLaunch(exec, stream), "warm-up");
    const double est = replay_ms();  // second warm-up, also the estimate
    const int reps = std::clamp(int(cfg.case_ms / std::max(est, 1e-3)), cfg.min_reps, cfg.max_reps);
    std::vector<double> us;
    us.reserve(std::size_t(reps));
    for (int r = 0; r < reps; ++r) us.push_back(replay_ms() * 1e3 / S);
    // outputs of every set after timing must be finite
    ck(cudaMemsetAsync(d_count, 0, sizeof(unsigned long long), stream), "memset");
    for (const SetPtrs& P : sets) {
      count_nonfinite<<<256, 256, 0, stream>>>(P.o, tokH * d.V, d_count);
      ck(cudaGetLastError(), "count_nonfinite");
    }
    unsigned long long bad = 0;
    ck(cudaMemcpyAsync(&bad, d_count, sizeof bad, cudaMemcpyDeviceToHost, stream), "download");
    ck(cudaStreamSynchronize(stream), "nonfinite check");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);

    Row row;
    row.arch = emu::arch_name(c.s.arch);
    row.kernel = c.op == Op::verify ? "verify" : tree ? tree_kernel_name(c.tree_label) : "decode";
    row.policy = emu::policy_name(m.policy);
    row.usource = (gdn && m.split()) ? emu::usource_name(m.usource) : "-";
    row.format = formats::format_name(m.format);
    row.scaling = formats::scaling_name(m.scaling);
    row.B = d.B;
    row.L = c.L;
    row.T = T;
    row.sets = R;
    row.steps_per_graph = S;
    row.reps = reps;
    row.median_us = percentile(us, 0.5);
    row.p10_us = percentile(us, 0.1);
    row.p90_us = percentile(us, 0.9);
    row.min_us = *std::min_element(us.begin(), us.end());
    row.model_bytes = model_bytes(c, lay, &row.state_bytes);
    row.gbps = row.model_bytes / (row.median_us * 1e3);
    row.pct_roofline = res.roofline_gbps > 0 ? 100.0 * row.gbps / res.roofline_gbps : 0.0;
    row.flush_fraction = (z.replay && c.op == Op::decode) ? double(flushes) / (double(S) * d.B) : 0.0;
    row.nonfinite = long(bad);
    row.dots = c.v.tc_dots ? "tc" : "exact";
    row.records = emu::records_name(m.records);
    if (c.v.tc_dots && !tc_ran) note += "tensor-core form did not run; ";
    for (const std::string& pl : plans) row.plan += (row.plan.empty() ? "" : " | ") + pl;
    row.note = note + (bad ? "NON-FINITE OUTPUTS" : "");
    if (!row.note.empty() && row.note.back() == ' ') row.note.resize(row.note.size() - 2);
    res.rows.push_back(row);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-6s B=%-4d L=%-3d %-7s T=%d %-20s %-9s %-5s u=%-9s %10.2f us  %7.1f GB/s  (%d sets, %d steps/graph, %d reps)%s%s",
                  row.arch.c_str(), row.B, row.L, row.kernel.c_str(), T, row.policy.c_str(), row.format.c_str(),
                  row.scaling.c_str(), row.usource.c_str(), row.median_us, row.gbps, R, S, reps,
                  c.v.tc_dots ? "  tensor-core row dots" : "", m.bf16_records() ? "  BF16 records" : "");
    log(buf);
  }

  Shape shape(Arch a, int B) const {
    if (a == Arch::gdn) return Shape{a, emu::Dims{B, cfg.gdn_Hk, cfg.gdn_Hv, cfg.gdn_K, cfg.gdn_V}};
    return Shape{a, emu::Dims{B, cfg.m2_G, cfg.m2_H, cfg.m2_N, cfg.m2_P}};
  }

  void sweep() {
    for (int L : cfg.Ls)
      for (int B : cfg.batches)
        for (Arch a : cfg.archs) {
          const std::vector<Case> cases = cases_for(cfg, shape(a, B), L);
          for (const Case& c : cases) {
            if (cfg.max_seconds > 0 && elapsed_s() > cfg.max_seconds) {
              res.skipped.push_back(case_name(c) + " (time budget)");
              continue;
            }
            try {
              run_case(c);
            } catch (const std::invalid_argument& e) {
              res.skipped.push_back(case_name(c) + " (" + e.what() + ")");
            } catch (const std::runtime_error& e) {
              // a sticky CUDA error poisons the context: stop here, report what was measured
              const cudaError_t sticky = cudaGetLastError();
              res.skipped.push_back(case_name(c) + " (" + e.what() + ")");
              log("FAILED: " + case_name(c) + ": " + e.what());
              if (sticky != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
                res.skipped.push_back("remaining cases: CUDA context lost");
                return;
              }
            }
          }
        }
  }

  void ratios() {
    for (Row& r : res.rows) {
      if (r.kernel.rfind("copy", 0) == 0) continue;  // the roofline rows
      const Row* conv = nullptr;
      const Row* own = nullptr;
      for (const Row& q : res.rows) {
        if (q.kernel != "decode" || q.arch != r.arch || q.B != r.B || q.L != r.L) continue;
        if (q.policy == "conventional_shared" && q.format == "fp32") conv = &q;
        // a tc verify row's own step is its variant's exact step where no tc step row exists (FP32: none does)
        if (q.policy == r.policy && q.format == r.format && q.scaling == r.scaling && q.usource == r.usource &&
            q.records == r.records && (q.dots == r.dots || (!own && q.dots == "exact")))
          own = &q;
      }
      if (conv) r.speedup_vs_conv = conv->median_us / r.median_us;
      if (r.kernel != "decode") {  // verify and tree rows
        if (conv) r.vs_conv_step = r.median_us / conv->median_us;
        if (own) r.vs_own_step = r.median_us / own->median_us;
      }
    }
  }
};

}  // namespace

int probe_device(std::string* desc) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    *desc = std::string("no CUDA device (") + (e != cudaSuccess ? cudaGetErrorString(e) : "device count 0") + ")";
    return 3;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    *desc = "no CUDA device (cudaGetDeviceProperties failed)";
    return 3;
  }
  *desc = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
          std::to_string(prop.multiProcessorCount) + " SMs, " + std::to_string(prop.l2CacheSize >> 20) + " MiB L2)";
  return 0;
}

Result run(const Config& cfg) {
  Result res;
  ck(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  probe_device(&res.device);
  res.sm_count = prop.multiProcessorCount;
  res.l2_bytes = double(prop.l2CacheSize);
  res.hbm_bytes = double(prop.totalGlobalMem);
  cudaDeviceGetAttribute(&res.sm_clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&res.mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
  Runner r(cfg, res);
  r.copy_roofline();
  r.sweep();
  r.ratios();
  return res;
}

}  // namespace replayssm::kbench
