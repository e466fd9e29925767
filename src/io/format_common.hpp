#pragma once
// What the file-format parsers share. The parsers (safetensors_format, npy_format, zip) read
// only from a byte span: the file loaders hand them a memory map, the fuzzers (tests/fuzz/) a
// buffer. They create no tensors, so the fuzzers link just them, text.cpp and error.cpp.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace ember::io::detail {

using Bytes = std::span<const uint8_t>;

/// Where an error points: messages start "[op] 'path': ".
struct Source {
  const char* op;
  std::string_view path;
  std::string prefix() const;
};

/// Shapes of more dims than this are refused (PyTorch allows 64): it bounds what a hostile
/// header can make us allocate per tensor.
inline constexpr size_t kMaxRank = 64;

inline uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
inline uint64_t le64(const uint8_t* p) { return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32; }
inline void put_le16(std::string& s, uint16_t v) {
  for (int i = 0; i < 2; ++i) s += static_cast<char>(v >> (8 * i));
}
inline void put_le32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>(v >> (8 * i));
}
inline void put_le64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s += static_cast<char>(v >> (8 * i));
}

/// A C++ bool may only hold 0 or 1, so bool data from a file is checked before any kernel
/// reads it; fails naming `what` and the first bad element.
void check_bool_bytes(const uint8_t* data, size_t n, const Source& src, std::string_view what);

}  // namespace ember::io::detail
