#pragma once
// The safetensors layout (https://github.com/huggingface/safetensors, "Format"):
//   8 bytes   N, the header length, little-endian u64
//   N bytes   a JSON object: {"__metadata__": {str: str}, name: {"dtype": "F32",
//             "shape": [2, 3], "data_offsets": [begin, end]}, ...}; writers pad it with
//             spaces so that the data starts 8-byte aligned
//   the rest  the data region: each tensor's bytes, row-major little-endian, at
//             [begin, end) relative to the region's start. The tensors cover the region
//             exactly, without gaps or overlaps.

#include "format_common.hpp"

#include <ember/core/dtype.hpp>
#include <ember/core/shape.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ember::io::detail {

/// The reference implementation's limit; a larger header is refused before it is read.
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;  ///< relative to the data region
};

struct SafetensorsLayout {
  std::vector<SafetensorsEntry> tensors;                      ///< in header order
  std::vector<std::pair<std::string, std::string>> metadata;  ///< "__metadata__", in header order
  uint64_t data_start = 0;                                    ///< 8 + header length
};

/// Validates everything about `file` except the values inside the tensors: the header
/// length, the JSON, names, dtypes, shapes and offsets. Fails with ember::Error naming
/// `src` and the offending field.
SafetensorsLayout parse_safetensors(Bytes file, const Source& src);

/// The safetensors name of an Ember dtype ("F32", "BF16", "BOOL").
std::string_view safetensors_dtype_name(DType t);
std::optional<DType> dtype_from_safetensors(std::string_view name);

/// The first 8 + N bytes of a file holding `entries` (their offsets set), the JSON written
/// as the reference writer writes it: compact, "__metadata__" first when not empty, then the
/// entries in the given order, padded with spaces to a multiple of 8.
std::string safetensors_header(const std::vector<SafetensorsEntry>& entries,
                               const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace ember::io::detail
