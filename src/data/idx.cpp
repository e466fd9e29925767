// IDX files (MNIST, Fashion-MNIST), raw or gzip-compressed: include/ember/data/mnist.hpp.

#include <ember/data/mnist.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace ember::data {
namespace {

bool is_gzip(const std::vector<unsigned char>& b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

constexpr size_t kUnknown = std::numeric_limits<size_t>::max();

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

/// An IDX element type code's Ember dtype and its bytes per element in the file (i16 widens to
/// i32); false for a code IDX does not define.
bool idx_element(unsigned char code, DType& dtype, int& size) {
  switch (code) {
    case 0x08: dtype = DType::U8, size = 1; return true;
    case 0x09: dtype = DType::I8, size = 1; return true;
    case 0x0B: dtype = DType::I32, size = 2; return true;
    case 0x0C: dtype = DType::I32, size = 4; return true;
    case 0x0D: dtype = DType::F32, size = 4; return true;
    case 0x0E: dtype = DType::F64, size = 8; return true;
    default: return false;
  }
}

/// The size of the whole IDX file that the first bytes `b` declare (header and data), as far
/// as they go: kUnknown until the header is complete; when the header is not one parse_idx
/// accepts, a size the bytes read so far already reach (parse_idx reports the header).
/// Reading and inflating stop one byte past this size, so a wrong size fails without the rest
/// being read or inflated: a gzip file inflates up to ~1000x (a 2 MB file to 2 GiB), and a
/// raw read of /dev/zero or a FIFO would not end.
size_t declared_size(const std::vector<unsigned char>& b) {
  if (b.size() < 4) return kUnknown;
  DType dtype;
  int elem = 0;
  const int rank = b[3];
  if (!idx_element(b[2], dtype, elem) || b[0] != 0 || b[1] != 0 || rank < 1 || rank > EMBER_MAX_INLINE_DIMS) return 4;
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (b.size() < header) return kUnknown;
  size_t n = 1;
  for (int d = 0; d < rank; ++d) {
    const size_t dim = be32(b.data() + 4 + 4 * d);
    if (dim == 0) return header;
    if (n > (size_t{1} << 40) / dim) return header;  // parse_idx reports the overflow
    n *= dim;
  }
  return header + n * static_cast<size_t>(elem);
}

/// Reads the file whole, or, when it is not gzip-compressed, up to one byte past the size its
/// IDX header declares (parse_idx then reports the trailing bytes).
std::vector<unsigned char> read_idx_file(const std::string& path, const char* op) {
  std::error_code ec;  // reading a directory through a filebuf throws std::ios_base::failure
  EMBER_CHECK(!std::filesystem::is_directory(path, ec), "[{}] '{}': is a directory", op, path);
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "[{}] '{}': cannot open the file", op, path);
  std::vector<unsigned char> bytes;
  size_t chunk = size_t{1} << 16;
  for (;;) {
    size_t want = chunk;
    if (bytes.size() >= 2 && !is_gzip(bytes)) {
      const size_t bound = declared_size(bytes);
      if (bound != kUnknown) {
        if (bytes.size() > bound) break;
        want = std::min(want, bound + 1 - bytes.size());
      }
    }
    const size_t before = bytes.size();
    bytes.resize(before + want);
    f.read(reinterpret_cast<char*>(bytes.data() + before), static_cast<std::streamsize>(want));
    bytes.resize(before + static_cast<size_t>(f.gcount()));
    if (!f) break;
    chunk = std::min<size_t>(chunk * 2, size_t{1} << 28);
  }
  EMBER_CHECK(!f.bad(), "[{}] '{}': read error", op, path);
  return bytes;
}

/// Inflates a gzip file (one or more concatenated members, as gzip allows), stopping one byte
/// past the size the inflated IDX header declares.
std::vector<unsigned char> gunzip(const std::vector<unsigned char>& in, const std::string& path, const char* op) {
  EMBER_CHECK(in.size() <= std::numeric_limits<uInt>::max(), "[{}] '{}': gzip: file too large ({} bytes)", op, path,
              in.size());
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip wrapper (header and CRC-32 trailer, both checked by zlib).
  EMBER_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, "[{}] '{}': gzip: cannot initialise zlib", op, path);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  std::vector<unsigned char> out;
  // MNIST compresses about 4:1; later chunks keep the same size (resize grows geometrically).
  size_t chunk = std::min<size_t>(std::max<size_t>(in.size() * 4, size_t{1} << 16), size_t{1} << 30);
  int rc = Z_OK;
  for (;;) {
    const size_t bound = declared_size(out);
    if (bound != kUnknown && out.size() > bound) break;  // parse_idx reports the trailing bytes
    size_t before = out.size();
    // Until the header is out, a small first step (it fits in the first 64 KiB).
    const size_t want =
        bound == kUnknown ? std::min<size_t>(chunk, size_t{1} << 16) : std::min(chunk, bound + 1 - before);
    out.resize(before + want);
    zs.next_out = out.data() + before;
    zs.avail_out = static_cast<uInt>(want);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(before + want - zs.avail_out);
    if (rc == Z_STREAM_END) {
      // Zero bytes after a member are padding (tape blocks; Python's gzip and GNU gzip skip
      // them), not the start of another member.
      while (zs.avail_in > 0 && *zs.next_in == 0) ++zs.next_in, --zs.avail_in;
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // input used up before the end of the stream
    std::string msg = zs.msg ? zs.msg : "zlib error " + std::to_string(rc);
    inflateEnd(&zs);
    EMBER_FAIL("[{}] '{}': gzip: corrupt compressed data ({})", op, path, msg);
  }
  inflateEnd(&zs);
  EMBER_CHECK(rc == Z_STREAM_END || out.size() > declared_size(out),
              "[{}] '{}': gzip: the compressed stream ends early, after {} bytes of output (truncated file?)", op, path,
              out.size());
  return out;
}

/// Copies n big-endian elements of `size` bytes into host order.
void copy_big_endian(unsigned char* dst, const unsigned char* src, int64_t n, int size) {
  if (size == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < size; ++k) dst[i * size + k] = src[i * size + (size - 1 - k)];
}

Tensor parse_idx(const std::vector<unsigned char>& b, const std::string& path) {
  constexpr const char* op = "read_idx";
  EMBER_CHECK(b.size() >= 4, "[{}] '{}': magic: the file has {} bytes; an IDX file starts with a 4-byte magic", op,
              path, b.size());
  EMBER_CHECK(b[0] == 0 && b[1] == 0,
              "[{}] '{}': magic: the first two bytes must be 0, got 0x{:02x} 0x{:02x} (not an IDX file)", op, path,
              b[0], b[1]);
  DType dtype;
  int size;  // bytes per element in the file
  EMBER_CHECK(idx_element(b[2], dtype, size),
              "[{}] '{}': type: unknown element type code 0x{:02x} (IDX defines 0x08 u8, 0x09 i8, 0x0B i16, "
              "0x0C i32, 0x0D f32, 0x0E f64)", op, path, b[2]);
  int rank = b[3];
  EMBER_CHECK(rank >= 1 && rank <= EMBER_MAX_INLINE_DIMS, "[{}] '{}': rank: {} dimensions; expected 1 to {}", op, path,
              rank, EMBER_MAX_INLINE_DIMS);
  size_t header = 4 + 4 * static_cast<size_t>(rank);
  EMBER_CHECK(b.size() >= header, "[{}] '{}': dims: {} dimensions need a {}-byte header, the file has {} bytes", op,
              path, rank, header, b.size());
  Shape shape;
  bool empty_tensor = false;
  for (int d = 0; d < rank; ++d) {
    shape.push_back(static_cast<int64_t>(be32(b.data() + 4 + 4 * d)));
    empty_tensor |= shape.back() == 0;
  }
  int64_t n = empty_tensor ? 0 : 1;
  for (int d = 0; d < rank && !empty_tensor; ++d) {
    // Bounded by the file size below; this only keeps the product from overflowing first
    // (whatever the order of the dims: a zero anywhere makes the tensor empty).
    EMBER_CHECK(n <= (int64_t{1} << 40) / shape[d], "[{}] '{}': dim {}: {} makes the element count overflow", op,
                path, d, shape[d]);
    n *= shape[d];
  }
  auto expected = static_cast<size_t>(n) * static_cast<size_t>(size);
  size_t have = b.size() - header;
  // (Reading stopped one byte past the declared size: a longer file's length is not known.)
  EMBER_CHECK(have == expected,
              "[{}] '{}': data: dims {} of {}-byte elements need {} bytes after the header, the file has {}", op,
              path, shape, size, expected,
              have < expected ? fmt::format("{} (truncated)", have) : std::string("more (trailing bytes)"));
  Tensor t = empty(shape, TensorOptions(dtype));
  if (b[2] == 0x0B) {  // i16 widened to i32
    auto* dst = t.data_ptr<int32_t>();
    const unsigned char* src = b.data() + header;
    for (int64_t i = 0; i < n; ++i)
      dst[i] = static_cast<int16_t>(static_cast<uint16_t>((src[2 * i] << 8) | src[2 * i + 1]));
  } else {
    copy_big_endian(static_cast<unsigned char*>(t.raw_data()), b.data() + header, n, size);
  }
  return t;
}

std::string existing(const std::string& base) {
  for (const std::string& candidate : {base, base + ".gz"}) {
    std::error_code ec;
    if (std::filesystem::is_directory(candidate, ec)) continue;
    std::ifstream f(candidate, std::ios::binary);
    if (f.good()) return candidate;
  }
  EMBER_FAIL("[load_mnist] neither '{}' nor '{}.gz' can be opened", base, base);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  std::vector<unsigned char> bytes = read_idx_file(path, "read_idx");
  if (is_gzip(bytes)) bytes = gunzip(bytes, path, "read_idx");
  return parse_idx(bytes, path);
}

MnistData read_mnist(const std::string& images_path, const std::string& labels_path) {
  Tensor images = read_idx(images_path);
  EMBER_CHECK(images.dtype() == DType::U8, "[read_mnist] '{}': type: images must be u8 (code 0x08), got {}",
              images_path, images.dtype());
  EMBER_CHECK(images.dim() == 3, "[read_mnist] '{}': rank: images must have 3 dims [N, rows, cols], got shape {}",
              images_path, images.sizes());
  Tensor labels = read_idx(labels_path);
  EMBER_CHECK(labels.dtype() == DType::U8, "[read_mnist] '{}': type: labels must be u8 (code 0x08), got {}",
              labels_path, labels.dtype());
  EMBER_CHECK(labels.dim() == 1, "[read_mnist] '{}': rank: labels must have 1 dim [N], got shape {}", labels_path,
              labels.sizes());
  EMBER_CHECK(labels.size(0) == images.size(0),
              "[read_mnist] '{}': dim 0: {} labels, but '{}' holds {} images", labels_path, labels.size(0),
              images_path, images.size(0));
  return {images, labels.to(DType::I64)};
}

MnistData load_mnist(const std::string& root, bool train) {
  std::string prefix = root + "/" + (train ? "train" : "t10k");
  std::string images = existing(prefix + "-images-idx3-ubyte");  // named first, so reported first
  std::string labels = existing(prefix + "-labels-idx1-ubyte");
  return read_mnist(images, labels);
}

}  // namespace ember::data
