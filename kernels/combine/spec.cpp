#include "combine/spec.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "moe/error.hpp"

namespace moe {

CombineSpec CombineSpec::parse(const Params& p) {
  CombineSpec s;
  s.T = p.i("tokens");
  s.D = p.i("hidden");
  s.E = p.i("experts");
  s.k = p.i("topk");
  s.S = p.i("shared");
  s.K = s.k + s.S;
  s.A = p.i("align");
  s.dtype = parse_dtype(p.s("dtype"));
  s.out_dtype = p.s("out_dtype") == "f32" ? DType::f32 : s.dtype;
  s.dense = p.s("layout") == "dense";
  s.rmsnorm = p.s("epilogue") == "rmsnorm";
  s.eps = p.f("eps");
  if (s.k > s.E)
    throw Error("topk " + std::to_string(s.k) + " is larger than experts " + std::to_string(s.E) +
                ": a token routes to distinct experts, so use topk <= experts");
  if (s.K > kCombineMaxSlots)
    throw Error("topk+shared = " + std::to_string(s.K) + " slots per token: at most " +
                std::to_string(kCombineMaxSlots) + " are supported");
  if (!(s.eps >= 0) || !std::isfinite(s.eps)) throw Error("eps must be a finite value >= 0, got " + std::to_string(s.eps));
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  if (s.slots() > kMax || s.max_rows() > kMax)
    throw Error("tokens*(topk+shared) = " + std::to_string(s.slots()) + " slots overflow the int32 maps: use fewer tokens");
  return s;
}

}  // namespace moe
