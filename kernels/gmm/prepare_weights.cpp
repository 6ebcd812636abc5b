// moe::prepare_weights: w13's gate and up rows moved between the split and interleaved orders
// (moe/weights.hpp), a row at a time; the rows themselves are copied as bytes, whatever they hold.
#include <cstring>
#include <string>

#include "moe/error.hpp"
#include "moe/weights.hpp"

namespace moe {

namespace {

// The row of gate (part 0) or up (part 1) column c among 2I rows.
std::int64_t row_of(const W13Layout& l, std::int64_t I, int part, std::int64_t c) {
  if (!l.interleaved) return part * I + c;
  return c / l.block * 2 * l.block + part * l.block + c % l.block;
}

void check_layout(const W13Layout& l, std::int64_t I, const char* which) {
  if (l.interleaved && (l.block < 1 || I % l.block != 0))
    throw Error(std::string("prepare_weights: the ") + which + " layout's block " + std::to_string(l.block) +
                " does not divide the " + std::to_string(I) + " gate (and up) rows: give a block that divides I");
}

}  // namespace

W13Layout w13_layout_of(const Params& problem) {
  W13Layout l;
  l.interleaved = problem.has("w13_layout") && problem.s("w13_layout") == "interleaved";
  if (problem.has("w13_block")) l.block = problem.i("w13_block");
  return l;
}

void prepare_weights(TensorRef from, W13Layout from_layout, TensorRef to, W13Layout to_layout) {
  const std::size_t rank = from.shape.size();
  if ((rank != 2 && rank != 3) || from.shape[1] % 2 != 0)
    throw Error("prepare_weights: expected w13 [E, 2I, D] or bias13 [E, 2I], got " + shape_str(from.shape) +
                ": the gate and up rows are the second dimension, 2I of them");
  if (to.shape != from.shape || to.dtype != from.dtype)
    throw Error("prepare_weights: the output is " + std::string(dtype_name(to.dtype)) + shape_str(to.shape) +
                ", the input " + std::string(dtype_name(from.dtype)) + shape_str(from.shape) +
                ": give an output of the input's dtype and shape");
  const auto* src = static_cast<const unsigned char*>(from.data);
  auto* dst = static_cast<unsigned char*>(to.data);
  const std::size_t bytes = from.nbytes();
  if (bytes > 0 && (!src || !dst))
    throw Error("prepare_weights: a tensor has no data: give the input and output tensors' memory");
  if (bytes > 0 && src < dst + bytes && dst < src + bytes)
    throw Error("prepare_weights: the output overlaps the input: it works out of place, into a tensor of its own");
  const std::int64_t E = from.shape[0], I = from.shape[1] / 2;
  check_layout(from_layout, I, "input");
  check_layout(to_layout, I, "output");
  const std::size_t row = (rank == 3 ? static_cast<std::size_t>(from.shape[2]) : 1) * dtype_size(from.dtype);
  for (std::int64_t e = 0; e < E; ++e)
    for (int part = 0; part < 2; ++part)
      for (std::int64_t c = 0; c < I; ++c) {
        const std::size_t base = static_cast<std::size_t>(e * 2 * I);
        std::memcpy(dst + (base + static_cast<std::size_t>(row_of(to_layout, I, part, c))) * row,
                    src + (base + static_cast<std::size_t>(row_of(from_layout, I, part, c))) * row, row);
      }
}

}  // namespace moe
