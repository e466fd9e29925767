#pragma once
// Zip archives as .npz files use them (PKWARE APPNOTE.TXT): members stored (method 0) or
// deflated (method 8), no encryption, one disk. The reader also accepts zip64 records and
// extra fields (numpy writes zip64 local headers); the writer writes plain zip and refuses
// archives that would need zip64 (a member, offset or directory at 4 GiB or more).

#include "atomic_writer.hpp"
#include "format_common.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ember::io::detail {

struct ZipMember {
  std::string name;
  uint16_t method = 0;  ///< 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0, size = 0;
  uint64_t local_offset = 0;  ///< of its local header
  uint64_t data_offset = 0;   ///< of its (compressed) bytes
};

/// Validates the end record, the central directory and every local header: bounds,
/// names (unique, UTF-8), methods, sizes against each other, members before the
/// directory and not overlapping. Returns the members in directory order.
std::vector<ZipMember> read_zip(Bytes file, const Source& src);

/// Most bytes deflate can produce from `compressed` bytes (its best ratio is 1032:1); a
/// member declaring more is refused before anything is allocated for it.
uint64_t max_inflated_size(uint64_t compressed);

/// Writes the member's m.size bytes to `out` (inflating a deflated one) and checks the
/// size and CRC-32 against the directory's.
void extract_member(Bytes file, const ZipMember& m, uint8_t* out, const Source& src);
/// A stored member's bytes inside `file`, after checking their CRC-32.
Bytes stored_member(Bytes file, const ZipMember& m, const Source& src);

/// Streams members into an AtomicWriter: begin(), write()* , end() per member, then finish().
class ZipWriter {
 public:
  ZipWriter(AtomicWriter& out, const Source& src);
  ~ZipWriter();
  /// `size` (the uncompressed bytes to follow) is checked against the 4 GiB limit up front.
  void begin(std::string name, bool deflate, uint64_t size);
  void write(const void* data, size_t n);
  void end();
  /// Writes the central directory and the end record.
  void finish();

 private:
  struct Deflater;
  struct Entry {
    std::string name;
    uint16_t method;
    uint32_t crc;
    uint64_t compressed_size, size, offset;
  };
  void put_compressed(const void* data, size_t n);
  AtomicWriter& out_;
  Source src_;
  std::vector<Entry> entries_;
  std::unique_ptr<Deflater> deflater_;
  uint64_t written_ = 0;  // uncompressed bytes of the current member
};

}  // namespace ember::io::detail
