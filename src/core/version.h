#pragma once
// Filled in at build time (cmake/WriteVersion.cmake) so every output file can name the exact build that made it.
namespace replayssm {
const char* tool_version();
const char* git_sha();
const char* compiler_id();
const char* compiler_flags();
}  // namespace replayssm
