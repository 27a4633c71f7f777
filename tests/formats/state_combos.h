#pragma once
// The valid (format, scaling, rounding) triples in a fixed order, usable on the host and the device.
#include "formats/format_id.h"

namespace replayssm::formats {

// Returns false when idx is past the last triple.
REPLAYSSM_HD bool combo_at(int idx, FormatId& f, Scaling& s, Rounding& r) {
  int n = 0;
  // integer loops: the kAll* arrays are host variables
  for (int fi = 0; fi < kFormatIdCount; ++fi)
    for (int si = 0; si < kScalingCount; ++si)
      for (int ri = 0; ri < kRoundingCount; ++ri) {
        const auto ff = static_cast<FormatId>(fi);
        const auto ss = static_cast<Scaling>(si);
        const auto rr = static_cast<Rounding>(ri);
        if (!scaling_valid(ff, ss) || !rounding_valid(ff, rr)) continue;
        if (n++ == idx) {
          f = ff;
          s = ss;
          r = rr;
          return true;
        }
      }
  return false;
}

REPLAYSSM_HD int combo_count() {
  FormatId f = FormatId::fp32;
  Scaling s = Scaling::none;
  Rounding r = Rounding::rne;
  int n = 0;
  while (combo_at(n, f, s, r)) ++n;
  return n;
}

}  // namespace replayssm::formats
