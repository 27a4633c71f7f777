// Output files: the up-front checks, the atomic write (temporary file, then rename) and the one-writer lock.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "core/h5.h"

namespace replayssm::h5 {
namespace {
namespace fs = std::filesystem;

// A process that no longer runs: gone, or a zombie its parent has not reaped yet (kill(pid, 0) succeeds on those).
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

// Removes "<final>.tmp-<pid>" files whose writer no longer runs (or all of them, any_pid, where the caller holds the
// output's lock): a run killed during its final write leaves nothing behind once the run is resumed or repeated.
void remove_temps(const std::string& final_path, bool any_pid) {
  std::error_code ec;
  const fs::path target(final_path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".tmp-";
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (any_pid || pid == ::getpid() || process_gone(pid)) fs::remove(e.path(), ec);
  }
}

const std::string& without_stale_temps(const std::string& final_path) {
  remove_temps(final_path, false);
  return final_path;
}

File create_labelled(const std::string& temp, const std::string& final_path) {
  try {
    File f = File::create(temp);
    f.set_label(final_path);
    return f;
  } catch (const UserError&) {  // name what the user asked for, not the temporary file
    throw UserError(final_path + ": cannot create output file (directory missing or not writable?)");
  }
}

void check_output_target(const std::string& out_path) {
  if (out_path.empty()) throw UserError("--out: empty path (expected an output file name)");
  std::error_code ec;
  if (fs::is_directory(out_path, ec)) throw UserError(out_path + ": --out is a directory, expected a file name");
  // The atomic rename replaces whatever is at the path: never a device, a pipe or a socket (--out /dev/null as root
  // would replace the device node with a file).
  const auto st = fs::symlink_status(out_path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_symlink(st))
    throw UserError(out_path + ": --out exists and is not a regular file (a device, pipe or socket)");
  if (!ec && fs::is_symlink(st) && fs::exists(out_path, ec) && !fs::is_regular_file(out_path, ec))
    throw UserError(out_path + ": --out links to something that is not a regular file");
  const fs::path dir = fs::absolute(out_path, ec).parent_path();
  if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
    throw UserError(out_path + ": output directory does not exist or is not writable");
}
}  // namespace

void refuse_output_over_input(const std::string& out_path, const std::vector<std::string>& inputs) {
  check_output_target(out_path);
  std::error_code ec;
  for (const auto& in : inputs) {
    // a path that does not exist (yet) is not an error here: it cannot be the same file
    if (in == out_path || fs::equivalent(in, out_path, ec))
      throw UserError(out_path + ": --out is the same file as the input " + in);
  }
}

AtomicOutput::AtomicOutput(std::string final_path)
    : final_(std::move(final_path)),
      temp_((check_output_target(final_), without_stale_temps(final_)) + ".tmp-" + std::to_string(::getpid())),
      file_(create_labelled(temp_, final_)) {}

AtomicOutput::~AtomicOutput() {
  if (!committed_) {
    file_.close();
    std::remove(temp_.c_str());
  }
}

void AtomicOutput::commit() {
  if (!file_.close_checked()) {  // never rename a file whose last metadata did not reach the disk
    std::remove(temp_.c_str());
    throw UserError(final_ + ": write failed while finishing the file (disk full?)");
  }
  if (std::rename(temp_.c_str(), final_.c_str()) != 0) {
    std::remove(temp_.c_str());
    throw UserError(final_ + ": cannot move the finished output into place");
  }
  committed_ = true;
}

OutputLock::OutputLock(const std::string& out_path) : path_(out_path + ".lock") {
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw UserError(out_path + ": cannot create the lock file " + path_ + " (directory not writable?)");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {0};
      const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
      ::close(fd_);
      fd_ = -1;
      std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "unknown";
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      throw UserError(out_path + ": another replayssm (pid " + pid + ") is writing this output (lock " + path_ + ")");
    }
    // The holder before us may have unlinked the file after we opened it: the lock must be on the file at the path.
    struct stat held {}, now {};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
        throw UserError(out_path + ": cannot write the lock file " + path_);
      remove_temps(out_path, true);
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
  throw UserError(out_path + ": cannot take the lock " + path_ + " (it keeps being replaced)");
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) {
    ::unlink(path_.c_str());  // while still holding the lock: a waiter re-checks the inode (above)
    ::close(fd_);
  }
}

}  // namespace replayssm::h5
