#include "app/emu_text.hpp"

namespace moe::app {

std::string emu_help() {
  // Measured with one config each at the default shapes on one core of a development machine.
  return "emu: no GPU needed; the cuda backend's own kernel sources run on the cpu under the SIMT emulator and are "
         "validated against the reference, not timed. It is slow: per config at --tokens 64 (deepseek-v3 shapes) "
         "router takes about ROUTER_S, dispatch about DISPATCH_S, combine about COMBINE_S, and gmm (mma kernel) about "
         "GMM_S; a config whose kernel cannot be emulated (gmm kernel=wgmma: CUTLASS) is reported as not emulated "
         "while its setup and silu kernels run and are checked. Shapes that would take more than 3 minutes per "
         "config are refused with a smaller --tokens that fits. moe-layer has no emu backend: run its stages.";
}

std::string no_emu_reason(const FamilyDesc& f) {
  return f.name + " has no emu backend: the layer runs its stages as one device pipeline, so validate the stages "
                  "under the emulator one by one: `moebench run router|dispatch|gmm|combine --backend emu` (or "
                  "`moebench sweep all --backend emu`)";
}

}  // namespace moe::app
