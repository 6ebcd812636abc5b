#pragma once
// A kernel's dynamic shared memory by name. The cpu emulator used by the tests
// (emu/simt_cuda.hpp) defines this first, to hand out its own block memory.
#ifndef MOE_DYNAMIC_SMEM
#define MOE_DYNAMIC_SMEM(T, name) extern __shared__ T name[]
#endif
