#pragma once
// Progress of a long sweep on stderr: a bar with ETA on a terminal, a plain line per finished run otherwise.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace replayssm::cli {

class Progress {
 public:
  Progress(std::size_t total, std::size_t already, bool quiet)
      : total_(total), done_(already), start_done_(already), quiet_(quiet), tty_(::isatty(2) != 0),
        t0_(std::chrono::steady_clock::now()) {
    draw("");
  }
  void finished(const std::string& id) {
    ++done_;
    draw(id);
  }
  void close() {
    if (!quiet_ && tty_) std::fputc('\n', stderr);
  }

 private:
  void draw(const std::string& id) {
    if (quiet_) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const std::size_t fresh = done_ - start_done_, left = total_ - done_;
    const double eta = fresh ? el / static_cast<double>(fresh) * static_cast<double>(left) : 0.0;
    if (tty_) {
      const int width = 30;
      const int fill = total_ ? static_cast<int>(static_cast<double>(width) * static_cast<double>(done_) / static_cast<double>(total_)) : width;
      std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu runs  %.0fs elapsed  ETA %s  ", fill,
                   "##############################", width - fill, "", done_, total_, el,
                   fresh ? (std::to_string(static_cast<long>(eta)) + "s").c_str() : "?");
    } else if (!id.empty()) {
      std::fprintf(stderr, "sweep: %zu/%zu done (%s) %.0fs elapsed, ETA %.0fs\n", done_, total_, id.c_str(), el, eta);
    }
    std::fflush(stderr);
  }
  std::size_t total_, done_, start_done_;
  bool quiet_, tty_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace replayssm::cli
