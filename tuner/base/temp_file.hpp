#pragma once
// A temporary file beside the file it will replace (renamed over it once complete), made so
// that nobody else can choose what it is: an unguessable name, and O_CREAT|O_EXCL|O_NOFOLLOW,
// so a symlink (or anything) planted under a name we might use is never opened, let alone
// written through. The folder is the target's, so the rename stays on one filesystem.
#include <string>

namespace moe::tuner {

struct TempFile {
  int fd = -1;
  std::string path;  // TARGET.tmp.XXXXXXXXXXXX, twelve random letters and digits
};

// Creates the temporary for `target` (mode 0644, write-only, close-on-exec); throws moe::Error
// naming `target` when it cannot.
TempFile create_temp_beside(const std::string& target);

// Whether `name` (a file name, no folder) is a temporary that create_temp_beside made for a
// file named `base`.
bool is_temp_name_of(const std::string& name, const std::string& base);

}  // namespace moe::tuner
