#pragma once
// The router problem as typed values, parsed once from Params with every check that the
// reference, the cpu backend and the cuda backend rely on.
#include <cstdint>
#include <string>

#include "moe/dtype.hpp"
#include "moe/params.hpp"

namespace moe {

enum class RouterScoring { softmax, sigmoid };
enum class GroupScore { top2_sum, max };

struct RouterSpec {
  std::int64_t tokens = 1;   // T
  std::int64_t experts = 1;  // E
  std::int64_t topk = 1;     // k
  std::int64_t shared = 0;   // S
  std::int64_t groups = 1;   // G
  std::int64_t topk_group = 1;  // TG
  DType dtype = DType::f32;     // of the logits
  RouterScoring scoring = RouterScoring::softmax;
  GroupScore group_score = GroupScore::top2_sum;
  bool renormalize = true;
  bool bias = false;
  double rsf = 1.0;

  std::int64_t slots() const { return topk + shared; }  // K
  std::int64_t group_size() const { return experts / groups; }
  // Group selection changes the result only when some group can be dropped.
  bool grouped() const { return groups > 1 && topk_group < groups; }
  std::string str() const;  // "T=.. E=.. k=.." for messages

  // Throws an Error naming the inconsistent parameters and what would fix them.
  static RouterSpec from(const Params& problem);
};

}  // namespace moe
