#pragma once
// A CUDA thread block on the cpu, for testing kernel sources where no GPU is at hand. Each of
// a CTA's threads is a fiber; fibers run in a random order and switch only at barriers, so a
// kernel that reads what another thread writes without a barrier in between sees a different
// interleaving from run to run (and from seed to seed). Warp collectives exchange operands
// through per-warp slots between two warp barriers. A barrier that cannot complete (a thread
// exited or waits elsewhere) is reported as a deadlock; misuse seen by the kernel's helpers
// (out-of-range shared memory, divergent collectives) is reported as a fault. Either way
// launch() throws std::runtime_error naming the block. Not caught here: races between lanes
// of one warp (a collective orders memory in the emulator, which real warps only promise for
// __syncwarp), and out-of-bounds reads of global memory.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace simt {

inline constexpr int kMaxThreads = 1024;
inline constexpr int kExchangeSlots = 8;

// Runs body once per thread of each block in [0, grid), `threads` (a multiple of 32, at most
// 1024) threads per block, with `dynamic_smem` bytes of shared memory filled with garbage.
// Blocks run one after another; seed picks the thread order: an odd seed runs one warp as far
// as it can go before the next, an even one interleaves all warps.
void launch(long long grid, int threads, std::size_t dynamic_smem, const std::function<void()>& body,
            std::uint32_t seed);

// Inside body: this thread's place, as threadIdx.x / blockIdx.x / gridDim.x / blockDim.x.
int thread();
long long block();
long long grid();
int block_dim();
inline int lane() { return thread() & 31; }
inline int warp() { return thread() >> 5; }

void sync_threads();  // every thread of the block
void sync_warp();     // the 32 lanes of this thread's warp

unsigned char* dynamic_smem();
std::size_t dynamic_smem_size();

// Per-warp exchange slots for collectives: write yours, sync_warp, read others', sync_warp.
using Exchange = std::uint64_t[32][kExchangeSlots];
Exchange& exchange();

// Records the first misuse; launch() throws with it once the block has finished.
void fault(const std::string& why);

}  // namespace simt
