#pragma once
// The refusal of shapes that would take the emu backend minutes (moe::emu_seconds estimates
// them from the family's cost and the emulator's measured speed).
#include "moe/family.hpp"

namespace moe::tuner {

// Error when one config would take longer than `limit_s`, naming a token count that fits.
void check_emu_time(const FamilyDesc& f, const Params& problem, double limit_s = 180);

}  // namespace moe::tuner
