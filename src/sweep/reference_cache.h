#pragma once
// The FP64 reference of one (model, text slice) as a file (datasets/README.md, "FP64 reference cache"): the
// per-position log-probs every run of the model compares against, and the NLL summary the results header carries.
// Computed once, a chunk of positions at a time straight into the file, then read by every run a chunk at a time;
// keyed by the model file's bytes, the slice's bytes and the tool version, so a cache directory serves any later
// sweep (shards included) of the same inputs.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/h5.h"
#include "sweep/results.h"
#include "sweep/sweep_runner.h"

namespace replayssm::sweep {

struct ReferenceKey {
  std::string model_hash, text_hash, tool_version;  // 16 hex digits, 16 hex digits, the tool's version
  std::int64_t tokens = 0;
  // "reference-<model>-<hash of the whole key>.h5"
  std::string file_name(const std::string& model_name) const;
};
// FNV-1a 64 of the model file's bytes and of the slice's bytes (tokens + 1 of them). UserError naming an unreadable
// model file.
ReferenceKey reference_key(const std::string& model_path, const TextSlice& text);

// Where the reference is and how it got there.
struct ReferenceFile {
  std::string path;
  bool reused = false;
  double seconds = 0.0;  // computing it (0 when reused)
  ReferenceSummary summary;
};

// Things every output carries (h5::write_provenance's arguments).
struct Provenance {
  std::string command;
  std::map<std::string, std::string> options;
};

// dir/<key file name>: reused when it exists (its key and shapes checked: a mismatch is a UserError naming the file
// and the field, exit 2), else computed `chunk` positions at a time with `threads` threads and written atomically.
ReferenceFile ensure_reference(const ModelEvaluator& model, const TextSlice& text, const std::string& dir, int chunk,
                               int threads, const Provenance& provenance);

// The log-probs rows of a checked reference file (ReferenceRows for evaluate_run; one open file per reader).
ReferenceRows reference_rows(const std::string& path);

}  // namespace replayssm::sweep
