#pragma once
// How a layer problem splits into the problems of its five stages. Stage problems use the
// shared parameter names, so they are built from the layer's parameters by name.
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe {

struct Stage {
  std::string name;    // router, dispatch, gmm_up, gmm_down, combine: the layer's config keys
  std::string family;  // the family that computes it
  Params problem;      // complete problem of that family
};

std::vector<Stage> layer_stages(const Params& layer_problem);

// The layer's local experts [begin, end) of experts + shared (expert parallelism: dispatch and
// gmm take only these; the router scores all, combine sums what is local). Checked by dispatch.
struct ExpertRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t count() const { return end - begin; }
};
ExpertRange layer_experts(const Params& layer_problem);

// The activations' type: fp8 and 4-bit layers take bf16 logits and x and give bf16 out.
DType layer_act_dtype(const Params& layer_problem);

// Rows after dispatch in the worst case (every slot local, every local segment padded):
// intermediate buffers are sized by it because the real R is only known on the device.
std::int64_t layer_max_rows(const Params& layer_problem);

}  // namespace moe
