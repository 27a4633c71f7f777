// CUDA backend checkpoints: a device backend saved mid-sequence (its device stores and records copied to the host)
// and loaded into a fresh one continues bit for bit, across policies, formats, roundings and record formats of both
// recurrences; a blob of another mode or of the emulated backend is refused.
#include "catch.hpp"
#include "backend_checkpoint_checks.h"
#include "cuda_test_support.h"

using namespace replayssm;
using namespace replayssm::cudatest;

namespace {

std::unique_ptr<DecodeBackend> fresh_gpu() {
  gpu();  // exits 77 (skipped) without a usable device
  std::string why;
  auto b = make_cuda_backend(DeviceBackendOptions{}, &why);
  REQUIRE(b);
  return b;
}

}  // namespace

TEST_CASE("cuda checkpoints: a loaded backend continues bit for bit", "[cuda][checkpoint]") {
  Dims d;
  d.B = 2, d.G = 1, d.H = 2, d.K = 32, d.V = 8;
  for (const auto& [arch, name] : std::vector<std::pair<Arch, const char*>>{
           {Arch::gdn, "conventional_shared/fp8_e4m3/row/sr"},
           {Arch::gdn, "replay_shared/bf16/sr/rec=bf16/L=5"},
           {Arch::gdn, "replay_split/fp8_e4m3/row/sr/u=hp"},
           {Arch::gdn, "replay_split/nvfp4/u=recompute/rec=bf16"},
           {Arch::mamba2, "conventional_shared/bf16/sr"},
           {Arch::mamba2, "replay_split/fp8_e4m3/row/sr/L=8"}}) {
    INFO(arch_name(arch) << " " << name);
    for (const int cut : {5, 16, 23}) testing::check_backend_resume(fresh_gpu, d, parse_mode(name, arch), cut);
  }
}

TEST_CASE("cuda checkpoints: a blob of another mode or backend is refused", "[cuda][checkpoint]") {
  Dims d;
  d.B = 1, d.G = 1, d.H = 2, d.K = 32, d.V = 8;
  const Mode m = parse_mode("replay_split/fp8_e4m3/row/u=hp", Arch::gdn);
  auto a = fresh_gpu();
  a->init(d, m, nullptr);
  std::vector<std::uint8_t> blob;
  a->save(blob);
  auto b = fresh_gpu();
  b->init(d, parse_mode("replay_split/bf16/u=hp", Arch::gdn), nullptr);
  CHECK_THROWS_AS(b->load(blob.data(), blob.size()), std::invalid_argument);
  auto emu_be = make_emulated_backend();
  emu_be->init(d, m, nullptr);
  CHECK_THROWS_AS(emu_be->load(blob.data(), blob.size()), std::invalid_argument);
  std::vector<std::uint8_t> emu_blob;
  emu_be->save(emu_blob);
  CHECK_THROWS_AS(a->load(emu_blob.data(), emu_blob.size()), std::invalid_argument);
}

// BF16 records at the real head dims, where the tuned FP32 step keeps them (kern::bf16_records_tuned): a checkpoint
// saved mid-window or at a flush continues bit for bit, and its record vectors are the device's 2-byte codes (the
// blob is the FP32 records' less 2 bytes per record vector element, its mode's name aside).
TEST_CASE("cuda checkpoints: BF16 records of the tuned step round-trip, at 2 bytes an element", "[cuda][checkpoint]") {
  for (const Arch arch : {Arch::gdn, Arch::mamba2}) {
    const Dims d = real_head_shape(arch).dims;
    const Mode m = parse_mode("replay_shared/fp32/rec=bf16", arch);
    INFO(arch_name(arch) << " " << m.name());
    for (const int cut : {1, 15, 16, 17}) testing::check_backend_resume(fresh_gpu, d, m, cut);
    std::vector<std::uint8_t> b16, b32;
    auto a = fresh_gpu();
    a->init(d, m, nullptr);
    a->save(b16);
    Mode m32 = m;
    m32.records = Records::fp32;
    a->init(d, m32, nullptr);
    a->save(b32);
    const std::size_t elems = d.heads() * std::size_t(m.capacity()) * std::size_t(d.K + d.V);
    CHECK(b32.size() - m32.name().size() == b16.size() - m.name().size() + 2 * elems);
  }
}
