// Reading zip archives: see zip.hpp. Every offset and size read from the file is checked
// against the bytes actually present before it is used.

#include "zip.hpp"

#include "text.hpp"

#include <ember/core/error.hpp>

#include <algorithm>
#include <climits>
#include <numeric>
#include <zlib.h>

namespace ember::io::detail {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kEnd64Size = 56, kLocator64Size = 20;

uint32_t crc_of(const uint8_t* p, uint64_t n) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<uint32_t>(crc32_z(crc, p, static_cast<z_size_t>(n)));
}

std::string member_what(const std::string& name) { return "member " + quoted(name); }

// Applies a zip64 extended-information extra field (id 0x0001): it holds, in this order, the
// 64-bit values of exactly those fields whose 32-bit value is all ones.
void apply_zip64_extra(Bytes extra, ZipMember& m, bool size32_max, bool csize32_max, bool offset32_max,
                       const std::string& pre) {
  size_t p = 0;
  while (p + 4 <= extra.size()) {
    uint16_t id = le16(&extra[p]), len = le16(&extra[p + 2]);
    EMBER_CHECK(p + 4 + len <= extra.size(), "{}{}: extra field 0x{:04x} of {} bytes runs past the extra data", pre,
                member_what(m.name), id, len);
    if (id == 0x0001) {
      size_t q = p + 4, end = p + 4 + len;
      auto take = [&](uint64_t& field, const char* what) {
        EMBER_CHECK(q + 8 <= end, "{}{}: zip64 extra field lacks the {}", pre, member_what(m.name), what);
        field = le64(&extra[q]);
        q += 8;
      };
      if (size32_max) take(m.size, "uncompressed size");
      if (csize32_max) take(m.compressed_size, "compressed size");
      if (offset32_max) take(m.local_offset, "local header offset");
    }
    p += 4 + size_t{len};
  }
  EMBER_CHECK(p == extra.size(), "{}{}: malformed extra field data", pre, member_what(m.name));
}

}  // namespace

uint64_t max_inflated_size(uint64_t compressed) {
  uint64_t n;
  // 1032:1 is deflate's limit (258-byte matches coded in under 2 bits each); the constant
  // covers the block headers of tiny streams.
  return __builtin_mul_overflow(compressed, uint64_t{1032}, &n) ? UINT64_MAX : n + 1024;
}

std::vector<ZipMember> read_zip(Bytes file, const Source& src) {
  const std::string pre = src.prefix();
  const uint64_t size = file.size();
  EMBER_CHECK(size >= kEndSize, "{}file is {} bytes, too short for a zip archive (truncated?)", pre, size);
  // The end record sits at the very end, after a comment of up to 64 KiB.
  uint64_t eocd = UINT64_MAX;
  for (uint64_t p = size - kEndSize + 1; p-- > 0 && size - p <= kEndSize + 0xFFFF;) {
    if (le32(&file[p]) == kEndSig && p + kEndSize + le16(&file[p + 20]) == size) {
      eocd = p;
      break;
    }
  }
  EMBER_CHECK(eocd != UINT64_MAX, "{}not a zip archive: no end of central directory record (truncated?)", pre);
  const uint8_t* e = &file[eocd];
  uint64_t disk = le16(e + 4), cd_disk = le16(e + 6), entries_disk = le16(e + 8), entries = le16(e + 10);
  uint64_t cd_size = le32(e + 12), cd_offset = le32(e + 16);
  uint64_t cd_limit = eocd;  // the directory must end before the end record(s)
  if (eocd >= kLocator64Size && le32(&file[eocd - kLocator64Size]) == kLocator64Sig) {
    const uint8_t* l = &file[eocd - kLocator64Size];
    uint64_t rec = le64(l + 8);
    EMBER_CHECK(le32(l + 4) == 0 && le32(l + 16) == 1, "{}multi-disk zip archives are not supported", pre);
    EMBER_CHECK(rec <= eocd - kLocator64Size && eocd - kLocator64Size - rec >= kEnd64Size,
                "{}zip64 end record offset {} is out of bounds", pre, rec);
    const uint8_t* r = &file[rec];
    EMBER_CHECK(le32(r) == kEnd64Sig, "{}no zip64 end record at offset {}", pre, rec);
    disk = le32(r + 16), cd_disk = le32(r + 20), entries_disk = le64(r + 24), entries = le64(r + 32);
    cd_size = le64(r + 40), cd_offset = le64(r + 48);
    cd_limit = rec;
  }
  EMBER_CHECK(disk == 0 && cd_disk == 0 && entries_disk == entries, "{}multi-disk zip archives are not supported", pre);
  EMBER_CHECK(cd_offset <= cd_limit && cd_size <= cd_limit - cd_offset,
              "{}central directory [{}, +{}) runs past its end record at {}", pre, cd_offset, cd_size, cd_limit);
  EMBER_CHECK(entries <= cd_size / kCentralSize, "{}central directory of {} bytes cannot hold {} entries", pre,
              cd_size, entries);

  std::vector<ZipMember> members;
  members.reserve(entries);
  uint64_t p = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < entries; ++i) {
    EMBER_CHECK(cd_end - p >= kCentralSize, "{}central directory entry {} runs past the directory", pre, i);
    const uint8_t* c = &file[p];
    EMBER_CHECK(le32(c) == kCentralSig, "{}central directory entry {} at offset {} has a bad signature", pre, i, p);
    uint16_t flags = le16(c + 8), nlen = le16(c + 28), xlen = le16(c + 30), clen = le16(c + 32);
    EMBER_CHECK(cd_end - p - kCentralSize >= uint64_t{nlen} + xlen + clen,
                "{}central directory entry {}: name, extra and comment run past the directory", pre, i);
    ZipMember m;
    m.name.assign(reinterpret_cast<const char*>(c + kCentralSize), nlen);
    m.method = le16(c + 10);
    m.crc32 = le32(c + 16);
    m.compressed_size = le32(c + 20);
    m.size = le32(c + 24);
    m.local_offset = le32(c + 42);
    apply_zip64_extra(file.subspan(p + kCentralSize + nlen, xlen), m, m.size == 0xFFFFFFFF,
                      m.compressed_size == 0xFFFFFFFF, m.local_offset == 0xFFFFFFFF, pre);
    const std::string what = member_what(m.name);
    EMBER_CHECK(is_utf8(m.name), "{}{}: the name is not UTF-8", pre, what);
    EMBER_CHECK(le16(c + 34) == 0 || le16(c + 34) == 0xFFFF, "{}multi-disk zip archives are not supported", pre);
    EMBER_CHECK(!(flags & 0x41), "{}{} is encrypted, which Ember does not read", pre, what);
    EMBER_CHECK(m.method == 0 || m.method == 8,
                "{}{} uses compression method {}; Ember reads stored (0) and deflate (8)", pre, what, m.method);
    EMBER_CHECK(m.method != 0 || m.compressed_size == m.size,
                "{}{} is stored, but its compressed size {} differs from its size {}", pre, what, m.compressed_size,
                m.size);

    // The local header: it must be where the directory says and agree with it.
    EMBER_CHECK(m.local_offset <= cd_offset && cd_offset - m.local_offset >= kLocalSize,
                "{}{}: local header offset {} is not before the central directory at {}", pre, what, m.local_offset,
                cd_offset);
    const uint8_t* l = &file[m.local_offset];
    EMBER_CHECK(le32(l) == kLocalSig, "{}{}: no local header at offset {}", pre, what, m.local_offset);
    uint16_t lflags = le16(l + 6), lnlen = le16(l + 26), lxlen = le16(l + 28);
    EMBER_CHECK(le16(l + 8) == m.method, "{}{}: local header says method {}, central directory {}", pre, what,
                le16(l + 8), m.method);
    EMBER_CHECK(cd_offset - m.local_offset - kLocalSize >= uint64_t{lnlen} + lxlen,
                "{}{}: local header runs into the central directory", pre, what);
    EMBER_CHECK(std::string_view(reinterpret_cast<const char*>(l + kLocalSize), lnlen) == m.name,
                "{}{}: local header names it {}", pre, what,
                quoted(std::string_view(reinterpret_cast<const char*>(l + kLocalSize), lnlen)));
    if (!(lflags & 0x08)) {  // without a data descriptor the local header repeats crc and sizes
      uint32_t lcsize = le32(l + 18), lsize = le32(l + 22);
      EMBER_CHECK(le32(l + 14) == m.crc32, "{}{}: local header CRC 0x{:08x} differs from the directory's 0x{:08x}", pre,
                  what, le32(l + 14), m.crc32);
      EMBER_CHECK((lcsize == 0xFFFFFFFF || lcsize == uint32_t(m.compressed_size)) &&
                      (lsize == 0xFFFFFFFF || lsize == uint32_t(m.size)),
                  "{}{}: local header sizes {}/{} differ from the directory's {}/{}", pre, what, lcsize, lsize,
                  m.compressed_size, m.size);
    }
    m.data_offset = m.local_offset + kLocalSize + lnlen + lxlen;
    EMBER_CHECK(m.compressed_size <= cd_offset - m.data_offset,
                "{}{}: its {} bytes at offset {} run into the central directory at {} (truncated?)", pre, what,
                m.compressed_size, m.data_offset, cd_offset);
    members.push_back(std::move(m));
    p += kCentralSize + nlen + xlen + clen;
  }
  EMBER_CHECK(p == cd_end, "{}central directory has {} bytes after its {} entries", pre, cd_end - p, entries);

  // Members may not share bytes: overlapping members are how zip bombs multiply themselves.
  std::vector<size_t> order(members.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return members[a].local_offset < members[b].local_offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const ZipMember &a = members[order[k - 1]], &b = members[order[k]];
    EMBER_CHECK(b.local_offset >= a.data_offset + a.compressed_size, "{}{} and {} overlap", pre,
                member_what(a.name), member_what(b.name));
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return members[a].name < members[b].name; });
  for (size_t k = 1; k < order.size(); ++k)
    EMBER_CHECK(members[order[k]].name != members[order[k - 1]].name, "{}duplicate {}", pre,
                member_what(members[order[k]].name));
  return members;
}

Bytes stored_member(Bytes file, const ZipMember& m, const Source& src) {
  Bytes data = file.subspan(m.data_offset, m.size);
  uint32_t crc = crc_of(data.data(), data.size());
  EMBER_CHECK(crc == m.crc32, "{}{}: CRC-32 mismatch: the directory says 0x{:08x}, the data has 0x{:08x} (corrupt?)",
              src.prefix(), member_what(m.name), m.crc32, crc);
  return data;
}

void extract_member(Bytes file, const ZipMember& m, uint8_t* out, const Source& src) {
  const std::string pre = src.prefix(), what = member_what(m.name);
  if (m.method == 0) {
    Bytes data = stored_member(file, m, src);
    if (!data.empty()) std::memcpy(out, data.data(), data.size());
    return;
  }
  EMBER_CHECK(m.size <= max_inflated_size(m.compressed_size),
              "{}{}: declares {} bytes from {} compressed bytes, more than deflate can produce (a decompression bomb?)",
              pre, what, m.size, m.compressed_size);
  z_stream zs{};
  EMBER_CHECK(inflateInit2(&zs, -MAX_WBITS) == Z_OK, "{}{}: cannot start zlib's inflate", pre, what);
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end_guard{&zs};
  const uint8_t* in = file.data() + m.data_offset;
  uint8_t* const base = out;
  uint64_t in_left = m.compressed_size, out_left = m.size;
  uint8_t probe = 0;
  bool probing = false;
  for (;;) {
    if (zs.avail_in == 0 && in_left > 0) {
      uInt n = static_cast<uInt>(std::min<uint64_t>(in_left, UINT_MAX));
      zs.next_in = const_cast<Bytef*>(in);  // zlib's API is not const-correct; it never writes input
      zs.avail_in = n;
      in += n;
      in_left -= n;
    }
    if (zs.avail_out == 0) {
      if (out_left > 0) {
        uInt n = static_cast<uInt>(std::min<uint64_t>(out_left, UINT_MAX));
        zs.next_out = out;
        zs.avail_out = n;
        out += n;
        out_left -= n;
      } else {
        // All declared bytes are out; one more byte of room shows whether the stream has more.
        EMBER_CHECK(!probing, "{}{}: inflates to more than the declared {} bytes (a decompression bomb?)", pre, what,
                    m.size);
        probing = true;
        zs.next_out = &probe;
        zs.avail_out = 1;
      }
    }
    int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0)
      EMBER_FAIL("{}{}: deflate data ends early (truncated?)", pre, what);
    EMBER_CHECK(rc == Z_OK || rc == Z_BUF_ERROR, "{}{}: corrupt deflate data ({})", pre, what,
                zs.msg ? zs.msg : "zlib error");
  }
  EMBER_CHECK(!(probing && zs.avail_out == 0),
              "{}{}: inflates to more than the declared {} bytes (a decompression bomb?)", pre, what, m.size);
  EMBER_CHECK(zs.total_out == m.size, "{}{}: inflates to {} bytes, but the directory declares {}", pre, what,
              zs.total_out, m.size);
  EMBER_CHECK(zs.avail_in == 0 && in_left == 0, "{}{}: {} bytes follow the end of its deflate stream", pre, what,
              zs.avail_in + in_left);
  uint32_t crc = crc_of(base, m.size);
  EMBER_CHECK(crc == m.crc32, "{}{}: CRC-32 mismatch: the directory says 0x{:08x}, the data has 0x{:08x} (corrupt?)",
              pre, what, m.crc32, crc);
}

}  // namespace ember::io::detail
