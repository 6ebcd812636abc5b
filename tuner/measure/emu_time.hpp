#pragma once
// How long the emu backend will take on a problem, from the family's cost estimate and the
// emulator's measured speed, and the refusal of shapes that would take minutes.
#include "moe/family.hpp"

namespace moe::tuner {

// Expected seconds of one emulated run of one config (0 when the family states no speed).
double emu_seconds(const FamilyDesc& f, const Params& problem);

// Error when one config would take longer than `limit_s`, naming a token count that fits.
void check_emu_time(const FamilyDesc& f, const Params& problem, double limit_s = 180);

}  // namespace moe::tuner
