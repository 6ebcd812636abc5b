#pragma once
// Inputs the user gave as .npy, checked before the family makes the rest: a wrong dtype is
// refused with what to do, naming only dtypes the family has (never a --dtype that does not
// exist, as an f64 file once suggested).
#include "moe/family.hpp"

namespace moe::tuner {

// Throws an Error for the first given input whose dtype is not the one the problem needs.
void check_given_dtypes(const FamilyDesc& f, const Params& problem, const TensorMap& given);
// A .npy file's one-byte elements ('|u1') read as e4m3 codes; an input the problem takes as
// plain bytes (u8: the 4-bit formats' packed codes and e8m0 scales) is the same bytes, retyped.
void retype_byte_inputs(const FamilyDesc& f, const Params& problem, TensorMap& given);

}  // namespace moe::tuner
