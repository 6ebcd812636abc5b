#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/rng.hpp"
#include "io/npy.hpp"
#include "moe/error.hpp"

namespace fs = std::filesystem;
using moe::DType;
using moe::Shape;
using moe::Tensor;

namespace {

const std::string kData = std::string(MOEBENCH_TEST_DATA) + "/npy/";

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = fs::temp_directory_path() / ("moebench_npy_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A .npy file made by hand: preamble for `version` + header text exactly as given + data.
std::string npy_bytes(const std::string& header, const std::string& data = "", int major = 1, int minor = 0) {
  std::string s("\x93NUMPY", 6);
  s += static_cast<char>(major);
  s += static_cast<char>(minor);
  const int n = major == 1 ? 2 : 4;
  for (int i = 0; i < n; ++i) s += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return s + header + data;
}

std::string f32_bytes(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// Reads `path`, expecting an Error whose message names the file and contains every fragment.
void expect_error(const std::string& path, const std::vector<std::string>& fragments) {
  try {
    (void)moe::read_npy(path);
    ADD_FAILURE() << "read_npy(" << path << ") did not throw";
  } catch (const moe::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
    for (auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' missing in: " << msg;
  }
}

Tensor random_tensor(DType t, const Shape& shape, std::uint64_t seed) {
  Tensor x(t, shape);
  moe::Rng rng(seed);
  // Raw random bits: every pattern (NaN payloads, subnormals) must survive the round trip.
  auto* b = static_cast<unsigned char*>(x.raw());
  for (std::size_t i = 0; i < x.nbytes(); ++i) b[i] = static_cast<unsigned char>(rng.next() >> 56);
  return x;
}

}  // namespace

// ---------------------------------------------------------------- fixtures written by numpy

TEST(NpyFixtures, EveryDtypeExactValues) {
  const Shape s23{2, 3};
  {
    Tensor t = moe::read_npy(kData + "f32_2x3.npy");
    ASSERT_EQ(t.dtype(), DType::f32);
    ASSERT_EQ(t.shape(), s23);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], i * 0.5f - 1.25f) << i;
  }
  {
    Tensor t = moe::read_npy(kData + "f16_2x3.npy");
    ASSERT_EQ(t.dtype(), DType::f16);
    ASSERT_EQ(t.shape(), s23);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.get(i), (i - 2) * 0.25) << i;
  }
  {
    Tensor t = moe::read_npy(kData + "f64_2x3.npy");
    ASSERT_EQ(t.dtype(), DType::f64);
    ASSERT_EQ(t.shape(), s23);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<double>()[i], i / 3.0) << i;
  }
  {
    Tensor t = moe::read_npy(kData + "i32_2x3.npy");
    ASSERT_EQ(t.dtype(), DType::i32);
    ASSERT_EQ(t.shape(), s23);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<std::int32_t>()[i], (i - 3) * 1000003) << i;
  }
  {
    Tensor t = moe::read_npy(kData + "i64_2x3.npy");
    ASSERT_EQ(t.dtype(), DType::i64);
    ASSERT_EQ(t.shape(), s23);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<std::int64_t>()[i], (i - 3) * 1000000000000LL) << i;
  }
  for (const char* name : {"bf16_2x3.npy", "bf16_void_2x3.npy"}) {
    Tensor t = moe::read_npy(kData + name);
    ASSERT_EQ(t.dtype(), DType::bf16) << name;
    ASSERT_EQ(t.shape(), s23) << name;
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.get(i), (i - 2) * 0.75) << name << " " << i;
  }
}

TEST(NpyFixtures, ShapesScalarEmptyAndManyDims) {
  Tensor s = moe::read_npy(kData + "f32_scalar.npy");
  EXPECT_EQ(s.shape(), Shape{});
  ASSERT_EQ(s.numel(), 1);
  EXPECT_EQ(s.data<float>()[0], 3.5f);

  Tensor v = moe::read_npy(kData + "i64_1d.npy");
  ASSERT_EQ(v.shape(), Shape{7});
  for (int i = 0; i < 7; ++i) EXPECT_EQ(v.data<std::int64_t>()[i], i - 3);

  Tensor e = moe::read_npy(kData + "f32_empty_0x3.npy");
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.nbytes(), 0u);

  Tensor d = moe::read_npy(kData + "i32_4d.npy");
  ASSERT_EQ(d.shape(), (Shape{2, 1, 3, 2}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(d.data<std::int32_t>()[i], i);
}

TEST(NpyFixtures, FormatVersionsAndHeaderSpellings) {
  for (const char* name : {"f32_v2.npy", "f32_v3.npy", "hdr_no_trailing_comma.npy", "hdr_reordered.npy",
                           "hdr_double_quotes.npy", "hdr_whitespace.npy", "hdr_py2_long.npy"}) {
    Tensor t = moe::read_npy(kData + name);
    ASSERT_EQ(t.dtype(), DType::f32) << name;
    ASSERT_EQ(t.shape(), (Shape{2, 3})) << name;
    for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], i * 0.5f - 1.25f) << name << " " << i;
  }
}

TEST(NpyFixtures, FortranOrderOnlyWhereTheLayoutIsTheSame) {
  Tensor t = moe::read_npy(kData + "f32_fortran_3x1.npy");
  ASSERT_EQ(t.shape(), (Shape{3, 1}));
  EXPECT_EQ(t.data<float>()[2], 3.0f);
  expect_error(kData + "f32_fortran_2x3.npy", {"Fortran order", "np.ascontiguousarray"});
}

TEST(NpyFixtures, UnsupportedDtypesSayWhatIsSupported) {
  expect_error(kData + "f32_bigendian.npy", {"big-endian", "'>f4'", "newbyteorder"});
  expect_error(kData + "u32.npy", {"'<u4'", "does not read", "'<f4' (f32)", "'<u2'", "astype"});
  expect_error(kData + "bool.npy", {"'|b1'", "supported are"});
  expect_error(kData + "structured.npy", {"structured dtype", "supported are"});
}

// e4m3 codes come as numpy's uint8 ('|u1', what moebench writes) or as ml_dtypes'
// float8_e4m3fn, which numpy describes as an opaque byte ('|V1'): both read as the same codes.
TEST(NpyFixtures, E4m3CodesFromUint8AndFromMlDtypes) {
  Tensor t = moe::read_npy(kData + "u8.npy");
  ASSERT_EQ(t.dtype(), DType::e4m3);
  ASSERT_EQ(t.shape(), (Shape{4}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.data<std::uint8_t>()[i], i);
  EXPECT_EQ(t.get(1), 0x1.0p-9);  // code 1: the smallest subnormal

  TempDir dir;
  std::string text = slurp(kData + "u8.npy");
  const auto at = text.find("|u1");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 3, "|V1");
  text.replace(text.size() - 4, 4, std::string("\x7e\xfe\x7f\x38", 4));
  const std::string path = dir.file("f8.npy");
  {
    std::ofstream o(path, std::ios::binary);
    o << text;
  }
  Tensor v = moe::read_npy(path);
  ASSERT_EQ(v.dtype(), DType::e4m3);
  EXPECT_EQ(v.get(0), 448.0);
  EXPECT_EQ(v.get(1), -448.0);
  EXPECT_TRUE(std::isnan(v.get(2)));
  EXPECT_EQ(v.get(3), 1.0);
}

// ---------------------------------------------------------------- round trips

TEST(NpyRoundTrip, EveryDtypeAndShapeBitExact) {
  TempDir dir;
  const std::vector<Shape> shapes = {{}, {0}, {1}, {5}, {0, 3}, {3, 0, 2}, {2, 3}, {7, 1, 3}, {2, 1, 3, 2}, {257}};
  std::uint64_t seed = 1;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::f64, DType::e4m3}) {
    for (const Shape& s : shapes) {
      const Tensor x = random_tensor(t, s, seed++);
      const std::string path = dir.file("rt_" + std::string(moe::dtype_name(t)) + "_" + std::to_string(seed) + ".npy");
      moe::write_npy(path, x);
      const std::string bytes = slurp(path);
      ASSERT_GE(bytes.size(), 10u);
      EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
      const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
      EXPECT_EQ((10 + header_len) % 64, 0u) << "data not 64-byte aligned";
      EXPECT_EQ(bytes[10 + header_len - 1], '\n');
      EXPECT_NE(bytes.find("'descr': '" + moe::npy_descr(t) + "'"), std::string::npos);

      const Tensor y = moe::read_npy(path);
      ASSERT_EQ(y.dtype(), t);
      ASSERT_EQ(y.shape(), s) << moe::shape_str(s);
      ASSERT_EQ(y.nbytes(), x.nbytes());
      if (x.nbytes() > 0)
        EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0) << moe::dtype_name(t) << " " << moe::shape_str(s);
    }
  }
}

TEST(NpyRoundTrip, ShapeTupleSpelling) {
  TempDir dir;
  auto header_of = [&](const Shape& s) {
    moe::write_npy(dir.file("h.npy"), Tensor(DType::f32, s));
    const std::string b = slurp(dir.file("h.npy"));
    const auto a = b.find("'shape': "), e = b.find(')', a);
    return b.substr(a + 9, e - a - 8);
  };
  EXPECT_EQ(header_of({}), "()");
  EXPECT_EQ(header_of({3}), "(3,)");
  EXPECT_EQ(header_of({2, 3}), "(2, 3)");
  EXPECT_EQ(header_of({0, 4, 1}), "(0, 4, 1)");
}

TEST(NpyWrite, ReplacesAtomicallyAndLeavesNoTemporaries) {
  TempDir dir;
  const std::string path = dir.file("x.npy");
  moe::write_npy(path, random_tensor(DType::f32, {100, 10}, 5));
  const Tensor small = random_tensor(DType::i32, {3}, 6);
  moe::write_npy(path, small);
  const Tensor back = moe::read_npy(path);
  ASSERT_EQ(back.shape(), Shape{3});
  EXPECT_EQ(std::memcmp(back.raw(), small.raw(), small.nbytes()), 0);
  int files = 0;
  for (auto& e : fs::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "x.npy");
  }
  EXPECT_EQ(files, 1);
}

TEST(NpyWrite, UnwritableDirectoryIsAnErrorNamingThePath) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/x.npy");
  try {
    moe::write_npy(path, Tensor(DType::f32, {2}));
    ADD_FAILURE() << "no error";
  } catch (const moe::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
  const std::string empty = dir.file("default.npy");
  EXPECT_THROW(moe::write_npy(empty, Tensor()), moe::Error);
  EXPECT_FALSE(fs::exists(empty));
}

// numpy is not needed to build or test moebench; where it is installed, check that numpy
// reads what write_npy writes, including the bf16 convention.
TEST(NpyWrite, NumpyLoadsTheFiles) {
  if (std::system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 with numpy not found";
  TempDir dir;
  Tensor f(DType::f32, {2, 3}), h(DType::f16, {4}), b(DType::bf16, {2, 2}), i(DType::i32, {}), l(DType::i64, {0, 2}),
      d(DType::f64, {3});
  for (int k = 0; k < 6; ++k) f.set(k, k * 0.5 - 1.25);
  for (int k = 0; k < 4; ++k) h.set(k, k - 1.5);
  for (int k = 0; k < 4; ++k) b.set(k, (k - 2) * 0.75);
  i.set(0, -7);
  for (int k = 0; k < 3; ++k) d.set(k, k / 3.0);
  moe::write_npy(dir.file("d.npy"), d);
  moe::write_npy(dir.file("f.npy"), f);
  moe::write_npy(dir.file("h.npy"), h);
  moe::write_npy(dir.file("b.npy"), b);
  moe::write_npy(dir.file("i.npy"), i);
  moe::write_npy(dir.file("l.npy"), l);
  const std::string script = dir.file("check.py");
  spit(script,
       "import numpy as np, sys\n"
       "d = sys.argv[1] + '/'\n"
       "f = np.load(d + 'f.npy'); assert f.dtype == np.float32 and f.shape == (2, 3), f\n"
       "assert (f.ravel() == np.arange(6) * 0.5 - 1.25).all(), f\n"
       "h = np.load(d + 'h.npy'); assert h.dtype == np.float16 and (h == np.arange(4) - 1.5).all(), h\n"
       "b = np.load(d + 'b.npy'); assert b.dtype == np.uint16 and b.shape == (2, 2), b\n"
       "bf = (b.astype(np.uint32) << 16).view(np.float32)\n"
       "assert (bf.ravel() == (np.arange(4) - 2) * 0.75).all(), bf\n"
       "i = np.load(d + 'i.npy'); assert i.dtype == np.int32 and i.shape == () and i == -7, i\n"
       "l = np.load(d + 'l.npy'); assert l.dtype == np.int64 and l.shape == (0, 2), l\n"
       "x = np.load(d + 'd.npy'); assert x.dtype == np.float64 and (x == np.arange(3) / 3.0).all(), x\n");
  EXPECT_EQ(std::system(("python3 " + script + " " + dir.path().string()).c_str()), 0);
}

// ---------------------------------------------------------------- malformed files

TEST(NpyMalformed, FileProblems) {
  TempDir dir;
  expect_error(dir.file("missing.npy"), {"cannot open", "No such file"});
  expect_error(dir.path().string(), {"is a directory"});
  spit(dir.file("empty.npy"), "");
  expect_error(dir.file("empty.npy"), {"empty"});
  spit(dir.file("text.npy"), "hello, world, this is not numpy");
  expect_error(dir.file("text.npy"), {"not a .npy file", "hello"});
  spit(dir.file("short.npy"), std::string("\x93NUM", 4));
  expect_error(dir.file("short.npy"), {"truncated", "4 bytes"});
  spit(dir.file("preamble.npy"), std::string("\x93NUMPY\x01\x00\x10", 9));
  expect_error(dir.file("preamble.npy"), {"truncated", "preamble"});
}

TEST(NpyMalformed, Versions) {
  TempDir dir;
  const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n";
  for (auto [maj, min] : {std::pair{4, 0}, {0, 0}, {1, 1}, {255, 255}}) {
    const std::string p = dir.file("v" + std::to_string(maj) + std::to_string(min) + ".npy");
    spit(p, npy_bytes(h, f32_bytes({1}), maj == 1 ? 1 : 2, min));
    // rewrite the version bytes directly (npy_bytes picks the length width from major)
    std::string b = slurp(p);
    b[6] = static_cast<char>(maj);
    b[7] = static_cast<char>(min);
    spit(p, b);
    expect_error(p, {"format version " + std::to_string(maj) + "." + std::to_string(min), "1.0, 2.0 and 3.0"});
  }
  spit(dir.file("v2short.npy"), std::string("\x93NUMPY\x02\x00\x05\x00", 10));
  expect_error(dir.file("v2short.npy"), {"truncated", "12-byte preamble"});
}

TEST(NpyMalformed, HeaderLength) {
  TempDir dir;
  std::string b = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", f32_bytes({1}));
  b[8] = '\xff';
  b[9] = '\xff';
  spit(dir.file("long.npy"), b);
  expect_error(dir.file("long.npy"), {"truncated", "header claims 65535 bytes"});
  // a 4 GiB header length in a version 2.0 file must not be allocated
  std::string v2 = std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12) + std::string(100, ' ');
  spit(dir.file("long2.npy"), v2);
  expect_error(dir.file("long2.npy"), {"truncated", "4294967295"});
  // a big header that is really there is refused by size, not parsed
  std::string big = std::string("\x93NUMPY\x02\x00", 8);
  const std::uint32_t n = (1u << 20) + 64;
  for (int i = 0; i < 4; ++i) big += static_cast<char>((n >> (8 * i)) & 0xFF);
  big += std::string(n, ' ');
  spit(dir.file("huge_header.npy"), big);
  expect_error(dir.file("huge_header.npy"), {"1 MiB"});
}

TEST(NpyMalformed, UnparsableHeaders) {
  TempDir dir;
  const std::string d = f32_bytes({1, 2});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "ends early"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "no ',' or '}'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "no ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "after the dictionary"},
      {"['descr', '<f4']", "not a dictionary"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", "unknown word 'Maybe'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "cannot parse the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (2,)}", "appears twice"},
      {"{1: '<f4'}", "key is not a string"},
      {"{'descr' '<f4'}", "no ':'"},
      {std::string(100, '(') + std::string(100, ')'), "nested too deeply"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "sequence"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-,)}", "'-' is not followed"},
      {"{'descr': 'a\\'b', 'fortran_order': False, 'shape': (2,)}", "escapes"},
  };
  int k = 0;
  for (auto& [header, want] : cases) {
    const std::string p = dir.file("bad" + std::to_string(k++) + ".npy");
    spit(p, npy_bytes(header, d));
    expect_error(p, {"header", want});
  }
}

TEST(NpyMalformed, HeaderKeysAndValues) {
  TempDir dir;
  const std::string d = f32_bytes({1, 2});
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"{'fortran_order': False, 'shape': (2,)}", {"no 'descr'"}},
      {"{'descr': '<f4', 'shape': (2,)}", {"no 'fortran_order'"}},
      {"{'descr': '<f4', 'fortran_order': False}", {"no 'shape'"}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", {"unexpected key 'extra'"}},
      {"{'descr': 4, 'fortran_order': False, 'shape': (2,)}", {"'descr' is not a string"}},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", {"'fortran_order' is not True or False"}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", {"'shape' is not a tuple"}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ('2',)}", {"other than integers"}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", {"negative dimension -2"}},
      {"{'descr': '<q7', 'fortran_order': False, 'shape': (2,)}", {"'<q7'", "supported are"}},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", {"'|f4'", "supported are"}},
      {"{'descr': '>i8', 'fortran_order': False, 'shape': (2,)}", {"big-endian", "'>i8'"}},
  };
  int k = 0;
  for (auto& [header, want] : cases) {
    const std::string p = dir.file("keys" + std::to_string(k++) + ".npy");
    spit(p, npy_bytes(header, d));
    expect_error(p, want);
  }
  std::string many = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 65; ++i) many += "1, ";
  many += ")}";
  spit(dir.file("dims.npy"), npy_bytes(many, f32_bytes({1})));
  expect_error(dir.file("dims.npy"), {"65 dimensions"});
  // a non-ASCII byte is not allowed in a version 1.0 header
  spit(dir.file("latin.npy"), npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '\xe9': 1}", d));
  expect_error(dir.file("latin.npy"), {"non-ASCII"});
}

TEST(NpyMalformed, DataSizeAgainstShape) {
  TempDir dir;
  const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
  spit(dir.file("trunc.npy"), npy_bytes(h, f32_bytes({1, 2, 3, 4, 5})));
  expect_error(dir.file("trunc.npy"), {"truncated", "[2, 3] of f32", "expects 24 bytes of data, file has 20"});
  spit(dir.file("trail.npy"), npy_bytes(h, f32_bytes({1, 2, 3, 4, 5, 6, 7})));
  expect_error(dir.file("trail.npy"), {"4 bytes after the data", "24 bytes"});
  // Overflowing products must be caught before any allocation.
  const std::vector<std::string> huge = {
      "(4611686018427387904, 4)", "(9223372036854775807,)", "(3037000500, 3037000500)",
      "(65536, 65536, 65536, 65536)", "(2305843009213693952,)"};
  int k = 0;
  for (auto& s : huge) {
    const std::string p = dir.file("huge" + std::to_string(k++) + ".npy");
    spit(p, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + s + "}", f32_bytes({1})));
    expect_error(p, {"shape"});
  }
  spit(dir.file("big.npy"), npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1000000000, 1000)}", f32_bytes({1})));
  expect_error(dir.file("big.npy"), {"expects 8000000000000 bytes of data, file has 4"});
  // A zero dimension makes the array empty whatever the others are.
  spit(dir.file("zero.npy"), npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976, 0)}"));
  const Tensor z = moe::read_npy(dir.file("zero.npy"));
  EXPECT_EQ(z.numel(), 0);
}

// ---------------------------------------------------------------- hostile input never crashes

TEST(NpyFuzz, EveryTruncationOfAValidFileIsAnError) {
  TempDir dir;
  for (const char* name : {"f32_2x3.npy", "f32_v2.npy", "f32_v3.npy", "f32_scalar.npy", "hdr_whitespace.npy"}) {
    const std::string full = slurp(kData + name);
    ASSERT_GT(full.size(), 20u);
    const std::string p = dir.file(std::string("cut_") + name);
    for (std::size_t n = 0; n < full.size(); ++n) {
      spit(p, full.substr(0, n));
      EXPECT_THROW((void)moe::read_npy(p), moe::Error) << name << " cut at " << n;
    }
    spit(p, full);
    EXPECT_NO_THROW((void)moe::read_npy(p));
  }
}

TEST(NpyFuzz, RandomBytesAreAnErrorNeverACrash) {
  TempDir dir;
  const std::string p = dir.file("random.npy");
  const std::string magic("\x93NUMPY", 6);
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    moe::Rng rng(seed);
    const std::size_t n = static_cast<std::size_t>(rng.below(300));
    std::string b(n, '\0');
    for (auto& c : b) c = static_cast<char>(rng.next() >> 56);
    // Most random files fail at the magic; give two thirds of them a valid magic (and a
    // valid version for half) so the header code sees random input too.
    if (seed % 3 != 0 && n >= 6) b.replace(0, 6, magic);
    if (seed % 2 == 0 && n >= 10) {
      b[6] = static_cast<char>(1 + rng.below(3));
      b[7] = 0;
      b[8] = static_cast<char>(rng.below(static_cast<std::int64_t>(n)));
      b[9] = 0;
    }
    spit(p, b);
    try {
      (void)moe::read_npy(p);
    } catch (const moe::Error& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST(NpyFuzz, MutatedHeadersAreReadOrRejectedCleanly) {
  TempDir dir;
  const std::string good = slurp(kData + "f32_2x3.npy");
  const std::string p = dir.file("mut.npy");
  const std::size_t header_end = 10 + (static_cast<unsigned char>(good[8]) | (static_cast<unsigned char>(good[9]) << 8));
  const std::string alphabet = "{}()[],:'\" 0123456789-TrueFalsNn<>|fiuV\x93\n\t";
  int read_ok = 0, errors = 0;
  for (std::uint64_t seed = 0; seed < 2000; ++seed) {
    moe::Rng rng(seed);
    std::string b = good;
    const int edits = 1 + static_cast<int>(rng.below(4));
    for (int e = 0; e < edits; ++e) {
      const auto at = static_cast<std::size_t>(rng.below(static_cast<std::int64_t>(header_end)));
      b[at] = alphabet[static_cast<std::size_t>(rng.below(static_cast<std::int64_t>(alphabet.size())))];
    }
    spit(p, b);
    try {
      const Tensor t = moe::read_npy(p);
      ++read_ok;
      EXPECT_EQ(static_cast<std::uint64_t>(t.nbytes()), good.size() - header_end);
    } catch (const moe::Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(read_ok, 0);  // edits in the padding keep the file valid
}
