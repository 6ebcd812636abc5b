#pragma once
// The router kernel's arguments, shared by the row algorithm (cuda_row.hpp) and the host code that
// builds them (make_kernel_args, cuda.hpp) and launches them (cuda_table.hpp).
#include <cstdint>

namespace moe::router::kern {

enum GroupMode : int {
  kNoGroups = 0,    // every expert is a candidate (G == 1 or TG == G)
  kLaneGroups = 1,  // each chunk of a lane lies inside one group, groups span lpg aligned lanes
  kAnyGroups = 2,   // anything else: groups scored one at a time
};

// Kernel arguments, passed by value. Built on the host by make_kernel_args (cuda.hpp).
struct Args {
  const void* logits;  // [T,E], esize bytes per element
  const float* bias;   // [E] or null
  float* weights;      // [T,K]
  std::int32_t* ids;   // [T,K]
  long long T;
  int E, k, S;
  int G, TG, GS;       // groups, kept groups, experts per group
  int group_mode;
  int lpg_shift;       // kLaneGroups: log2(lanes per group)
  int gpc;             // kLaneGroups: groups per chunk (LANES*V/GS)
  int sigmoid, top2, renorm, bf16;
  float rsf;
};

}  // namespace moe::router::kern
