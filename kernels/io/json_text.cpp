#include "io/json_text.hpp"

#include "moe/error.hpp"

namespace moe::io {

std::string json_text_problem(const std::string& text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0') return "holds a NUL byte at offset " + std::to_string(i) + " (JSON text never does)";
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return "nests arrays or objects deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return "";
}

void check_json_text(const std::string& text, const std::string& what, const std::string& advice) {
  if (const std::string why = json_text_problem(text); !why.empty())
    throw Error(what + " " + why + (advice.empty() ? "" : "; " + advice));
}

}  // namespace moe::io
