#pragma once
// A config table's entries while a sweep merges its own into them: read from the file in one
// pass and kept by token count. A JSON object that keeps its keys in order finds each key by a
// scan, so parsing, merging and ordering a table of 100,000 entries that way took over a
// minute, all of it holding the table's lock; here each key costs O(log n), and reading a file
// whose keys are already in order (as written) costs O(1) per key.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace moe::tuner {

class TableEntries {
 public:
  // Reads the "entries" of a table file's text. Returns "" when the text is a table, else what
  // is wrong with it, worded to follow the file's name ("is not valid JSON (...)"); then no
  // entry is kept.
  std::string read(const std::string& text);
  // Adds the entry for `tokens`, or replaces the one there.
  void put(std::int64_t tokens, nlohmann::ordered_json entry);
  std::size_t size() const { return entries_.size(); }
  // The entries as one JSON object, keys in numeric order; the entries are moved out.
  nlohmann::ordered_json take_json();
  // Token counts compared so far: the tests bound the work by this, never by a clock.
  std::uint64_t comparisons() const { return *compared_; }

 private:
  struct Less {
    std::uint64_t* compared;
    bool operator()(std::int64_t a, std::int64_t b) const {
      ++*compared;
      return a < b;
    }
  };
  void put_in_order(std::int64_t tokens, nlohmann::ordered_json entry);
  friend class EntriesReader;

  std::unique_ptr<std::uint64_t> compared_ = std::make_unique<std::uint64_t>(0);
  std::map<std::int64_t, nlohmann::ordered_json, Less> entries_{Less{compared_.get()}};
};

}  // namespace moe::tuner
