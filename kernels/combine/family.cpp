#include "combine/family.hpp"

namespace moe {
// PLACEHOLDER: replaced by the real description.
const FamilyDesc& combine_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "combine";
    return f;
  }();
  return d;
}
}  // namespace moe
