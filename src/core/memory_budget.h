#pragma once
// What a run may allocate: every command estimates the memory its inputs and options need before allocating it and
// refuses (exit 2, one line with the estimate and what to change) when the estimate exceeds the budget, instead of
// dying in std::bad_alloc after minutes of work.
#include <cstdint>
#include <string>

namespace replayssm {

// The budget in bytes: REPLAYSSM_MEMORY_LIMIT (bytes, a positive integer) when set, else the machine's physical
// memory. A malformed REPLAYSSM_MEMORY_LIMIT is a UserError.
double memory_budget_bytes();

// "3.2 GiB", "512.0 MiB", ... (estimates: one decimal).
std::string format_bytes(double bytes);

// Throws UserError "<where>: <what> needs about X of memory, more than the Y available (<fix>)" when bytes exceeds
// the budget. bytes is a double so that absurd sizes (products of huge dimensions) cannot overflow.
void require_memory(const std::string& where, const std::string& what, double bytes, const std::string& fix);

}  // namespace replayssm
