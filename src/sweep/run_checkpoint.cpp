#include "sweep/run_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/blob.h"
#include "core/errors.h"
#include "core/fnv1a.h"

namespace replayssm::sweep {
namespace {

constexpr char kMagic[8] = {'R', 'S', 'S', 'M', 'C', 'K', 'P', 'T'};
// The body's layout; a file of another layout is ignored (a checkpoint of another build's), not refused.
constexpr std::uint32_t kLayout = 1;

std::uint64_t fnv1a(const std::uint8_t* p, std::size_t n) {
  Fnv1a h;
  h.add(p, n);
  return h.h;
}

// write(2) all of it; false on an error.
bool write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

std::string run_checkpoint_path(const std::string& dir, const std::string& run_id) {
  return dir + "/" + run_id + ".ckpt";
}

void remove_checkpoint_temps(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().filename().string().find(".ckpt.tmp-") != std::string::npos) std::filesystem::remove(e.path(), ec);
}

void write_run_checkpoint(const std::string& path, const CheckpointKey& key, const RunCheckpointData& data) {
  std::vector<std::uint8_t> body;
  {
    BlobWriter w(body);
    w.vec(data.kl);
    w.vec(data.nll);
    w.vec(data.top1);
    w.bytes(data.stream.data(), data.stream.size());
  }
  std::vector<std::uint8_t> file(kMagic, kMagic + sizeof kMagic);
  BlobWriter w(file);
  w.pod(kLayout);
  w.pod(static_cast<std::uint32_t>(key.size()));
  for (const auto& [name, value] : key) {
    w.str(name);
    w.str(value);
  }
  w.pod(data.position);
  w.pod(fnv1a(body.data(), body.size()));
  w.bytes(body.data(), body.size());

  // Temp file, fsync, rename, fsync of the folder: after a kill or a crash the name holds the old checkpoint or the
  // new one, whole.
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(path + ": cannot write the checkpoint (" + std::strerror(errno) + ")");
  const bool ok = write_all(fd, file.data(), file.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = ok ? errno : err;
    ::unlink(tmp.c_str());
    throw UserError(path + ": cannot write the checkpoint (" + std::strerror(e) + ")");
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // the rename itself; a folder that cannot be synced still has the file
    ::close(dfd);
  }
}

std::optional<RunCheckpointData> read_run_checkpoint(const std::string& path, const CheckpointKey& key,
                                                     std::string* why) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", "cannot read the checkpoint");
  const std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < sizeof kMagic || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    throw input_error(path, "magic", "not a replayssm run checkpoint");
  try {
    BlobReader r(file.data() + sizeof kMagic, file.size() - sizeof kMagic, "checkpoint");
    const auto layout = r.pod<std::uint32_t>("layout");
    if (layout != kLayout) {
      if (why) *why = "layout version " + std::to_string(layout) + ", this build writes " + std::to_string(kLayout);
      return std::nullopt;
    }
    const auto fields = r.pod<std::uint32_t>("key");
    CheckpointKey got;
    for (std::uint32_t i = 0; i < fields && i < 4096; ++i) {
      std::string name = r.str("key");
      got.emplace_back(std::move(name), r.str("key"));
    }
    for (const auto& [name, value] : key) {
      std::string have = "(none)";
      for (const auto& g : got)
        if (g.first == name) have = g.second;
      if (have != value) {
        if (why) *why = name + " is " + have + ", this run's is " + value;
        return std::nullopt;
      }
    }
    RunCheckpointData d;
    d.position = r.pod<std::int64_t>("position");
    const auto sum = r.pod<std::uint64_t>("checksum");
    const auto body = r.bytes("body");
    r.finish();
    if (fnv1a(body.first, body.second) != sum) throw input_error(path, "body", "checksum mismatch (the file was changed)");
    BlobReader b(body.first, body.second, "checkpoint");
    d.kl = b.vec<double>("kl");
    d.nll = b.vec<double>("nll");
    d.top1 = b.vec<double>("top1");
    const auto stream = b.bytes("stream");
    b.finish();
    d.stream.assign(stream.first, stream.first + stream.second);
    const auto P = static_cast<std::size_t>(d.position);
    if (d.position < 0 || d.kl.size() != P || d.nll.size() != P || d.top1.size() != P)
      throw input_error(path, "position", "the metrics do not cover " + std::to_string(d.position) + " positions");
    return d;
  } catch (const std::invalid_argument& e) {
    // BlobReader: "checkpoint: <field>: <why>"
    const std::string msg = e.what();
    const std::string prefix = "checkpoint: ";
    throw UserError(path + ": " + (msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg));
  }
}

}  // namespace replayssm::sweep
