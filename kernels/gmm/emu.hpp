#pragma once
// The gmm cuda backend's kernel sources under the SIMT emulator: the emu backend, and the path
// the emulation tests take. Host tensors throughout.
#include <cstdint>
#include <vector>

#include "gmm/mma/cuda_configs.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/family.hpp"

namespace moe::gmm::emu {

// The mma.sync kernel of config `c` (and split-K's finalize), launched as cuda::run launches it.
// `max_ctas` caps the persistent grid (0: one CTA per SM of an H100), so tests can make few
// CTAs walk many tiles. `workspace` holds split-K's fp32 partials. Throws EmuFault.
void run_mma(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
             std::size_t workspace_bytes, long long max_ctas = 0);

// The tile map for block_m = bm: the call's own (input cuda::kTileMapInput, which the layer's
// decode front wrote) or the schedule kernel's, emulated into a.tile_map.
void run_schedule(cuda::KernelArgs& a, int bm, const RefMap& in);

// The pad-row pass ahead of a biased stage (expert_fn.cuh), into a.fn.pad_rows, over `sms` SMs.
void run_pad_rows(const cuda::KernelArgs& a, long long sms);

// The fp8 decode kernel of config `c` and its second pass (fp8_mma_emu.cpp); as run_mma.
void run_fp8_mma(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
                 std::size_t workspace_bytes, long long max_ctas = 0);
std::vector<cuda::TileShape> emulated_fp8_tiles();

// The 4-bit decode kernel of config `c` and split-K's finalize (w4_mma_emu.cpp); as run_mma.
void run_w4_mma(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
                std::size_t workspace_bytes, long long max_ctas = 0);
std::vector<cuda::TileShape> emulated_w4_tiles();

// The wgmma path with the CUTLASS grouped GEMM played by a host loop (the emulator cannot run
// wgmma or TMA): the setup kernel and, for up, the silu*up kernel run emulated; the loop reads
// only the per-expert shapes, pointers and strides the setup kernel wrote, so a wrong one fails
// validation. `grid` caps both kernels' grids (0: as the GPU launch sizes them). `swap`: the
// swapped-operand kernel's arrays (a tile of fewer than 64 token rows).
void run_wgmma(const GmmSpec& s, const RefMap& in, const RefMap& out, long long grid = 0, bool swap = false);

// fp8 up's silu*up + requantization kernel on the emulator (emu_silu_quant.cpp).
void run_silu_quant(const wgmma::SiluQuantLaunch& a);

// The tile shapes built for the emulator, in tiles()'s order (a test keeps them equal).
std::vector<cuda::TileShape> emulated_tiles();

// Why a config's main kernel is not emulated (the CUTLASS GEMM), empty when it is.
std::string not_emulated(const Params& config);

}  // namespace moe::gmm::emu

namespace moe::gmm {
BackendImpl emu_backend();
}
