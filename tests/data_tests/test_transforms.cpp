// Transforms against hand computations: to_tensor, normalize, random crop (with each padding
// mode), random horizontal flip, Compose; draws per image and per batch.

#include "data_test_util.hpp"

#include <cmath>
#include <set>

namespace test_transforms {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using data_test::values;

namespace {
/// A u8 tensor of `shape` with element i = (i * 37 + 11) % 256 (covers 0..255 unevenly).
Tensor u8_pattern(const Shape& shape) {
  Tensor t = empty(shape, TensorOptions(DType::U8));
  auto* p = t.data_ptr<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return t;
}
Tensor f32_from(std::vector<float> v, const Shape& shape) {
  return from_blob(v.data(), shape, TensorOptions(DType::F32)).clone();
}
}  // namespace

TEST_CASE("transforms: to_tensor maps u8 HWC/CHW/HW to f32 CHW v/255") {
  Tensor hwc = u8_pattern({2, 3, 4});  // H=2, W=3, C=4
  Tensor t = data::to_tensor(hwc);
  CHECK(t.dtype() == DType::F32);
  REQUIRE(t.sizes() == Shape{4, 2, 3});
  auto in = hwc.accessor<uint8_t, 3>();
  auto out = t.accessor<float, 3>();
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t w = 0; w < 3; ++w) CHECK(out[c][h][w] == static_cast<float>(in[h][w][c]) / 255.0f);

  Tensor chw = u8_pattern({4, 2, 3});
  Tensor t2 = data::to_tensor(chw, data::ImageLayout::CHW);
  REQUIRE(t2.sizes() == Shape{4, 2, 3});
  std::vector<double> v2 = values(t2);
  for (int64_t i = 0; i < chw.numel(); ++i)
    CHECK(v2[static_cast<size_t>(i)] == static_cast<float>(chw.data_ptr<uint8_t>()[i]) / 255.0f);

  Tensor hw = u8_pattern({2, 3});
  CHECK(data::to_tensor(hw).sizes() == Shape{1, 2, 3});
  CHECK(values(data::to_tensor(hw)) == values(data::to_tensor(hw.unsqueeze(0), data::ImageLayout::CHW)));
  // 0 and 255 map to exactly 0 and 1.
  Tensor ends = from_blob(std::vector<uint8_t>{0, 255}.data(), {1, 2}, TensorOptions(DType::U8)).clone();
  CHECK(values(data::to_tensor(ends)) == std::vector<double>{0.0, 1.0});

  // A batch [N, H, W, C] -> [N, C, H, W], image by image as above.
  Tensor batch = u8_pattern({2, 2, 3, 4});
  Tensor tb = data::to_tensor(batch);
  REQUIRE(tb.sizes() == Shape{2, 4, 2, 3});
  CHECK(data_test::same_bits(tb.select(0, 1), data::to_tensor(batch.select(0, 1))));

  using data_test::error_of;
  CHECK_ERROR(data::to_tensor(zeros({2, 2, 3})), "[to_tensor]", "u8", "f32");
  CHECK_ERROR(data::to_tensor(u8_pattern({4})), "[to_tensor]", "[4]");
}

TEST_CASE("transforms: normalize per channel, as (x - mean) / std in the input's dtype") {
  std::vector<float> v{0.0f, 0.5f, 1.0f, 0.25f, 0.1f, 0.2f, 0.3f, 0.9f};
  Tensor x = f32_from(v, {2, 2, 2});
  Tensor y = data::normalize(x, {0.5, 0.25}, {0.5, 2.0});
  std::vector<double> got = values(y);
  for (size_t i = 0; i < v.size(); ++i) {
    float m = i < 4 ? 0.5f : 0.25f, s = i < 4 ? 0.5f : 2.0f;
    CHECK(got[i] == doctest::Approx((v[i] - m) / s).epsilon(1e-6));
  }
  // One value serves every channel; a batch normalizes each image the same way.
  CHECK(values(data::normalize(x, {0.5}, {0.5})) == values(data::normalize(x, {0.5, 0.5}, {0.5, 0.5})));
  Tensor b = x.unsqueeze(0).expand({3, 2, 2, 2});
  Tensor nb = data::normalize(b, {0.5, 0.25}, {0.5, 2.0});
  CHECK(nb.sizes() == Shape{3, 2, 2, 2});
  CHECK(values(nb.select(0, 2)) == got);
  data::Normalize functor({0.5, 0.25}, {0.5, 2.0});
  CHECK(values(functor(x)) == got);
  // f64 stays f64.
  CHECK(data::normalize(x.to(DType::F64), {0.5}, {2.0}).dtype() == DType::F64);

  using data_test::error_of;
  CHECK_ERROR(data::normalize(x, {0.1, 0.2, 0.3}, {1, 1, 1}), "[normalize]", "mean", "3 values", "2 channels");
  CHECK_ERROR(data::normalize(x, {0.1, 0.2}, {1, 0}), "[normalize]", "std", "channel 1");
  CHECK_ERROR(data::normalize(u8_pattern({2, 2, 2}), {0}, {1}), "[normalize]", "u8", "to_tensor");
  CHECK_ERROR(data::normalize(zeros({2, 2}), {0}, {1}), "[normalize]", "[2, 2]");
  CHECK_ERROR(data::Normalize({0.1, 0.2}, {1, 2, 3}), "[Normalize]", "2 values", "3 values");
}

TEST_CASE("transforms: random crop cuts the padded image at offsets drawn top then left") {
  // [1, 3, 3] image 1..9; zero padding 1 -> a 5x5 image; a 3x3 crop has 9 possible offsets.
  Tensor img = f32_from({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3});
  auto padded_at = [](int64_t r, int64_t c) -> double {
    return (r >= 1 && r <= 3 && c >= 1 && c <= 3) ? static_cast<double>((r - 1) * 3 + c) : 0.0;
  };
  std::set<std::pair<int64_t, int64_t>> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    data::Generator g(seed), replay(seed);
    Tensor out = data::random_crop(img, 3, 3, 1, g);
    CHECK(g.draws() == 2);
    int64_t top = replay.randint(0, 3), left = replay.randint(0, 3);
    seen.insert({top, left});
    REQUIRE(out.sizes() == Shape{1, 3, 3});
    std::vector<double> got = values(out);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 3; ++c) CHECK(got[static_cast<size_t>(r * 3 + c)] == padded_at(top + r, left + c));
  }
  CHECK(seen.size() == 9);  // every offset occurs

  // Full size without padding: the image itself, still two draws.
  data::Generator g0(3);
  CHECK(values(data::random_crop(img, 3, 3, 0, g0)) == values(img));
  CHECK(g0.draws() == 2);

  // Constant fill and reflect padding, checked on a 2x3 image: rows [1 2 3], [4 5 6].
  Tensor small = f32_from({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  // Reflect by 1: rows [5 4 5 6 5], [2 1 2 3 2], [5 4 5 6 5], [2 1 2 3 2].
  const double reflect[4][5] = {{5, 4, 5, 6, 5}, {2, 1, 2, 3, 2}, {5, 4, 5, 6, 5}, {2, 1, 2, 3, 2}};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    data::Generator g(seed), replay(seed);
    std::vector<double> got = values(data::random_crop(small, 2, 3, 1, g, "reflect"));
    int64_t top = replay.randint(0, 3), left = replay.randint(0, 3);
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 3; ++c) CHECK(got[static_cast<size_t>(r * 3 + c)] == reflect[top + r][left + c]);
    data::Generator gf(seed);
    std::vector<double> filled = values(data::random_crop(small, 4, 5, 1, gf, "constant", 7.0));
    CHECK(filled[0] == 7.0);               // corner of the border
    CHECK(filled[1 * 5 + 1] == 1.0);       // the image starts at (1, 1)
    CHECK(filled[2 * 5 + 3] == 6.0);
  }

  // A batch: each image draws in turn (sample 0's top and left, then sample 1's).
  Tensor batch = stack(std::vector<Tensor>{img, img * 10});
  data::Generator gb(5), replay(5);
  Tensor ob = data::random_crop(batch, 2, 2, 1, gb);
  REQUIRE(ob.sizes() == Shape{2, 1, 2, 2});
  CHECK(gb.draws() == 4);
  for (int64_t n = 0; n < 2; ++n) {
    int64_t top = replay.randint(0, 4), left = replay.randint(0, 4);
    std::vector<double> got = values(ob.select(0, n));
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 2; ++c)
        CHECK(got[static_cast<size_t>(r * 2 + c)] == padded_at(top + r, left + c) * (n == 0 ? 1 : 10));
  }

  using data_test::error_of;
  data::Generator g(0);
  CHECK_ERROR(data::random_crop(img, 6, 6, 1, g), "[random_crop]", "6x6", "5x5", "padding 1");
  CHECK_ERROR(data::RandomCrop(3, 1, "mirror"), "[RandomCrop]", "mirror");
  CHECK_ERROR(data::RandomCrop(0), "[RandomCrop]", "0x0");
}

TEST_CASE("transforms: random horizontal flip mirrors W with probability p, one draw each") {
  Tensor img = f32_from({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  data::Generator g(1);
  CHECK(values(data::random_horizontal_flip(img, 1.0, g)) == std::vector<double>{3, 2, 1, 6, 5, 4});
  CHECK(values(data::random_horizontal_flip(img, 0.0, g)) == values(img));
  CHECK(g.draws() == 2);  // a draw even when p decides alone
  int flipped = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    data::Generator gs(seed), replay(seed);
    bool did = values(data::random_horizontal_flip(img, 0.5, gs))[0] == 3;
    CHECK(did == (replay.uniform() < 0.5));
    flipped += did;
  }
  CHECK(flipped > 400);  // 1000 fair coins: 500 +- 16 (sd); 400 is 6 sd out
  CHECK(flipped < 600);
  // Batch: image n flips by draw n.
  Tensor batch = stack(std::vector<Tensor>{img, img, img, img});
  data::Generator gb(9), replay(9);
  Tensor fb = data::random_horizontal_flip(batch, 0.5, gb);
  for (int64_t n = 0; n < 4; ++n)
    CHECK((values(fb.select(0, n))[0] == 3) == (replay.uniform() < 0.5));
  using data_test::error_of;
  CHECK_ERROR(data::random_horizontal_flip(img, 1.5, g), "[random_horizontal_flip]", "1.5");
}

TEST_CASE("transforms: Compose applies in order from one generator") {
  Tensor img = u8_pattern({6, 6, 3});
  data::Compose c(data::ToTensor(), data::RandomCrop(4, 2), data::RandomHorizontalFlip(),
                  data::Normalize({0.5, 0.4, 0.3}, {0.2, 0.2, 0.2}));
  CHECK(c.size() == 4);
  data::Generator g(17), h(17);
  Tensor got = c(img, g);
  Tensor manual = data::to_tensor(img);
  manual = data::random_crop(manual, 4, 4, 2, h);
  manual = data::random_horizontal_flip(manual, 0.5, h);
  manual = data::normalize(manual, {0.5, 0.4, 0.3}, {0.2, 0.2, 0.2});
  CHECK(got.sizes() == Shape{3, 4, 4});
  CHECK(data_test::same_bits(got, manual));
  CHECK(g.draws() == 3);
}

}  // namespace test_transforms
