#pragma once
#include "moe/family.hpp"

namespace moe {
// The gmm family's description (kernels/gmm/family.cpp).
const FamilyDesc& gmm_family();
// Set in the problem passed to the gmm reference to compute every row, however large.
inline constexpr const char* kReferenceEveryRow = "reference_every_row";
// The layer's decode front writes the tile map of a stage whose kernel walks one (input
// "tile_map", int32, gmm_tile_map_bytes of it), so the stage launches no schedule kernel:
// block_m of that map for a complete cuda/emu gmm config, 0 when its kernel takes none. As input
// "early_tile_map" instead, the map was complete before the call's predecessor kernel let it
// launch (down's: the front wrote it before up), and a decode down kernel reads it ahead of its
// PDL wait to start its weights into L2.
int gmm_tile_map_block_m(const Params& config);
std::size_t gmm_tile_map_bytes(std::int64_t rows, int block_m, std::int64_t experts);
// The decode path may fold combine into gmm down (inputs fold_dst, fold_weights, fold_done: an
// int32 per N-tile, zeroed; output fold_out [tokens, hidden]): why it cannot with this down
// problem and complete config (empty: it can).
std::string gmm_fold_combine_invalid(const Params& problem, const Params& config);
}  // namespace moe
