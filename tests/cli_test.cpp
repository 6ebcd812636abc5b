// The moebench binary as a user meets it: exit codes and one-line errors.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/npy.hpp"
#include "moe/cuda_device.hpp"

namespace {

struct Result {
  int rc;
  std::string out;
};

Result sh(const std::string& args) {
  const std::string cmd = std::string(MOEBENCH_EXE) + " " + args + " 2>&1";
  Result r{0, {}};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// A sweep that would finish fast if a refused flag were accepted after all.
std::string quick_sweep(const std::string& dir) { return " --backend cpu --tokens 4 --budget 1 --tables none --quiet --out " + dir; }

std::string tmpdir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("moebench-cli-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(Cli, UnknownFamilyNamesTheKnownOnes) {
  auto r = sh("run nosuchfamily");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("unknown kernel family 'nosuchfamily'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("router"), std::string::npos) << r.out;
}

TEST(Cli, ListShowsOneFamilyWhenNamed) {
  auto r = sh("list gmm");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("gmm: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel         mma"), std::string::npos) << r.out;  // the kernel choice
  EXPECT_EQ(r.out.find("\nrouter: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("model presets"), std::string::npos) << r.out;
  r = sh("list nosuchfamily");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("unknown kernel family 'nosuchfamily'"), std::string::npos) << r.out;
}

TEST(Cli, UnknownPresetIsAnErrorListingPresets) {
  auto r = sh("run router --model no-such-model --backend cpu");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("no-such-model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deepseek-v3"), std::string::npos) << r.out;
}

TEST(Cli, ParameterOfAnotherFamilyIsRejected) {
  auto r = sh("run router --hidden 4096 --backend cpu");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("has no parameter 'hidden'"), std::string::npos) << r.out;
}

TEST(Cli, BadParameterValueSaysWhatIsAllowed) {
  auto r = sh("run router --scoring tanh --backend cpu");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("softmax|sigmoid"), std::string::npos) << r.out;
}

TEST(Cli, CudaBackendWithoutDeviceSaysSo) {
  if (moe::cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  auto r = sh("run router --backend cuda");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("no usable CUDA device: " + moe::cuda_unavailable_reason()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--backend cpu"), std::string::npos) << r.out;
}

TEST(Cli, CorruptNpyInputIsOneLineAndNonZero) {
  const std::string d = tmpdir("npy");
  const std::string f = d + "/logits.npy";
  std::ofstream(f, std::ios::binary) << "\x93NUMPY\x01\x00garbage that is not a header";
  auto r = sh("run router --backend cpu --tokens 4 --input logits=" + f);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find(f), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// A FIFO would block open() forever: it is refused before it is opened (no hang, exit 2).
TEST(Cli, FifoInputIsRefusedNotWaitedOn) {
  const std::string dir = tmpdir("fifo");
  const std::string fifo = dir + "/ids.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = sh("run dispatch --backend cpu --tokens 4 --input ids=" + fifo);  // the test's timeout guards a hang
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(Cli, InputNameMustBeAFamilyInput) {
  auto r = sh("run router --backend cpu --input nosuch=/tmp/x.npy");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("has no input 'nosuch'"), std::string::npos) << r.out;
}

TEST(Cli, DevicesSaysWhichDriverThisBinaryNeeds) {
  auto r = sh("devices");
  EXPECT_EQ(r.rc, 0);
  const std::string release = moe::nvidia_driver_release();
  EXPECT_NE(r.out.find("NVIDIA driver " + (release.empty() ? std::string("not installed") : release)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("this binary needs R5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(moe::cuda_driver_needed()), std::string::npos) << r.out;
}

TEST(Cli, HelpListsEveryCommand) {
  auto r = sh("--help");
  EXPECT_EQ(r.rc, 0);
  for (const char* c : {"devices", "list", "run", "sweep", "compare", "lookup", "merge"})
    EXPECT_NE(r.out.find(c), std::string::npos) << c;
}

// A results file of the right schema with a record of the wrong shape is the user's to fix.
TEST(Cli, CompareRefusesARecordOfTheWrongShape) {
  const std::string d = tmpdir("results");
  std::ofstream(d + "/r.json") << R"({"schema": "moebench/results@1", "records": [{"kernel": 5}]})";
  const auto r = sh("compare " + d + "/r.json " + d + "/r.json");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("record 0: kernel is 5, not a string"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
}

// The footprint check is told there is plenty (MOEBENCH_HOST_MEM_BYTES), the address space is
// not: the allocation itself fails, and says how big it was.
TEST(Cli, OutOfMemoryIsAnInputErrorWithTheSize) {
  const std::string cmd = "(ulimit -v 3000000; MOEBENCH_HOST_MEM_BYTES=1e15 " + std::string(MOEBENCH_EXE) +
                          " run combine --backend cpu --tokens 65536 --hidden 8192 --repeat 1) 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int st = pclose(p);
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 2) << out;
  EXPECT_NE(out.find("moebench: error: cannot allocate "), std::string::npos) << out;
  EXPECT_NE(out.find(" GB for a bf16 ["), std::string::npos) << out;
  EXPECT_NE(out.find("does not fit in this machine's memory"), std::string::npos) << out;
  EXPECT_EQ(out.find("internal error"), std::string::npos) << out;
}

// A stray huge dst value must not size y_sorted: dispatch never makes more rows than this.
TEST(Cli, CombineRefusesDstBeyondTheRowsDispatchMakes) {
  const std::string d = tmpdir("dst");
  moe::Tensor dst(moe::DType::i32, {4 * 8});
  for (std::int32_t i = 0; i < 32; ++i) dst.data<std::int32_t>()[i] = i;
  dst.data<std::int32_t>()[3] = 1000000;
  moe::write_npy(d + "/dst.npy", dst);
  const auto r = sh("run combine --backend cpu --tokens 4 --topk 8 --experts 64 --align 16 --hidden 64 --input dst=" + d + "/dst.npy");
  EXPECT_EQ(r.rc, 2) << r.out;
  // 4*8 slots + 64 experts * 15 padding rows
  EXPECT_NE(r.out.find("dst[3] = 1000000 is not a row of this problem: dispatch makes at most 992 rows"), std::string::npos)
      << r.out;
  // The largest row that can exist is accepted.
  dst.data<std::int32_t>()[3] = 991;
  moe::write_npy(d + "/dst.npy", dst);
  const auto ok = sh("run combine --backend cpu --tokens 4 --topk 8 --experts 64 --align 16 --hidden 64 --repeat 1 --input dst=" +
                     d + "/dst.npy");
  EXPECT_EQ(ok.rc, 0) << ok.out;
  std::filesystem::remove_all(d);
}

// An input file of a dtype the family has no --dtype for is told the dtypes that exist.
TEST(Cli, WrongDtypeInputNamesTheDtypesThatExist) {
  const std::string d = tmpdir("dtype");
  moe::write_npy(d + "/l64.npy", moe::Tensor(moe::DType::f64, {4, 64}));
  moe::write_npy(d + "/l16.npy", moe::Tensor(moe::DType::f16, {4, 64}));
  moe::write_npy(d + "/ids.npy", moe::Tensor(moe::DType::i64, {4, 8}));
  auto r = sh("run router --backend cpu --tokens 4 --input logits=" + d + "/l64.npy");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("has dtype f64, expected f32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(f32|bf16|f16); f64 is not one"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--dtype f64"), std::string::npos) << r.out;
  r = sh("run router --backend cpu --tokens 4 --input logits=" + d + "/l16.npy");
  EXPECT_NE(r.out.find("set the problem's dtype to match: --dtype f16"), std::string::npos) << r.out;
  r = sh("run dispatch --backend cpu --tokens 4 --input ids=" + d + "/ids.npy");
  EXPECT_NE(r.out.find("has dtype i64, expected i32: convert the file to i32 (ids is always i32)"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
}

}  // namespace
