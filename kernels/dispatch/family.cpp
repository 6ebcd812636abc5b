#include "dispatch/family.hpp"

namespace moe {
// PLACEHOLDER: replaced by the real description.
const FamilyDesc& dispatch_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "dispatch";
    return f;
  }();
  return d;
}
}  // namespace moe
