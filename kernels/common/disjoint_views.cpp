#include "common/disjoint_views.hpp"

#include <cstdint>
#include <vector>

#include "moe/error.hpp"

namespace moe {

namespace {

struct Span {
  std::string what;  // "input 'x'", "output 'out'", "the workspace"
  std::uintptr_t begin = 0, end = 0;
  bool written = false;
};

}  // namespace

void check_disjoint_views(const std::string& family, const RefMap& in, const RefMap& out, const void* workspace,
                          std::size_t workspace_bytes) {
  std::vector<Span> spans;
  const auto add = [&](std::string what, const void* data, std::size_t bytes, bool written) {
    if (!data || bytes == 0) return;
    const auto b = reinterpret_cast<std::uintptr_t>(data);
    spans.push_back({std::move(what), b, b + bytes, written});
  };
  for (auto& [name, t] : out) add("output '" + name + "'", t.data, t.nbytes(), true);
  add("the workspace", workspace, workspace_bytes, true);
  for (auto& [name, t] : in) add("input '" + name + "'", t.data, t.nbytes(), false);
  // A handful of tensors: every written one against every other.
  for (std::size_t i = 0; i < spans.size() && spans[i].written; ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j)
      if (spans[i].begin < spans[j].end && spans[j].begin < spans[i].end)
        throw Error(family + ": " + spans[i].what + " shares memory with " + spans[j].what +
                    ": outputs are written while the inputs are read, so each output needs a buffer of its own");
}

}  // namespace moe
