#pragma once
// A test-only kernel family for the tuner's tests: out = x * alpha, with a cpu backend whose
// config space is a few tile sizes. With problem parameter faults=1 the space also holds
// configs that deliberately abort, hang, throw, write wrong output or run 8x slower, so the
// isolation and validation paths can be exercised without the real families. With
// signal=kill|interrupt, the first non-default candidate to run sends the sweep that signal.
#include "moe/family.hpp"
#include "tuner/run/worker.hpp"

namespace moe::testing {

const FamilyDesc& scale_family();
// "scale" resolves to scale_family(), anything else to the library's families.
const tuner::FamilyResolver& test_families();

}  // namespace moe::testing
