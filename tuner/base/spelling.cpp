#include "tuner/base/spelling.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

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
  // Ranked, whatever the order of `names`: the word's plural ("--expert": "--experts", not
  // "--expert_begin") first; then the fewest edits within a typo's reach; then a name that holds
  // the word or is held in it ("num-experts" for "experts", "mixtral" for "mixtral-8x7b"), the
  // nearest in length first. Ties go to the earlier name.
  const std::size_t reach = std::max<std::size_t>(1, w.size() / 3);
  std::string best;
  std::pair<int, std::size_t> best_rank{3, 0};
  for (const std::string& n : names) {
    const std::string f = folded(n);
    std::pair<int, std::size_t> rank;
    if (f == w + "s" || f == w + "es") {
      rank = {0, 0};
    } else if (const std::size_t d = distance(w, f); d <= reach) {
      rank = {1, d};
    } else if (std::min(w.size(), f.size()) >= 4 && (w.find(f) != std::string::npos || f.find(w) != std::string::npos)) {
      rank = {2, f.size() > w.size() ? f.size() - w.size() : w.size() - f.size()};
    } else {
      continue;
    }
    if (rank < best_rank) best_rank = rank, best = n;
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::string c = closest_name(word, names);
  return c.empty() ? "" : " (did you mean " + c + "?)";
}

}  // namespace moe::tuner
