#pragma once
// Shared by the two halves of validation (validation.cpp: cases, the FP64 reference, the checks against it and the
// emulation; validation_mode_aware.cpp: the mode-aware reference run side by side with a backend). Not a public API.
#include <string>

#include "emulation/validation.h"

namespace replayssm::emu::detail {

// Drafts a chain verify keeps in sequence b: (accept + b) mod (T + 1), so the sequences of a batch differ.
int accepted_of(const Op& op, int b);
// "all-zero output" / "all-zero state" where the reference's is not zero: fails whatever the tolerance says.
std::string zero_guard(const CaseOutputs& ref, const CaseOutputs& got);
// The effective memory 1 / (1 - a_max) of a case's decays.
double case_memory(const Case& c);
// A row with the case's identity filled in (arch, kernel family, mode, case, shape, what it is checked against).
CheckRow base_row(const Mode& m, const Case& c, const CaseInputs& in, const char* against);

}  // namespace replayssm::emu::detail
