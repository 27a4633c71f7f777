#pragma once
// The bench harness's cases and byte model (kernels/bench/bench_harness.cu): what one timed case is, the sizes of one
// state / input set, and the bytes a step or verify must move (DESIGN section 6), host code only.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "bench/bench_api.h"
#include "emulation/decode_api.h"

namespace replayssm::kbench {

using emu::Arch;
using emu::Policy;
using emu::USource;

struct Shape {
  Arch arch;
  emu::Dims d;
};

enum class Op { decode, verify, tree };

struct Case {
  Shape s;
  int L = 16;
  Variant v;
  Op op = Op::decode;
  int T = 1;
  std::vector<int> parents;  // Op::tree: the draft tree (T nodes)
  std::string tree_label;
};

struct SetPtrs {
  std::uint8_t *codes = nullptr, *scales = nullptr, *snap_codes = nullptr, *snap_scales = nullptr;
  float *hp = nullptr, *ra = nullptr, *rbeta = nullptr, *rk = nullptr, *rw = nullptr, *rv = nullptr;
  float *a = nullptr, *beta = nullptr, *v = nullptr, *k = nullptr, *q = nullptr, *skip = nullptr, *o = nullptr;
};

inline emu::Mode mode_of(const Case& c, int max_drafts) {
  emu::Mode m;
  m.arch = c.s.arch;
  m.policy = c.v.policy;
  m.usource = c.v.usource;
  m.format = c.v.format.format;
  m.scaling = c.v.format.scaling;
  m.rounding = c.v.format.rounding;
  m.L = c.L;
  m.max_drafts = max_drafts;
  m.records = c.v.records;
  return m;
}

struct Sizes {  // element / byte counts of one set
  std::size_t heads, VK, code, scale, cap, snaps, BT, groups_tok;
  bool split, replay, recompute, gdn;
  std::size_t rec = 4;  // bytes of a record vector element (k, w, raw v): 4, or 2 for BF16 records
};

inline std::size_t set_bytes(const Sizes& z, const emu::Dims& d) {
  std::size_t b = 0;
  b += Arena::round(z.heads * z.code) + Arena::round(z.heads * z.scale);
  if (z.snaps) b += Arena::round(z.heads * z.snaps * z.code) + Arena::round(z.heads * z.snaps * z.scale);
  if (z.split) b += Arena::round(z.heads * z.VK * 4);
  if (z.replay) {
    b += 2 * Arena::round(z.heads * z.cap * 4) + Arena::round(z.heads * z.cap * d.K * z.rec) +
         Arena::round(z.heads * z.cap * d.V * z.rec);
    if (z.recompute) b += Arena::round(z.heads * z.cap * d.V * z.rec);
  }
  const std::size_t tokH = z.BT * std::size_t(d.H), tokG = z.BT * std::size_t(d.G);
  b += 2 * Arena::round(tokH * 4);                  // a, beta
  b += 2 * Arena::round(tokH * d.V * 4);            // v, skip
  b += 2 * Arena::round(tokG * d.K * 4);            // k, q
  b += Arena::round(tokH * d.V * 4);                // o
  return b;
}

// Bytes a set's graph step actually streams from DRAM (for the rotation count): state stores + records + tokens.
inline std::size_t touched_bytes(const Sizes& z, const emu::Dims& d) {
  std::size_t b = z.heads * (z.code + z.scale) * (1 + z.snaps);
  if (z.split) b += z.heads * z.VK * 4;
  if (z.replay) b += z.heads * z.cap * ((std::size_t(d.K) + d.V) * z.rec + 2 * 4);
  return b + z.BT * std::size_t(d.H) * d.V * 12;
}

// DESIGN section 6 byte model for one decode step / one verify of T drafts, whole batch. state_out gets the state
// (checkpoint / snapshot) part alone: the bytes an op must move, a lower bound of the kernels' traffic. A record's k
// counts once per group (DESIGN counts K per head-state), as the token's k and q per (sequence,
// group): every head of a group holds its group's k_t, so one copy per group is all an op must read and write. The
// kernels read one copy per group in the grouped verify and the step but GDN's 8-bit one; the flushes and
// GDN's 8-bit step read their own head's copy, and each head writes its own: above this model. (The bench's random
// records differ per head: timing only, its outputs are not checked.) A record's vectors (k, w, raw v) take 4 bytes an
// element, 2 under BF16 records; its a and beta stay FP32.
inline double model_bytes(const Case& c, const emu::StoreLayout& lay, double* state_out) {
  const emu::Dims& d = c.s.d;
  const bool gdn = c.s.arch == Arch::gdn;
  const double heads = double(d.heads());
  const double Sf = double(lay.code_bytes + lay.scale_bytes);  // the F store of one head
  const double E4 = 4.0 * d.V * d.K;                          // one FP32 head state
  const bool split = c.v.policy == Policy::replay_split, replay = c.v.policy != Policy::conventional_shared;
  const bool recompute = gdn && split && c.v.usource == USource::recompute;
  const double kg = double(d.K) * d.G / d.H;  // a record's k per head: once per group
  const double re = c.v.records == emu::Records::bf16 ? 2.0 : 4.0;            // a record vector element
  const double rec = 4.0 * 2 + re * (kg + d.V) + (recompute ? re * d.V : 0.0);  // one record (a, beta, k, w [, v])
  const double recr = 4.0 + re * (kg + d.V);                                  // what a replay output reads of one
  const int T = c.op == Op::decode ? 1 : c.T;  // a tree of T nodes moves what a chain of T drafts does
  // tokens: per head a (+ beta), v (+ skip), output; per (sequence, group) k and q
  const double tok_head = 4.0 * ((gdn ? 2 : 1) + d.V * (gdn ? 1 : 2) + d.V);
  const double tok = T * (heads * tok_head + double(d.B) * d.G * 2.0 * 4.0 * d.K);
  double state = 0, records = 0;
  const double L = c.L;
  if (!replay) {
    state = Sf * (1 + T);  // read + write (decode), read + T snapshots (verify)
  } else if (c.op != Op::decode) {
    state = Sf + ((gdn && split && c.v.usource == USource::hp) ? E4 : 0.0);
    records = recr * (L - 1) / 2 + T * rec;  // n uniform in 0..L-1 read, T appended
  } else {
    // non-flush (n = 0..L-2): output copy (+ HP for GDN u=hp), n records read, one appended
    const double nf_state = Sf + ((gdn && split && c.v.usource == USource::hp) ? E4 : 0.0);
    const double nf_rec = recr * (L - 2) / 2 + rec;
    // flush (n = L-1): recurrence checkpoint read (+ LP copy for GDN u from LP / recompute), L-1 records read,
    // one appended; checkpoint written (split: HP and LP)
    double f_state;
    if (!split)
      f_state = 2 * Sf;
    else
      f_state = E4 + ((gdn && c.v.usource != USource::hp) ? Sf : 0.0) + E4 + Sf;
    const double f_rec = recr * (L - 1) + (recompute ? re * d.V * (L - 1) : 0.0) + rec;
    state = ((L - 1) * nf_state + f_state) / L;
    records = ((L - 1) * nf_rec + f_rec) / L;
  }
  *state_out = heads * state;
  return heads * (state + records) + tok;
}

inline double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const std::size_t i = std::size_t(pos);
  const double f = pos - double(i);
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

}  // namespace replayssm::kbench
