#include "app/emu_text.hpp"

namespace moe::app {

std::string emu_help() {
  // Measured with one config each at the default shapes on one core of a development machine.
  return "emu: no GPU needed; the cuda backend's own kernel sources run on the cpu under the SIMT emulator and are "
         "validated against the reference, not timed. It is slow (one core): per config at --tokens 64 with "
         "deepseek-v3's shapes router takes about 0.5 s, dispatch about 8 s, combine about 10 s; gmm's mma kernel "
         "emulates about 4 MFLOP/s (4 s at --tokens 64 --experts 8 --hidden 256 --intermediate 128; deepseek-v3's gmm "
         "is refused); a config whose kernel cannot be emulated (gmm kernel=wgmma: CUTLASS) is reported as not emulated "
         "while its setup and silu kernels run and are checked. Shapes that would take more than 3 minutes per "
         "config are refused with a smaller --tokens that fits. moe-layer runs its five stages' kernels in turn "
         "(each stage at its default config: the emu backend has no tables) and is validated end to end.";
}

std::string no_emu_reason(const FamilyDesc& f) {
  return f.name + " has no emu backend in this build (it has no cuda kernels to emulate): use --backend cpu";
}

}  // namespace moe::app
