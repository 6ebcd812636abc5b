#pragma once
// NumPy .npy files in and out, so captured routing data replays and any tensor can be
// inspected with numpy.
//
// Element types (descr in the header <-> moebench dtype):
//   '<f4' f32   '<f2' f16   '<f8' f64   '<i4' i32   '<i8' i64
//   '<u2' bf16, as its raw 16-bit pattern (numpy has no bfloat16). '<V2' / '|V2' (what
//         np.save writes for an ml_dtypes.bfloat16 array) also reads as bf16.
// From numpy, with b the uint16 array of a bf16 file:
//   to float32:    (b.astype(np.uint32) << 16).view(np.float32)
//   from float32:  u = x.astype(np.float32).view(np.uint32)
//                  ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)   (nearest even, NaN aside;
//                  (u >> 16).astype(np.uint16) truncates instead), or with ml_dtypes:
//                  x.astype(ml_dtypes.bfloat16).view(np.uint16).
// Other descrs ('<u4', '|b1', big-endian '>f4', structured) are rejected with a message that
// says how to convert. C order only ('fortran_order': True is accepted where it describes the
// same bytes, i.e. at most one dimension is larger than 1).
//
// Reading accepts format versions 1.0, 2.0 and 3.0 and checks everything against the file
// before allocating. Any problem is one moe::Error line "npy file 'PATH': PROBLEM". Bytes after
// the array data are an error: a .npy file holds exactly one array, and extra bytes mean the
// header's shape or dtype does not describe the file.
//
// Writing produces version 1.0 (2.0 when the header would not fit), '<' byte order, and goes
// through a temporary file in the same directory renamed over PATH, so a reader never sees a
// half-written file.
#include <string>

#include "moe/tensor.hpp"

namespace moe {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

// The descr write_npy uses for a dtype ("<f4", "<u2" for bf16, ...).
std::string npy_descr(DType t);

}  // namespace moe
