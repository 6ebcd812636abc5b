#pragma once
// The check of a quantized output (DESIGN.md 1.6), shared by dispatch (x_sorted) and gmm up (h).
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe {

// codes [R,N] e4m3 and scales [R,N/128] f32 against the reference's: every element written;
// scales within 1 ulp (ue8m0: one power of two, what a 1-ulp change before rounding up gives);
// codes within one e4m3 step (division vs reciprocal), NaN exactly where the reference has
// NaN; the dequantized values by relative L2. Rows whose reference scale is NaN were not
// computed and are only checked for being written and finite. `pad` (optional) marks rows
// whose codes must be exactly zero.
// `scale_rtol` widens the scale check where the values quantized come out of an fp32 sum the
// reference takes in fp64 (gmm up's h): their amax, so their scale, may differ by that much.
// `range_atol` accepts codes more than one step apart whose values differ by at most that
// fraction of the group's range (448 times the reference's scale): an error absolute in the
// sums, as a GEMM's accumulation leaves, moves small elements by many steps of their own.
std::vector<Check> check_quantized(const std::string& name, const Tensor& got_q, const Tensor& got_s, const Tensor& ref_q,
                                   const Tensor& ref_s, bool ue8m0, const std::vector<char>* pad = nullptr,
                                   double scale_rtol = 0, double range_atol = 0);

}  // namespace moe
