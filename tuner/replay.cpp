#include "tuner/replay.hpp"

#include <cstring>
#include <fstream>
#include <regex>

#include "moe/error.hpp"

namespace moe::tuner {

Tensor load_replay_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read routing file " + path);
  char magic[8] = {};
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw Error(path + " is not a .npy file");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  }
  if (!in || hlen > (1u << 20)) throw Error(path + ": corrupt .npy header");
  std::string header(hlen, '\0');
  in.read(header.data(), hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([<|=]?)([fi][248])'")))
    throw Error(path + ": unsupported dtype in header " + header + " (use float16/32/64 or int32/64)");
  const std::string kind = m[2];
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    throw Error(path + " is in Fortran order: save it with np.ascontiguousarray");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw Error(path + ": no shape in header");
  Shape shape;
  const std::string dims = m[1];
  const std::regex digits("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), digits), end; it != end; ++it)
    shape.push_back(std::stoll(it->str()));
  DType t = DType::f32;
  if (kind == "f2") t = DType::f16;
  else if (kind == "f4") t = DType::f32;
  else if (kind == "f8") t = DType::f64;
  else if (kind == "i4") t = DType::i32;
  else if (kind == "i8") t = DType::i64;
  else throw Error(path + ": unsupported dtype " + kind);
  Tensor out(t, shape);
  in.read(static_cast<char*>(out.raw()), static_cast<std::streamsize>(out.nbytes()));
  if (!in) throw Error(path + " is shorter than its header says " + shape_str(shape));
  return out;
}

}  // namespace moe::tuner
