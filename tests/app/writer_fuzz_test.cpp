// The readers of moebench's own files, fuzzed from what its writers have just written: a sweep
// over a problem axis (one combination skipped), its two shards and their merge, a layer sweep,
// and the tables they wrote. Every field found in those journals, results and tables is replaced
// in turn by each hostile value of tests/support/json_fields.hpp and read back by every reader of
// its file: in-process through what the commands call (every field, with a seeded two of the
// hostile kinds each, so the default run stays near half a minute; MOEBENCH_FUZZ_ALL_KINDS=1 takes
// all seven: 4,179 files, about two minutes), and through the binary for a seeded sample. A reader may accept the file or refuse it with one `moebench:
// error:` line (exit 2); an internal error (exit 3) or a signal fails the test. A field a writer
// starts writing is fuzzed from then on, with no list here to extend.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/family.hpp"
#include "moe/moe.hpp"
#include "runtime/lookup.hpp"
#include "runtime/params_json.hpp"
#include "support/json_fields.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/run/resume.hpp"
#include "tuner/run/sweep_state.hpp"
#include "tuner/store/compare.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/layer_records.hpp"
#include "tuner/store/merge.hpp"
#include "tuner/store/report.hpp"
#include "tuner/store/results.hpp"
#include "tuner/store/tables.hpp"

namespace fs = std::filesystem;
using moe::testing::quote;
using moe::testing::slurp;
using moe::tuner::json;

namespace {

constexpr unsigned kSeed = 39;
// Hostile kinds tried per field, on average, in the default run (of kHostileKinds).
constexpr unsigned kKindsPerField = 2;
bool all_kinds() {
  const char* v = std::getenv("MOEBENCH_FUZZ_ALL_KINDS");
  return v && std::string(v) == "1";
}
constexpr int kBinaryCasesPerReader = 8;

const std::string kQuick = " --backend cpu --threads 2 --quiet --budget 1 --min-time 1ms --max-time 20ms";
const std::string kAxes = "sweep router --experts 8,12,18 --groups 4 --topk_group 2 --topk 2 --tokens 1,4" + kQuick;
const std::string kLayer = "sweep moe-layer --experts 8 --topk 2 --hidden 64 --intermediate 32 --align 4 --tokens 16" + kQuick;

moe::testing::Proc mb(const std::string& args) {
  return moe::testing::sh("timeout -k 5 120 " + std::string(MOEBENCH_EXE) + " " + args);
}

// A sweep folder the writers made; `args` resumes it (empty: a merged folder, which is not resumed).
struct Sweep {
  fs::path dir;
  std::string args;
  json header, results;
};

struct Table {
  fs::path dir, file;  // the tables folder, and this table in it
  int sweep;           // the sweep whose results wrote it
  json doc;
};

enum class FileKind { journal, results, table };

// One field of one file replaced by one hostile value.
struct Case {
  FileKind file;
  int source;  // index into sweeps (journal, results) or tables
  std::string name;
  int kind;
  std::string text;  // the file as mutated
  std::string label() const { return name + " <- " + moe::testing::hostile_name(kind); }
};

std::vector<json> journal_lines(const std::string& text) {
  std::vector<json> lines;
  for (std::size_t b = 0; b < text.size();) {
    const std::size_t e = text.find('\n', b);
    lines.push_back(json::parse(text.substr(b, e - b)));
    b = e == std::string::npos ? text.size() : e + 1;
  }
  return lines;
}

// exit status as main() would give it: 2 for what the user must fix, 3 for any other exception.
int status_of(const std::function<void()>& f, std::string& said) {
  try {
    f();
    return 0;
  } catch (const moe::Error& e) {
    said = e.what();
    return said.find('\n') == std::string::npos ? 2 : 4;  // 4: a refusal of more than one line
  } catch (const fs::filesystem_error& e) {
    said = e.what();
    return 2;
  } catch (const std::bad_alloc&) {
    said = "out of memory";
    return 2;
  } catch (const std::exception& e) {
    said = e.what();
    return 3;
  }
}

class WriterFuzz : public ::testing::Test {
 protected:
  static fs::path root;
  static std::vector<Sweep> sweeps;
  static std::vector<Table> tables;
  static std::vector<Case> cases;
  static std::string setup_error;

  static void SetUpTestSuite() {
    root = moe::testing::fresh_temp_dir("writer-fuzz");
    const auto write = [&](const std::string& args) {
      const auto r = mb(args);
      if (r.code != 0 && setup_error.empty()) setup_error = args + "\n" + r.out;
    };
    write(kAxes + " --out " + quote(root / "axes") + " --tables " + quote(root / "tables"));
    for (const char* shard : {"0", "1"})
      write(kAxes + " --shard " + shard + "/2 --tables none --out " + quote(root / (std::string("shard") + shard)));
    write("merge " + quote(root / "shard0") + " " + quote(root / "shard1") + " --out " + quote(root / "merged"));
    write(kLayer + " --out " + quote(root / "layer") + " --tables " + quote(root / "layer-tables"));
    if (!setup_error.empty()) return;
    const std::vector<std::pair<std::string, std::string>> made = {
        {"axes", kAxes}, {"shard0", kAxes + " --shard 0/2"}, {"shard1", kAxes + " --shard 1/2"}, {"merged", ""}, {"layer", kLayer}};
    for (auto& [name, args] : made) {
      Sweep s{root / name, args, {}, {}};
      s.header = journal_lines(slurp(s.dir / "journal.jsonl")).front();
      s.results = json::parse(slurp(s.dir / "results.json"));
      sweeps.push_back(std::move(s));
    }
    for (auto& [dir, sweep] : std::vector<std::pair<std::string, int>>{{"tables", 0}, {"layer-tables", 4}})
      for (auto& e : fs::recursive_directory_iterator(root / dir))
        if (e.path().extension() == ".json")
          tables.push_back({root / dir, e.path(), sweep, json::parse(slurp(e.path()))});
    make_cases();
  }

  static void TearDownTestSuite() { fs::remove_all(root); }

  // Per file kind, every field name found in any of its files, each with every hostile kind, at
  // one of the name's places chosen by the seed.
  static void make_cases() {
    using Places = std::map<std::string, std::vector<std::pair<int, std::pair<std::size_t, json::json_pointer>>>>;
    std::map<FileKind, Places> found;
    std::map<std::pair<int, FileKind>, std::vector<json>> docs;  // (source, kind) -> its documents (journal lines)
    for (int s = 0; s < static_cast<int>(sweeps.size()); ++s) {
      docs[{s, FileKind::journal}] = journal_lines(slurp(sweeps[s].dir / "journal.jsonl"));
      docs[{s, FileKind::results}] = {sweeps[s].results};
    }
    for (int t = 0; t < static_cast<int>(tables.size()); ++t) docs[{t, FileKind::table}] = {tables[t].doc};
    for (auto& [key, lines] : docs)
      for (std::size_t i = 0; i < lines.size(); ++i) {
        std::map<std::string, std::vector<json::json_pointer>> at;
        const std::string prefix = key.second == FileKind::journal ? lines[i].value("type", "?") : "";
        moe::testing::collect_fields(lines[i], json::json_pointer(), prefix, at);
        for (auto& [name, ptrs] : at)
          for (auto& p : ptrs) found[key.second][name].push_back({key.first, {i, p}});
      }
    std::mt19937 rng(kSeed);
    for (auto& [file, names] : found)
      for (auto& [name, places] : names)
        for (int kind = 0; kind < moe::testing::kHostileKinds; ++kind) {
          const auto& [source, where] = places[rng() % places.size()];
          if (!all_kinds() && rng() % moe::testing::kHostileKinds >= kKindsPerField) continue;
          std::vector<json> lines = docs[{source, file}];
          json& field = lines[where.first][where.second];
          field = moe::testing::hostile_value(field, kind);
          std::string text;
          for (auto& l : lines) text += (file == FileKind::journal ? l.dump() : l.dump(1)) + "\n";
          cases.push_back({file, source, name, kind, std::move(text)});
        }
  }

  // A fresh folder holding `c`'s file in its place, beside its sweep's other files.
  static fs::path stage(const Case& c, int n) {
    const fs::path w = root / ("case" + std::to_string(n));
    fs::remove_all(w);
    fs::create_directories(w);
    if (c.file == FileKind::table) {
      const Table& t = tables[c.source];
      fs::copy(t.dir, w / "tables", fs::copy_options::recursive);
      std::ofstream(w / "tables" / fs::relative(t.file, t.dir), std::ios::binary | std::ios::trunc) << c.text;
      return w;
    }
    const Sweep& s = sweeps[c.source];
    const std::string mutated = c.file == FileKind::journal ? "journal.jsonl" : "results.json";
    for (const std::string f : {"journal.jsonl", "results.json"})
      if (f == mutated) std::ofstream(w / f, std::ios::binary) << c.text;
      else fs::copy_file(s.dir / f, w / f);
    return w;
  }

  static std::string table_problem_flags(const Table& t) {
    std::string flags;
    for (auto& [k, v] : t.doc["problem"].items()) flags += " --" + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
    return flags;
  }
};

fs::path WriterFuzz::root;
std::vector<Sweep> WriterFuzz::sweeps;
std::vector<Table> WriterFuzz::tables;
std::vector<Case> WriterFuzz::cases;
std::string WriterFuzz::setup_error;

// The readers in-process, as the commands call them; each must accept or refuse with a moe::Error.
TEST_F(WriterFuzz, EveryFieldOfEveryWrittenFileThroughEveryReader) {
  ASSERT_TRUE(setup_error.empty()) << setup_error;
  ASSERT_GT(cases.size(), all_kinds() ? 3000u : 800u);
  std::vector<std::string> failures;
  std::set<std::string> failing;  // reader and field, once
  std::map<std::string, int> runs, refused;
  const moe::DeviceInfo cpu = moe::cpu_device_info(2);
  int n = 0;
  for (const Case& c : cases) {
    const fs::path w = stage(c, n++);
    std::vector<std::pair<std::string, std::function<void()>>> readers;
    if (c.file == FileKind::journal) {
      const std::string path = (w / "journal.jsonl").string();
      readers.push_back({"resume", [&, path, &s = sweeps[c.source]] {
                           // sweep --resume: the journal read, checked against this run's header,
                           // replayed, and rebuilt into results, summaries and tables.
                           const moe::tuner::JournalContents got = moe::tuner::read_journal(path);
                           moe::tuner::check_resumable(got.header, s.header, path);
                           const moe::tuner::SweepOptions o;
                           moe::tuner::SweepState state(o);
                           moe::tuner::load_resume_cache(state, got, true);
                           const json r = moe::tuner::build_results(got, s.results["meta"]);
                           moe::tuner::markdown_summary(r);
                           moe::tuner::printed_summary(r);
                           moe::tuner::results_csv(r);
                           moe::tuner::write_tables(r, (w / "resumed-tables").string());
                           moe::tuner::stale_layer_records(r, (w / "resumed-tables").string());
                         }});
    }
    if (c.file != FileKind::table)
      readers.push_back({"merge", [&] {
                           const auto m = moe::tuner::merge_sweeps({w.string()}, (w / "merged").string(),
                                                                   (w / "merged-tables").string(), "moebench merge");
                           moe::tuner::printed_summary(m.results);
                         }});
    if (c.file == FileKind::results)
      readers.push_back({"compare", [&] {
                           const json base = moe::tuner::read_results(sweeps[c.source].dir.string());
                           const json now = moe::tuner::read_results((w / "results.json").string());
                           moe::tuner::compare_markdown(moe::tuner::compare_results(base, now, 0.05), 0.05);
                           moe::tuner::compare_markdown(moe::tuner::compare_results(now, base, 0.05), 0.05);
                         }});
    if (c.file == FileKind::table) {
      const Table& t = tables[c.source];
      const std::string kernel = t.doc.value("kernel", "");
      const moe::Params problem = moe::runtime::params_from_json(t.doc["problem"], "problem");
      const std::string dir = (w / "tables").string();
      readers.push_back({"lookup", [&, kernel, problem, dir] {
                           for (std::int64_t tokens : {1, 4, 16, 3000}) {
                             moe::Params p = problem;
                             p.set("tokens", tokens);
                             moe::runtime::choose_config(moe::family(kernel), moe::Backend::cpu, p, cpu, {dir}, true);
                           }
                         }});
      readers.push_back({"runtime", [&, kernel, problem, dir] {
                           moe::KernelOptions o;
                           o.backend = moe::Backend::cpu;
                           o.table_dirs = {dir};
                           o.quiet = true;
                           // Runtime dispatch never refuses because of a table: it falls back.
                           try {
                             const moe::Kernel k(kernel, problem, o);
                             for (std::int64_t tokens : {1, 4, 16, 3000}) k.config(tokens);
                           } catch (const moe::Error& e) {
                             throw std::runtime_error(std::string("moe::Kernel refused: ") + e.what());
                           }
                         }});
      readers.push_back({"table writer", [&, dir, sweep = t.sweep] { moe::tuner::write_tables(sweeps[sweep].results, dir); }});
    }
    for (auto& [reader, read] : readers) {
      ::testing::internal::CaptureStderr();  // the warnings of tables set aside
      std::string said;
      const int code = status_of(read, said);
      ::testing::internal::GetCapturedStderr();
      ++runs[reader];
      refused[reader] += code == 2;
      if (code > 2) {
        failing.insert(reader + ": " + c.name);
        failures.push_back(reader + ": " + c.label() + ": " + (code == 4 ? "a refusal of several lines: " : "") +
                           said.substr(0, 300));
      }
    }
    fs::remove_all(w);
  }
  std::string listed;
  for (auto& f : failing) listed += "  " + f + "\n";
  for (std::size_t i = 0; i < failures.size() && i < 10; ++i) listed += "e.g. " + failures[i] + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << cases.size()
                                << " mutated files ended in an exception other than moe::Error (seed " << kSeed
                                << "), at these readers and fields:\n"
                                << listed;
  // Lookup, runtime dispatch and the table writer fall back (a table set aside, a default) rather
  // than refuse: for them "never an internal error" is the whole rule.
  const std::set<std::string> fall_back = {"lookup", "runtime", "table writer"};
  for (auto& [reader, k] : runs) {
    if (!fall_back.count(reader)) EXPECT_GT(refused[reader], 0) << reader << " refused none of " << k << " mutated files";
    EXPECT_LT(refused[reader], k) << reader << " refused all " << k << " mutated files";
  }
}

// A seeded sample through the binary: the exit status is 0, 1 or 2 (one error line), never 3
// or a signal.
TEST_F(WriterFuzz, SampleThroughTheBinary) {
  ASSERT_TRUE(setup_error.empty()) << setup_error;
  std::mt19937 rng(kSeed);
  struct Reader {
    std::string name;
    FileKind file;
    std::function<std::string(const Case&, const fs::path&)> args;  // "" when it does not apply
  };
  const std::vector<Reader> readers = {
      {"resume", FileKind::journal,
       [&](const Case& c, const fs::path& w) {
         const Sweep& s = sweeps[c.source];
         return s.args.empty() ? std::string() : s.args + " --tables none --resume --out " + quote(w);
       }},
      {"merge", FileKind::journal, [&](const Case&, const fs::path& w) { return "merge " + quote(w) + " --out " + quote(w / "m"); }},
      {"merge", FileKind::results, [&](const Case&, const fs::path& w) { return "merge " + quote(w) + " --out " + quote(w / "m"); }},
      {"compare", FileKind::results,
       [&](const Case& c, const fs::path& w) {
         return "compare " + quote(sweeps[c.source].dir / "results.json") + " " + quote(w / "results.json");
       }},
      {"lookup", FileKind::table,
       [&](const Case& c, const fs::path& w) {
         const Table& t = tables[c.source];
         return "lookup " + t.doc.value("kernel", "") + table_problem_flags(t) +
                " --backend cpu --threads 2 --tokens 1,4,16,3000 --json --tables " + quote(w / "tables");
       }},
  };
  int n = 0;
  for (const Reader& r : readers) {
    std::vector<const Case*> of_file;
    for (const Case& c : cases)
      if (c.file == r.file) of_file.push_back(&c);
    for (int i = 0; i < kBinaryCasesPerReader;) {
      const Case& c = *of_file[rng() % of_file.size()];
      const fs::path w = stage(c, n++);
      const std::string args = r.args(c, w);
      if (args.empty()) continue;
      ++i;
      const auto p = mb(args);
      EXPECT_TRUE(p.code == 0 || p.code == 1 || p.code == 2) << r.name << ": " << c.label() << "\n" << p.out.substr(0, 2000);
      EXPECT_EQ(p.out.find("internal error"), std::string::npos) << r.name << ": " << c.label() << "\n" << p.out.substr(0, 2000);
      if (p.code == 2) {
        int errors = 0;
        for (std::size_t at = 0; (at = p.out.find("moebench: error:", at)) != std::string::npos; ++at) ++errors;
        EXPECT_EQ(errors, 1) << r.name << ": " << c.label() << "\n" << p.out.substr(0, 2000);
      }
      fs::remove_all(w);
    }
  }
}

}  // namespace
