#include "emulation/decode_api.h"

#include "core/blob.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace replayssm::emu {

const char* arch_name(Arch a) { return a == Arch::gdn ? "gdn" : "mamba2"; }
const char* policy_name(Policy p) {
  switch (p) {
    case Policy::conventional_shared: return "conventional_shared";
    case Policy::replay_shared: return "replay_shared";
    case Policy::replay_split: return "replay_split";
  }
  return "?";
}
const char* usource_name(USource u) {
  switch (u) {
    case USource::hp: return "hp";
    case USource::lp: return "lp";
    case USource::recompute: return "recompute";
  }
  return "?";
}
const char* records_name(Records r) { return r == Records::bf16 ? "bf16" : "fp32"; }
Records parse_records(const std::string& s) {
  for (Records r : {Records::fp32, Records::bf16})
    if (s == records_name(r)) return r;
  throw std::invalid_argument("unknown record format '" + s + "' (expected fp32 or bf16)");
}
Arch parse_arch(const std::string& s) {
  if (s == "gdn") return Arch::gdn;
  if (s == "mamba2") return Arch::mamba2;
  throw std::invalid_argument("unknown arch '" + s + "' (expected gdn or mamba2)");
}
Policy parse_policy(const std::string& s) {
  for (Policy p : {Policy::conventional_shared, Policy::replay_shared, Policy::replay_split})
    if (s == policy_name(p)) return p;
  throw std::invalid_argument("unknown policy '" + s + "' (expected conventional_shared, replay_shared or replay_split)");
}
USource parse_usource(const std::string& s) {
  for (USource u : {USource::hp, USource::lp, USource::recompute})
    if (s == usource_name(u)) return u;
  throw std::invalid_argument("unknown u-source '" + s + "' (expected hp, lp or recompute)");
}

std::string Mode::name() const {
  std::string s = std::string(policy_name(policy)) + "/" + formats::format_name(format) + "/" +
                  formats::scaling_name(scaling) + "/" + formats::rounding_name(rounding);
  if (arch == Arch::gdn && split()) s += std::string("/u=") + usource_name(usource);
  if (bf16_records()) s += "/rec=bf16";
  return s;
}

Mode parse_mode(const std::string& name, Arch arch) {
  std::vector<std::string> seg;
  for (std::size_t b = 0;;) {
    const std::size_t e = name.find('/', b);
    seg.push_back(name.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  for (const std::string& x : seg)
    if (x.empty()) throw std::invalid_argument("mode '" + name + "': empty segment");
  if (seg.size() < 2) throw std::invalid_argument("mode '" + name + "': expected policy/format[/scaling][/rounding]...");
  Mode m;
  m.arch = arch;
  m.policy = parse_policy(seg[0]);
  m.format = formats::parse_format(seg[1]);
  m.scaling = formats::default_scaling(m.format);
  auto number = [&](const std::string& x, const char* key, long long lo, long long hi) {
    const std::string v = x.substr(x.find('=') + 1);
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE || n < lo || n > hi)
      throw std::invalid_argument("mode '" + name + "': " + key + " must be an integer in [" + std::to_string(lo) +
                                  ", " + std::to_string(hi) + "], got '" + v + "'");
    return n;
  };
  bool scaling_seen = false, rounding_seen = false;
  for (std::size_t i = 2; i < seg.size(); ++i) {
    const std::string& x = seg[i];
    if (x.rfind("u=", 0) == 0) {
      if (!(arch == Arch::gdn && m.policy == Policy::replay_split))
        throw std::invalid_argument("mode '" + name + "': u= applies to gdn replay_split only");
      m.usource = parse_usource(x.substr(2));
    } else if (x.rfind("rec=", 0) == 0) {
      m.records = parse_records(x.substr(4));
      if (m.bf16_records() && !m.replay())
        throw std::invalid_argument("mode '" + name + "': rec=bf16 applies to the replay policies only");
    } else if (x.rfind("L=", 0) == 0) {
      m.L = int(number(x, "L", 1, 4096));
    } else if (x.rfind("seed=", 0) == 0) {
      m.seed = std::uint64_t(number(x, "seed", 0, std::numeric_limits<long long>::max()));
    } else if (!scaling_seen && !rounding_seen && !formats::is_rounding_name(x)) {
      m.scaling = formats::parse_scaling(x);
      scaling_seen = true;
    } else if (!rounding_seen) {
      m.rounding = formats::parse_rounding(x);
      rounding_seen = true;
    } else {
      throw std::invalid_argument("mode '" + name + "': unexpected segment '" + x + "'");
    }
  }
  formats::check_combination(m.format, m.scaling, m.rounding);
  return m;
}

void check_mode(const Mode& m, const Dims& d) {
  formats::check_combination(m.format, m.scaling, m.rounding);
  if (m.L < 1) throw std::invalid_argument("L must be >= 1");
  if (m.bf16_records() && !m.replay())
    throw std::invalid_argument("BF16 records apply to the replay policies only (conventional decode keeps none)");
  if (m.max_drafts < 1) throw std::invalid_argument("max_drafts must be >= 1");
  if (d.B < 1 || d.G < 1 || d.H < 1 || d.H % d.G != 0)
    throw std::invalid_argument("dims: need B, G, H >= 1 and H a multiple of G");
  if (d.K < 4 || d.K % 4 != 0) throw std::invalid_argument("dims: K must be a positive multiple of 4");
  if (d.V < 1) throw std::invalid_argument("dims: V must be >= 1");
}

StoreLayout store_layout(const Mode& m, int V, int K) {
  return formats::dispatch_format(m.format, [&](auto codec) {
    using C = decltype(codec);
    return StoreLayout{C::code_bytes(V, K), C::scale_bytes(V, K, m.scaling)};
  });
}

void DecodeBackend::verify_tree(const TokenBatch&, const int*, float*) {
  throw std::runtime_error(name() + ": tree verify is not implemented by this backend");
}
void DecodeBackend::accept_path(const int*) {
  throw std::runtime_error(name() + ": tree verify is not implemented by this backend");
}

void DecodeBackend::save(std::vector<std::uint8_t>&) const {
  throw std::runtime_error(name() + " backend: checkpoints not supported");
}
void DecodeBackend::load(const std::uint8_t*, std::size_t) {
  throw std::runtime_error(name() + " backend: checkpoints not supported");
}

namespace {
// The identity of a backend state: dims and every mode field (the mode name leaves out L, drafts and the seed).
std::vector<std::pair<const char*, std::uint64_t>> dims_mode_fields(const Dims& d, const Mode& m) {
  return {{"B", std::uint64_t(d.B)}, {"G", std::uint64_t(d.G)}, {"H", std::uint64_t(d.H)},
          {"K", std::uint64_t(d.K)}, {"V", std::uint64_t(d.V)}, {"arch", std::uint64_t(m.arch)},
          {"policy", std::uint64_t(m.policy)}, {"usource", std::uint64_t(m.usource)},
          {"format", std::uint64_t(m.format)}, {"scaling", std::uint64_t(m.scaling)},
          {"rounding", std::uint64_t(m.rounding)}, {"seed", m.seed}, {"records", std::uint64_t(m.records)},
          {"L", std::uint64_t(m.L)}, {"max_drafts", std::uint64_t(m.max_drafts)}};
}
}  // namespace

void save_dims_mode(BlobWriter& w, const Dims& d, const Mode& m) {
  w.str(m.name());
  for (const auto& f : dims_mode_fields(d, m)) w.pod(f.second);
}

void check_dims_mode(BlobReader& r, const Dims& d, const Mode& m) {
  const std::string name = r.str("mode");
  for (const auto& f : dims_mode_fields(d, m)) {
    const auto got = r.pod<std::uint64_t>(f.first);
    if (got != f.second)
      r.fail(f.first, "the blob's mode " + name + " has " + std::to_string(got) + ", this backend's " + m.name() +
                          " has " + std::to_string(f.second));
  }
}

std::vector<int> tree_depths(const int* parents, int T) {
  if (T < 1 || !parents) throw std::invalid_argument("tree verify: the tree needs at least one node");
  std::vector<int> depth(std::size_t(T), 0);
  for (int i = 0; i < T; ++i) {
    const int p = parents[i];
    if (p < -1 || p >= i)
      throw std::invalid_argument("tree verify: node " + std::to_string(i) + " has parent " + std::to_string(p) +
                                  " (expected -1.." + std::to_string(i - 1) + ")");
    depth[std::size_t(i)] = p < 0 ? 1 : depth[std::size_t(p)] + 1;
  }
  return depth;
}

std::vector<int> tree_path(const int* parents, int node) {
  std::vector<int> p;
  for (int j = node; j >= 0; j = parents[j]) p.push_back(j);
  std::reverse(p.begin(), p.end());
  return p;
}

namespace {

// The head codecs, compiled twice from the same source: once for the build's baseline ISA and once for AVX2 (where
// the element loops of the codecs vectorise). Exact IEEE operations and integer ops, no contraction: the same bits.
inline void encode_body(const Mode& m, const float* x, int V, int K, std::uint32_t head, std::uint32_t step,
                        const std::uint8_t* prev_codes, const std::uint8_t* prev_scales, std::uint8_t* codes,
                        std::uint8_t* scales) {
  const formats::CodecParams p{m.scaling, m.rounding, m.seed, head, step};
  formats::dispatch_format(m.format, [&](auto codec) {
    formats::encode_state_after<decltype(codec)>(x, V, K, p, prev_codes, prev_scales, codes, scales);
  });
}
inline void decode_body(const Mode& m, const std::uint8_t* codes, const std::uint8_t* scales, int V, int K, float* out) {
  const formats::CodecParams p{m.scaling, m.rounding, m.seed, 0, 0};
  formats::dispatch_format(m.format, [&](auto codec) { decltype(codec)::decode_state(codes, scales, V, K, p, out); });
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2,fma"), flatten)) void encode_avx2(const Mode& m, const float* x, int V, int K,
                                                              std::uint32_t head, std::uint32_t step,
                                                              const std::uint8_t* prev_codes,
                                                              const std::uint8_t* prev_scales, std::uint8_t* codes,
                                                              std::uint8_t* scales) {
  encode_body(m, x, V, K, head, step, prev_codes, prev_scales, codes, scales);
}
__attribute__((target("avx2,fma"), flatten)) void decode_avx2(const Mode& m, const std::uint8_t* codes,
                                                              const std::uint8_t* scales, int V, int K, float* out) {
  decode_body(m, codes, scales, V, K, out);
}
bool have_avx2() {
  static const bool yes = std::getenv("REPLAYSSM_NO_AVX2") == nullptr && __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma");
  return yes;
}
#else
bool have_avx2() { return false; }
#endif

}  // namespace

void encode_head(const Mode& m, const float* x, int V, int K, std::uint32_t head, std::uint32_t step,
                 const std::uint8_t* prev_codes, const std::uint8_t* prev_scales, std::uint8_t* codes,
                 std::uint8_t* scales) {
#if defined(__x86_64__) || defined(__i386__)
  if (have_avx2()) return encode_avx2(m, x, V, K, head, step, prev_codes, prev_scales, codes, scales);
#endif
  encode_body(m, x, V, K, head, step, prev_codes, prev_scales, codes, scales);
}
void encode_head(const Mode& m, const float* x, int V, int K, std::uint32_t head, std::uint32_t step,
                 std::uint8_t* codes, std::uint8_t* scales) {
  encode_head(m, x, V, K, head, step, nullptr, nullptr, codes, scales);
}

void decode_head(const Mode& m, const std::uint8_t* codes, const std::uint8_t* scales, int V, int K, float* out) {
#if defined(__x86_64__) || defined(__i386__)
  if (have_avx2()) return decode_avx2(m, codes, scales, V, K, out);
#endif
  decode_body(m, codes, scales, V, K, out);
}

}  // namespace replayssm::emu
