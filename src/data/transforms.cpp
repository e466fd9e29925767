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
  if (out.empty()) return x;  // callers whose output shape differs handle empty batches first
  return stack(out, 0);
}

void check_image(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dim() >= 2 && x.dim() <= 4,
              "[{}] expects an image [H, W], [C, H, W] or a batch [N, C, H, W], got shape {}", op, x.sizes());
}

/// Crop and flip work on the last two dims; a channels-last u8 image ([H, W, C] straight from a
/// decoder) would have its channels flipped or cropped. Refused when the shape says so.
void check_not_channels_last(const Tensor& x, const char* op) {
  EMBER_CHECK(!(x.dtype() == DType::U8 && x.dim() >= 3 && x.size(-1) <= 4 && x.size(-3) > 4),
              "[{}] u8 input of shape {} looks channels-last ([H, W, C]); this transform works on [C, H, W]: "
              "apply to_tensor first (it moves the channels)",
              op, x.sizes());
}

void check_padding_mode(const std::string& mode, const char* op) {
  EMBER_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular",
              "[{}] padding_mode must be constant, reflect, replicate or circular, got '{}'", op, mode);
}

}  // namespace

Tensor to_tensor(const Tensor& image, ImageLayout layout) {
  EMBER_CHECK(image.dtype() == DType::U8, "[to_tensor] expects a u8 image, got {} (shape {})", image.dtype(),
              image.sizes());
  check_image(image, "to_tensor");
  Tensor chw = image;
  if (image.dim() == 2) {
    chw = image.unsqueeze(0);
  } else if (layout == ImageLayout::HW) {
    EMBER_CHECK(image.dim() == 3, "[to_tensor] ImageLayout::HW expects [H, W] or a batch [N, H, W], got shape {}",
                image.sizes());
    chw = image.unsqueeze(1);
  } else if (layout == ImageLayout::HWC) {
    // Shapes that are almost surely not channels-last: more than 4 "channels" where the
    // first dim of an image (or dim 1 of a batch) is a plausible channel count, or equal to
    // the "width" (square one-channel images, [N, 28, 28]). Multispectral HWC images pass.
    const int64_t c = image.size(-1);
    const int64_t lead = image.dim() == 3 ? image.size(0) : image.size(1);
    EMBER_CHECK(c <= 4 || (lead > 4 && c != image.size(-2)),
                "[to_tensor] as HWC, shape {} would have {} channels; for a batch of one-channel images [N, H, W] "
                "pass ImageLayout::HW, for [C, H, W] pass ImageLayout::CHW",
                image.sizes(), c);
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
  // clone: from_blob views the local vectors, which must not outlive this call.
  Tensor mt = from_blob(m.data(), {c, 1, 1}, TensorOptions(DType::F64)).clone().to(x.dtype());
  Tensor st = from_blob(s.data(), {c, 1, 1}, TensorOptions(DType::F64)).clone().to(x.dtype());
  // Checked in x's dtype, as torchvision: 1e-50 is a fine double but 0 in f32.
  Tensor st64 = st.to(DType::F64);
  for (int64_t i = 0; i < c; ++i) {
    double v = st64.data_ptr<double>()[i];
    EMBER_CHECK(v != 0 && std::isfinite(v), "[normalize] std of channel {} is {}, which is {} in {}; it must be finite "
                "and nonzero", i, s[static_cast<size_t>(i)], v, x.dtype());
  }
  return x.sub(mt.to(x.device())).div(st.to(x.device()));
}

Tensor random_crop(const Tensor& x, int64_t height, int64_t width, int64_t padding, Generator& rng,
                   const std::string& padding_mode, double fill) {
  check_image(x, "random_crop");
  check_not_channels_last(x, "random_crop");
  check_padding_mode(padding_mode, "random_crop");
  EMBER_CHECK(height > 0 && width > 0, "[random_crop] crop size must be positive, got {}x{}", height, width);
  EMBER_CHECK(padding >= 0, "[random_crop] padding must be non-negative, got {}", padding);
  int64_t hp = x.size(-2) + 2 * padding, wp = x.size(-1) + 2 * padding;
  EMBER_CHECK(height <= hp && width <= wp,
              "[random_crop] crop {}x{} is larger than the padded image {}x{} (image {}x{}, padding {})", height, width,
              hp, wp, x.size(-2), x.size(-1), padding);
  if (x.dim() == 4 && x.size(0) == 0)
    return empty({0, x.size(1), height, width}, TensorOptions(x.dtype()).device(x.device()));
  return per_image(x, x.dim() == 4, [&](const Tensor& img) {
    int64_t top = rng.randint(0, hp - height + 1);
    int64_t left = rng.randint(0, wp - width + 1);
    Tensor padded = padding > 0 ? pad(img, {padding, padding, padding, padding}, padding_mode, fill) : img;
    return padded.narrow(-2, top, height).narrow(-1, left, width);
  });
}

Tensor random_horizontal_flip(const Tensor& x, double p, Generator& rng) {
  check_image(x, "random_horizontal_flip");
  check_not_channels_last(x, "random_horizontal_flip");
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
  check_padding_mode(this->padding_mode, "RandomCrop");
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p(p) {
  EMBER_CHECK(p >= 0 && p <= 1, "[RandomHorizontalFlip] p must be in [0, 1], got {}", p);
}

}  // namespace ember::data
