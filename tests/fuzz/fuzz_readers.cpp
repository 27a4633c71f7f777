// libFuzzer target over the readers of untrusted files: the activation dump (read_activation_dump), sweep results
// (read_header / read_run, then written back as merge does) and the tiny models (TinyModel::load).
// Input: one selector byte (which reader, modulo 3), then a program that builds the HDF5 file (fuzz_file_builder.h);
// with REPLAYSSM_FUZZ_RAW=1, the raw bytes of the file instead (that mostly fuzzes libhdf5's own parser, which hangs
// and leaks on some corrupt files: not replayssm's to fix, so not part of the CTest run).
// Contract under test: a bad file is a UserError (one line, exit 2 in the CLI); any other exception is what the CLI
// reports as an internal error (exit 4) and aborts here, so libFuzzer records it; crashes and sanitizer reports too.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/activation_dump.h"
#include "fuzz_file_builder.h"
#include "core/errors.h"
#include "core/h5.h"
#include "runtime/model.h"
#include "sweep/results.h"

namespace {

std::string& scratch_dir() {
  static std::string dir;
  return dir;
}
bool& raw_mode() {
  static bool raw = false;
  return raw;
}
bool& verbose() {  // REPLAYSSM_FUZZ_VERBOSE=1: print each input's error line (to see what a reproducer does)
  static bool v = false;
  return v;
}

void read_results(const std::string& path, const std::string& copy) {
  const auto f = replayssm::h5::File::open_read(path);
  const auto header = replayssm::sweep::read_header(f);
  auto out = replayssm::h5::File::create(copy);
  replayssm::sweep::write_header(out, header);
  if (!f.exists("/runs")) return;
  for (const auto& name : f.list("/runs"))
    replayssm::sweep::write_run(out, "/runs/" + name, replayssm::sweep::read_run(f, "/runs/" + name));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Declared shapes are refused above this budget (core/memory_budget.h) long before -rss_limit_mb.
  setenv("REPLAYSSM_MEMORY_LIMIT", "268435456", 1);
  const char* tmp = std::getenv("TMPDIR");
  scratch_dir() = std::string(tmp && *tmp ? tmp : "/tmp") + "/replayssm-fuzz-" + std::to_string(::getpid());
  const char* raw = std::getenv("REPLAYSSM_FUZZ_RAW");
  raw_mode() = raw && std::string(raw) == "1";
  const char* v = std::getenv("REPLAYSSM_FUZZ_VERBOSE");
  verbose() = v && std::string(v) == "1";
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string path = scratch_dir() + ".h5", copy = scratch_dir() + ".out.h5";
  if (raw_mode()) {
    FILE* fh = std::fopen(path.c_str(), "wb");
    if (!fh) std::abort();
    std::fwrite(data + 1, 1, size - 1, fh);
    std::fclose(fh);
  } else {
    fuzz::Bytes program(data + 1, size - 1);
    if (!fuzz::build_file(path, program)) std::abort();
  }
  try {
    switch (data[0] % 3) {
      case 0: (void)replayssm::read_activation_dump(path); break;
      case 1: read_results(path, copy); break;
      default: (void)replayssm::runtime::TinyModel::load(path); break;
    }
  } catch (const replayssm::UserError& e) {  // the contract: a one-line error, exit 2
    if (verbose()) std::fprintf(stderr, "fuzz_readers: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_readers: non-UserError exception (the CLI's exit 4): %s\n", e.what());
    std::abort();
  }
  std::remove(path.c_str());
  std::remove(copy.c_str());
  return 0;
}
