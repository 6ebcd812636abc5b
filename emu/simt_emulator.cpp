#include "emu/simt_emulator.hpp"

#include <ucontext.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

namespace simt {

namespace {

struct Fiber {
  ucontext_t ctx{};
  std::unique_ptr<char[]> stack;
  bool done = false, blocked = false;
};

struct alignas(16) Chunk16 {
  unsigned char b[16];
};
constexpr std::size_t kGuardChunks = 256;  // 4 KiB after the block's shared memory
constexpr unsigned char kGuardByte = 0xA5;

struct Cta {
  int threads = 0;
  long long block = 0, grid = 0;
  std::vector<Fiber> fibers;
  ucontext_t sched{};
  int current = -1;
  std::vector<Chunk16> smem;
  std::size_t smem_size = 0;
  int bar_arrived = 0;
  int warp_arrived[kMaxThreads / 32] = {};
  Exchange xch[kMaxThreads / 32] = {};
  std::vector<int> ready[kMaxThreads / 32];  // per warp: fibers not waiting on a barrier
  bool greedy = false;                       // run one warp as far as it goes before the next
  std::mt19937 rng;
  const std::function<void()>* body = nullptr;
  std::string fault;
};

// Fibers and their stacks outlive a launch: a 1024-thread block would otherwise allocate
// its stacks again for every block of the grid.
Cta& machine() {
  static Cta cta;
  return cta;
}
Cta* g = nullptr;

Cta& cur() {
  if (!g) throw std::logic_error("simt: a device function was called outside simt::launch");
  return *g;
}

void yield() { swapcontext(&g->fibers[g->current].ctx, &g->sched); }

void entry() {
  (*g->body)();
  g->fibers[g->current].done = true;
}

// A barrier over fibers [first, first+count): the last to arrive releases the others.
void barrier(int& arrived, int first, int count) {
  if (++arrived == count) {
    arrived = 0;
    for (int i = first; i < first + count; ++i)
      if (g->fibers[i].blocked) {
        g->fibers[i].blocked = false;
        g->ready[i / 32].push_back(i);
      }
    return;
  }
  g->fibers[g->current].blocked = true;
  yield();
}

// Runs one block to the end; false on a deadlock.
bool run_block(Cta& cta) {
  constexpr std::size_t kStack = 64 * 1024;
  for (int i = 0; i < cta.threads; ++i) {
    Fiber& f = cta.fibers[static_cast<std::size_t>(i)];
    if (!f.stack) f.stack.reset(new char[kStack]);
    f.done = f.blocked = false;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.get();
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = &cta.sched;
    makecontext(&f.ctx, entry, 0);
  }
  cta.bar_arrived = 0;
  for (int& w : cta.warp_arrived) w = 0;
  const int warps = cta.threads / 32;
  for (int w = 0; w < warps; ++w) {
    cta.ready[w].clear();
    for (int l = 0; l < 32; ++l) cta.ready[w].push_back(w * 32 + l);
  }
  // Greedy order lets one warp run ahead to its next block barrier, which exposes a missing
  // __syncthreads; the other order interleaves all warps finely.
  int focus = -1;
  std::vector<int> live;
  for (;;) {
    if (focus < 0 || !cta.greedy || cta.ready[focus].empty()) {
      live.clear();
      for (int w = 0; w < warps; ++w)
        if (!cta.ready[w].empty()) live.push_back(w);
      if (live.empty()) break;
      focus = live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(cta.rng)];
    }
    std::vector<int>& r = cta.ready[focus];
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, r.size() - 1)(cta.rng);
    cta.current = r[k];
    swapcontext(&cta.sched, &cta.fibers[static_cast<std::size_t>(cta.current)].ctx);
    const Fiber& f = cta.fibers[static_cast<std::size_t>(cta.current)];
    if (f.done || f.blocked) {
      r[k] = r.back();
      r.pop_back();
    }
    if (!cta.greedy) focus = -1;
  }
  for (int i = 0; i < cta.threads; ++i)
    if (!cta.fibers[static_cast<std::size_t>(i)].done) return false;
  return true;
}

}  // namespace

void launch(long long grid, int threads, std::size_t dynamic_smem, const std::function<void()>& body,
            std::uint32_t seed) {
  if (threads < 32 || threads > kMaxThreads || threads % 32)
    throw std::invalid_argument("simt: " + std::to_string(threads) +
                                " threads per block: use a multiple of 32 up to 1024");
  if (dynamic_smem > 227 * 1024)
    throw std::invalid_argument("simt: " + std::to_string(dynamic_smem) +
                                " bytes of dynamic shared memory exceed sm_90's 227 KiB");
  if (g) throw std::logic_error("simt: launch inside a launch");
  Cta& cta = machine();
  cta.threads = threads;
  cta.grid = grid;
  cta.body = &body;
  cta.rng.seed(seed);
  cta.greedy = seed % 2 == 1;
  if (cta.fibers.size() < static_cast<std::size_t>(threads)) cta.fibers.resize(static_cast<std::size_t>(threads));
  cta.smem_size = dynamic_smem;
  const std::size_t chunks = (dynamic_smem + 15) / 16;
  cta.smem.assign(chunks + kGuardChunks, Chunk16{});
  std::uniform_int_distribution<int> byte(0, 255);
  for (long long b = 0; b < grid; ++b) {
    for (std::size_t i = 0; i < cta.smem.size(); ++i)  // garbage, never zeros; then a guard band
      for (auto& x : cta.smem[i].b) x = i < chunks ? static_cast<unsigned char>(byte(cta.rng)) : kGuardByte;
    cta.block = b;
    cta.fault.clear();
    g = &cta;
    const bool finished = run_block(cta);
    g = nullptr;
    if (!finished)
      throw std::runtime_error("simt: deadlock in block " + std::to_string(b) +
                               ": threads wait on a barrier that others exited or never reach");
    for (std::size_t i = chunks; i < cta.smem.size(); ++i)
      for (auto x : cta.smem[i].b)
        if (x != kGuardByte) cta.fault = "a write past the end of the dynamic shared memory";
    if (!cta.fault.empty()) throw std::runtime_error("simt: block " + std::to_string(b) + ": " + cta.fault);
  }
}

int thread() { return cur().current; }
long long block() { return cur().block; }
long long grid() { return cur().grid; }
int block_dim() { return cur().threads; }

void sync_threads() {
  Cta& c = cur();
  barrier(c.bar_arrived, 0, c.threads);
}
void sync_warp() {
  Cta& c = cur();
  barrier(c.warp_arrived[c.current / 32], c.current / 32 * 32, 32);
}

unsigned char* dynamic_smem() { return cur().smem.front().b; }
std::size_t dynamic_smem_size() { return cur().smem_size; }

Exchange& exchange() { return cur().xch[cur().current / 32]; }

void fault(const std::string& why) {
  Cta& c = cur();
  if (c.fault.empty()) c.fault = why;
}

}  // namespace simt
