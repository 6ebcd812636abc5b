#include "dispatch/spec.hpp"

#include <limits>
#include <string>

#include "common/fp8_problem.hpp"
#include "moe/error.hpp"

namespace moe {

DispatchSpec DispatchSpec::parse(const Params& p) {
  DispatchSpec s;
  s.T = p.i("tokens");
  s.D = p.i("hidden");
  s.E = p.i("experts");
  s.k = p.i("topk");
  s.S = p.i("shared");
  s.K = s.k + s.S;
  s.E_total = s.E + s.S;
  s.A = p.i("align");
  s.fp8 = p.s("dtype") == "fp8";
  s.dtype = s.fp8 ? DType::bf16 : parse_dtype(p.s("dtype"));
  s.ue8m0 = s.fp8 && p.has("scale_fmt") && p.s("scale_fmt") == "ue8m0";
  if (s.fp8) check_fp8_dims("dispatch", s.D);
  s.e0 = p.i("expert_begin");
  s.e1 = p.i("expert_end") < 0 ? s.E_total : p.i("expert_end");
  if (s.k > s.E)
    throw Error("topk " + std::to_string(s.k) + " is larger than experts " + std::to_string(s.E) +
                ": a token routes to distinct experts, so use topk <= experts");
  if (s.e0 >= s.e1 || s.e1 > s.E_total)
    throw Error("local expert range [" + std::to_string(s.e0) + "," + std::to_string(s.e1) +
                ") must be non-empty and inside [0," + std::to_string(s.E_total) +
                ") (experts + shared): set expert_begin < expert_end <= " + std::to_string(s.E_total) +
                ", or expert_end=-1 for all");
  // Maps hold int32 row and slot indices, so every possible row must fit one.
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  if (s.slots() > kMax || s.max_rows() > kMax)
    throw Error("tokens*(topk+shared) = " + std::to_string(s.slots()) + " slots (up to " +
                std::to_string(s.max_rows()) + " padded rows) overflow the int32 maps: use fewer tokens");
  return s;
}

}  // namespace moe
