#pragma once
// Commands printed for the user to run again (the resume hint, a saved case's repro.sh): each
// argument quoted so that the shell reads it back unchanged, paths with spaces and quotes too.
#include <string>
#include <vector>

namespace moe::tuner {

// The running executable's absolute path, so a printed command runs this binary wherever the
// shell's PATH points ("moebench" when the system will not say).
std::string executable_path();
// One argument as the POSIX shell reads it back unchanged: as is when it holds no character
// the shell treats specially, else in single quotes.
std::string shell_quote(const std::string& arg);
// The arguments as one shell command line, each quoted as it needs.
std::string shell_join(const std::vector<std::string>& args);

}  // namespace moe::tuner
