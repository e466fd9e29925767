// Edge cases of the data pipeline found by comparing it with PyTorch/torchvision: ambiguous
// image layouts, repeated samples in one epoch, huge batch sizes, extreme sampler weights,
// normalisation in reduced precision, empty batches, padded gzip files, IDX dims with a zero,
// CSV underflow and delimiters, durations past int64.

#include "data_test_util.hpp"

#include <ember/progress.hpp>

#include <zlib.h>

#include <fstream>
#include <limits>
#include <set>

namespace test_data_edges {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using data_test::values;

namespace {
using Bytes = std::vector<unsigned char>;
Bytes gzip(const Bytes& raw) {
  uLongf cap = compressBound(static_cast<uLong>(raw.size())) + 32;
  Bytes out(cap);
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}
void write_file(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
}  // namespace

TEST_CASE("data edges: to_tensor refuses a channels-last reading of a one-channel batch") {
  // [4, 28, 28] u8 is a batch of MNIST images; read as HWC it was permuted to [28, 4, 28].
  Tensor batch = zeros({4, 28, 28}, DType::U8);
  CHECK_ERROR(data::to_tensor(batch), "[to_tensor]", "ImageLayout::HW");
  CHECK(data::to_tensor(batch, data::ImageLayout::HW).sizes() == Shape{4, 1, 28, 28});
  CHECK(data::to_tensor(batch.select(0, 0), data::ImageLayout::HW).sizes() == Shape{1, 28, 28});
  CHECK_ERROR(data::to_tensor(zeros({2, 4, 28, 28}, DType::U8), data::ImageLayout::HW), "[to_tensor]");
  // A CHW batch read as HWC (the default) is refused too, instead of scrambled.
  CHECK_ERROR(data::to_tensor(zeros({2, 3, 32, 32}, DType::U8)), "[to_tensor]", "CHW");
  CHECK(data::to_tensor(zeros({32, 32, 3}, DType::U8)).sizes() == Shape{3, 32, 32});

  // As a batch transform after Stack, the way the docs describe.
  data::TensorDataset ds({zeros({10, 28, 28}, DType::U8), zeros({10}, DType::I64)});
  data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(4),
                          data::collate_then(data::Stack(), data::field(0, data::ToTensor(data::ImageLayout::HW))));
  for (auto& b : loader) CHECK(b[0].sizes() == Shape{b[0].size(0), 1, 28, 28});
}

TEST_CASE("data edges: crop and flip refuse channels-last u8 images") {
  Tensor hwc = zeros({32, 32, 3}, DType::U8);
  data::Generator g(1);
  CHECK_ERROR(data::random_horizontal_flip(hwc, 0.5, g), "[random_horizontal_flip]", "to_tensor");
  CHECK_ERROR(data::random_crop(hwc, 28, 28, 0, g), "[random_crop]", "to_tensor");
  // CHW u8 images, and small f32 ones of any shape, are fine.
  CHECK(data::random_horizontal_flip(zeros({3, 32, 32}, DType::U8), 0.5, g).sizes() == Shape{3, 32, 32});
  CHECK(data::random_crop(zeros({3, 8, 2}), 4, 2, 0, g).sizes() == Shape{3, 4, 2});
}

TEST_CASE("data edges: a sample drawn twice in an epoch gets its own augmentation") {
  Tensor x = arange(4 * 1 * 8 * 8, DType::F32).view({4, 1, 8, 8});
  auto ds = data::map(data::TensorDataset({x}), data::field(0, data::RandomCrop(4, 2)));
  // Index 0 only, six times: each copy must be cropped at its own offsets.
  auto sampler = std::make_shared<data::WeightedRandomSampler>(std::vector<double>{1, 0, 0, 0}, 6, true, 0);
  for (int64_t workers : {0, 2}) {
    data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(6).num_workers(workers), sampler);
    std::set<std::vector<double>> crops;
    for (auto& b : loader)
      for (int64_t i = 0; i < b[0].size(0); ++i) crops.insert(values(b[0].select(0, i)));
    CHECK(crops.size() >= 4);  // 6 draws of 49 offsets (after padding 2) are almost surely distinct
  }
  // Without repeats the seed is still the sample's own: a sample's augmentation is the same
  // whatever its position in the epoch (what keeps DistributedSampler ranks consistent).
  CHECK(data::detail::repeat_numbers({3, 1, 2, 0}, 4).empty());
  CHECK(data::detail::repeat_numbers({3, 1, 3, 3, 1}, 4) == std::vector<uint32_t>{0, 0, 1, 2, 1});
  CHECK(data::detail::repeat_numbers({7, 1000000000, 7}, 1000000001) == std::vector<uint32_t>{0, 0, 1});
}

TEST_CASE("data edges: a batch size beyond the dataset gives one batch, even a huge one") {
  data::TensorDataset ds({arange(10, DType::F32)});
  data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(std::numeric_limits<int64_t>::max()));
  CHECK(loader.size() == 1);
  int64_t batches = 0;
  for (auto& b : loader) {
    CHECK(b[0].size(0) == 10);
    ++batches;
  }
  CHECK(batches == 1);
}

TEST_CASE("data edges: weighted sampling depends on weight ratios only") {
  // Subnormal weights: each pair of indices must come up, not always the first two.
  data::WeightedRandomSampler tiny({1e-310, 1e-310, 1e-310, 1e-310}, 2, false, 0);
  std::set<std::vector<int64_t>> firsts;
  for (int64_t e = 0; e < 200; ++e) {
    std::vector<int64_t> idx = tiny.indices(e);
    std::sort(idx.begin(), idx.end());
    firsts.insert(idx);
  }
  CHECK(firsts.size() == 6);
  // Weights whose sum overflows: still about a third each.
  data::WeightedRandomSampler huge({1e308, 1e308, 1e308}, 3000, true, 0);
  std::vector<int64_t> counts(3, 0);
  for (int64_t i : huge.indices(0)) ++counts[static_cast<size_t>(i)];
  for (int64_t c : counts) CHECK(c > 800);
}

TEST_CASE("data edges: normalize checks std in the input's dtype; crops of empty batches") {
  CHECK_ERROR(data::normalize(ones({1, 2, 2}), {0.0}, {1e-50}), "[normalize]", "f32");
  CHECK_ERROR(data::normalize(ones({1, 2, 2}).to(DType::F16), {0.0}, {1e-8}), "[normalize]");
  CHECK(values(data::normalize(ones({1, 2, 2}, DType::F64), {0.0}, {1e-50}))[0] == 1e50);

  data::Generator g(2);
  CHECK(data::random_crop(zeros({0, 3, 4, 4}), 6, 6, 1, g).sizes() == Shape{0, 3, 6, 6});
  CHECK(data::random_crop(zeros({0, 3, 4, 4}), 2, 2, 0, g).sizes() == Shape{0, 3, 2, 2});
  CHECK_ERROR(data::random_crop(zeros({3, 4, 4}), 4, 4, 0, g, "bogus"), "[random_crop]", "bogus");
}

TEST_CASE("data edges: gzip padding, IDX dims with a zero anywhere") {
  data_test::TempDir dir;
  Bytes raw{0, 0, 0x08, 1, 0, 0, 0, 3, 7, 8, 9};
  Bytes gz = gzip(raw);
  gz.insert(gz.end(), 16, 0);  // zero padding after the member, as tape blocks leave it
  write_file(dir.file("padded.gz"), gz);
  CHECK(values(data::read_idx(dir.file("padded.gz"))) == std::vector<double>{7, 8, 9});
  gz.push_back(1);  // but other trailing bytes are a (broken) member
  write_file(dir.file("garbage.gz"), gz);
  CHECK_ERROR(data::read_idx(dir.file("garbage.gz")), "[read_idx]", "gzip");

  // The order of the dims does not matter: a zero anywhere is an empty tensor.
  for (auto dims : {std::vector<unsigned char>{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
                    std::vector<unsigned char>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}}) {
    Bytes b{0, 0, 0x08, 3};
    b.insert(b.end(), dims.begin(), dims.end());
    write_file(dir.file("empty.idx"), b);
    CHECK(data::read_idx(dir.file("empty.idx")).numel() == 0);
  }
}

TEST_CASE("data edges: CSV underflow reads as the nearest value; letters cannot delimit") {
  data::CsvTable t = data::parse_csv("1e-50,-1e-50,1e-40\n");
  std::vector<double> v = values(t.values);
  CHECK(v[0] == 0);
  CHECK(v[1] == 0);
  CHECK(std::signbit(v[1]));
  CHECK(v[2] == static_cast<double>(1e-40f));  // a subnormal f32
  data::CsvTable d = data::parse_csv("1e-400,1e-5000\n", data::CsvOptions().dtype(DType::F64));
  CHECK(values(d.values) == std::vector<double>{0, 0});
  CHECK_ERROR(data::parse_csv("1e39\n"), "out of range");
  CHECK_ERROR(data::parse_csv("1e5000\n", data::CsvOptions().dtype(DType::F64)), "out of range");
  CHECK_ERROR(data::parse_csv("1e5e2\n", data::CsvOptions().delimiter('e')), "delimiter");
}

TEST_CASE("data edges: durations too long for a clock") {
  CHECK(format_duration(1e19) == "--:--");
  CHECK(format_duration(3725) == "1:02:05");
}

TEST_CASE("data edges (diff review): weights whose ratio underflows; multispectral HWC") {
  data::WeightedRandomSampler s({1e308, 1e-20}, 2, false, 0);
  std::vector<int64_t> idx = s.indices(0);
  std::sort(idx.begin(), idx.end());
  CHECK(idx == std::vector<int64_t>{0, 1});
  // 13 channels last on a 32 x 16 image: not a one-channel batch, not CHW.
  CHECK(data::to_tensor(zeros({32, 16, 13}, DType::U8)).sizes() == Shape{13, 32, 16});
  CHECK(data::to_tensor(zeros({2, 32, 16, 13}, DType::U8)).sizes() == Shape{2, 13, 32, 16});
  CHECK_ERROR(data::to_tensor(zeros({64, 28, 28}, DType::U8)), "ImageLayout::HW");
  CHECK(data::detail::repeat_numbers({5, -1, 5, 9}, 6) == std::vector<uint32_t>{0, 0, 1, 0});
  CHECK(data::detail::repeat_numbers({5, -1, -1, 1000000}, 1000) .empty());
}

}  // namespace test_data_edges
