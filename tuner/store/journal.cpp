#include "tuner/store/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "io/json_text.hpp"
#include "io/read_file.hpp"
#include "io/regular_file.hpp"
#include "moe/error.hpp"
#include "tuner/base/line_io.hpp"
#include "tuner/store/field_types.hpp"

namespace moe::tuner {

namespace {

// The fields the readers of a journal take by type: a line edited or written by something else
// is the user's to fix (exit 2 naming the file and line), never an internal error.
void check_line_fields(const json& v, const std::string& path, int lineno) {
  const auto bad = [&](const std::string& what) {
    return Error("journal " + path + " line " + std::to_string(lineno) + ": " + what +
                 "; it was not written by `moebench sweep`: restore it, or start a new sweep with another --out");
  };
  if (!v.is_object()) throw bad("is " + std::string(v.type_name()) + ", not a JSON object");
  if (const std::string why = field_type_fault(v, FieldSet::journal_line); !why.empty()) throw bad(why);
}

}  // namespace

JournalContents read_journal(const std::string& path) {
  if (const std::string why = io::not_a_regular_file(path); !why.empty())
    throw Error("journal " + path + " " + why + ": give a sweep directory or its journal.jsonl");
  std::string text, why;
  if (!io::read_whole_file(path, text, why))
    throw Error("cannot read journal " + path + " (" + why + "): give a sweep directory or its journal.jsonl");
  JournalContents j;
  std::size_t b = 0;
  int lineno = 0;
  bool first = true;
  while (b < text.size()) {
    std::size_t e = text.find('\n', b);
    const bool complete = e != std::string::npos;
    if (!complete) e = text.size();
    const std::string line = text.substr(b, e - b);
    b = e + 1;
    ++lineno;
    if (line.empty()) continue;
    if (complete) io::check_json_text(line, "journal " + path + " line " + std::to_string(lineno), "restore it, or start a new sweep with another --out");
    json v;
    try {
      v = json::parse(line);
    } catch (const json::exception&) {
      if (!complete || b >= text.size()) {
        j.torn_tail = true;  // killed mid-write: the record never happened
        break;
      }
      throw Error("journal " + path + " is corrupt: a line in the middle is not JSON (" + line.substr(0, 80) + ")");
    }
    if (!complete) {
      j.torn_tail = true;
      break;
    }
    check_line_fields(v, path, lineno);
    if (first) {
      if (v.value("type", "") != "header" || v.value("schema", "") != kJournalSchema)
        throw Error(path + " is not a moebench journal (its first line is not a " + kJournalSchema + " header)");
      j.header = std::move(v);
      first = false;
    } else {
      j.lines.push_back(std::move(v));
    }
  }
  if (first) throw Error("journal " + path + " is empty: delete it and start the sweep without --resume");
  return j;
}

namespace {

std::string shown(const json& v) {
  if (v.is_null()) return "(none)";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string t;
    for (auto& x : v) t += (t.empty() ? "" : ",") + shown(x);
    return t;
  }
  return v.dump();
}

// "name: journal value vs now" for every leaf of two objects that differs, nested names
// joined with '.'.
void leaf_differences(const json& was, const json& now, const std::string& name, std::vector<std::string>& out) {
  if (was.is_object() && now.is_object()) {
    std::set<std::string> keys;
    for (auto& [k, v] : was.items()) keys.insert(k);
    for (auto& [k, v] : now.items()) keys.insert(k);
    for (auto& k : keys)
      leaf_differences(was.value(k, json()), now.value(k, json()), name.empty() ? k : name + "." + k, out);
    return;
  }
  if (was != now) out.push_back(name + ": " + shown(was) + " vs " + shown(now));
}

// What sets the space apart: the families, their problems' parameters, the token counts and
// the --space. Journals written before the header carried its plan say nothing.
std::vector<std::string> plan_differences(const json& was, const json& now) {
  std::vector<std::string> out;
  // An edited header's plan may hold anything: only plans of the written shape are compared.
  const auto written_shape = [](const json& plan) {
    if (!plan.is_object() || !plan.value("units", json::array()).is_array()) return false;
    for (auto& u : plan.value("units", json::array()))
      if (!u.is_object() || (u.contains("kernel") && !u["kernel"].is_string()) ||
          (u.contains("problem") && !u["problem"].is_object()))
        return false;
    return true;
  };
  if (!written_shape(was) || !written_shape(now)) return out;
  auto kernels = [](const json& plan) {
    json k = json::array();
    for (auto& u : plan.value("units", json::array())) k.push_back(u.value("kernel", ""));
    return k;
  };
  // The axes first: when they differ, the units (one per combination) differ by the same.
  auto axes = [](const json& plan) {
    std::map<std::string, std::string> m;
    for (auto& a : plan.value("axes", json::array())) {
      std::string v;
      for (auto& x : a.value("values", json::array())) v += (v.empty() ? "" : ",") + x.get<std::string>();
      m[a.value("name", "")] = v;
    }
    return m;
  };
  const auto aw = axes(was), an = axes(now);
  std::map<std::string, int> names;
  for (auto& [n, v] : aw) names[n];
  for (auto& [n, v] : an) names[n];
  for (auto& [n, unused] : names) {
    auto w = aw.find(n), x = an.find(n);
    const std::string vw = w == aw.end() ? "(one value)" : w->second, vn = x == an.end() ? "(one value)" : x->second;
    if (vw != vn) out.push_back("axis " + n + ": " + vw + " vs " + vn);
  }
  if (out.empty() && kernels(was) != kernels(now)) {
    out.push_back("kernels: " + shown(kernels(was)) + " vs " + shown(kernels(now)));
  } else if (out.empty()) {
    const json &uw = was["units"], &un = now["units"];
    for (std::size_t i = 0; i < uw.size(); ++i) {
      std::vector<std::string> d;
      leaf_differences(uw[i].value("problem", json::object()), un[i].value("problem", json::object()), "", d);
      for (auto& line : d) {
        const std::string named = uw[i].value("kernel", "") + " " + line;
        if (std::find(out.begin(), out.end(), named) == out.end()) out.push_back(named);
      }
    }
  }
  for (const char* k : {"tokens", "space"})
    if (was.value(k, json()) != now.value(k, json())) out.push_back(std::string(k) + ": " + shown(was[k]) + " vs " + shown(now[k]));
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string t;
  for (auto& s : v) t += (t.empty() ? "" : "; ") + s;
  return t;
}

}  // namespace

void check_resumable(const json& found, const json& expected, const std::string& path) {
  auto field = [](const json& j, const char* k) { return j.contains(k) ? j[k].dump() : std::string("(none)"); };
  const std::string todo = ". Resume with the same binary, device and arguments, or start a new sweep with another --out";
  auto refuse = [&](const std::string& what, const char* k) {
    return Error("cannot resume from " + path + ": it was written " + what + " (" + field(found, k) + ", this run: " +
                 field(expected, k) + ")" + todo);
  };
  // Names what differs as "name: journal value vs now"; hashes tell a user nothing.
  auto refuse_differing = [&](const std::string& what, const std::vector<std::string>& diffs, const char* k) {
    if (diffs.empty()) return refuse(what, k);
    return Error("cannot resume from " + path + ": it was written " + what + " (journal vs now: " + joined(diffs) + ")" + todo);
  };
  if (found.value("device", "") != expected.value("device", "") || found.value("backend", "") != expected.value("backend", ""))
    throw refuse("on another device", "device");
  if (found.value("binary", "") != expected.value("binary", "")) throw refuse("by another moebench binary", "binary");
  if (found.value("fingerprint", "") != expected.value("fingerprint", "")) {
    std::vector<std::string> diffs = plan_differences(found.value("plan", json()), expected.value("plan", json()));
    if (diffs.empty() && found.contains("plan") && expected.contains("plan"))
      diffs.push_back("the configs of the space (a --space file that changed?)");
    throw refuse_differing("for another space", diffs, "fingerprint");
  }
  if (found.value("shard", json()) != expected.value("shard", json())) throw refuse("by another shard", "shard");
  if (found.value("settings", json()) != expected.value("settings", json())) {
    std::vector<std::string> diffs;
    leaf_differences(found.value("settings", json()), expected.value("settings", json()), "", diffs);
    throw refuse_differing("with other search settings", diffs, "settings");
  }
}

JournalWriter::JournalWriter(const std::string& path, const json& header, bool fresh) : path_(path) {
  if (fresh) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno == EEXIST)
      throw Error(path + " already exists: add --resume to continue that sweep, or choose another --out");
    if (fd_ < 0) throw Error("cannot create journal " + path + ": " + std::strerror(errno));
    append(header);
    return;
  }
  const JournalContents j = read_journal(path);
  if (j.torn_tail) {
    // Cut the torn line so the next record starts on a line of its own.
    std::string text, why;
    if (!io::read_whole_file(path, text, why)) throw Error("cannot read journal " + path + " to repair it: " + why);
    const auto last_nl = text.rfind('\n');
    if (::truncate(path.c_str(), last_nl == std::string::npos ? 0 : static_cast<off_t>(last_nl + 1)) != 0)
      throw Error("cannot repair the torn last line of " + path + ": " + std::strerror(errno));
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw Error("cannot open journal " + path + " for appending: " + std::strerror(errno));
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::append(const json& line) {
  const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace);
  std::lock_guard lock(mu_);
  if (!write_line(fd_, text)) throw Error("cannot write to journal " + path_ + ": " + std::strerror(errno));
  ::fdatasync(fd_);
}

}  // namespace moe::tuner
