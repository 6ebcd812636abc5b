#include "io/npy.hpp"
#include "io/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "moe/error.hpp"

namespace moe {

static_assert(std::endian::native == std::endian::little, "the .npy code assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
// numpy itself refuses headers over 10000 bytes unless told otherwise; 1 MiB leaves room for
// anything legitimate while keeping a hostile length from driving a huge allocation.
constexpr std::uint64_t kMaxHeader = 1u << 20;
constexpr int kMaxDims = 64;  // numpy's own limit (NPY_MAXDIMS in numpy 2)

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("npy file '" + path + "': " + what);
}

std::string printable(std::string_view s, std::size_t max = 40) {
  std::string r;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      r += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    }
  }
  if (s.size() > max) r += "...";
  return r;
}

std::string errno_text(int e) { return std::strerror(e); }

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// ---- the header: a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
struct PyValue {
  enum Kind { Str, Bool, None, Int, Tuple, List, Dict } kind = None;
  std::string str;
  bool flag = false;
  std::int64_t num = 0;
  std::vector<PyValue> items;                            // Tuple, List
  std::vector<std::pair<std::string, PyValue>> entries;  // Dict
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  PyValue parse() {
    PyValue v = value(0);
    skip_space();
    if (pos_ != s_.size()) bad("unexpected '" + printable(s_.substr(pos_), 20) + "' after the dictionary");
    if (v.kind != PyValue::Dict) bad("it is not a dictionary");
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail(path_, "cannot parse the header (" + why + "): header is \"" + printable(s_, 120) + "\"");
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  PyValue value(int depth) {
    // Nesting only occurs in structured descrs; a bound keeps a hostile header off the stack.
    if (depth > 16) bad("nested too deeply");
    skip_space();
    if (pos_ >= s_.size()) bad("it ends early");
    const char c = s_[pos_];
    if (c == '{') return dict(depth);
    if (c == '(') return sequence(depth, ')', PyValue::Tuple);
    if (c == '[') return sequence(depth, ']', PyValue::List);
    if (c == '\'' || c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return integer();
    if (c >= 'A' && c <= 'z') return word();
    bad("unexpected character '" + printable(s_.substr(pos_, 1)) + "'");
  }

  PyValue dict(int depth) {
    ++pos_;
    PyValue v;
    v.kind = PyValue::Dict;
    while (true) {
      if (eat('}')) return v;
      PyValue key = value(depth + 1);
      if (key.kind != PyValue::Str) bad("a key is not a string");
      if (!eat(':')) bad("no ':' after key '" + key.str + "'");
      PyValue val = value(depth + 1);
      for (auto& e : v.entries)
        if (e.first == key.str) bad("key '" + key.str + "' appears twice");
      v.entries.emplace_back(key.str, std::move(val));
      if (eat('}')) return v;
      if (!eat(',')) bad("no ',' or '}' after the value of '" + key.str + "'");
    }
  }

  PyValue sequence(int depth, char close, PyValue::Kind kind) {
    ++pos_;
    PyValue v;
    v.kind = kind;
    while (true) {
      if (eat(close)) return v;
      if (v.items.size() >= 4096) bad("a sequence is too long");
      v.items.push_back(value(depth + 1));
      if (eat(close)) return v;
      if (!eat(',')) bad(std::string("no ',' or '") + close + "' in a sequence");
    }
  }

  PyValue string() {
    const char q = s_[pos_++];
    PyValue v;
    v.kind = PyValue::Str;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') bad("escapes in strings are not supported");
      v.str += s_[pos_++];
    }
    if (pos_ >= s_.size()) bad("a string is not closed");
    ++pos_;
    return v;
  }

  PyValue integer() {
    PyValue v;
    v.kind = PyValue::Int;
    bool neg = false;
    if (s_[pos_] == '-') {
      neg = true;
      ++pos_;
    }
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') bad("'-' is not followed by a number");
    std::uint64_t x = 0;
    const std::uint64_t lim = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const unsigned d = static_cast<unsigned>(s_[pos_++] - '0');
      if (x > (lim - d) / 10) bad("a number does not fit in 64 bits");
      x = x * 10 + d;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long suffix
    v.num = neg ? -static_cast<std::int64_t>(x) : static_cast<std::int64_t>(x);
    return v;
  }

  PyValue word() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && ((s_[pos_] >= 'A' && s_[pos_] <= 'Z') || (s_[pos_] >= 'a' && s_[pos_] <= 'z')))
      ++pos_;
    const std::string_view w = s_.substr(start, pos_ - start);
    PyValue v;
    if (w == "True" || w == "False") {
      v.kind = PyValue::Bool;
      v.flag = w == "True";
    } else if (w == "None") {
      v.kind = PyValue::None;
    } else {
      bad("unknown word '" + printable(w) + "'");
    }
    return v;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  const std::string& path_;
};

const char* kSupported =
    "supported are '<f4' (f32), '<f2' (f16), '<f8' (f64), '<i4' (i32), '<i8' (i64), '<u2' or '<V2' "
    "(bf16 bit patterns) and '|u1' or '|V1' (e4m3 codes, as ml_dtypes' float8_e4m3fn)";

DType dtype_of_descr(const PyValue& d, const std::string& path) {
  if (d.kind == PyValue::List)
    fail(path, std::string("has a structured dtype, which moebench does not read: ") + kSupported +
                   "; save each field as its own array");
  if (d.kind != PyValue::Str) fail(path, "the header's 'descr' is not a string");
  const std::string& s = d.str;
  if (s.size() >= 2 && s[0] == '>' && s.substr(1) != "u1" && s.substr(1) != "i1" && s.substr(1) != "b1")
    fail(path, "has big-endian dtype '" + s + "': moebench reads little-endian data; convert with " +
                   "a.astype(a.dtype.newbyteorder('<'))");
  std::string body = s;
  if (!body.empty() && (body[0] == '<' || body[0] == '=' || body[0] == '|')) body = body.substr(1);
  const bool multi_byte_ok = s.empty() || s[0] != '|';  // '|' marks "byte order not applicable"
  if (body == "f4" && multi_byte_ok) return DType::f32;
  if (body == "f2" && multi_byte_ok) return DType::f16;
  if (body == "f8" && multi_byte_ok) return DType::f64;
  if (body == "i4" && multi_byte_ok) return DType::i32;
  if (body == "i8" && multi_byte_ok) return DType::i64;
  if (body == "u2" && multi_byte_ok) return DType::bf16;
  if (body == "V2") return DType::bf16;
  // One-byte types carry no byte order; numpy writes them with '|'.
  if (body == "u1" || body == "V1") return DType::e4m3;
  fail(path, "has dtype '" + printable(s) + "', which moebench does not read: " + kSupported +
                 "; convert with e.g. a.astype(np.float32)");
}

struct Header {
  DType dtype = DType::f32;
  Shape shape;
  bool fortran = false;
};

Header interpret(const PyValue& dict, const std::string& path) {
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (auto& [k, v] : dict.entries) {
    if (k == "descr") descr = &v;
    else if (k == "fortran_order") fortran = &v;
    else if (k == "shape") shape = &v;
    else fail(path, "the header has an unexpected key '" + printable(k) + "' (a .npy header has descr, fortran_order, shape)");
  }
  if (!descr) fail(path, "the header has no 'descr' (element type)");
  if (!fortran) fail(path, "the header has no 'fortran_order'");
  if (!shape) fail(path, "the header has no 'shape'");

  Header h;
  h.dtype = dtype_of_descr(*descr, path);
  if (fortran->kind != PyValue::Bool) fail(path, "the header's 'fortran_order' is not True or False");
  h.fortran = fortran->flag;
  if (shape->kind != PyValue::Tuple) fail(path, "the header's 'shape' is not a tuple");
  if (shape->items.size() > static_cast<std::size_t>(kMaxDims))
    fail(path, "has " + std::to_string(shape->items.size()) + " dimensions, more than the " +
                   std::to_string(kMaxDims) + " numpy allows");
  for (auto& d : shape->items) {
    if (d.kind != PyValue::Int) fail(path, "the header's 'shape' holds something other than integers");
    if (d.num < 0) fail(path, "has a negative dimension " + std::to_string(d.num) + " in its shape");
    h.shape.push_back(d.num);
  }
  if (h.fortran) {
    int big = 0;
    for (auto d : h.shape) big += d > 1;
    if (big > 1)
      fail(path, "is stored in Fortran order (column-major), which moebench does not read; write it with " +
                     std::string("np.save(path, np.ascontiguousarray(a))"));
  }
  return h;
}

std::uint64_t read_le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string npy_descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::f64: return "<f8";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::bf16: return "<u2";
    case DType::e4m3:
    case DType::u8: return "|u1";
  }
  return "?";
}

Tensor read_npy(const std::string& path) {
  if (const std::string why = io::not_a_regular_file(path); !why.empty()) fail(path, why + "; give a .npy file");
  errno = 0;
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) fail(path, "cannot open it: " + errno_text(errno));
  struct stat st {};
  if (fstat(fileno(f.get()), &st) != 0) fail(path, "cannot inspect it: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a .npy file");
  if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file");
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);

  auto read_exact = [&](void* dst, std::size_t n, const char* what) {
    if (n && std::fread(dst, 1, n, f.get()) != n)
      fail(path, std::string("could not read ") + what + (std::ferror(f.get()) ? ": " + errno_text(errno) : ": file shrank while reading"));
  };

  if (size == 0) fail(path, "is empty (0 bytes), not a .npy file");
  unsigned char pre[12] = {};
  const std::size_t have = static_cast<std::size_t>(size < 12 ? size : 12);
  read_exact(pre, have, "the preamble");
  const std::size_t cmp = have < kMagicLen ? have : kMagicLen;
  if (std::memcmp(pre, kMagic, cmp) != 0)
    fail(path, "is not a .npy file: it starts with \"" +
                   printable(std::string_view(reinterpret_cast<const char*>(pre), cmp)) +
                   "\", not the magic \"\\x93NUMPY\"");
  if (have < 10)
    fail(path, "is truncated: it has " + std::to_string(size) + " bytes, less than the 10-byte .npy preamble");
  const int major = pre[6], minor = pre[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    fail(path, "has .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   ", which moebench does not read (it reads 1.0, 2.0 and 3.0)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::uint64_t preamble = 8 + len_bytes;
  if (size < preamble)
    fail(path, "is truncated: it has " + std::to_string(size) + " bytes, less than the " +
                   std::to_string(preamble) + "-byte preamble of format " + std::to_string(major) + ".0");
  const std::uint64_t header_len = read_le(pre + 8, static_cast<int>(len_bytes));
  if (header_len > size - preamble)
    fail(path, "is truncated: its header claims " + std::to_string(header_len) + " bytes but only " +
                   std::to_string(size - preamble) + " follow the preamble");
  if (header_len > kMaxHeader)
    fail(path, "claims a " + std::to_string(header_len) + "-byte header, more than the 1 MiB moebench accepts");

  // Read the header from its own offset: the first 12 bytes may already hold part of it.
  if (std::fseek(f.get(), static_cast<long>(preamble), SEEK_SET) != 0)
    fail(path, "cannot seek in it: " + errno_text(errno));
  std::string text(static_cast<std::size_t>(header_len), '\0');
  read_exact(text.data(), text.size(), "the header");
  if (major < 3) {
    for (unsigned char c : text)
      if (c >= 0x80) fail(path, "has a non-ASCII byte in its header, which format " + std::to_string(major) + ".0 does not allow");
  }
  const PyValue dict = HeaderParser(text, path).parse();
  const Header h = interpret(dict, path);

  const std::uint64_t data_offset = preamble + header_len;
  const std::uint64_t available = size - data_offset;
  const std::uint64_t elem = dtype_size(h.dtype);
  // The product of the non-zero dimensions must fit in int64 bytes: Tensor and every caller
  // multiply dimensions in int64.
  constexpr std::uint64_t kLimit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t nonzero = elem;
  bool empty = false;
  for (auto d : h.shape) {
    if (d == 0) {
      empty = true;
      continue;
    }
    const auto ud = static_cast<std::uint64_t>(d);
    if (nonzero > kLimit / ud)
      fail(path, "has shape " + shape_str(h.shape) + ", too large to address (over 2^63 bytes)");
    nonzero *= ud;
  }
  const std::uint64_t need = empty ? 0 : nonzero;
  const std::string what = "shape " + shape_str(h.shape) + " of " + std::string(dtype_name(h.dtype));
  if (need > available)
    fail(path, "is truncated: " + what + " expects " + std::to_string(need) + " bytes of data, file has " +
                   std::to_string(available));
  if (need < available)
    fail(path, "has " + std::to_string(available - need) + " bytes after the data (" + what + " is " +
                   std::to_string(need) + " bytes): the header does not describe the file");

  Tensor t(h.dtype, h.shape);
  read_exact(t.raw(), t.nbytes(), "the data");
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  // A default-constructed Tensor has shape () but no bytes; writing it would make a file no
  // reader accepts.
  if (t.nbytes() != static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()))
    fail(path, "cannot write a tensor without data (shape " + shape_str(t.shape()) + ", " +
                   std::to_string(t.nbytes()) + " bytes)");
  std::string header = "{'descr': '" + npy_descr(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < t.shape().size(); ++i) header += (i ? ", " : "") + std::to_string(t.shape()[i]);
  if (t.shape().size() == 1) header += ",";
  header += "), }";
  // Pad with spaces so the data starts 64-byte aligned, as numpy does; the newline ends the header.
  int version = 1;
  std::size_t preamble = 10;
  auto padded = [&](std::size_t pre) { return (pre + header.size() + 1 + 63) / 64 * 64 - pre; };
  std::size_t len = padded(preamble);
  if (len > 0xFFFF) {
    version = 2;
    preamble = 12;
    len = padded(preamble);
  }
  header.append(len - header.size() - 1, ' ');
  header += '\n';

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(version);
  out += '\0';
  for (std::size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xFF);
  out += header;

  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot write it: " + errno_text(errno) + " (creating '" + tmp + "')");
  auto write_all = [&](const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      const ssize_t w = ::write(fd, c, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      c += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  };
  const bool ok = write_all(out.data(), out.size()) && write_all(t.raw(), t.nbytes()) && ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !ok) {
    const int e = ok ? errno : err;
    ::unlink(tmp.c_str());
    fail(path, "cannot write it: " + errno_text(e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot write it: " + errno_text(e) + " (renaming '" + tmp + "' over it)");
  }
}

}  // namespace moe
