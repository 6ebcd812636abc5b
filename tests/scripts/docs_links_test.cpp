// The README and docs/ are read on a clone or in a release archive: every relative link must
// name a file or folder inside the repository, never one beside it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> documentation_pages() {
  const fs::path root = MOEBENCH_SOURCE_DIR;
  std::vector<fs::path> pages{root / "README.md"};
  for (auto& e : fs::recursive_directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") pages.push_back(e.path());
  return pages;
}

// Links of the form [text](target), outside code spans and blocks.
std::vector<std::string> relative_links(const std::string& markdown) {
  std::vector<std::string> links;
  std::istringstream in(markdown);
  std::string line;
  bool fenced = false;
  const std::regex link(R"(\]\(([^)\s]+)\))");
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.rfind("    ", 0) == 0) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), link), end; it != end; ++it) {
      const std::string target = (*it)[1];
      if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0 ||
          target[0] == '#')
        continue;
      links.push_back(target);
    }
  }
  return links;
}

bool inside(const fs::path& p, const fs::path& root) {
  const std::string a = fs::weakly_canonical(p).string(), r = fs::weakly_canonical(root).string();
  return a == r || a.rfind(r + "/", 0) == 0;
}

TEST(DocsLinks, EveryRelativeLinkResolvesInsideTheRepository) {
  const fs::path root = MOEBENCH_SOURCE_DIR;
  int checked = 0;
  for (const fs::path& page : documentation_pages()) {
    std::ifstream in(page);
    std::stringstream text;
    text << in.rdbuf();
    for (const std::string& link : relative_links(text.str())) {
      const fs::path target = page.parent_path() / link.substr(0, link.find('#'));
      EXPECT_TRUE(inside(target, root)) << page << " links outside the repository: " << link;
      EXPECT_TRUE(fs::exists(target)) << page << " links to a missing file: " << link;
      ++checked;
    }
  }
  EXPECT_GT(checked, 20) << "the link pattern found too few links to mean anything";
}

TEST(DocsLinks, TheCheckSeesLinksOutsideCodeOnly) {
  const auto links = relative_links("see [a](docs/a.md) and [b](https://x.org/b)\n    [c](in/code.md)\n[d](#anchor)\n");
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0], "docs/a.md");
}

}  // namespace
