#pragma once
// The backend seam of the decode kernels. Core code (validate, sweeps, tests) talks to a DecodeBackend; the
// emulated backend (src/emulation, plain C++) and the CUDA backend (kernels/, built only with CUDA) implement it
// with the same algorithms and the same per-element formulas (src/emulation/decode_math.h), so they agree to
// the last bit wherever their dot-product trees agree (they are designed to; see kernels/README.md).
//
// Inputs arrive in the recurrence-facing ("head token") form, FP32, prepared on the host by prepare_*():
//   a    [B][T][H]        decay (GDN alpha = exp(g); Mamba-2 exp(dt A))
//   beta [B][T][H]        GDN write strength (Mamba-2: unused, may be null)
//   v    [B][T][H][V]     GDN v; Mamba-2 dt x
//   k    [B][T][G][K]     GDN k (key head); Mamba-2 B (group)      -- value head h reads group h / (H / G)
//   q    [B][T][G][K]     GDN scale q; Mamba-2 C
//   skip [B][T][H][V]     added to the output (Mamba-2 D x), or null
// State layout per head: [V][K] row-major (S maps a key to a value, o = S q), heads [B][H].
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/format_id.h"
#include "formats/state_codec.h"

namespace replayssm {
class BlobWriter;
class BlobReader;
}  // namespace replayssm

namespace replayssm::emu {

enum class Arch : std::uint8_t { gdn, mamba2 };
enum class Policy : std::uint8_t { conventional_shared, replay_shared, replay_split };
enum class USource : std::uint8_t { hp, lp, recompute };  // GDN under replay_split: which copy forms u
// The replay buffer's record vectors (the key k, and w: GDN's u, Mamba-2's dt x; the raw v kept for u=recompute):
// fp32, or bf16 (RNE at the record's store, every reader widens to FP32 and forms its products in FP32). The scalars
// a and beta stay FP32. Conventional decode keeps no records: bf16 applies to the replay policies only.
enum class Records : std::uint8_t { fp32, bf16 };

const char* arch_name(Arch a);
const char* policy_name(Policy p);
const char* usource_name(USource u);
const char* records_name(Records r);
Arch parse_arch(const std::string& s);
Policy parse_policy(const std::string& s);
USource parse_usource(const std::string& s);
Records parse_records(const std::string& s);

struct Dims {
  int B = 1;  // sequences
  int G = 1;  // key heads (GDN Hk) / groups (Mamba-2 G)
  int H = 1;  // value heads (GDN Hv) / heads (Mamba-2 H)
  int K = 0;  // key dim (Mamba-2 N); multiple of 4 (and of the format's block)
  int V = 0;  // value dim (Mamba-2 P)
  std::size_t heads() const { return std::size_t(B) * std::size_t(H); }
  std::size_t state_elems() const { return heads() * std::size_t(V) * std::size_t(K); }
};

struct Mode {
  Arch arch = Arch::gdn;
  Policy policy = Policy::conventional_shared;
  USource usource = USource::hp;  // only read for GDN + replay_split
  formats::FormatId format = formats::FormatId::fp32;
  formats::Scaling scaling = formats::Scaling::none;
  formats::Rounding rounding = formats::Rounding::rne;
  std::uint64_t seed = 0;
  Records records = Records::fp32;  // replay policies only
  int L = 16;          // flush period
  int max_drafts = 8;  // largest verify T; the buffer holds L - 1 + max_drafts records
  int capacity() const { return L - 1 + max_drafts; }
  bool split() const { return policy == Policy::replay_split; }
  bool replay() const { return policy != Policy::conventional_shared; }
  bool recompute() const { return arch == Arch::gdn && split() && usource == USource::recompute; }
  bool bf16_records() const { return records == Records::bf16; }
  std::string name() const;  // "replay_split/fp8_e4m3/row/rne/u=hp" ("/rec=bf16" appended for BF16 records)
};

// Throws std::invalid_argument on a bad combination (format x scaling x rounding, L, drafts, dims).
void check_mode(const Mode& m, const Dims& d);

// The inverse of Mode::name(), for options: "policy/format[/scaling][/rounding][/u=SRC][/rec=R][/L=N][/seed=N]"
// (scaling defaults to the format's own, rounding to rne, u to hp, records to fp32, L to 16, seed to 0). The arch is the caller's. Throws
// std::invalid_argument naming the bad segment or combination.
Mode parse_mode(const std::string& name, Arch arch);

struct TokenBatch {
  int T = 1;
  const float* a = nullptr;
  const float* beta = nullptr;
  const float* v = nullptr;
  const float* k = nullptr;
  const float* q = nullptr;
  const float* skip = nullptr;
};

// Owned storage of a TokenBatch.
struct TokenData {
  int B = 0, T = 0;
  std::vector<float> a, beta, v, k, q, skip;
  TokenBatch view() const {
    return TokenBatch{T, a.data(), beta.empty() ? nullptr : beta.data(), v.data(), k.data(), q.data(),
                      skip.empty() ? nullptr : skip.data()};
  }
};

class DecodeBackend {
 public:
  virtual ~DecodeBackend() = default;
  virtual std::string name() const = 0;    // "emulated" or "cuda"
  virtual std::string device() const = 0;  // "cpu (emulated)" or the GPU's name
  // (Re)starts every sequence from S0 ([B][H][V][K], FP32; null = zero), quantised into the policy's stores.
  virtual void init(const Dims& d, const Mode& m, const float* S0) = 0;
  // One standard decode step (T = 1) for every sequence; o [B][H][V].
  virtual void step(const TokenBatch& in, float* o) = 0;
  // Chain speculative verify of in.T drafts; o [B][T][H][V]. Nothing is committed until accept().
  virtual void verify(const TokenBatch& in, float* o) = 0;
  // accepted[b] in 0..T drafts of the last verify are kept.
  virtual void accept(const int* accepted) = 0;
  // Tree speculative verify of in.T drafts (reference/tree_verify.h): parents[i] in -1..i-1 is node i's parent (-1 =
  // the committed state), the same tree for every sequence; node i's output reads its root path. o [B][T][H][V].
  // Nothing is committed until accept_path(). The base class throws std::runtime_error (a backend without it).
  virtual void verify_tree(const TokenBatch& in, const int* parents, float* o);
  // node[b] in -1..T-1: sequence b keeps the root path of that node of the last tree verify (-1: none).
  virtual void accept_path(const int* node);
  // The current state of every head, FP32 [B][H][V][K] (replay: the checkpoint (HP under split) + window).
  virtual void state(float* S) = 0;
  // The stored F copy (conventional: the state; replay-shared: the checkpoint; split: the LP copy): packed codes
  // and scales of every head, concatenated [B][H] in the codec's layout. For bit-identity checks.
  virtual void stored(std::vector<std::uint8_t>& codes, std::vector<std::uint8_t>& scales) = 0;
  // Flushes done so far (all heads count as one per sequence), for the bit-identity statistics.
  virtual long flushes() const = 0;
  // The distinct kernel launch plans this backend ran since init(), in first-use order (the CUDA backend: one line
  // per plan, kernels/launch_plan.h; the emulation runs no kernels: empty). Tells a user which kernels a result came
  // from, and the tests that a forced layout really ran.
  virtual std::vector<std::string> launch_plans() const { return {}; }
  // Checkpoints: everything that evolves after init() (stores, HP copies, replay checkpoints and records, record
  // counts, token counters, flushes, pending verify snapshots), appended to `out` as a byte blob, with the Dims and
  // Mode it belongs to. load() restores such a blob into a backend init()ed with the same Dims and Mode, after which
  // every call gives the bits the saved backend would have given; a blob of another mode, dims or backend throws
  // std::invalid_argument naming the difference. The base class throws std::runtime_error ("<name> backend:
  // checkpoints not supported").
  virtual void save(std::vector<std::uint8_t>& out) const;
  virtual void load(const std::uint8_t* blob, std::size_t size);
};

// The Dims and Mode fields a backend blob starts with, and their check on load (std::invalid_argument naming the
// first field that differs; `backend` names the blob's owner in the message).
void save_dims_mode(BlobWriter& w, const Dims& d, const Mode& m);
void check_dims_mode(BlobReader& r, const Dims& d, const Mode& m);

std::unique_ptr<DecodeBackend> make_emulated_backend();

// Checks a tree's parent pointers (parents[i] in -1..i-1, T >= 1); throws std::invalid_argument naming the node.
// Returns every node's depth (1 for a child of the committed state).
std::vector<int> tree_depths(const int* parents, int T);
// The root path of `node` (root first; empty for -1), from checked parents.
std::vector<int> tree_path(const int* parents, int node);

// SR step index used when init() quantises S0 (token steps use the sequence's token index).
inline constexpr std::uint32_t kInitStep = 0xFFFFFFFFu;

// Bytes of one head's F store (codes, scales) for a mode.
struct StoreLayout {
  std::size_t code_bytes = 0, scale_bytes = 0;
};
StoreLayout store_layout(const Mode& m, int V, int K);
// Host encode / decode of one head state through the shared codecs (formats::StateCodec).
// A store that replaces a stored state: prev_codes / prev_scales is the state it replaces (the same buffers for a
// store in place; the committed store for a verify snapshot, which replaces it at accept). A stateful format
// (int8_ef) feeds that state's residual into this store.
void encode_head(const Mode& m, const float* x, int V, int K, std::uint32_t head, std::uint32_t step,
                 const std::uint8_t* prev_codes, const std::uint8_t* prev_scales, std::uint8_t* codes,
                 std::uint8_t* scales);
// A store with no previous stored state (init's store of S0; a stand-alone quantization).
void encode_head(const Mode& m, const float* x, int V, int K, std::uint32_t head, std::uint32_t step,
                 std::uint8_t* codes, std::uint8_t* scales);
void decode_head(const Mode& m, const std::uint8_t* codes, const std::uint8_t* scales, int V, int K, float* out);

}  // namespace replayssm::emu
