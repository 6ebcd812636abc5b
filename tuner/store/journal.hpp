#pragma once
// The sweep journal: append-only JSONL, one record per line, each written with a single
// write() and fdatasync'ed, so a kill -9 loses at most the line being written. Line 1 is a
// header naming the device, the binary and the space; `--resume` replays the rest and
// refuses a journal whose header does not match. Line types:
//   header  {schema, device, device_slug, backend, binary, fingerprint, plan, settings, shard, command, created}
//           (plan: {units: [{kernel, problem}], tokens, space}, what the fingerprint hashes, by name)
//   prep    {point, bytes, flops, prepare_s} or {point, error}
//   eval    {point, point_index, kernel, problem, tokens, cand_index, config, config_key, is_default,
//            round, status, validation?, samples_us, reason, early_stop, timer, note?, error?,
//            resolved_config?, config_source?}  (the last two: the layer's "auto" stages as run)
//   point   {point, point_index, kernel, evaluated, total, winner, runner_up, default, rounds, ...}
#include <mutex>
#include <string>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

inline constexpr const char* kJournalSchema = "moebench/journal@1";

struct JournalContents {
  json header;
  std::vector<json> lines;  // after the header
  bool torn_tail = false;   // the last line was cut off (and is ignored)
};

// Reads a journal; Error when it is missing, empty or has no valid header.
JournalContents read_journal(const std::string& path);

// Refuses, with a message saying what differs (each differing parameter or setting as
// "name: journal value vs now") and what to do, a journal written by another device, binary,
// space, settings or shard.
void check_resumable(const json& found, const json& expected, const std::string& path);

class JournalWriter {
 public:
  // fresh: creates `path` (Error if it exists) and writes `header`. Otherwise opens it for
  // appending, first cutting a torn last line.
  JournalWriter(const std::string& path, const json& header, bool fresh);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;
  void append(const json& line);  // thread-safe; durable when it returns
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::mutex mu_;
};

}  // namespace moe::tuner
