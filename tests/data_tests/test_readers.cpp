// IDX (MNIST) files, raw and gzip, written here by hand; malformed ones must fail naming the
// file and the field. CSV parsing and its errors.

#include "data_test_util.hpp"

#include <zlib.h>

#include <cmath>
#include <fstream>

namespace test_readers {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using data_test::values;

namespace {

using Bytes = std::vector<unsigned char>;

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
}
/// An IDX file: magic (0, 0, type, rank), dims, then `payload` as given.
Bytes idx(unsigned char type, std::vector<uint32_t> dims, const Bytes& payload) {
  Bytes b{0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) put_be32(b, d);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}
void write_raw(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
void write_gz(const std::string& path, const Bytes& b) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
  REQUIRE(gzclose(f) == Z_OK);
}
Bytes read_raw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
/// N images of rows x cols with pixel (n, r, c) = n * 50 + r * cols + c, and labels n % 10.
Bytes image_payload(uint32_t n, uint32_t rows, uint32_t cols) {
  Bytes p;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < rows * cols; ++k) p.push_back(static_cast<unsigned char>(i * 50 + k));
  return p;
}
Bytes label_payload(uint32_t n) {
  Bytes p;
  for (uint32_t i = 0; i < n; ++i) p.push_back(static_cast<unsigned char>((i * 7) % 10));
  return p;
}

}  // namespace

TEST_CASE("readers: MNIST from raw and gzip IDX files") {
  data_test::TempDir dir;
  Bytes images = idx(0x08, {3, 4, 5}, image_payload(3, 4, 5)), labels = idx(0x08, {3}, label_payload(3));
  write_raw(dir.file("train-images-idx3-ubyte"), images);
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), labels);
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx(0x08, {2, 4, 5}, image_payload(2, 4, 5)));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx(0x08, {2}, label_payload(2)));
  REQUIRE(read_raw(dir.file("train-labels-idx1-ubyte.gz"))[0] == 0x1f);  // really compressed

  data::MnistData train = data::load_mnist(dir.path(), true);
  CHECK(train.images.dtype() == DType::U8);
  CHECK(train.images.sizes() == Shape{3, 4, 5});
  CHECK(train.labels.dtype() == DType::I64);
  CHECK(values(train.labels) == std::vector<double>{0, 7, 4});
  auto a = train.images.accessor<uint8_t, 3>();
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 5; ++c) CHECK(a[n][r][c] == n * 50 + r * 5 + c);
  data::MnistData test = data::load_mnist(dir.path(), false);
  CHECK(test.images.sizes() == Shape{2, 4, 5});
  CHECK(values(test.labels) == std::vector<double>{0, 7});
  // The same bytes read raw or gzip give the same tensor.
  write_gz(dir.file("images.gz"), images);
  CHECK(data_test::same_bits(data::read_idx(dir.file("images.gz")), train.images));
  // A gzip file of two members (gzip allows concatenation) reads as one stream.
  Bytes head(images.begin(), images.begin() + 20), tail(images.begin() + 20, images.end());
  write_gz(dir.file("part1.gz"), head);
  write_gz(dir.file("part2.gz"), tail);
  Bytes both = read_raw(dir.file("part1.gz")), second = read_raw(dir.file("part2.gz"));
  both.insert(both.end(), second.begin(), second.end());
  write_raw(dir.file("two-members.gz"), both);
  CHECK(data_test::same_bits(data::read_idx(dir.file("two-members.gz")), train.images));
  // And a dataset of it.
  data::TensorDataset ds({train.images, train.labels});
  CHECK(ds.size() == 3);
}

TEST_CASE("readers: IDX element types are read big-endian") {
  data_test::TempDir dir;
  // i32: 1, -2, 0x01020304
  write_raw(dir.file("i32"), idx(0x0C, {3}, {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4}));
  Tensor t = data::read_idx(dir.file("i32"));
  CHECK(t.dtype() == DType::I32);
  CHECK(values(t) == std::vector<double>{1, -2, 0x01020304});
  // f32: 1.5 = 0x3fc00000, -2 = 0xc0000000 (shape [2, 1])
  write_gz(dir.file("f32.gz"), idx(0x0D, {2, 1}, {0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0}));
  Tensor f = data::read_idx(dir.file("f32.gz"));
  CHECK(f.dtype() == DType::F32);
  CHECK(f.sizes() == Shape{2, 1});
  CHECK(values(f) == std::vector<double>{1.5, -2.0});
  // f64: 0.25 = 0x3fd0000000000000
  write_raw(dir.file("f64"), idx(0x0E, {1}, {0x3f, 0xd0, 0, 0, 0, 0, 0, 0}));
  CHECK(values(data::read_idx(dir.file("f64"))) == std::vector<double>{0.25});
  // i16 (widened to i32): -3 = 0xfffd, 258 = 0x0102; i8: -1
  write_raw(dir.file("i16"), idx(0x0B, {2}, {0xff, 0xfd, 0x01, 0x02}));
  Tensor s = data::read_idx(dir.file("i16"));
  CHECK(s.dtype() == DType::I32);
  CHECK(values(s) == std::vector<double>{-3, 258});
  write_raw(dir.file("i8"), idx(0x09, {1}, {0xff}));
  CHECK(values(data::read_idx(dir.file("i8"))) == std::vector<double>{-1});
  // Zero examples is a valid file.
  write_raw(dir.file("empty"), idx(0x08, {0, 28, 28}, {}));
  CHECK(data::read_idx(dir.file("empty")).sizes() == Shape{0, 28, 28});
}

TEST_CASE("readers: malformed IDX files name the file and the field") {
  data_test::TempDir dir;
  using data_test::error_of;
  auto fails = [&](const std::string& name, const Bytes& b, bool gz = false) {
    std::string path = dir.file(name);
    gz ? write_gz(path, b) : write_raw(path, b);
    return error_of([&] { data::read_idx(path); });
  };
  Bytes good = idx(0x08, {2, 2, 2}, image_payload(2, 2, 2));

  Bytes magic = good;
  magic[0] = 0x12;
  std::string e = fails("bad-magic", magic);
  CHECK_MESSAGE(data_test::has(e, "[read_idx]"), e);
  CHECK_MESSAGE(data_test::has(e, "bad-magic"), e);
  CHECK_MESSAGE(data_test::has(e, "magic:"), e);
  CHECK_MESSAGE(data_test::has(e, "0x12"), e);
  CHECK(data_test::has(fails("short", {0, 0}), "magic: the file has 2 bytes"));

  Bytes type = good;
  type[2] = 0x07;
  e = fails("bad-type", type);
  CHECK_MESSAGE(data_test::has(e, "type: unknown element type code 0x07"), e);

  Bytes rank0 = {0, 0, 0x08, 0};
  CHECK(data_test::has(fails("rank0", rank0), "rank: 0 dimensions"));

  Bytes dims = {0, 0, 0x08, 3, 0, 0, 0, 2, 0, 0};  // three dims promised, 1.5 given
  e = fails("short-dims", dims);
  CHECK_MESSAGE(data_test::has(e, "dims: 3 dimensions need a 16-byte header, the file has 10 bytes"), e);

  Bytes truncated(good.begin(), good.end() - 3);
  e = fails("truncated", truncated);
  CHECK_MESSAGE(data_test::has(e, "truncated"), e);
  CHECK_MESSAGE(data_test::has(e, "data: dims [2, 2, 2]"), e);
  CHECK_MESSAGE(data_test::has(e, "need 8 bytes after the header, the file has 5"), e);
  // The same checks apply after decompression.
  e = fails("truncated.gz", truncated, true);
  CHECK_MESSAGE(data_test::has(e, "truncated.gz"), e);
  CHECK_MESSAGE(data_test::has(e, "data: dims [2, 2, 2]"), e);

  Bytes trailing = good;
  trailing.push_back(9);
  e = fails("trailing", trailing);
  CHECK_MESSAGE(data_test::has(e, "need 8 bytes after the header, the file has more (trailing bytes)"), e);
  // A gzip file inflates only to one byte past the size its IDX header declares: here 1 MiB of
  // zeros after a 1-byte tensor, with a damaged CRC at the very end that a whole inflation
  // would reach (a small file must not make the reader inflate gigabytes before failing).
  Bytes bomb = idx(0x08, {1}, {7});
  bomb.resize(bomb.size() + (size_t{1} << 20), 0);
  write_gz(dir.file("bomb.gz"), bomb);
  Bytes bomb_gz = read_raw(dir.file("bomb.gz"));
  bomb_gz[bomb_gz.size() - 5] ^= 0xff;
  e = fails("bomb2.gz", bomb_gz);
  CHECK_MESSAGE(data_test::has(e, "need 1 bytes after the header, the file has more (trailing bytes)"), e);
  // An uncompressed read stops too: /dev/zero (no end) fails at its header's type code 0.
  if (std::filesystem::exists("/dev/zero"))
    CHECK_ERROR(data::read_idx("/dev/zero"), "[read_idx]", "unknown element type code 0x00");

  // Damaged gzip: cut short, and with a corrupted deflate stream.
  write_gz(dir.file("whole.gz"), good);
  Bytes gz = read_raw(dir.file("whole.gz"));
  Bytes cut(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2));
  e = fails("cut.gz", cut);
  CHECK_MESSAGE(data_test::has(e, "cut.gz"), e);
  CHECK_MESSAGE(data_test::has(e, "gzip: the compressed stream ends early"), e);
  Bytes corrupt = gz;
  corrupt[corrupt.size() - 5] ^= 0xff;  // inside the CRC-32 / length trailer
  e = fails("corrupt.gz", corrupt);
  CHECK_MESSAGE(data_test::has(e, "gzip: corrupt compressed data"), e);

  CHECK_ERROR(data::read_idx(dir.file("missing")), "[read_idx]", "missing", "cannot open");

  // MNIST-level checks: ranks, element types, and N across the two files.
  write_raw(dir.file("img"), good);
  write_raw(dir.file("lab3"), idx(0x08, {3}, label_payload(3)));
  write_raw(dir.file("lab2x1"), idx(0x08, {2, 1}, label_payload(2)));
  write_raw(dir.file("img-rank2"), idx(0x08, {2, 4}, image_payload(2, 2, 2)));
  write_raw(dir.file("img-f32"), idx(0x0D, {1, 1, 1}, {0, 0, 0, 0}));
  CHECK_ERROR(data::read_mnist(dir.file("img"), dir.file("lab3")), "[read_mnist]", "lab3", "dim 0", "3 labels",
              "2 images");
  CHECK_ERROR(data::read_mnist(dir.file("img"), dir.file("lab2x1")), "[read_mnist]", "lab2x1", "rank", "[2, 1]");
  CHECK_ERROR(data::read_mnist(dir.file("img-rank2"), dir.file("lab3")), "[read_mnist]", "img-rank2", "rank",
              "[2, 4]");
  CHECK_ERROR(data::read_mnist(dir.file("img-f32"), dir.file("lab3")), "[read_mnist]", "img-f32", "type", "f32");
  CHECK_ERROR(data::load_mnist(dir.path(), true), "[load_mnist]", "train-images-idx3-ubyte", ".gz");
}

TEST_CASE("readers: CSV of numbers") {
  data::CsvTable t = data::parse_csv("1,2,3\n4.5,-6,7e2\n");
  CHECK(t.columns.empty());
  CHECK(t.values.dtype() == DType::F32);
  CHECK(t.values.sizes() == Shape{2, 3});
  CHECK(values(t.values) == std::vector<double>{1, 2, 3, 4.5, -6, 700});

  // Header, another delimiter, spaces, quotes, CRLF, a BOM, blank lines, no final newline.
  data::CsvTable h = data::parse_csv("\xEF\xBB\xBFx; \"y;z\" ;w\r\n\r\n 1 ;\"2\";+3\r\n\n-0.5;nan;-inf",
                                     data::CsvOptions().delimiter(';').header(true));
  CHECK(h.columns == std::vector<std::string>{"x", "y;z", "w"});
  REQUIRE(h.values.sizes() == Shape{2, 3});
  std::vector<double> v = values(h.values);
  CHECK(v[0] == 1);
  CHECK(v[1] == 2);
  CHECK(v[2] == 3);
  CHECK(v[3] == -0.5);
  CHECK(std::isnan(v[4]));
  CHECK(v[5] == -INFINITY);

  // f64 keeps every digit; f32 rounds once, from the text.
  auto tab64 = data::CsvOptions().delimiter('\t').dtype(DType::F64);
  data::CsvTable d = data::parse_csv("0.1\t0.30000000000000004\n", tab64);
  CHECK(d.values.dtype() == DType::F64);
  CHECK(d.values.data_ptr<double>()[0] == 0.1);
  CHECK(d.values.data_ptr<double>()[1] == 0.30000000000000004);
  CHECK(data::parse_csv("0.1").values.data_ptr<float>()[0] == 0.1f);

  // Header only, and nothing at all.
  CHECK(data::parse_csv("a,b\n", data::CsvOptions().header(true)).values.sizes() == Shape{0, 2});
  CHECK(data::parse_csv("").values.sizes() == Shape{0, 0});

  data_test::TempDir dir;
  {
    std::ofstream f(dir.file("m.csv"));
    f << "a,b\n1,2\n3,4\n";
  }
  Tensor m = data::read_csv(dir.file("m.csv"), data::CsvOptions().header(true));
  CHECK(values(m) == std::vector<double>{1, 2, 3, 4});
  CHECK(data::read_csv_table(dir.file("m.csv"), data::CsvOptions().header(true)).columns ==
        std::vector<std::string>{"a", "b"});
}

TEST_CASE("readers: CSV errors name the line and the column") {
  using data_test::error_of;
  CHECK_ERROR(data::parse_csv("1,2\n3,x4\n", {}, "t.csv"), "[parse_csv]", "t.csv", "line 2, column 2", "'x4'",
              "not a number");
  CHECK_ERROR(data::parse_csv("1,2\n\n3\n"), "line 3 has 1 fields, expected 2 as on line 1");
  CHECK_ERROR(data::parse_csv("1,,2\n"), "line 1, column 2: empty field");
  CHECK_ERROR(data::parse_csv("a,b\n1,2\n"), "line 1, column 1", "'a'");  // a header not declared
  CHECK_ERROR(data::parse_csv("1,\"2\n"), "line 1, column 2: unterminated quote");
  CHECK_ERROR(data::parse_csv("1,\"2\"3\n"), "line 1, column 2", "after a quoted field");
  CHECK_ERROR(data::parse_csv("1e999\n"), "line 1, column 1", "out of range for f32");
  CHECK_ERROR(data::parse_csv("1 2\n"), "'1 2'", "not a number");
  CHECK_ERROR(data::parse_csv("1,2", data::CsvOptions().delimiter('.')), "delimiter '.'");
  CHECK_ERROR(data::parse_csv("1", data::CsvOptions().dtype(DType::I32)), "dtype", "i32");
  CHECK_ERROR(data::read_csv("/nonexistent/ember.csv"), "[read_csv]", "/nonexistent/ember.csv", "cannot open");
  data_test::TempDir dir;
  {
    std::ofstream f(dir.file("bad.csv"));
    f << "1,2\n3,4\n5,six\n";
  }
  CHECK_ERROR(data::read_csv(dir.file("bad.csv")), "[read_csv]", "bad.csv", "line 3, column 2", "'six'");
  // A directory is an ember::Error, not a std::ios_base::failure from the stream.
  CHECK_ERROR(data::read_csv(dir.path()), "[read_csv]", "is a directory");
  CHECK_ERROR(data::read_idx(dir.path()), "[read_idx]", "is a directory");
}

TEST_CASE("readers: TSV, where tab is the delimiter and not padding") {
  using data_test::error_of;
  auto tsv = data::CsvOptions().delimiter('\t');
  // Quoted values and header names next to tabs.
  data::CsvTable q = data::parse_csv("\"a\"\t\"b\"\n\"1\"\t 2 \n", data::CsvOptions(tsv).header(true));
  CHECK(q.columns == std::vector<std::string>{"a", "b"});
  CHECK(values(q.values) == std::vector<double>{1, 2});
  // An empty first field is an empty field (it was swallowed as padding), as are a middle one
  // and a line of tabs.
  CHECK_ERROR(data::parse_csv("\t2\t3\n\t5\t6\n", tsv), "line 1, column 1: empty field");
  CHECK_ERROR(data::parse_csv("1\t\t3\n4\t5\t6\n", tsv), "line 1, column 2: empty field");
  CHECK_ERROR(data::parse_csv("1\t2\n\t\n", tsv), "line 2, column 1: empty field");
}

}  // namespace test_readers
