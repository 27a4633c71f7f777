#pragma once
// A run's checkpoint file (<out>.runs/<run id>.ckpt): everything evaluate_run needs to continue a run from a position
// instead of from 0, so a killed long sweep loses at most one checkpoint interval per unfinished run.
//   magic "RSSMCKPT", layout version, the key (name/value pairs that identify the run), the position, and the body
//   (the per-position metrics so far and the mode stream's blob) with its FNV-1a 64 checksum.
// Written atomically (temp file, fsync, rename), so a kill never leaves a half-written checkpoint under the name: a
// file that is not one, is truncated or fails its checksum was damaged by something else and is refused (exit 2).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace replayssm::sweep {

// Fields that identify a run (run id, mode, model and text hashes, tool version, sweep configuration hash, backend):
// a checkpoint with any other value is of another run and is ignored. The chunk size is not among them: results do
// not depend on it, so a checkpoint serves a resume with another --chunk.
using CheckpointKey = std::vector<std::pair<std::string, std::string>>;

struct RunCheckpointData {
  std::int64_t position = 0;          // positions done
  std::vector<double> kl, nll, top1;  // [position]
  std::vector<std::uint8_t> stream;   // ModelEvaluator::Stream::save
};

// Checkpoints of one run in evaluate_run.
struct RunCheckpointing {
  std::string path;      // the checkpoint file
  int every = 0;         // positions between checkpoints (0: none written)
  bool resume = false;   // continue from the file when its key matches
  CheckpointKey key;
  std::function<void(const std::string&)> note;  // a line for the user (null: silent)
};

// Atomically; a UserError naming the file when it cannot be written.
void write_run_checkpoint(const std::string& path, const CheckpointKey& key, const RunCheckpointData& data);

// The checkpoint at `path` when the file exists and its key is `key`; std::nullopt when it does not exist, or (with
// *why set to the first differing field) when it is another run's or another layout version's. A file that is not
// a checkpoint, is truncated or fails its checksum is a UserError naming the file and the field (exit 2).
std::optional<RunCheckpointData> read_run_checkpoint(const std::string& path, const CheckpointKey& key,
                                                     std::string* why);

// "<dir>/<run id>.ckpt"
std::string run_checkpoint_path(const std::string& dir, const std::string& run_id);

// Removes what a killed writer left (temp files of checkpoints) from a sweep's work folder.
void remove_checkpoint_temps(const std::string& dir);

}  // namespace replayssm::sweep
