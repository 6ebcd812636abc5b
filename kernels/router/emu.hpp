#pragma once
// The router's cuda kernel source (cuda_row.hpp) under the SIMT emulator: the emu backend.
#include "moe/family.hpp"
#include "router/cuda.hpp"

namespace moe::router {

// Runs the kernel `c` selects on host pointers in `a`, as router_cuda launches it: CTAs of
// c.warps warps, each warp striding over rows. `max_ctas` caps the grid (0: one wave of an
// H100's 132 SMs), so few warps can be made to walk many rows. Throws EmuFault.
void router_emu(const RouterSpec& spec, const CudaConfig& c, const kern::Args& a, long long max_ctas = 0);

// The emu BackendImpl of the router family.
BackendImpl emu_backend();

}  // namespace moe::router
