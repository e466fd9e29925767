#pragma once
/// libtorch's enum options (torch::kSum, torch::kBilinear, torch::kSame, ...). Ember's options
/// take these choices as strings; each constant converts to its string, so
/// `MSELossOptions().reduction(ember::kSum)` is `.reduction("sum")` and
/// `Conv2dOptions(3, 8, 3).padding(ember::kSame)` is `.padding_str("same")`.

#include <cstddef>
#include <string>
#include <string_view>

namespace ember {

/// The name of one enum choice; converts to std::string wherever an option takes one.
struct EnumName {
  // From a string literal only: `{0}` must not make one (ConvOptions::padding takes both).
  template <size_t N>
  constexpr explicit EnumName(const char (&literal)[N]) : name(literal) {}
  const char* name;
  operator std::string() const { return name; }            // NOLINT: implicit on purpose
  constexpr operator std::string_view() const { return name; }  // NOLINT
  friend bool operator==(const std::string& s, EnumName e) { return s == e.name; }
};

// Reductions of losses.
inline constexpr EnumName kNone{"none"};
inline constexpr EnumName kMean{"mean"};
inline constexpr EnumName kSum{"sum"};
inline constexpr EnumName kBatchMean{"batchmean"};  // KLDivLoss
/// ATen's reduction names, as torch::Reduction::Sum: ember::nll_loss(x, y, {}, Reduction::Sum).
namespace Reduction {
inline constexpr EnumName None{"none"};
inline constexpr EnumName Mean{"mean"};
inline constexpr EnumName Sum{"sum"};
}  // namespace Reduction
// EmbeddingBag modes (with kSum, kMean).
inline constexpr EnumName kMax{"max"};
// Interpolation modes.
inline constexpr EnumName kNearest{"nearest"};
inline constexpr EnumName kBilinear{"bilinear"};
inline constexpr EnumName kLinear{"linear"};
inline constexpr EnumName kBicubic{"bicubic"};
inline constexpr EnumName kTrilinear{"trilinear"};
inline constexpr EnumName kArea{"area"};
inline constexpr EnumName kNearestExact{"nearest-exact"};
// Padding modes.
inline constexpr EnumName kZeros{"zeros"};
inline constexpr EnumName kReflect{"reflect"};
inline constexpr EnumName kReplicate{"replicate"};
inline constexpr EnumName kCircular{"circular"};
inline constexpr EnumName kConstant{"constant"};
// grid_sample's padding modes (besides kZeros).
inline constexpr EnumName kBorder{"border"};
inline constexpr EnumName kReflection{"reflection"};
// Convolution padding by name.
inline constexpr EnumName kSame{"same"};
inline constexpr EnumName kValid{"valid"};
// Activations of recurrent and transformer layers, GELU's approximation.
inline constexpr EnumName kReLU{"relu"};
inline constexpr EnumName kGELU{"gelu"};
inline constexpr EnumName kTanh{"tanh"};
// nn::init's fan modes and nonlinearities (with kLinear, kReLU, kTanh), as libtorch's
// kaiming_normal_(w, 0, torch::kFanOut, torch::kReLU) and calculate_gain(torch::kLeakyReLU, 0.2).
inline constexpr EnumName kFanIn{"fan_in"};
inline constexpr EnumName kFanOut{"fan_out"};
inline constexpr EnumName kLeakyReLU{"leaky_relu"};
inline constexpr EnumName kSigmoid{"sigmoid"};
inline constexpr EnumName kSELU{"selu"};
inline constexpr EnumName kConv1D{"conv1d"};
inline constexpr EnumName kConv2D{"conv2d"};
inline constexpr EnumName kConv3D{"conv3d"};
inline constexpr EnumName kConvTranspose1D{"conv_transpose1d"};
inline constexpr EnumName kConvTranspose2D{"conv_transpose2d"};
inline constexpr EnumName kConvTranspose3D{"conv_transpose3d"};

}  // namespace ember
