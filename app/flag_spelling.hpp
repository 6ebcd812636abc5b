#pragma once
// Forgiving flag spellings, applied to the command line before CLI11 sees it: problem
// parameters are snake_case (--routed_weight) and options use dashes (--ep-rank), so either
// spelling of every flag is accepted; an unknown flag is one error line with the nearest flag
// ("did you mean --model?"); and a list typed the vLLM way (--tokens 1 16 256) is told that
// lists are comma-separated.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace moe::app {

// argv[1..] with every flag of the chosen command spelled as that command declares it; throws
// moe::Error for an unknown flag or a space-separated list.
std::vector<std::string> respelled_args(const CLI::App& root, int argc, const char* const* argv);

}  // namespace moe::app
