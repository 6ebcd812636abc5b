#include "app/flag_checks.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "moe/error.hpp"

namespace moe::app {

namespace {

const char* requirement(Allowed a) {
  switch (a) {
    case Allowed::positive_int: return "a positive integer";
    case Allowed::non_negative_int: return "an integer >= 0";
    case Allowed::positive_number: return "a finite number > 0";
    case Allowed::non_negative_number: return "a finite number >= 0";
    case Allowed::seed: return "an integer from 0 to 18446744073709551615";
    case Allowed::thread_count: return "an integer >= 0";
  }
  return "";
}

int max_threads() { return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Empty when `text` is allowed, else what is wrong with it.
std::string fault(Allowed a, const std::string& text) {
  if (a == Allowed::seed) {
    unsigned long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    const bool ok = !text.empty() && ec == std::errc() && end == text.data() + text.size();
    return ok ? "" : std::string("must be ") + requirement(a);
  }
  const bool integral = a == Allowed::positive_int || a == Allowed::non_negative_int || a == Allowed::thread_count;
  const double lowest = a == Allowed::positive_int ? 1 : 0;
  if (integral) {
    long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lowest)
      return std::string("must be ") + requirement(a);
    if (v > INT_MAX) return "must be at most " + std::to_string(INT_MAX);
    if (a == Allowed::thread_count && v > max_threads())
      return "must be at most " + std::to_string(max_threads()) + ", 4x the " +
             std::to_string(max_threads() / 4) + " hardware threads here (more threads only add scheduling to the timings)";
    return "";
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(v);
  if (!number || v < lowest || (a == Allowed::positive_number && v == 0)) return std::string("must be ") + requirement(a);
  return "";
}

}  // namespace

CLI::Option* allow_only(CLI::Option* opt, Allowed allowed, const std::string& note) {
  const std::string name = opt->get_name();
  // Thrown rather than returned: CLI11 would prefix its own "NAME: " and lose the value.
  opt->check(CLI::Validator(
      [name, allowed, note](std::string& text) -> std::string {
        const std::string why = fault(allowed, text);
        if (!why.empty())
          throw Error(name + " " + (text.empty() ? "''" : text) + ": " + why + (note.empty() ? "" : " (" + note + ")"));
        return "";
      },
      allowed == Allowed::positive_int || allowed == Allowed::positive_number ? "POSITIVE" : "NON-NEGATIVE"));
  return opt;
}

void refuse_for_cpu(const CLI::App& cmd, const std::string& flag, const std::string& meaning, Backend b) {
  if (cmd.count(flag) == 0) return;
  const std::string which = b == Backend::emu ? "emu (kernels emulated on the cpu, no GPU used)"
                                              : "cpu (--backend cpu, or no GPU is visible)";
  throw Error(flag + " " + meaning + ", and the backend is " + which + ": leave " + flag +
              " out, or use --backend cuda on a machine with a GPU");
}

}  // namespace moe::app
