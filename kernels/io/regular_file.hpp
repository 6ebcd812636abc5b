#pragma once
#include <string>

namespace moe::io {

// Why `path` cannot be read as a file: "" when it is a regular file or does not exist (opening it
// then says so), else what it is ("is a directory", "is a FIFO or other special file, not a
// regular file"). Asked before opening, because opening a FIFO for reading blocks until a
// writer comes, which would hang the program.
std::string not_a_regular_file(const std::string& path);

}  // namespace moe::io
