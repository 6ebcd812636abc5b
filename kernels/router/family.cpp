#include "router/family.hpp"

namespace moe {
// PLACEHOLDER: replaced by the real description.
const FamilyDesc& router_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "router";
    return f;
  }();
  return d;
}
}  // namespace moe
