#pragma once
// User-facing failures carry their exit code; the CLI prints what() as one line and exits with it.
#include <stdexcept>
#include <string>

namespace replayssm {

enum ExitCode : int {
  kExitOk = 0,
  kExitValidationFailed = 1,  // ran fine, a comparison failed
  kExitBadInput = 2,          // bad file, field, option or name
  kExitNoDevice = 3,          // a CUDA backend was asked for and no GPU is present
  kExitInternal = 4,
};

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg, int code = kExitBadInput) : std::runtime_error(msg), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// "file.h5: /layers/0/q: expected rank 3, got 2" -- every input error names the file and the field.
inline UserError input_error(const std::string& file, const std::string& field, const std::string& what) {
  return UserError(file + ": " + field + ": " + what, kExitBadInput);
}

}  // namespace replayssm
