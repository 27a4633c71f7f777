#pragma once
// Names of the storage formats, scale granularities and rounding modes, and which combinations are valid.
// The enums and the constexpr predicates are usable on the device; the string functions are host only.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "formats/hd.h"

namespace replayssm::formats {

// New values are appended (the numeric values are stable); kAllFormats / kAllScalings give the listing order.
enum class FormatId : uint8_t {
  fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, nvfp4, mxfp8, mxfp4, int16, bf16x2, int8_ef
};
enum class Scaling : uint8_t { none, head, row, block, column, tile };
enum class Rounding : uint8_t { rne, sr, philox };

inline constexpr FormatId kAllFormats[] = {FormatId::fp32,     FormatId::bf16,     FormatId::fp16,     FormatId::bf16x2,
                                           FormatId::fp8_e4m3, FormatId::fp8_e5m2, FormatId::int8,
                                           FormatId::int8_ef,  FormatId::int16,    FormatId::nvfp4,    FormatId::mxfp8,
                                           FormatId::mxfp4};
// The number of values of each enum (the integer loops of device code; the static_asserts keep them in step).
inline constexpr int kFormatIdCount = static_cast<int>(FormatId::int8_ef) + 1;
inline constexpr int kScalingCount = static_cast<int>(Scaling::tile) + 1;
inline constexpr int kRoundingCount = static_cast<int>(Rounding::philox) + 1;
static_assert(sizeof(kAllFormats) / sizeof(kAllFormats[0]) == kFormatIdCount, "kAllFormats lists every FormatId");
inline constexpr Scaling kAllScalings[] = {Scaling::none, Scaling::head, Scaling::row, Scaling::block, Scaling::column,
                                           Scaling::tile};
static_assert(sizeof(kAllScalings) / sizeof(kAllScalings[0]) == kScalingCount, "kAllScalings lists every Scaling");

// Valid (format, scaling) pairs:
//   fp32, bf16, bf16x2, fp16: none
//   fp8_e4m3, fp8_e5m2      : none, head, row, block, column (block = 32 contiguous elements along K, FP32 scale;
//                             column = one FP32 scale per state column k, over the V rows;
//                             tile (e4m3 only) = one FP32 scale per 32-row tile, amax / 240: headroom below 448)
//   int8, int16             : head, row, block, column (a unit scale would round the state to integers)
//   int8_ef                 : column, head, row, block (int8's groups; the residual has no scale of its own)
//   nvfp4                   : block (16-element E4M3 block scales + one FP32 per-head amax)
//   mxfp8, mxfp4            : block (32-element E8M0 block scales)
REPLAYSSM_HD constexpr bool scaling_valid(FormatId f, Scaling s) {
  switch (f) {
    case FormatId::fp32:
    case FormatId::bf16:
    case FormatId::bf16x2:
    case FormatId::fp16: return s == Scaling::none;
    case FormatId::fp8_e4m3: return true;
    case FormatId::fp8_e5m2: return s != Scaling::tile;
    case FormatId::int8:
    case FormatId::int8_ef:
    case FormatId::int16: return s != Scaling::none && s != Scaling::tile;
    case FormatId::nvfp4:
    case FormatId::mxfp8:
    case FormatId::mxfp4: return s == Scaling::block;
  }
  return false;
}
// Stochastic rounding (sr: the counter hash; philox: Philox-4x32 bits) is valid for every format but fp32 (which does
// not round), bf16x2 (whose compensation is the round-to-nearest residual) and int8_ef (whose 4-bit residual spans the
// +-half step of round-to-nearest; a stochastic error spans a whole step).
REPLAYSSM_HD constexpr bool rounding_valid(FormatId f, Rounding r) {
  return !((f == FormatId::fp32 || f == FormatId::bf16x2 || f == FormatId::int8_ef) && r != Rounding::rne);
}
REPLAYSSM_HD constexpr bool is_stochastic(Rounding r) { return r != Rounding::rne; }

// The scaling used when none is asked for: none for fp32/bf16/fp16, row for fp8/int8/int16 (the vLLM/FlashInfer
// state-cache choice), column for int8_ef (the per-(head, column) INT8 cache its residual was reported on), block for
// nvfp4/mx.
REPLAYSSM_HD constexpr Scaling default_scaling(FormatId f) {
  switch (f) {
    case FormatId::int8_ef: return Scaling::column;
    case FormatId::fp8_e4m3:
    case FormatId::fp8_e5m2:
    case FormatId::int8:
    case FormatId::int16: return Scaling::row;
    case FormatId::nvfp4:
    case FormatId::mxfp8:
    case FormatId::mxfp4: return Scaling::block;
    default: return Scaling::none;
  }
}

inline const char* format_name(FormatId f) {
  switch (f) {
    case FormatId::fp32: return "fp32";
    case FormatId::bf16: return "bf16";
    case FormatId::bf16x2: return "bf16x2";
    case FormatId::fp16: return "fp16";
    case FormatId::fp8_e4m3: return "fp8_e4m3";
    case FormatId::fp8_e5m2: return "fp8_e5m2";
    case FormatId::int8: return "int8";
    case FormatId::int8_ef: return "int8_ef";
    case FormatId::int16: return "int16";
    case FormatId::nvfp4: return "nvfp4";
    case FormatId::mxfp8: return "mxfp8";
    case FormatId::mxfp4: return "mxfp4";
  }
  return "?";
}
inline const char* scaling_name(Scaling s) {
  switch (s) {
    case Scaling::none: return "none";
    case Scaling::head: return "head";
    case Scaling::row: return "row";
    case Scaling::block: return "block";
    case Scaling::column: return "column";
    case Scaling::tile: return "tile";
  }
  return "?";
}
inline const char* rounding_name(Rounding r) {
  return r == Rounding::sr ? "sr" : r == Rounding::philox ? "philox" : "rne";
}

inline std::string format_names() {
  std::string out;
  for (FormatId f : kAllFormats) out += (out.empty() ? "" : ", ") + std::string(format_name(f));
  return out;
}

inline FormatId parse_format(const std::string& name) {
  for (FormatId f : kAllFormats)
    if (name == format_name(f)) return f;
  throw std::invalid_argument("unknown format '" + name + "' (expected one of: " + format_names() + ")");
}
inline std::string scaling_names() {
  std::string out;
  for (Scaling s : kAllScalings) out += (out.empty() ? "" : ", ") + std::string(scaling_name(s));
  return out;
}
inline Scaling parse_scaling(const std::string& name) {
  for (Scaling s : kAllScalings)
    if (name == scaling_name(s)) return s;
  throw std::invalid_argument("unknown scaling '" + name + "' (expected one of: " + scaling_names() + ")");
}
inline bool is_rounding_name(const std::string& name) { return name == "rne" || name == "sr" || name == "philox"; }
inline Rounding parse_rounding(const std::string& name) {
  if (name == "rne") return Rounding::rne;
  if (name == "sr") return Rounding::sr;
  if (name == "philox") return Rounding::philox;
  throw std::invalid_argument("unknown rounding '" + name + "' (expected one of: rne, sr, philox)");
}

inline std::string valid_scalings(FormatId f) {
  std::string out;
  for (Scaling s : kAllScalings)
    if (scaling_valid(f, s)) out += (out.empty() ? "" : ", ") + std::string(scaling_name(s));
  return out;
}

// Throws std::invalid_argument naming the format and the valid choices.
inline void check_combination(FormatId f, Scaling s, Rounding r) {
  if (!scaling_valid(f, s))
    throw std::invalid_argument(std::string("scaling '") + scaling_name(s) + "' is not valid for format '" +
                                format_name(f) + "' (valid: " + valid_scalings(f) + ")");
  if (!rounding_valid(f, r))
    throw std::invalid_argument(std::string("rounding '") + rounding_name(r) + "' is not valid for format '" +
                                format_name(f) + "' (" + format_name(f) + " does not round stochastically; use rne)");
}

struct FormatSpec {
  FormatId format = FormatId::fp32;
  Scaling scaling = Scaling::none;
  Rounding rounding = Rounding::rne;
};

// Parse and validate a (format, scaling, rounding) triple; an empty scaling picks default_scaling(format),
// an empty rounding picks rne.
inline FormatSpec parse_format_spec(const std::string& format, const std::string& scaling = "",
                                    const std::string& rounding = "") {
  FormatSpec spec;
  spec.format = parse_format(format);
  spec.scaling = scaling.empty() ? default_scaling(spec.format) : parse_scaling(scaling);
  spec.rounding = rounding.empty() ? Rounding::rne : parse_rounding(rounding);
  check_combination(spec.format, spec.scaling, spec.rounding);
  return spec;
}

}  // namespace replayssm::formats
