// The definition of dispatch: the host plan, then a row copy. Boring on purpose.
#include <cstring>
#include <vector>

#include "common/fp8_reference.hpp"

#include "dispatch/backends.hpp"
#include "dispatch/plan.hpp"
#include "moe/error.hpp"

namespace moe {

void dispatch_reference(const DispatchSpec& s, const TensorMap& in, TensorMap& out) {
  const Tensor& x = in.at("x");
  const Tensor& ids = in.at("ids");
  const ExpertRange range{s.E_total, s.e0, s.e1, s.A};
  const DispatchPlan plan = plan_dispatch(ids.data<std::int32_t>(), s.slots(), range);
  Tensor& xs = out.at("x_sorted");
  if (out.at("src").numel() != plan.rows() || xs.numel() != plan.rows() * s.D)
    throw Error("dispatch reference: outputs sized for " + std::to_string(out.at("src").numel()) +
                " rows, the ids give " + std::to_string(plan.rows()));
  std::memcpy(out.at("offsets").raw(), plan.offsets.data(), plan.offsets.size() * 4);
  std::memcpy(out.at("src").raw(), plan.src.data(), plan.src.size() * 4);
  std::memcpy(out.at("dst").raw(), plan.dst.data(), plan.dst.size() * 4);
  if (s.fp8) {
    // Padding rows are zero rows, quantized by the same rule as any other.
    std::vector<float> row(static_cast<std::size_t>(s.D));
    const std::int64_t G = s.D / 128;
    for (std::int64_t r = 0; r < plan.rows(); ++r) {
      for (std::int64_t d = 0; d < s.D; ++d) row[d] = plan.src[r] >= 0 ? static_cast<float>(x.get((plan.src[r] / s.K) * s.D + d)) : 0.0f;
      fp8_reference::quantize_row(row.data(), s.D, xs.data<std::uint8_t>() + r * s.D, out.at("x_scale").data<float>() + r * G, s.ue8m0);
    }
    return;
  }
  const std::size_t row_bytes = static_cast<std::size_t>(s.D) * dtype_size(s.dtype);
  auto* dstp = static_cast<unsigned char*>(xs.raw());
  const auto* srcp = static_cast<const unsigned char*>(x.raw());
  for (std::int64_t r = 0; r < plan.rows(); ++r) {
    if (plan.src[r] >= 0)
      std::memcpy(dstp + r * row_bytes, srcp + (plan.src[r] / s.K) * row_bytes, row_bytes);
    else
      std::memset(dstp + r * row_bytes, 0, row_bytes);
  }
}

}  // namespace moe
