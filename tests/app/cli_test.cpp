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
  // A hang (a FIFO opened for reading, say) ends as exit 124 here, not at ctest's time-out.
  const std::string cmd = "timeout -k 5 300 " + std::string(MOEBENCH_EXE) + " " + args + " 2>&1";
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
  // The engines' Triton kernel, which --backend vllm|sglang tunes for gmm and the layer only.
  EXPECT_NE(r.out.find("vllm | sglang config parameters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLOCK_SIZE_M"), std::string::npos) << r.out;
  EXPECT_EQ(sh("list router").out.find("vllm | sglang"), std::string::npos);
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

// fp8 (block-scaled W8A8): a model served in fp8 tuned in bf16 gets one note line; a --tp
// that breaks the 128 blocks is refused naming the ones that work; vLLM's spelling is taken.
TEST(Cli, Fp8NoteTpRefusalAndAlias) {
  auto note = sh("run dispatch --model qwen3-30b-a3b --tokens 2 --backend cpu");
  EXPECT_EQ(note.rc, 0) << note.out;
  EXPECT_NE(note.out.find("note: qwen3-30b-a3b is served in fp8"), std::string::npos) << note.out;
  EXPECT_NE(note.out.find("--dtype fp8"), std::string::npos) << note.out;
  auto tp = sh("run gmm --model qwen3-30b-a3b --tp 4 --dtype fp8 --tokens 1 --backend cpu");
  EXPECT_EQ(tp.rc, 2) << tp.out;
  EXPECT_NE(tp.out.find("use --tp 1 or 2, or keep each expert whole"), std::string::npos) << tp.out;
  EXPECT_NE(tp.out.find("--tp 1 --ep 4"), std::string::npos) << tp.out;
  EXPECT_EQ(lines(tp.out), 1) << tp.out;
  auto alias = sh("run dispatch --model qwen3-30b-a3b --dtype fp8_w8a8 --tokens 3 --backend cpu");
  EXPECT_EQ(alias.rc, 0) << alias.out;
  EXPECT_EQ(alias.out.find("note:"), std::string::npos) << alias.out;
}

// 4-bit weights (docs/w4.md): a model served in mxfp4 or int4 tuned in bf16 gets one note
// line; --dtype mxfp4 runs gpt-oss's own layer on the cpu backend; the emu backend runs the 4-bit decode kernel
// (gmm, its sweep, the layer) with gpt-oss's expert function, and refuses what it cannot map.
TEST(Cli, W4NoteRunAndRefusal) {
  const std::string hf = std::string(MOEBENCH_TEST_DATA) + "/hf/gpt-oss-120b.json";
  const std::string small = " --experts 8 --intermediate 64 --tokens 2 --backend cpu";
  auto note = sh("run gmm --hf-config " + hf + small);
  EXPECT_EQ(note.rc, 0) << note.out;
  EXPECT_NE(note.out.find("note: " + hf + " is served in mxfp4"), std::string::npos) << note.out;
  EXPECT_NE(note.out.find("--dtype mxfp4"), std::string::npos) << note.out;
  // gpt-oss's own expert function (clamped SwiGLU, interleaved w13, biases) on its mxfp4 weights.
  auto oai = sh("run gmm --hf-config " + hf + small + " --dtype mxfp4");
  EXPECT_EQ(oai.rc, 0) << oai.out;
  EXPECT_NE(oai.out.find("activation=swiglu_oai"), std::string::npos) << oai.out;
  EXPECT_NE(oai.out.find("bias13=1"), std::string::npos) << oai.out;
  EXPECT_NE(oai.out.find("validate PASS"), std::string::npos) << oai.out;
  auto oai_layer = sh("run moe-layer --hf-config " + hf + small + " --dtype mxfp4");
  EXPECT_EQ(oai_layer.rc, 0) << oai_layer.out;
  EXPECT_NE(oai_layer.out.find("validate PASS"), std::string::npos) << oai_layer.out;
  auto run = sh("run gmm --hf-config " + hf + small +
                " --dtype mxfp4 --activation silu --w13_layout split --bias13 0 --bias2 0");
  EXPECT_EQ(run.rc, 0) << run.out;
  EXPECT_EQ(run.out.find("note:"), std::string::npos) << run.out;
  auto kimi = sh("run moe-layer --model kimi-k2-thinking --experts 16 --hidden 256 --intermediate 64 --tokens 3 --backend cpu");
  EXPECT_EQ(kimi.rc, 0) << kimi.out;
  EXPECT_NE(kimi.out.find("served in int4 (W4A16, a bf16 scale per 32, symmetric)"), std::string::npos) << kimi.out;
  auto w4a16 = sh("run moe-layer --model kimi-k2-thinking --dtype w4a16 --experts 16 --hidden 256 --intermediate 64 --tokens 3 --backend cpu");
  EXPECT_EQ(w4a16.rc, 0) << w4a16.out;
  // The 4-bit decode kernel under the emulator: gmm, the sweep over its space, the layer.
  auto emu = sh("run gmm --dtype int4 --zero_point 1 --experts 4 --topk 2 --hidden 128 --intermediate 128 --tokens 2 --backend emu");
  EXPECT_EQ(emu.rc, 0) << emu.out;
  EXPECT_NE(emu.out.find("validate PASS"), std::string::npos) << emu.out;
  auto sweep = sh("sweep gmm --dtype mxfp4 --experts 4 --topk 2 --hidden 128 --intermediate 64 --tokens 1 --backend emu"
                  " --tables none --quiet --out " + tmpdir("w4-emu-sweep"));
  EXPECT_EQ(sweep.rc, 0) << sweep.out;
  EXPECT_EQ(sweep.out.find("FAIL"), std::string::npos) << sweep.out;
  auto layer = sh("run moe-layer --dtype int4 --group 32 --experts 8 --topk 2 --hidden 128 --intermediate 64 --tokens 2 --backend emu");
  EXPECT_EQ(layer.rc, 0) << layer.out;
  EXPECT_NE(layer.out.find("validate PASS"), std::string::npos) << layer.out;
  // gpt-oss's expert function in the 4-bit kernel's epilogue, its gmm and its layer from its config.
  auto oai_emu = sh("run gmm --hf-config " + hf + " --dtype mxfp4 --experts 4 --topk 2 --intermediate 64 --tokens 1 --backend emu");
  EXPECT_EQ(oai_emu.rc, 0) << oai_emu.out;
  EXPECT_NE(oai_emu.out.find("activation=swiglu_oai"), std::string::npos) << oai_emu.out;
  EXPECT_NE(oai_emu.out.find("validate PASS"), std::string::npos) << oai_emu.out;
  auto oai_emu_layer = sh("run moe-layer --hf-config " + hf + " --dtype mxfp4 --experts 8 --intermediate 64 --tokens 2 --backend emu");
  EXPECT_EQ(oai_emu_layer.rc, 0) << oai_emu_layer.out;
  EXPECT_NE(oai_emu_layer.out.find("validate PASS"), std::string::npos) << oai_emu_layer.out;
  // Interleaved blocks the kernel's mask cannot map are refused, saying why.
  auto odd = sh("run gmm --dtype mxfp4 --w13_layout interleaved --w13_block 3 --experts 4 --topk 2 --hidden 128 --intermediate 96 --tokens 1 --backend emu");
  EXPECT_EQ(odd.rc, 2) << odd.out;
  EXPECT_NE(odd.out.find("power of two"), std::string::npos) << odd.out;
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
  auto r = sh("run dispatch --backend cpu --tokens 4 --input ids=" + fifo);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;
  // Every other file a command reads: results, journals, model presets, HF configs.
  for (const std::string& args : {"compare " + fifo + " " + fifo, "merge " + fifo + " --out " + dir + "/merged",
                                  "run router --backend cpu --model " + fifo, "run router --backend cpu --hf-config " + fifo}) {
    r = sh(args);
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << args << "\n" << r.out;
  }
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

// CLI11's own messages (a range check printing DBL_MAX, "Run with --help") and exit codes
// (105-109) become one `moebench: error:` line and exit 2.
TEST(Cli, ParseErrorsAreOneLineAndExitTwo) {
  struct Case {
    std::string args, says;
  };
  const std::string d = tmpdir("parse");
  for (const Case& c : {Case{"sweep router --tp 0" + quick_sweep(d), "moebench: error: --tp 0: must be a positive integer"},
                        Case{"run router --backend cpu --repeat 0", "--repeat 0: must be a positive integer"},
                        Case{"run router --backend cpu --ep-rank -1", "--ep-rank -1: must be an integer >= 0"},
                        Case{"run router --backend cpu --tp abc", "--tp abc: must be a positive integer"},
                        Case{"run router --backend cpu --tp 99999999999", "--tp 99999999999: must be at most 2147483647"},
                        Case{"run router --backend cpu --bogus", "--bogus (see `moebench run --help`)"},
                        Case{"run", "family is required (see `moebench run --help`)"},
                        Case{"nosuchcommand", "(see `moebench --help`)"}}) {
    const auto r = sh(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("1797693"), std::string::npos) << r.out;
  }
  for (const char* ok : {"--help", "--version", "run --help", "sweep --help"}) EXPECT_EQ(sh(ok).rc, 0) << ok;
  std::filesystem::remove_all(d);
}

TEST(Cli, HelpDocumentsTheExitStatuses) {
  const auto r = sh("--help");
  for (const char* s : {"Exit status: 0 success; 1 ", "2 usage or input error", "3 internal error", "130 interrupted"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // Each command says its own.
  EXPECT_NE(sh("run --help").out.find("1 it did not (the validate line says which tensor)"), std::string::npos);
  EXPECT_NE(sh("sweep --help").out.find("1 some points could not run"), std::string::npos);
  EXPECT_NE(sh("sweep --help").out.find("130 interrupted"), std::string::npos);
  EXPECT_NE(sh("compare --help").out.find("1 SLOW or BROKEN records, with --fail-on slow"), std::string::npos);
  EXPECT_NE(sh("lookup --help").out.find("Exit status: 0 answered"), std::string::npos);
  EXPECT_NE(sh("merge --help").out.find("Exit status: 0 merged"), std::string::npos);
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

// A flag shared by the families says each one's default: the router's dtype is not the others'.
TEST(Cli, RunHelpShowsEachFamilysDefaults) {
  const auto r = sh("run --help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("default f32 for router; bf16 for dispatch, gmm, combine, moe-layer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32|bf16|f16 for router, combine; f32|bf16|f16|fp8 for dispatch; bf16|f16|fp8|mxfp4|int4 for gmm, moe-layer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(router, moe-layer; default 1): > 0"), std::string::npos) << r.out;  // --rsf
}

// Each flag with a bound is refused outside it, saying what is allowed, before anything runs.
TEST(Cli, FlagValuesOutOfRangeAreRefused) {
  struct Case {
    std::string args, says;
  };
  const std::string d = tmpdir("flags");
  const std::string q = quick_sweep(d);
  for (const Case& c : {Case{"sweep router --zipf-s nan --dist zipf" + q, "--zipf-s nan: must be a finite number >= 0"},
                        Case{"sweep router --zipf-s inf --dist zipf" + q, "--zipf-s inf: must be a finite number >= 0"},
                        Case{"sweep router --zipf-s -5 --dist zipf" + q, "--zipf-s -5: must be a finite number >= 0"},
                        Case{"sweep router --threads -4" + q, "--threads -4: must be an integer >= 0 (0: all cores)"},
                        Case{"sweep router --min-samples -3" + q, "--min-samples -3: must be a positive integer"},
                        Case{"sweep router --max-time 0" + q, "--max-time 0: must be a positive duration"},
                        Case{"sweep router --min-time=-1ms" + q, "--min-time '-1ms' is not a duration"},
                        Case{"sweep router --devices 5" + q, "--devices names the GPUs to sweep on, and the backend is cpu"},
                        Case{"sweep router --rsf -1" + q, "parameter 'rsf' = -1 must be greater than 0"},
                        Case{"sweep router --rsf 0" + q, "parameter 'rsf' = 0 must be greater than 0"},
                        Case{"run router --backend cpu --rsf -1", "parameter 'rsf' = -1 must be greater than 0"},
                        Case{"run router --backend cpu --set rsf=-2", "parameter 'rsf' = -2 must be greater than 0"},
                        Case{"run router --backend cpu --device -1", "--device -1: must be an integer >= 0"},
                        Case{"run router --backend cpu --device 1", "--device names the GPU to run on, and the backend is cpu"},
                        Case{"run router --backend cpu --threads -4", "--threads -4: must be an integer >= 0"},
                        Case{"run router --backend cpu --dist zipf --zipf-s -5", "--zipf-s -5: must be a finite number >= 0"},
                        Case{"lookup router --backend cpu --tokens 4 --threads -1", "--threads -1: must be an integer >= 0"},
                        Case{"lookup router --backend cpu --tokens 4 --device 0", "--device names the GPU whose tables"},
                        Case{"sweep router --seed -1" + q, "--seed -1: must be an integer from 0 to 18446744073709551615"},
                        Case{"run router --backend cpu --seed 1.5", "--seed 1.5: must be an integer from 0"}}) {
    const auto r = sh(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.args << "\n" << r.out;
  }
  // The edges that are allowed still run: zipf s = 0 is uniform.
  EXPECT_EQ(sh("run router --backend cpu --tokens 4 --dist zipf --zipf-s 0 --repeat 1").rc, 0);
  EXPECT_EQ(sh("run router --backend cpu --tokens 4 --repeat 1 --seed 18446744073709551615").rc, 0);
  std::filesystem::remove_all(d);
}

// What the user caused is exit 2 with what to do, never 3 ("internal error").
TEST(Cli, SaveIntoAFolderThatCannotBeMadeIsRefusedBeforeRunning) {
  const std::string d = tmpdir("save");
  std::ofstream(d + "/file") << "x";
  const auto r = sh("run router --backend cpu --tokens 4 --save " + d + "/file/sub");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--save " + d + "/file/sub"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("validate"), std::string::npos) << "refused before running:\n" << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  std::filesystem::remove_all(d);
}

TEST(Cli, LookupTablesThatIsAFileIsRefused) {
  const std::string d = tmpdir("lookup-tables");
  std::ofstream(d + "/file") << "x";
  const auto r = sh("lookup router --backend cpu --tokens 4 --tables " + d + "/file");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--tables " + d + "/file is not a folder"), std::string::npos) << r.out;
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

TEST(Cli, OutputThatDoesNotMatchTheReferenceExitsOne) {
  // Every weight 1 and y rows +3e38, +3e38, -3e38, -3e38, 0...: the exact sum is 0, but fp32
  // accumulation in slot order overflows to inf on the second row and stays there.
  const std::string d = tmpdir("fail");
  moe::Tensor y(moe::DType::bf16, {4 * 8, 16}), dst(moe::DType::i32, {4 * 8}), w(moe::DType::f32, {4, 8});
  for (std::int32_t f = 0; f < 32; ++f) {
    dst.data<std::int32_t>()[f] = f;
    w.data<float>()[f] = 1.0f;
    for (int c = 0; c < 16; ++c) y.set(f * 16 + c, f % 8 < 2 ? 3e38 : f % 8 < 4 ? -3e38 : 0.0);
  }
  for (auto& [name, t] : {std::pair<std::string, moe::Tensor*>{"y", &y}, {"dst", &dst}, {"w", &w}})
    moe::write_npy(d + "/" + name + ".npy", *t);
  const auto r = sh("run combine --backend cpu --tokens 4 --topk 8 --hidden 16 --repeat 1 --input y_sorted=" + d +
                    "/y.npy --input dst=" + d + "/dst.npy --input weights=" + d + "/w.npy");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("validate FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("moebench: error: combine output does not match the reference"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
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

TEST(Cli, SpaceFileWithAnUnknownKeyIsRefused) {
  const std::string d = tmpdir("space");
  struct Case {
    std::string json, says;
  };
  for (const Case& c : {Case{R"({"router": [{"rows_per_tsk": 16}]})",
                             "router's list config 0 {\"rows_per_tsk\":16} names 'rows_per_tsk', which is not a cpu config "
                             "parameter (router: rows_per_task, select"},
                        Case{R"([{"rows_per_task": 16}, {"selct": "heap"}])", "config 1 {\"selct\":\"heap\"} names 'selct'"},
                        Case{R"({"rotuer": [{"rows_per_task": 16}]})", "'rotuer' is not a kernel family"},
                        Case{R"({"router": {"rows_per_task": 16}})", "router's list is not a JSON list of configs"}}) {
    std::ofstream(d + "/space.json") << c.json;
    const auto r = sh("sweep router --space " + d + "/space.json" + quick_sweep(d + "/out"));
    EXPECT_EQ(r.rc, 2) << c.json << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.json << "\n" << r.out;
  }
  // Another family's keys in a shared file are not this sweep's business.
  std::ofstream(d + "/space.json") << R"({"router": [{"rows_per_task": 16}], "gmm": [{"block_m": 16}]})";
  EXPECT_EQ(sh("sweep router --space " + d + "/space.json" + quick_sweep(d + "/out2")).rc, 0);
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
