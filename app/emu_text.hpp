#pragma once
// What the command line says about the emu backend: its speed per family, and why a family
// lacks it.
#include <string>

#include "moe/family.hpp"

namespace moe::app {

// One paragraph for --backend's help: what emu does and how slow it is per family.
std::string emu_help();

// Why `f` has no emu backend, and what to run instead.
std::string no_emu_reason(const FamilyDesc& f);

}  // namespace moe::app
