#pragma once
// PTX instructions over the simt emulator, with PTX's own semantics: cp.async groups, ldmatrix
// and mma.sync m16n8k16 fragments, 16-bit conversions. Shared addresses are offsets into the
// block's dynamic shared memory (what __cvta_generic_to_shared gives for it on a GPU).
// cp.async poisons its destination when issued and copies only when wait_group retires its
// group, so a pipeline that reads a stage too early, or overwrites one still in flight,
// computes garbage here as on a GPU (only more reliably). Warp-wide instructions exchange
// their operands through the warp's exchange slots with the PTX fragment layouts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "emu/simt_emulator.hpp"

namespace simt::ptx {

// ---- 16-bit floats (round to nearest even, as cvt.rn)

template <bool BF16>
float half_to_float(std::uint16_t bits) {
  if constexpr (BF16) {
    __nv_bfloat16_raw r;
    r.x = bits;
    return __bfloat162float(__nv_bfloat16(r));
  } else {
    __half_raw r;
    r.x = bits;
    return __half2float(__half(r));
  }
}
template <bool BF16>
std::uint16_t float_to_half(float v) {
  if constexpr (BF16) return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x;
  else return __half_raw(__float2half_rn(v)).x;
}
// Two floats rounded to 16 bits, low half first (cvt.rn.bf16x2.f32 / f16x2).
template <bool BF16>
std::uint32_t pack2(float lo, float hi) {
  return static_cast<std::uint32_t>(float_to_half<BF16>(lo)) | static_cast<std::uint32_t>(float_to_half<BF16>(hi)) << 16;
}

// ---- shared-memory addresses

inline std::uint32_t smem_offset(const void* p) {
  const auto off = static_cast<const unsigned char*>(p) - dynamic_smem();
  if (off < 0 || static_cast<std::size_t>(off) >= dynamic_smem_size()) fault("shared address outside the block's shared memory");
  return static_cast<std::uint32_t>(off);
}

// ---- cp.async (.cg 16 bytes, .ca 4 bytes), commit_group, wait_group

struct AsyncCopy {
  unsigned char* dst;
  const unsigned char* src;
  bool valid;  // false: zero-fill (src-size 0)
  std::size_t bytes = 16;
};
struct AsyncCopies {
  std::vector<AsyncCopy> open;                 // issued, not yet committed
  std::deque<std::vector<AsyncCopy>> groups;  // committed, not yet retired
};

// This thread's copies in flight. A launch body calls cp_async_reset() first: a thread's
// groups do not outlive its kernel.
inline AsyncCopies& cp_async_state() {
  static std::vector<AsyncCopies> v(kMaxThreads);
  return v[static_cast<std::size_t>(thread())];
}
// Whether each thread has passed griddepcontrol.wait in this launch (below).
inline std::vector<char>& waited_flags() {
  static std::vector<char> v(kMaxThreads);
  return v;
}
inline void cp_async_reset() {
  cp_async_state() = {};
  waited_flags()[static_cast<std::size_t>(thread())] = 0;
}

inline void cp_async(std::uint32_t dst, const void* src, bool valid, std::size_t bytes) {
  if (dst % bytes != 0 || dst + bytes > dynamic_smem_size()) fault("cp.async to a misaligned or out-of-range shared address");
  if (valid && reinterpret_cast<std::uintptr_t>(src) % bytes != 0) fault("cp.async from a misaligned global address");
  unsigned char* d = dynamic_smem() + dst;
  std::memset(d, 0xFF, bytes);  // not there yet: NaN until the group retires
  cp_async_state().open.push_back({d, static_cast<const unsigned char*>(src), valid, bytes});
}
inline void cp_async16(std::uint32_t dst, const void* src, bool valid) { cp_async(dst, src, valid, 16); }
inline void cp_async4(std::uint32_t dst, const void* src) { cp_async(dst, src, true, 4); }
inline void cp_async_commit() {
  auto& s = cp_async_state();
  s.groups.push_back(std::move(s.open));
  s.open.clear();
}
// Retires this thread's oldest groups until at most n are pending.
inline void cp_async_wait(std::size_t n) {
  auto& s = cp_async_state();
  while (s.groups.size() > n) {
    for (auto& c : s.groups.front()) {
      if (c.valid) std::memcpy(c.dst, c.src, c.bytes);
      else std::memset(c.dst, 0, c.bytes);
    }
    s.groups.pop_front();
  }
}

// ---- ldmatrix.sync.aligned.m8n8.x4.shared.b16

// Lanes 8i..8i+7 give the row addresses of matrix i; lane t receives row t/4, columns
// 2(t%4) and 2(t%4)+1 of each matrix (low half first).
inline void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  if (addr % 16 != 0 || addr + 16 > dynamic_smem_size()) fault("ldmatrix row address misaligned or out of range");
  auto& x = exchange();
  x[lane()][0] = addr;
  sync_warp();
  for (int i = 0; i < 4; ++i) {
    const auto row = static_cast<std::uint32_t>(x[8 * i + lane() / 4][0]);
    std::memcpy(&r[i], dynamic_smem() + row + (lane() % 4) * 4, 4);
  }
  sync_warp();
}

// ---- mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32

// With g = lane/4, t = lane%4: a0:(g, 2t..2t+1) a1:(g+8, 2t..) a2:(g, 2t+8..) a3:(g+8, 2t+8..);
// b0:(k=2t.., n=g) b1:(k=2t+8.., n=g); d0,d1:(g, 2t..2t+1) d2,d3:(g+8, 2t..2t+1).
template <bool BF16>
void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  auto& x = exchange();
  for (int i = 0; i < 4; ++i) x[lane()][i] = a[i];
  x[lane()][4] = b0;
  x[lane()][5] = b1;
  sync_warp();
  auto half = [](std::uint64_t reg, int h) { return half_to_float<BF16>(static_cast<std::uint16_t>(reg >> (16 * h))); };
  auto A = [&](int row, int k) { return half(x[(row % 8) * 4 + (k % 8) / 2][row / 8 + 2 * (k / 8)], k % 2); };
  auto B = [&](int k, int n) { return half(x[n * 4 + (k % 8) / 2][4 + k / 8], k % 2); };
  const int g = lane() / 4, t = lane() % 4;
  float out[4];
  for (int q = 0; q < 4; ++q) {
    const int row = g + (q / 2) * 8, col = 2 * t + q % 2;
    float s = d[q];
    for (int k = 0; k < 16; ++k) s += A(row, k) * B(k, col);
    out[q] = s;
  }
  sync_warp();
  for (int q = 0; q < 4; ++q) d[q] = out[q];
}

// ---- griddepcontrol.wait / griddepcontrol.launch_dependents (programmatic dependent launch)

// The emulator runs each grid to completion before the next starts, so a kernel's predecessor
// is always done and visible: the wait has nothing to wait for and the trigger nothing to start.
// What the emulator does track: whether this thread has waited, so that a test can tell what a
// kernel read ahead of its wait (the L2 prefetches below). A launch body's cp_async_reset() clears it.
inline void griddepcontrol_wait() { waited_flags()[static_cast<std::size_t>(thread())] = 1; }
inline void griddepcontrol_launch_dependents() {}

// ---- cp.async.bulk.prefetch.L2.global

// Nothing is copied (L2 holds what memory holds), but the operands are checked as a GPU checks
// them, and while a test keeps a log each prefetch is recorded: which CTA sent which bytes, and
// whether before its thread's wait.
struct L2Prefetch {
  const unsigned char* p;
  std::uint32_t bytes;
  long long block;
  bool after_wait;
};
inline std::vector<L2Prefetch>*& l2_prefetch_log() {
  static std::vector<L2Prefetch>* log = nullptr;
  return log;
}
inline void prefetch_l2(const void* p, std::uint32_t bytes) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 || bytes % 16 || bytes == 0)
    fault("cp.async.bulk.prefetch.L2 of a misaligned address or a size not a positive multiple of 16");
  if (auto* log = l2_prefetch_log())
    log->push_back({static_cast<const unsigned char*>(p), bytes, block(), waited_flags()[static_cast<std::size_t>(thread())] != 0});
}

// ---- vector memory accesses: the alignment a GPU faults on

inline void need_aligned(const void* p, std::size_t bytes, const char* what) {
  if (reinterpret_cast<std::uintptr_t>(p) % bytes) fault(std::string("misaligned ") + what);
}

}  // namespace simt::ptx
