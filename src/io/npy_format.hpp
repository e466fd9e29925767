#pragma once
// The .npy layout (numpy/lib/format.py, "NPY format"):
//   6 bytes   "\x93NUMPY", then major and minor version bytes (1.0, 2.0 or 3.0)
//   2 bytes   (1.0) or 4 bytes (2.0, 3.0): HEADER_LEN, little-endian
//   HEADER_LEN bytes  a Python dict literal, padded with spaces and ended by '\n' so that
//             the data starts 64-byte aligned:
//             {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//   the rest  the elements, row-major or (fortran_order) column-major

#include "format_common.hpp"

#include <ember/core/dtype.hpp>
#include <ember/core/shape.hpp>

#include <optional>
#include <string>

namespace ember::io::detail {

/// Longest header Ember reads; numpy's own reader stops at 10,000 bytes by default.
inline constexpr uint64_t kMaxNpyHeader = 1 << 20;

struct NpyLayout {
  DType dtype = DType::F32;
  Shape shape;
  bool fortran_order = false;
  uint64_t data_offset = 0;  ///< from the start of the file
  uint64_t nbytes = 0;       ///< numel * itemsize, equal to the bytes after data_offset
};

/// Validates the preamble, the header dict and the data size of the .npy bytes in `file`.
NpyLayout parse_npy(Bytes file, const Source& src);

/// numpy's descr for an Ember dtype ("<f4", "|b1"); none for bf16, which numpy lacks.
std::optional<std::string_view> npy_descr(DType t);

/// The bytes numpy 2 writes before the data of such an array: byte for byte what np.save
/// produces (version 1.0 unless the header needs 2.0, the same growth-axis padding).
std::string npy_header(DType dtype, IntArrayRef shape, bool fortran_order);

}  // namespace ember::io::detail
