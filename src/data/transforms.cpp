// Image transforms (include/ember/data/transforms.hpp), written with Ember ops. Compiled once
// here rather than in every user's build.

#include <ember/data/transforms.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cmath>

namespace ember::data {
namespace {

/// Applies per-image f to each image of a batch [N, ...] (drawing in order n = 0..N-1), or to
/// the single image when x is not a batch.
template <class F>
Tensor per_image(const Tensor& x, bool batch, F&& f) {
  if (!batch) return f(x);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(x.size(0)));
  for (int64_t n = 0; n < x.size(0); ++n) out.push_back(f(x.select(0, n)));
  if (out.empty()) return x;
  return stack(out, 0);
}

void check_image(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dim() >= 2 && x.dim() <= 4,
              "[{}] expects an image [H, W], [C, H, W] or a batch [N, C, H, W], got shape {}", op, x.sizes());
}

}  // namespace

Tensor to_tensor(const Tensor& image, ImageLayout layout) {
  EMBER_CHECK(image.dtype() == DType::U8, "[to_tensor] expects a u8 image, got {} (shape {})", image.dtype(),
              image.sizes());
  check_image(image, "to_tensor");
  Tensor chw = image;
  if (image.dim() == 2) {
    chw = image.unsqueeze(0);
  } else if (layout == ImageLayout::HWC) {
    chw = image.dim() == 3 ? image.permute({2, 0, 1}) : image.permute({0, 3, 1, 2});
  }
  // Divide in f32 as PyTorch's ToTensor does: v / 255 rounded once.
  return chw.to(DType::F32).div(255.0).contiguous();
}

Tensor normalize(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& stddev) {
  EMBER_CHECK(x.is_floating_point(), "[normalize] expects a floating tensor (apply to_tensor first), got {}",
              x.dtype());
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, "[normalize] expects [C, H, W] or [N, C, H, W], got shape {}", x.sizes());
  int64_t c = x.size(-3);
  auto per_channel = [&](const std::vector<double>& v, const char* what) {
    EMBER_CHECK(static_cast<int64_t>(v.size()) == c || v.size() == 1,
                "[normalize] {} has {} values; the input has {} channels (shape {})", what, v.size(), c, x.sizes());
    std::vector<double> full(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) full[static_cast<size_t>(i)] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
    return full;
  };
  std::vector<double> m = per_channel(mean, "mean"), s = per_channel(stddev, "std");
  for (int64_t i = 0; i < c; ++i)
    EMBER_CHECK(s[static_cast<size_t>(i)] != 0 && std::isfinite(s[static_cast<size_t>(i)]),
                "[normalize] std of channel {} is {}; it must be finite and nonzero", i, s[static_cast<size_t>(i)]);
  // clone: from_blob views the local vectors, which must not outlive this call.
  Tensor mt = from_blob(m.data(), {c, 1, 1}, TensorOptions(DType::F64)).clone().to(x.dtype()).to(x.device());
  Tensor st = from_blob(s.data(), {c, 1, 1}, TensorOptions(DType::F64)).clone().to(x.dtype()).to(x.device());
  return x.sub(mt).div(st);
}

Tensor random_crop(const Tensor& x, int64_t height, int64_t width, int64_t padding, Generator& rng,
                   const std::string& padding_mode, double fill) {
  check_image(x, "random_crop");
  EMBER_CHECK(height > 0 && width > 0, "[random_crop] crop size must be positive, got {}x{}", height, width);
  EMBER_CHECK(padding >= 0, "[random_crop] padding must be non-negative, got {}", padding);
  int64_t hp = x.size(-2) + 2 * padding, wp = x.size(-1) + 2 * padding;
  EMBER_CHECK(height <= hp && width <= wp,
              "[random_crop] crop {}x{} is larger than the padded image {}x{} (image {}x{}, padding {})", height, width,
              hp, wp, x.size(-2), x.size(-1), padding);
  return per_image(x, x.dim() == 4, [&](const Tensor& img) {
    int64_t top = rng.randint(0, hp - height + 1);
    int64_t left = rng.randint(0, wp - width + 1);
    Tensor padded = padding > 0 ? pad(img, {padding, padding, padding, padding}, padding_mode, fill) : img;
    return padded.narrow(-2, top, height).narrow(-1, left, width);
  });
}

Tensor random_horizontal_flip(const Tensor& x, double p, Generator& rng) {
  check_image(x, "random_horizontal_flip");
  EMBER_CHECK(p >= 0 && p <= 1, "[random_horizontal_flip] p must be in [0, 1], got {}", p);
  return per_image(x, x.dim() == 4, [&](const Tensor& img) { return rng.uniform() < p ? flip(img, {-1}) : img; });
}

Normalize::Normalize(std::vector<double> mean_, std::vector<double> stddev_)
    : mean(std::move(mean_)), stddev(std::move(stddev_)) {
  // Lengths against the channel count are checked per call (normalize); here only what can
  // never work: no values, or two per-channel lists of different lengths.
  EMBER_CHECK(!mean.empty() && !stddev.empty() &&
                  (mean.size() == stddev.size() || mean.size() == 1 || stddev.size() == 1),
              "[Normalize] mean ({} values) and std ({} values) must be non-empty and of one length", mean.size(),
              stddev.size());
}

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding, std::string padding_mode, double fill)
    : height(height), width(width), padding(padding), padding_mode(std::move(padding_mode)), fill(fill) {
  EMBER_CHECK(height > 0 && width > 0, "[RandomCrop] crop size must be positive, got {}x{}", height, width);
  EMBER_CHECK(padding >= 0, "[RandomCrop] padding must be non-negative, got {}", padding);
  EMBER_CHECK(this->padding_mode == "constant" || this->padding_mode == "reflect" ||
                  this->padding_mode == "replicate" || this->padding_mode == "circular",
              "[RandomCrop] padding_mode must be constant, reflect, replicate or circular, got '{}'",
              this->padding_mode);
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p(p) {
  EMBER_CHECK(p >= 0 && p <= 1, "[RandomHorizontalFlip] p must be in [0, 1], got {}", p);
}

}  // namespace ember::data
