#include "gmm/family.hpp"

namespace moe {
// PLACEHOLDER: replaced by the real description.
const FamilyDesc& gmm_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "gmm";
    return f;
  }();
  return d;
}
}  // namespace moe
