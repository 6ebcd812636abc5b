#pragma once
#include <string>

namespace moe::io {

// The whole file at `path` into `text`, with open/read rather than a stream: libstdc++'s filebuf
// turns a failed read (EIO, EISDIR for a directory put in a file's place after a check) into an
// exception of its own, which would reach the user as an internal error. False with `error` set
// to the system's reason (strerror) when it cannot be opened or read; `text` is then empty.
bool read_whole_file(const std::string& path, std::string& text, std::string& error);

}  // namespace moe::io
