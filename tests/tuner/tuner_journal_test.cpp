#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/error_text.hpp"
#include "support/temp_dirs.hpp"
#include "moe/error.hpp"
#include "tuner/store/journal.hpp"

using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir(name); }

json header() {
  return {{"type", "header"}, {"schema", kJournalSchema}, {"device", "cpu: test"}, {"backend", "cpu"},
          {"binary", "0.1.0+abc"}, {"fingerprint", "00ff"}, {"settings", {{"strategy", "halving"}}},
          {"shard", {{"index", 0}, {"count", 1}}}};
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using moe::testing::error_of;

}  // namespace

TEST(TunerJournal, RoundTripAndFlushedPerRecord) {
  const fs::path d = temp_dir("journal-rt");
  const std::string p = (d / "journal.jsonl").string();
  {
    JournalWriter w(p, header(), true);
    w.append({{"type", "eval"}, {"point", "a"}, {"config_key", "t=1"}, {"round", 0}, {"samples_us", {1.5, 2.5}}});
    // Durable immediately: a reader sees it before the writer closes.
    EXPECT_EQ(read_journal(p).lines.size(), 1u);
    w.append({{"type", "point"}, {"point", "a"}});
  }
  const JournalContents j = read_journal(p);
  EXPECT_EQ(j.header["device"], "cpu: test");
  ASSERT_EQ(j.lines.size(), 2u);
  EXPECT_EQ(j.lines[0]["samples_us"][1], 2.5);
  EXPECT_FALSE(j.torn_tail);
  fs::remove_all(d);
}

TEST(TunerJournal, FreshRefusesAnExistingJournal) {
  const fs::path d = temp_dir("journal-fresh");
  const std::string p = (d / "journal.jsonl").string();
  { JournalWriter w(p, header(), true); }
  const std::string msg = error_of([&] { JournalWriter w(p, header(), true); });
  EXPECT_NE(msg.find("--resume"), std::string::npos) << msg;
  fs::remove_all(d);
}

TEST(TunerJournal, TornLastLineIsIgnoredAndRepaired) {
  const fs::path d = temp_dir("journal-torn");
  const std::string p = (d / "journal.jsonl").string();
  {
    JournalWriter w(p, header(), true);
    w.append({{"type", "eval"}, {"point", "a"}, {"round", 0}});
  }
  {
    std::ofstream out(p, std::ios::app);
    out << R"({"type":"eval","point":"b","rou)";  // killed mid-write
  }
  JournalContents j = read_journal(p);
  EXPECT_TRUE(j.torn_tail);
  EXPECT_EQ(j.lines.size(), 1u);
  {
    JournalWriter w(p, header(), false);
    w.append({{"type", "eval"}, {"point", "c"}, {"round", 0}});
  }
  j = read_journal(p);
  EXPECT_FALSE(j.torn_tail);
  ASSERT_EQ(j.lines.size(), 2u);
  EXPECT_EQ(j.lines[1]["point"], "c");
  EXPECT_EQ(read_all(p).find("rou)"), std::string::npos);
  fs::remove_all(d);
}

TEST(TunerJournal, CorruptMiddleLineIsAnError) {
  const fs::path d = temp_dir("journal-corrupt");
  const std::string p = (d / "journal.jsonl").string();
  std::ofstream(p) << header().dump() << "\nnot json\n" << R"({"type":"eval"})" << "\n";
  EXPECT_NE(error_of([&] { read_journal(p); }).find("corrupt"), std::string::npos);
  std::ofstream(p) << R"({"type":"eval"})" << "\n";
  EXPECT_NE(error_of([&] { read_journal(p); }).find("not a moebench journal"), std::string::npos);
  std::ofstream(p) << "";
  EXPECT_NE(error_of([&] { read_journal(p); }).find("empty"), std::string::npos);
  fs::remove_all(d);
}

TEST(TunerJournal, ResumeRefusesForeignJournals) {
  const json h = header();
  EXPECT_NO_THROW(check_resumable(h, h, "j"));
  struct Case {
    const char* field;
    json value;
    const char* says;
  };
  const Case cases[] = {{"device", "NVIDIA H200", "another device"},
                        {"binary", "0.1.0+def", "another moebench binary"},
                        {"fingerprint", "1234", "another space"},
                        {"shard", {{"index", 1}, {"count", 2}}, "another shard"},
                        {"settings", {{"strategy", "random"}}, "other search settings"}};
  for (const Case& c : cases) {
    json other = h;
    other[c.field] = c.value;
    const std::string msg = error_of([&] { check_resumable(h, other, "out/journal.jsonl"); });
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
    EXPECT_NE(msg.find("out/journal.jsonl"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--out"), std::string::npos) << msg;  // says what to do
  }
}

// A resume of another problem or other settings says which parameters differ, by name, with
// the journal's value and this run's, not two hashes.
TEST(TunerJournal, ResumeRefusalNamesWhatDiffers) {
  json h = header();
  h["plan"] = {{"units", {{{"kernel", "router"}, {"problem", {{"experts", 128}, {"topk", 8}}}},
                          {{"kernel", "gmm"}, {"problem", {{"hidden", 7168}, {"stage", "up"}}}},
                          {{"kernel", "gmm"}, {"problem", {{"hidden", 7168}, {"stage", "down"}}}}}},
               {"tokens", {1, 2, 4}},
               {"space", "default"}};
  h["settings"] = {{"strategy", "halving"}, {"seed", 0}, {"rule", {{"max_noise", 0.01}}}};
  json now = h;
  now["fingerprint"] = "11ee";
  now["plan"]["units"][0]["problem"]["experts"] = 64;
  now["plan"]["units"][1]["problem"]["hidden"] = 4096;
  now["plan"]["units"][2]["problem"]["hidden"] = 4096;
  now["plan"]["tokens"] = {1, 2};
  std::string msg = error_of([&] { check_resumable(h, now, "out/journal.jsonl"); });
  EXPECT_NE(msg.find("router experts: 128 vs 64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gmm hidden: 7168 vs 4096"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("gmm hidden", msg.find("gmm hidden") + 1), std::string::npos) << "said once: " << msg;
  EXPECT_NE(msg.find("tokens: 1,2,4 vs 1,2"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("00ff"), std::string::npos) << "no hashes: " << msg;
  EXPECT_NE(msg.find("--out"), std::string::npos) << msg;

  now = h;
  now["fingerprint"] = "11ee";
  now["plan"]["units"].erase(2);
  msg = error_of([&] { check_resumable(h, now, "j"); });
  EXPECT_NE(msg.find("kernels: router,gmm,gmm vs router,gmm"), std::string::npos) << msg;

  now = h;
  now["settings"]["seed"] = 7;
  now["settings"]["rule"]["max_noise"] = 0.05;
  msg = error_of([&] { check_resumable(h, now, "j"); });
  EXPECT_NE(msg.find("seed: 0 vs 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rule.max_noise: 0.01 vs 0.05"), std::string::npos) << msg;

  // A journal from before headers carried their plan: still refused, with the fingerprints.
  json old = h;
  old.erase("plan");
  now = h;
  now["fingerprint"] = "11ee";
  msg = error_of([&] { check_resumable(old, now, "j"); });
  EXPECT_NE(msg.find("another space"), std::string::npos) << msg;
}
