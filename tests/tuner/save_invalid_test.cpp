// --save-invalid: a candidate the gate finds wrong leaves its tensors and the command that
// runs it again; the saved inputs reproduce the failure (and a correct config passes on them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "io/npy.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/worker.hpp"
#include "tuner_scale_family.hpp"

using namespace moe;
using namespace moe::tuner;
namespace fs = std::filesystem;

TEST(SaveInvalid, WritesTheCaseAndTheCommandThatReproducesIt) {
  const fs::path d = moe::testing::fresh_temp_dir("save-invalid");
  SweepOptions o;
  const FamilyDesc& f = moe::testing::scale_family();
  const Params problem = complete(f.problem_params, Params{{"width", std::int64_t{512}}, {"faults", std::int64_t{1}}}, "scale");
  o.units = {{&f, problem}};
  o.tokens = {8};
  o.backend = Backend::cpu;
  o.threads = 1;
  o.out_dir = d.string();
  o.rule.min_samples = 3;
  o.rule.min_time_s = 1e-4;
  o.rule.max_time_s = 0.02;
  o.watchdog_s = 2;
  o.space = "default";
  o.launch.in_process = [](int in, int out) { return worker_main(in, out, moe::testing::test_families()); };
  o.progress = ProgressMode::quiet;
  o.handle_signals = false;
  // A folder the shell would split or expand unquoted: repro.sh must quote it.
  o.save_invalid = (d / "it's invalid $(x)").string();
  const SweepOutcome out = run_sweep(o);

  const nlohmann::json* wrong = nullptr;
  for (auto& r : out.results["records"]) {
    if (r["config_key"] == "behave=wrong,tile=16") wrong = &r;
    if (r["status"] == "ok") EXPECT_FALSE(r.contains("saved")) << r["config_key"];  // only invalid ones
  }
  ASSERT_NE(wrong, nullptr);
  ASSERT_EQ((*wrong)["status"], "invalid");
  ASSERT_TRUE(wrong->contains("saved")) << wrong->dump();
  const fs::path dir = (*wrong)["saved"].get<std::string>();
  EXPECT_EQ(dir.string().rfind(o.save_invalid, 0), 0u) << dir;
  for (const char* file : {"x.npy", "out.npy", "out.ref.npy", "repro.sh"}) EXPECT_TRUE(fs::exists(dir / file)) << file;

  std::ifstream sh(dir / "repro.sh");
  std::stringstream ss;
  ss << sh.rdbuf();
  const std::string cmd = ss.str();
  EXPECT_NE(cmd.find(" run scale"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--config behave=wrong,tile=16"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--backend cpu"), std::string::npos) << cmd;
  // The shell reads the command back as the arguments it was made of: the program (this
  // binary), then --input x=<the saved file>, whatever the folder's name holds.
  const std::string line = cmd.substr(cmd.rfind('\n', cmd.size() - 2) + 1);
  const fs::path args_sh = d / "args.sh", args_out = d / "args.txt";
  std::ofstream(args_sh) << "set -- " << line << "printf '%s\\n' \"$@\"\n";
  ASSERT_EQ(std::system(("sh " + args_sh.string() + " > " + args_out.string()).c_str()), 0) << line;
  std::ifstream back(args_out);
  std::vector<std::string> argv;
  for (std::string a; std::getline(back, a);) argv.push_back(a);
  ASSERT_GE(argv.size(), 3u) << line;
  EXPECT_EQ(argv[1], "run");
  EXPECT_EQ(argv[2], "scale");
  const auto input = std::find(argv.begin(), argv.end(), "--input");
  ASSERT_NE(input, argv.end()) << line;
  ASSERT_NE(input + 1, argv.end());
  EXPECT_EQ(input[1], "x=" + fs::absolute(dir / "x.npy").string()) << line;

  // What the command does: the saved inputs, the saved config: invalid again; a correct config passes.
  TensorMap given;
  given["x"] = read_npy((dir / "x.npy").string());
  const Prepared p = prepare(f, Params{{"width", std::int64_t{512}}, {"faults", std::int64_t{1}}, {"tokens", std::int64_t{8}}},
                             InputOptions{}, std::move(given));
  const Tensor saved_ref = read_npy((dir / "out.ref.npy").string());
  ASSERT_EQ(saved_ref.numel(), p.reference.at("out").numel());
  for (std::int64_t i = 0; i < saved_ref.numel(); ++i) ASSERT_EQ(saved_ref.get(i), p.reference.at("out").get(i)) << i;
  EXPECT_FALSE(run_cpu(p, Params{{"tile", std::int64_t{16}}, {"behave", std::string("wrong")}}, 1).validation.ok);
  EXPECT_TRUE(run_cpu(p, Params{{"tile", std::int64_t{16}}, {"behave", std::string("normal")}}, 1).validation.ok);
  fs::remove_all(d);
}
