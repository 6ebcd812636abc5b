#pragma once
// Programmatic dependent launch (PDL) on the device side. A kernel launched with the
// programmatic-serialization attribute may start while its predecessor on the stream is still
// running, so it must wait before it reads what the predecessor wrote (or writes anything the
// predecessor may still read): MOE_GRID_DEPENDENCY_WAIT() returns once every prerequisite grid
// has completed and its memory is visible. MOE_LAUNCH_DEPENDENTS() lets the next kernel be
// scheduled; it stays correct anywhere, because the dependent's own wait still waits for this
// grid's completion, so kernels call it right after their wait.
// Whatever a predecessor may have written is read with plain loads, never __ldg/ld.global.nc:
// ptxas treats a non-coherent load as reading memory that cannot change during the kernel, so it
// may hoist one above griddepcontrol.wait or merge two of one address across it. The static
// report checks every programmatically launched kernel's SASS: one wait, no global load before
// it, no non-coherent load anywhere (docs/kernel-report.md).
// Every block must reach the wait before it exits: a grid that completes without waiting would
// let its dependent run ahead of the grid before it.
// The cpu emulator (emu/simt_cuda.hpp, gmm/emu_primitives.hpp) defines both first: it runs
// grids one after another, so there the wait has nothing to wait for.
#ifndef MOE_GRID_DEPENDENCY_WAIT
static __device__ __forceinline__ void moe_griddepcontrol_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
static __device__ __forceinline__ void moe_griddepcontrol_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
#define MOE_GRID_DEPENDENCY_WAIT() moe_griddepcontrol_wait()
#define MOE_LAUNCH_DEPENDENTS() moe_griddepcontrol_launch_dependents()
#endif
