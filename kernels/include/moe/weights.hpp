#pragma once
// Weight preparation: a checkpoint's expert weights in the row order a problem names, made once
// when the weights are loaded (as engines permute theirs at load time), never per call.
#include <cstdint>

#include "moe/params.hpp"
#include "moe/tensor.hpp"

namespace moe {

// The row order of w13 [E, 2I, D] and bias13 [E, 2I]: split (gate rows 0..I-1, then up rows
// 0..I-1) or interleaved (a block of `block` gate rows, then the same block's up rows, and so on:
// gate column c at row c / block * 2 * block + c % block, up column c `block` rows below it).
// gpt-oss checkpoints store block 1 (gate_up_proj's even and odd columns).
struct W13Layout {
  bool interleaved = false;
  std::int64_t block = 1;
};

// The layout a gmm or moe-layer problem names (w13_layout, w13_block; split when absent).
W13Layout w13_layout_of(const Params& problem);

// Writes `to` = `from` re-laid from one row order into the other: w13 [E, 2I, D] of any element
// type (bf16, f16, fp8 codes) or bias13 [E, 2I]. Both in host memory, of the same dtype and
// shape, not overlapping. An Error says what is wrong: a shape without an even row count, a block
// that does not divide I, tensors that differ or overlap.
void prepare_weights(TensorRef from, W13Layout from_layout, TensorRef to, W13Layout to_layout);

}  // namespace moe
