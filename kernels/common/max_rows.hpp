#pragma once
// The most rows dispatch can write for `tokens` tokens of `slots` slots each: every slot routed
// to a local expert, plus a partial alignment block per local expert. Every stage sizes by this
// one bound (dispatch's maps, gmm's tile map and partials, combine's row check, the layer's
// intermediates): a tighter one for gmm (a token's experts are distinct, so at most
// min(slots, local) of its slots are local) held for the router's ids but not for ids a caller
// hands dispatch, and two bounds let the layer's buffers outgrow gmm's plan.
#include <cstdint>

namespace moe {

inline std::int64_t max_dispatch_rows(std::int64_t tokens, std::int64_t slots, std::int64_t local_experts,
                                      std::int64_t align) {
  return tokens * slots + local_experts * (align - 1);
}

}  // namespace moe
