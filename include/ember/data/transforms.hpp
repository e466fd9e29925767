#pragma once
/// Image transforms, as functions and as callables for data::map / data::field / Compose.
///
/// Each works on one image ([C, H, W], or [H, W] where noted) or on a batch ([N, C, H, W]):
/// the same callable serves as a per-sample map transform and as a batch transform (see
/// collate_then in data/collate.hpp). On a batch a random transform draws for each sample in
/// turn, n = 0..N-1.
///
/// Random transforms draw from the Generator they are handed, a fixed number of draws per
/// image whatever the outcome (crop: two, flip: one), so in a Compose the transforms after
/// them see the same stream for every outcome. In a DataLoader the generator is the sample's
/// own (Note [Per-sample seeds] in data/generator.hpp).
///
///   auto train = data::map(ds, data::field(0, data::Compose(
///       data::ToTensor(), data::RandomCrop(32, 4), data::RandomHorizontalFlip(),
///       data::Normalize({0.49, 0.48, 0.45}, {0.25, 0.24, 0.26}))));

#include <ember/data/generator.hpp>
#include <ember/ember.hpp>

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::data {

/// Where the channels of a u8 image are: last (HWC: decoded image files, numpy), first, or
/// nowhere (HW: one channel without a channel dim, as MNIST's [N, 28, 28] images).
enum class ImageLayout { HWC, CHW, HW };

/// u8 image -> f32 [C, H, W] with values v / 255 in [0, 1]. Takes [H, W, C] or [C, H, W] as
/// `layout` says, [H, W] (one channel, any layout), or a batch [N, H, W, C] / [N, C, H, W] /
/// (HW) [N, H, W] -> [N, C, H, W]. As HWC, a last dim of more than 4 is refused where the shape
/// says it is a batch of one-channel images (use HW) or a CHW image (use CHW), which a
/// channels-last reading would scramble: when it equals the dim before it ([N, 28, 28]) or
/// the leading dim is 4 or less ([3, 32, 32]).
Tensor to_tensor(const Tensor& image, ImageLayout layout = ImageLayout::HWC);

/// (x - mean[c]) / stddev[c] for each channel c (dim -3) of a floating [C, H, W] or
/// [N, C, H, W] tensor. mean and stddev hold C values, or one value for all channels; a std
/// that is 0 in x's dtype (1e-50 in f32) is refused, as torchvision's.
Tensor normalize(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& stddev);

/// Pads H and W by `padding` on each side (mode: "constant" with `fill`, "reflect",
/// "replicate" or "circular"), then cuts a height x width window at a uniform offset: top =
/// rng.randint(0, Hp - height + 1), then left = rng.randint(0, Wp - width + 1).
///
/// random_crop and random_horizontal_flip work on the last two dims (H, W). A u8 input that
/// looks channels-last (a last dim of at most 4 after a dim of more than 4, like [32, 32, 3])
/// is refused: apply to_tensor first, which moves the channels.
Tensor random_crop(const Tensor& x, int64_t height, int64_t width, int64_t padding, Generator& rng,
                   const std::string& padding_mode = "constant", double fill = 0.0);

/// Mirrors W (the last dim) when rng.uniform() < p.
Tensor random_horizontal_flip(const Tensor& x, double p, Generator& rng);

/// Callable form of to_tensor.
struct ToTensor {
  explicit ToTensor(ImageLayout layout = ImageLayout::HWC) : layout(layout) {}
  Tensor operator()(const Tensor& image) const { return to_tensor(image, layout); }
  ImageLayout layout;
};

/// Callable form of normalize (torchvision's Normalize(mean, std)).
struct Normalize {
  Normalize(std::vector<double> mean, std::vector<double> stddev);
  Tensor operator()(const Tensor& x) const { return normalize(x, mean, stddev); }
  std::vector<double> mean, stddev;
};

/// Callable form of random_crop: a size x size (or height x width) window after padding.
struct RandomCrop {
  explicit RandomCrop(int64_t size, int64_t padding = 0, std::string padding_mode = "constant", double fill = 0.0)
      : RandomCrop(size, size, padding, std::move(padding_mode), fill) {}
  RandomCrop(int64_t height, int64_t width, int64_t padding, std::string padding_mode = "constant",
             double fill = 0.0);
  Tensor operator()(const Tensor& x, Generator& rng) const {
    return random_crop(x, height, width, padding, rng, padding_mode, fill);
  }
  int64_t height, width, padding;
  std::string padding_mode;
  double fill;
};

/// Callable form of random_horizontal_flip.
struct RandomHorizontalFlip {
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& x, Generator& rng) const { return random_horizontal_flip(x, p, rng); }
  double p;
};

/// Tensor transforms applied in order, all drawing from the one generator.
class Compose {
 public:
  using Fn = std::function<Tensor(const Tensor&, Generator&)>;

  /// Each transform takes (const Tensor&) or (const Tensor&, Generator&).
  template <class... T>
  explicit Compose(T... transforms) {
    (fns_.push_back(wrap(std::move(transforms))), ...);
  }
  Tensor operator()(const Tensor& x, Generator& rng) const {
    Tensor y = x;
    for (const auto& f : fns_) y = f(y, rng);
    return y;
  }
  size_t size() const { return fns_.size(); }

 private:
  template <class T>
  static Fn wrap(T t) {
    if constexpr (std::is_invocable_r_v<Tensor, const T&, const Tensor&, Generator&>)
      return Fn(std::move(t));
    else
      return [t = std::move(t)](const Tensor& x, Generator&) { return t(x); };
  }
  std::vector<Fn> fns_;
};

}  // namespace ember::data
