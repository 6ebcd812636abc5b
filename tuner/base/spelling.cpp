#include "tuner/base/spelling.hpp"

#include <algorithm>
#include <cctype>

namespace moe::tuner {

namespace {

std::string folded(const std::string& s) {
  std::string r;
  for (unsigned char c : s) r += c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return r;
}

// Optimal string alignment distance: insertions, deletions, substitutions and a transposition
// of neighbours ("--modle") each cost one.
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  const std::string w = folded(word);
  if (w.empty()) return "";
  std::string best;
  std::size_t best_d = std::max<std::size_t>(1, w.size() / 3) + 1;  // farther than this is no typo
  for (const std::string& n : names) {
    const std::string f = folded(n);
    std::size_t d = distance(w, f);
    // "num-experts" for "experts", "mixtral" for "mixtral-8x7b": one name holds the other.
    if (d >= best_d && std::min(w.size(), f.size()) >= 4 && (w.find(f) != std::string::npos || f.find(w) != std::string::npos))
      d = best_d - 1;
    if (d < best_d) best_d = d, best = n;
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::string c = closest_name(word, names);
  return c.empty() ? "" : " (did you mean " + c + "?)";
}

}  // namespace moe::tuner
