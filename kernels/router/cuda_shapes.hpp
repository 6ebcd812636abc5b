#pragma once
// The compiled router kernels, as data: the instantiation files compile exactly these and the
// config space offers exactly these, so the two cannot drift apart.
//
// A row's E experts are spread over `lanes` lanes (1..32, so 32/lanes rows per warp), each
// lane holding up to `epl` experts in registers, loaded `vec` elements at a time: chunk j
// of lane l holds experts j*lanes*vec + l*vec + [0, vec). Coverage: E <= lanes*epl, vec | E.
namespace moe::router {

struct KernelShape {
  int lanes, epl, vec, esize;  // vec: elements per load; esize: bytes per logit
};

// Small rows (epl <= 8) for 16-bit logits, then fp32, then wide rows (E up to 1024), then
// wide rows packed 2 or 4 to a warp: a warp-wide reduction step costs the same for one row as
// for four, so at E >= 256 fewer lanes per row spend fewer warp-instructions on each.
// vec 1 (and 2 for fp32) exists on a few shapes only: it serves E that 16-byte loads cannot.
inline constexpr KernelShape kShapes[] = {
    // 16-bit logits, epl <= 8: cuda_kernels_16.cu
    {1, 8, 8, 2}, {1, 8, 4, 2}, {2, 8, 8, 2}, {2, 8, 4, 2}, {4, 4, 4, 2}, {4, 8, 8, 2},
    {4, 8, 4, 2}, {4, 8, 1, 2}, {8, 4, 4, 2}, {8, 8, 8, 2}, {8, 8, 4, 2}, {16, 4, 4, 2},
    {16, 8, 8, 2}, {16, 8, 4, 2}, {32, 4, 4, 2}, {32, 8, 8, 2}, {32, 8, 4, 2}, {32, 8, 1, 2},
    // fp32 logits, epl <= 8: cuda_kernels_32.cu
    {1, 8, 4, 4}, {2, 8, 4, 4}, {4, 4, 4, 4}, {4, 8, 4, 4}, {4, 8, 2, 4}, {4, 8, 1, 4},
    {8, 4, 4, 4}, {8, 8, 4, 4}, {16, 4, 4, 4}, {16, 8, 4, 4}, {32, 4, 4, 4}, {32, 8, 4, 4},
    {32, 8, 2, 4}, {32, 8, 1, 4},
    // wide rows, both element sizes: cuda_kernels_wide.cu
    {32, 12, 4, 2}, {32, 16, 8, 2}, {32, 16, 4, 2}, {32, 32, 8, 2}, {32, 32, 4, 2}, {32, 32, 1, 2},
    {32, 12, 4, 4}, {32, 16, 4, 4}, {32, 32, 4, 4}, {32, 32, 2, 4}, {32, 32, 1, 4},
    // packed wide rows, several rows per warp for E >= 256, 16-byte loads: cuda_kernels_packed.cu
    {8, 32, 8, 2}, {16, 16, 8, 2}, {16, 24, 8, 2}, {16, 32, 8, 2},
    {8, 32, 4, 4}, {16, 16, 4, 4}, {16, 24, 4, 4}, {16, 32, 4, 4},
};
inline constexpr int kShapeCount = sizeof(kShapes) / sizeof(kShapes[0]);
// Index ranges of the four instantiation files.
inline constexpr int kShapes16Begin = 0, kShapes32Begin = 18, kShapesWideBegin = 32, kShapesPackedBegin = 43;

inline constexpr int kMaxExperts = 1024;  // widest compiled row: 32 lanes x 32 experts
inline constexpr int kMaxWarps = 8;       // the kernels' launch bound is 256 threads

}  // namespace moe::router
