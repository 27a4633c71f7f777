// Checks of an FP64 device (runtime/fp64_device.h) against the CPU paths, bit for bit: the projections at awkward
// shapes and magnitudes (underflowing products, zeros of both signs), the reference recurrence of both architectures
// (real and odd head shapes, T = 1, decays near 0 and 1, a second chunk from the first's state), whole tiny-model
// teacher forcing in chunks, and the sweep's FP64 shadow (outputs, drifts, a divergence). Run on the CUDA device
// (test_fp64_device) and on the host emulation of its kernels (test_fp64_host).
#pragma once
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "core/synthetic.h"
#include "runtime/backend.h"
#include "runtime/fast_recurrence.h"
#include "runtime/forward.h"
#include "runtime/gemm.h"
#include "runtime/model.h"
#include "runtime/text.h"
#include "sweep/mode_recurrence.h"

using namespace replayssm;

namespace fp64check {

// The device under test (each test binary defines it).
runtime::Fp64Device& device();

inline std::string src_dir() {
  const char* s = std::getenv("REPLAYSSM_SOURCE_DIR");
  return s ? s : ".";
}

// Every bit equal (so -0 differs from +0, and a NaN never passes), and the first index that differs.
inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b, std::size_t* first_bad = nullptr) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0 || std::isnan(a[i])) {
      if (first_bad) *first_bad = i;
      return false;
    }
  return true;
}

// Mixed magnitudes: most entries O(1), some zeros of either sign, some tiny enough that their products underflow.
inline std::vector<double> awkward(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  std::uniform_int_distribution<int> kind(0, 31);
  std::vector<double> x(n);
  for (auto& v : x) {
    const int c = kind(rng);
    v = c == 0 ? 0.0 : c == 1 ? -0.0 : c == 2 ? nd(rng) * 1e-165 : c == 3 ? nd(rng) * 1e150 : nd(rng);
  }
  return x;
}

}  // namespace fp64check

inline void check_projections() {
  using namespace fp64check;
  struct Shape {
    std::size_t m, n, k;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{64, 64, 16}, Shape{65, 130, 17}, Shape{7, 300, 1},
                        Shape{300, 257, 256}, Shape{1000, 1536, 256}, Shape{129, 256, 512}}) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k);
    const std::vector<double> X = awkward(s.m * s.k, s.m * 7 + s.k), W = awkward(s.n * s.k, s.n * 13 + 1);
    std::vector<double> cpu(s.m * s.n, 1.0), gpu(s.m * s.n, 2.0);
    runtime::gemm_nt(X.data(), W.data(), cpu.data(), s.m, s.n, s.k, 2);
    device().gemm_nt(X.data(), W.data(), gpu.data(), s.m, s.n, s.k);
    std::size_t bad = 0;
    const bool same = same_bits(cpu, gpu, &bad);
    if (!same) INFO("first difference at " << bad << ": cpu " << cpu[bad] << " gpu " << gpu[bad]);
    CHECK(same);
  }
}

// A job's snapshot fields: a block crossing no snapshot point may pass no buffer (the sweep's shadow does, for blocks
// shorter than a flush window), one that crosses a point must pass one.
inline void check_snapshot_fields() {
  using namespace fp64check;
  const int T = 3, H = 1, G = 1, V = 4, K = 4;
  std::vector<double> a(T * H, 0.5), beta(T * H, 0.25), v(T * H * V, 1.0), k(T * G * K, 0.5), q(T * G * K, 0.5);
  std::vector<double> state(H * V * K, 0.0), o(T * H * V), snaps(H * V * K);
  runtime::RecurrenceJob job;
  job.gdn = true, job.T = T, job.H = H, job.G = G, job.V = V, job.K = K;
  job.block_cols = runtime::recurrent_step_block_cols(V, K);
  job.a = a.data(), job.beta = beta.data(), job.v = v.data(), job.k = k.data(), job.q = q.data();
  job.state = state.data(), job.o = o.data();
  job.snapshot_period = 16, job.snapshot_offset = 5;  // tokens 5..7 of a window of 16: no snapshot
  CHECK(runtime::snapshot_count(T, 16, 5) == 0);
  CHECK_NOTHROW(device().recurrence(job));
  job.snapshot_offset = 14;  // tokens 14..16: token 15 closes the window
  CHECK(runtime::snapshot_count(T, 16, 14) == 1);
  CHECK_THROWS_AS(device().recurrence(job), std::invalid_argument);
  job.snapshots = snaps.data();
  CHECK_NOTHROW(device().recurrence(job));
  job.snapshot_period = -1;
  CHECK_THROWS_AS(device().recurrence(job), std::invalid_argument);
}

inline void check_recurrence() {
  using namespace fp64check;
  struct Gdn {
    int T, Hk, Hv, K, V;
  };
  for (const Gdn g : {Gdn{1, 1, 2, 128, 128}, Gdn{37, 1, 2, 128, 128}, Gdn{20, 2, 6, 24, 40}, Gdn{9, 1, 3, 130, 200},
                      Gdn{5, 1, 1, 256, 64}}) {
    INFO("GDN T " << g.T << " Hk " << g.Hk << " Hv " << g.Hv << " K " << g.K << " V " << g.V);
    if (!runtime::recurrent_step_fast_ok(g.V, g.K) || !device().recurrence_fits(g.V, g.K)) continue;
    for (const DecayRange d : {DecayRange{}, DecayRange{-12.0, -9.0}, DecayRange{1.0, 3.0}}) {
      const ref::GdnInputs a = random_gdn(g.T, g.Hk, g.Hv, g.K, g.V, 11, d);
      const ref::GdnInputs b = random_gdn(g.T, g.Hk, g.Hv, g.K, g.V, 12, d);
      runtime::ReferenceBackend cpu(1), gpu(1, &device());
      cpu.start(1);
      gpu.start(1);
      for (const ref::GdnInputs* in : {&a, &b}) {  // the second chunk starts from the first's state
        const ref::LayerOutputs c = cpu.gdn_chunk(0, *in), d2 = gpu.gdn_chunk(0, *in);
        CHECK(same_bits(c.o, d2.o));
        CHECK(same_bits(c.final_state, d2.final_state));
      }
    }
  }
  struct M2 {
    int T, H, G, P, N;
  };
  for (const M2 m : {M2{1, 8, 2, 64, 128}, M2{33, 8, 2, 64, 128}, M2{17, 3, 1, 20, 48}, M2{6, 4, 4, 96, 136}}) {
    INFO("Mamba-2 T " << m.T << " H " << m.H << " G " << m.G << " P " << m.P << " N " << m.N);
    if (!runtime::recurrent_step_fast_ok(m.P, m.N) || !device().recurrence_fits(m.P, m.N)) continue;
    for (const bool skip : {true, false}) {
      ref::Mamba2Inputs a = random_mamba2(m.T, m.H, m.G, m.P, m.N, 21), b = random_mamba2(m.T, m.H, m.G, m.P, m.N, 22);
      if (!skip) a.D.clear(), b.D.clear();
      runtime::ReferenceBackend cpu(1), gpu(1, &device());
      cpu.start(1);
      gpu.start(1);
      for (const ref::Mamba2Inputs* in : {&a, &b}) {
        const ref::LayerOutputs c = cpu.mamba2_chunk(0, *in), d2 = gpu.mamba2_chunk(0, *in);
        CHECK(same_bits(c.o, d2.o));
        CHECK(same_bits(c.final_state, d2.final_state));
      }
    }
  }
}

inline void check_teacher_forcing() {
  using namespace fp64check;
  const auto text = runtime::read_text_slice(src_dir() + "/datasets/pg19/test/10146.txt", 5000, 700);
  for (const std::string arch : {"gdn", "mamba2"}) {
    INFO(arch);
    const auto m = runtime::TinyModel::load(src_dir() + "/datasets/models/tiny_" + arch + ".h5");
    runtime::ReferenceBackend cpu_rec(2), gpu_rec(1, &device());
    runtime::ForwardOptions cpu_opt, gpu_opt;
    cpu_opt.threads = 2;
    gpu_opt.device = &device();
    runtime::ForwardStream cpu(m, cpu_rec, cpu_opt), gpu(m, gpu_rec, gpu_opt);
    for (const std::size_t n : {std::size_t(1), std::size_t(256), std::size_t(443)}) {
      const std::size_t t0 = std::size_t(cpu.position());
      const runtime::Mat c = cpu.next(text.data() + t0, n), g = gpu.next(text.data() + t0, n);
      const std::vector<double> cv(c.data(), c.data() + c.size()), gv(g.data(), g.data() + g.size());
      CHECK(same_bits(cv, gv));
    }
  }
}

namespace fp64check {

// One layer through ModeLayerStream in chunks, with the shadow on `device` (or the CPU): outputs and drifts; a
// divergence ends the run and is returned as its position.
struct LayerRun {
  std::vector<double> o, output_drift, state_drift;
  std::vector<std::int64_t> steps;
  std::int64_t diverged = -1;
};

template <class Inputs>
LayerRun run_layer(const emu::Mode& mode, const std::vector<Inputs>& chunks, runtime::Fp64Device* device) {
  auto be = emu::make_emulated_backend();
  sweep::ModeLayerStream s(*be, mode, device);
  sweep::LayerDrift drift;
  LayerRun r;
  try {
    for (const Inputs& in : chunks) {
      ref::LayerOutputs out;
      if constexpr (std::is_same_v<Inputs, ref::GdnInputs>)
        out = s.gdn(in, &drift);
      else
        out = s.mamba2(in, &drift);
      r.o.insert(r.o.end(), out.o.begin(), out.o.end());
    }
  } catch (const sweep::Diverged& d) {
    r.diverged = d.position;
  }
  r.output_drift = drift.output;
  r.state_drift = drift.state;
  r.steps = drift.steps;
  return r;
}

inline void check_same(const LayerRun& cpu, const LayerRun& gpu) {
  CHECK(cpu.diverged == gpu.diverged);
  CHECK(same_bits(cpu.o, gpu.o));
  CHECK(same_bits(cpu.output_drift, gpu.output_drift));
  CHECK(same_bits(cpu.state_drift, gpu.state_drift));
  CHECK(cpu.steps == gpu.steps);
  CHECK(!cpu.steps.empty());
}

}  // namespace fp64check

inline void check_shadow() {
  using namespace fp64check;
  // Chunks of awkward lengths (cut inside flush windows, one longer than the device's blocks), modes with L = 16, 7, 1.
  const std::vector<int> lengths = {1, 15, 40, 1100, 9};
  for (const char* name : {"replay_shared/fp32", "replay_split/fp8_e4m3/row/L=7", "conventional_shared/bf16/L=1",
                           "replay_shared/nvfp4"}) {
    INFO(name);
    {
      const emu::Mode mode = emu::parse_mode(name, emu::Arch::gdn);
      std::vector<ref::GdnInputs> chunks;
      for (std::size_t i = 0; i < lengths.size(); ++i) chunks.push_back(random_gdn(lengths[i], 1, 2, 128, 128, 40 + i));
      check_same(run_layer(mode, chunks, nullptr), run_layer(mode, chunks, &device()));
    }
    {
      const emu::Mode mode = emu::parse_mode(name, emu::Arch::mamba2);
      std::vector<ref::Mamba2Inputs> chunks;
      for (std::size_t i = 0; i < lengths.size(); ++i)
        chunks.push_back(random_mamba2(lengths[i], 8, 2, 64, 128, 50 + i));
      check_same(run_layer(mode, chunks, nullptr), run_layer(mode, chunks, &device()));
    }
  }
  {  // a divergence keeps the same drifts before it
    const emu::Mode mode = emu::parse_mode("replay_shared/fp32/L=7", emu::Arch::gdn);
    std::vector<ref::GdnInputs> chunks = {random_gdn(30, 1, 2, 128, 128, 61), random_gdn(60, 1, 2, 128, 128, 62)};
    for (int i = 0; i < 128; ++i) chunks[1].v[(std::size_t(25) * 2 + 1) * 128 + std::size_t(i)] = 1e300;  // FP32 inf
    const LayerRun cpu = run_layer(mode, chunks, nullptr), gpu = run_layer(mode, chunks, &device());
    CHECK(cpu.diverged == 55);
    check_same(cpu, gpu);
  }
}
