// Writing zip archives: see zip.hpp. The output is deterministic (fixed 1980-01-01
// timestamps, as numpy writes them) so that saving the same tensors twice gives the same bytes.

#include "zip.hpp"

#include "text.hpp"

#include <ember/core/error.hpp>

#include <algorithm>
#include <climits>
#include <zlib.h>

namespace ember::io::detail {
namespace {
constexpr uint64_t kMax32 = 0xFFFFFFFF;  // this value and above need zip64
constexpr uint16_t kDosDate = (1 << 5) | 1;  // 1980-01-01
constexpr uint16_t kUtf8Flag = 1 << 11;
constexpr size_t kChunk = size_t{1} << 20;

bool ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}
}  // namespace

struct ZipWriter::Deflater {
  z_stream zs{};
  std::vector<uint8_t> out = std::vector<uint8_t>(kChunk);
  ~Deflater() { deflateEnd(&zs); }
};

ZipWriter::ZipWriter(AtomicWriter& out, const Source& src) : out_(out), src_(src) {}
ZipWriter::~ZipWriter() = default;

void ZipWriter::begin(std::string name, bool deflate, uint64_t size) {
  const std::string pre = src_.prefix(), what = "member " + quoted(name);
  EMBER_CHECK(entries_.size() < 0xFFFF, "{}more than 65534 members need zip64, which Ember does not write", pre);
  EMBER_CHECK(name.size() <= 0xFFFF, "{}{}: the name is longer than 65535 bytes", pre, what);
  EMBER_CHECK(size < kMax32, "{}{} is {} bytes; members of 4 GiB or more need zip64, which Ember does not write (save "
              "it with save_npy or save_safetensors)", pre, what, size);
  EMBER_CHECK(out_.offset() < kMax32, "{}{} would start at byte {}; archives over 4 GiB need zip64, which Ember does "
              "not write", pre, what, out_.offset());
  entries_.push_back({std::move(name), static_cast<uint16_t>(deflate ? 8 : 0), 0, 0, 0, out_.offset()});
  const Entry& e = entries_.back();
  std::string h;
  put_le32(h, 0x04034b50);
  put_le16(h, 20);  // version needed: 2.0 (deflate)
  put_le16(h, ascii(e.name) ? 0 : kUtf8Flag);
  put_le16(h, e.method);
  put_le16(h, 0);  // time 00:00
  put_le16(h, kDosDate);
  put_le32(h, 0);  // crc and sizes: patched by end()
  put_le32(h, 0);
  put_le32(h, 0);
  put_le16(h, static_cast<uint16_t>(e.name.size()));
  put_le16(h, 0);  // no extra field
  h += e.name;
  out_.write(h.data(), h.size());
  written_ = 0;
  if (deflate) {
    deflater_ = std::make_unique<Deflater>();
    // Raw deflate (no zlib header), what zip members hold; level and memLevel as Python's zipfile.
    int rc = deflateInit2(&deflater_->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    EMBER_CHECK(rc == Z_OK, "{}{}: cannot start zlib's deflate", pre, what);
  }
}

void ZipWriter::put_compressed(const void* data, size_t n) {
  Entry& e = entries_.back();
  e.compressed_size += n;
  EMBER_CHECK(e.compressed_size < kMax32, "{}member {} compresses to 4 GiB or more, which needs zip64", src_.prefix(),
              quoted(e.name));
  out_.write(data, n);
}

void ZipWriter::write(const void* data, size_t n) {
  Entry& e = entries_.back();
  const uint8_t* p = static_cast<const uint8_t*>(data);
  written_ += n;
  e.crc = static_cast<uint32_t>(crc32_z(e.crc, p, static_cast<z_size_t>(n)));
  if (!deflater_) return put_compressed(p, n);
  z_stream& zs = deflater_->zs;
  while (n > 0) {
    uInt take = static_cast<uInt>(std::min<size_t>(n, UINT_MAX));
    zs.next_in = const_cast<Bytef*>(p);  // zlib never writes its input
    zs.avail_in = take;
    do {
      zs.next_out = deflater_->out.data();
      zs.avail_out = static_cast<uInt>(deflater_->out.size());
      deflate(&zs, Z_NO_FLUSH);
      put_compressed(deflater_->out.data(), deflater_->out.size() - zs.avail_out);
    } while (zs.avail_in > 0 || zs.avail_out == 0);
    p += take;
    n -= take;
  }
}

void ZipWriter::end() {
  Entry& e = entries_.back();
  if (deflater_) {
    z_stream& zs = deflater_->zs;
    int rc;
    do {
      zs.next_out = deflater_->out.data();
      zs.avail_out = static_cast<uInt>(deflater_->out.size());
      rc = deflate(&zs, Z_FINISH);
      put_compressed(deflater_->out.data(), deflater_->out.size() - zs.avail_out);
    } while (rc == Z_OK);
    EMBER_CHECK(rc == Z_STREAM_END, "{}member {}: zlib's deflate failed ({})", src_.prefix(), quoted(e.name), rc);
    deflater_.reset();
  }
  e.size = written_;
  std::string patch;
  put_le32(patch, e.crc);
  put_le32(patch, static_cast<uint32_t>(e.compressed_size));
  put_le32(patch, static_cast<uint32_t>(e.size));
  out_.write_at(e.offset + 14, patch.data(), patch.size());
}

void ZipWriter::finish() {
  const uint64_t cd_offset = out_.offset();
  EMBER_CHECK(cd_offset < kMax32, "{}the archive reaches 4 GiB, which needs zip64; Ember does not write it",
              src_.prefix());
  std::string cd;
  for (const Entry& e : entries_) {
    put_le32(cd, 0x02014b50);
    put_le16(cd, (3 << 8) | 20);  // made by: Unix, zip 2.0
    put_le16(cd, 20);
    put_le16(cd, ascii(e.name) ? 0 : kUtf8Flag);
    put_le16(cd, e.method);
    put_le16(cd, 0);
    put_le16(cd, kDosDate);
    put_le32(cd, e.crc);
    put_le32(cd, static_cast<uint32_t>(e.compressed_size));
    put_le32(cd, static_cast<uint32_t>(e.size));
    put_le16(cd, static_cast<uint16_t>(e.name.size()));
    put_le16(cd, 0);  // extra
    put_le16(cd, 0);  // comment
    put_le16(cd, 0);  // disk
    put_le16(cd, 0);  // internal attributes
    put_le32(cd, 0644u << 16);  // external: a regular file, rw-r--r--
    put_le32(cd, static_cast<uint32_t>(e.offset));
    cd += e.name;
  }
  const uint64_t cd_size = cd.size();
  EMBER_CHECK(cd_offset + cd_size < kMax32, "{}the archive reaches 4 GiB, which needs zip64; Ember does not write it",
              src_.prefix());
  put_le32(cd, 0x06054b50);
  put_le16(cd, 0);
  put_le16(cd, 0);
  put_le16(cd, static_cast<uint16_t>(entries_.size()));
  put_le16(cd, static_cast<uint16_t>(entries_.size()));
  put_le32(cd, static_cast<uint32_t>(cd_size));
  put_le32(cd, static_cast<uint32_t>(cd_offset));
  put_le16(cd, 0);  // comment length
  out_.write(cd.data(), cd.size());
}

}  // namespace ember::io::detail
