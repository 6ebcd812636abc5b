// io::read_whole_file: every byte of a file (embedded NULs, more than one read's buffer), and the
// system's reason, not an exception, when a path cannot be read: a directory opens but fails the
// read (EISDIR), where a stream's filebuf throws; a missing file fails the open.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/rng.hpp"
#include "io/read_file.hpp"

namespace {

namespace fs = std::filesystem;

TEST(ReadFile, ReadsEveryByteAndSaysWhyItCannot) {
  const fs::path dir = fs::temp_directory_path() / ("moebench_read_file_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string bytes(200 * 1024 + 7, '\0');
  moe::Rng rng(5);
  for (char& c : bytes) c = static_cast<char>(rng.next() & 0xff);
  bytes[10] = '\0';
  std::ofstream(dir / "f", std::ios::binary) << bytes;
  std::string text = "stale", why;
  ASSERT_TRUE(moe::io::read_whole_file((dir / "f").string(), text, why)) << why;
  EXPECT_EQ(text, bytes);
  text = "stale";
  EXPECT_FALSE(moe::io::read_whole_file(dir.string(), text, why));
  EXPECT_EQ(why, "Is a directory");
  EXPECT_EQ(text, "");
  EXPECT_FALSE(moe::io::read_whole_file((dir / "missing").string(), text, why));
  EXPECT_EQ(why, "No such file or directory");
  fs::remove_all(dir);
}

}  // namespace
