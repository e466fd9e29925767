#pragma once
/// nn::functional for convolution, pooling and normalisation over channels (resampling:
/// functional_resample.hpp).
/// Convolution = im2col + one batched GEMM per group, or for stride-1 convolutions Winograd
/// F(2x2, 3x3) or F(4x4, 3x3) (ops/winograd_ops.hpp) or the direct kernels
/// (ops/direct_conv_ops.hpp); see set_conv_algorithm. Average pooling = im2col + a sum over
/// the window; max pooling = a direct kernel; transposed convolution = GEMM + col2im
/// (ops/conv_ops.hpp). Sizes follow PyTorch.

#include <ember/autograd/grad_mode.hpp>
#include <ember/nn/enums.hpp>
#include <ember/nn/functional.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/conv_ops.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/conv_algorithm.hpp>
#include <ember/ops/depthwise_conv_ops.hpp>
#include <ember/ops/direct_conv_ops.hpp>
#include <ember/ops/norm_ops.hpp>
#include <ember/ops/shape_ops.hpp>
#include <ember/ops/winograd_ops.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::nn::functional {

/// Per-dim integer arguments: one value for all dims, or one per dim. Like libtorch's
/// ExpandingArray, a plain integer converts (Conv2dOptions(3, 8, 5), avg_pool2d(x, 2)), as
/// do braced lists ({3, 5}) and vectors.
struct IntArgs : std::vector<int64_t> {
  IntArgs() = default;
  IntArgs(int64_t v) : std::vector<int64_t>{v} {}  // NOLINT: implicit, as in libtorch
  IntArgs(std::initializer_list<int64_t> v) : std::vector<int64_t>(v) {}
  IntArgs(std::vector<int64_t> v) : std::vector<int64_t>(std::move(v)) {}  // NOLINT
};

/// Output sizes of the adaptive 2-d and 3-d pools: one per spatial dim (or one for all), each
/// a number or std::nullopt for "the input's size in that dim", as libtorch's
/// ExpandingArrayWithOptionalElem: AdaptiveAvgPool2dOptions{std::nullopt, 7}.
struct OptionalIntArgs : std::vector<std::optional<int64_t>> {
  OptionalIntArgs() = default;
  OptionalIntArgs(int64_t v) : std::vector<std::optional<int64_t>>{v} {}  // NOLINT: implicit, as IntArgs
  OptionalIntArgs(std::initializer_list<std::optional<int64_t>> v) : std::vector<std::optional<int64_t>>(v) {}
  OptionalIntArgs(const std::vector<int64_t>& v) {  // NOLINT: IntArgs convert
    for (int64_t x : v) push_back(x);
  }
};

namespace detail {

/// libtorch's convolution padding, as a base of the options that have it: numbers per dim
/// (.padding(1), .padding({1, 2})) or a name (.padding(kSame), .padding(kValid), kept in
/// padding_str). The last call wins.
template <class Derived>
class ConvPaddingArg {
 public:
  Derived& padding(const IntArgs& numbers) & {
    padding_ = numbers, padding_str_.clear();
    return static_cast<Derived&>(*this);
  }
  Derived&& padding(const IntArgs& numbers) && { return std::move(padding(numbers)); }
  Derived& padding(EnumName mode) & {
    const std::string_view name = mode;
    EMBER_CHECK(name == "same" || name == "valid", "[ConvOptions] padding by name is kSame or kValid, got '{}'", name);
    padding_str_ = mode.name;
    return static_cast<Derived&>(*this);
  }
  Derived&& padding(EnumName mode) && { return std::move(padding(mode)); }
  const IntArgs& padding() const noexcept { return padding_; }  // read only: set through the setters
  Derived& padding_str(const std::string& name) & {
    padding_str_ = name;
    return static_cast<Derived&>(*this);
  }
  Derived&& padding_str(const std::string& name) && { return std::move(padding_str(name)); }
  /// "same" or "valid"; empty: the numbers apply.
  const std::string& padding_str() const noexcept { return padding_str_; }

 private:
  IntArgs padding_ = {0};
  std::string padding_str_;
};

inline std::array<int64_t, 3> expand_arg(const IntArgs& v, int nd, const char* op, const char* what) {
  EMBER_CHECK(v.size() == 1 || static_cast<int>(v.size()) == nd, "[{}] {} needs 1 or {} values, got {}", op, what, nd,
              v.size());
  std::array<int64_t, 3> r{1, 1, 1};
  for (int d = 0; d < nd; ++d) r[d] = v.size() == 1 ? v[0] : v[d];
  return r;
}

/// An adaptive pool's output size for input x: 1 or nd entries, each positive or nullopt (the
/// input's size in that spatial dim, the last nd dims of x).
template <class T>
IntArgs resolve_output_size(const OptionalIntArgs& out, const T& x, int nd, const char* op) {
  EMBER_CHECK(out.size() == 1 || static_cast<int>(out.size()) == nd, "[{}] output_size needs 1 or {} values, got {}",
              op, nd, out.size());
  IntArgs r;
  for (int d = 0; d < nd; ++d) {
    const std::optional<int64_t>& v = out.size() == 1 ? out[0] : out[static_cast<size_t>(d)];
    if (v) {
      r.push_back(*v);
    } else {
      EMBER_CHECK(x.dim() >= nd, "[{}] expects at least {} spatial dims, got shape {}", op, nd, x.sizes());
      r.push_back(x.size(x.dim() - nd + d));
    }
  }
  return r;
}

inline ops::ConvGeometry geometry(int nd, const IntArgs& kernel, const IntArgs& stride, const IntArgs& padding,
                                  const IntArgs& dilation, const char* op) {
  ops::ConvGeometry g;
  g.nd = nd;
  g.kernel = expand_arg(kernel, nd, op, "kernel_size");
  g.stride = expand_arg(stride.empty() ? kernel : stride, nd, op, "stride");
  auto pad = expand_arg(padding, nd, op, "padding");
  g.pad_before = pad;
  g.pad_after = pad;
  g.dilation = expand_arg(dilation, nd, op, "dilation");
  ops::check_geometry(g, op);
  return g;
}

template <class P>
BasicTensor<P> im2col(const BasicTensor<P>& x, const ops::ConvGeometry& g) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::Im2Col{g}, x.impl()));
}
template <class P>
BasicTensor<P> col2im(const BasicTensor<P>& cols, const ops::ConvGeometry& g, const std::array<int64_t, 3>& spatial) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::Col2Im{g, spatial}, cols.impl()));
}

/// The result of resizing an input with no elements (an empty batch or no channels; its
/// spatial dims are not empty) to `shape`: empty too, but a view of x, so that autograd still
/// connects them.
template <class P>
BasicTensor<P> resized_empty(const BasicTensor<P>& x, const Shape& shape, int nd) {
  BasicTensor<P> corner = x;
  for (int64_t d = x.dim() - nd; d < x.dim(); ++d) corner = corner.narrow(d, 0, 1);
  return corner.expand(shape).contiguous();
}

/// (N, C, *spatial) input check; an unbatched (C, *spatial) input is given a batch of 1.
template <class P>
BasicTensor<P> batched(const BasicTensor<P>& x, int nd, const char* op, bool& unbatched) {
  unbatched = x.dim() == nd + 1;
  EMBER_CHECK(x.dim() == nd + 2 || unbatched, "[{}] expects a ({}) or (N, C, ...) input with {} spatial dims, got shape {}",
              op, nd == 1 ? "C, L" : nd == 2 ? "C, H, W" : "C, D, H, W", nd, x.sizes());
  return unbatched ? x.unsqueeze(0) : x;
}

/// The Winograd tiling of a 3x3, stride-1 convolution of the (N, C, H, W) input xb, with
/// m x m output tiles.
template <class P>
ops::WinogradTiles winograd_tiles(const BasicTensor<P>& xb, const ops::ConvGeometry& g, int64_t m) {
  ops::WinogradTiles t;
  t.n = xb.size(0), t.h = xb.size(2), t.w = xb.size(3);
  t.pad_top = g.pad_before[0], t.pad_left = g.pad_before[1];
  t.oh = g.out_size(0, t.h), t.ow = g.out_size(1, t.w);
  t.m = m;
  return t;
}

/// The Winograd tile size for `Winograd` and `Auto`: 4x4 where its GEMMs multiply less than
/// 2x2's (tiles x positions: from 7x7 outputs on; 2x2 on a tie, as it rounds less) and the
/// layer has at most 128 x 128 channels. Wider layers stay on 2x2: F(4x4)'s 36 transformed
/// weights and its chunks' tiles no longer fit in cache there (forward + backward, 1 thread,
/// ms, 4x4 / 2x2: 64 -> 64 channels at 14x14 x 64 10.8 / 14.6, 128 at 28x28 x 8 28.3 / 35.2,
/// 256 at 14x14 x 8 49.7 / 42.1, 512 at 28x28 x 2 256 / 147).
template <class P>
int64_t winograd_tile_size(const BasicTensor<P>& xb, const BasicTensor<P>& w, const ops::ConvGeometry& g) {
  const ops::WinogradTiles t2 = winograd_tiles(xb, g, 2), t4 = winograd_tiles(xb, g, 4);
  const bool fewer = t4.tiles_per_sample() * t4.positions() < t2.tiles_per_sample() * t2.positions();
  return fewer && xb.size(1) * w.size(0) <= 128 * 128 ? 4 : 2;
}

/// Which algorithm a convolution runs with (see ConvAlgorithm).
template <class P>
ConvAlgorithm conv_algorithm_for(const BasicTensor<P>& x, const BasicTensor<P>& w, const ops::ConvGeometry& g,
                                 int64_t groups) {
  const ConvAlgorithm a = conv_algorithm();
  if (a == ConvAlgorithm::Im2col || g.nd != 2 || groups != 1 || !x.device().is_cpu()) return ConvAlgorithm::Im2col;
  if ((x.dtype() != DType::F32 && x.dtype() != DType::F64) || x.numel() == 0 || w.numel() == 0)
    return ConvAlgorithm::Im2col;
  for (int d = 0; d < 2; ++d)
    if (g.stride[d] != 1 || g.dilation[d] != 1 || g.out_size(d, x.size(2 + d)) < 1) return ConvAlgorithm::Im2col;
  const bool winograd = g.kernel[0] == 3 && g.kernel[1] == 3, direct = w.numel() / w.size(0) <= 32;
  // Winograd's input transform mixes a tile's pixels with coefficients 0 and +-1: an inf or
  // NaN pixel turns its whole tile's outputs NaN (0 * inf), also those whose windows miss it
  // (56 of 1080 outputs around one inf in an 8-channel 12x12 image). Such inputs take the
  // other paths, where a non-finite pixel reaches only its own windows, as in PyTorch. The
  // check is one sum over the input, taken only where Winograd would run (17 us on the small
  // CNN's 64x32x14x14 input, 0.1% of its step); a finite input whose sum overflows takes the
  // other paths too, which is only slower.
  const auto finite_input = [&] {
    ember::detail::NoGradGuardFor<P> no_grad;
    return std::isfinite(x.sum().template item<double>());
  };
  if (a == ConvAlgorithm::Winograd || a == ConvAlgorithm::Winograd2x2 || a == ConvAlgorithm::Winograd4x4)
    return winograd && finite_input() ? a : ConvAlgorithm::Im2col;
  if (a == ConvAlgorithm::Direct) return direct ? a : ConvAlgorithm::Im2col;
  // Winograd under Auto: >= 8 channels each way, except very wide layers on tiny images
  // (512 channels at 7 x 7 or 8 x 8: 16 tiles per sample, and the 16 MB transformed weight
  // re-read per chunk of samples made it 1.0-1.3x slower than im2col; at 14 x 14 and above it
  // is 1.3-1.5x faster; /tmp benchmark in the commit).
  if (winograd && x.size(1) >= 8 && w.size(0) >= 8 &&
      (x.size(1) * w.size(0) < 512 * 512 || winograd_tiles(x, g, 2).tiles_per_sample() >= 32) && finite_input())
    return ConvAlgorithm::Winograd;
  // Auto: direct for kernels larger than 1x1 only (measured on first layers; a 1x1
  // convolution's im2col is a plain copy and its GEMM is not starved the same way).
  return direct && g.kernel[0] * g.kernel[1] > 1 ? ConvAlgorithm::Direct : ConvAlgorithm::Im2col;
}

/// Stride-1 convolution by the direct kernels, bias included: (N, O, OH, OW).
template <class P>
BasicTensor<P> conv2d_direct(const BasicTensor<P>& xb, const BasicTensor<P>& w, const BasicTensor<P>& b,
                             const ops::ConvGeometry& g) {
  ops::DirectConvGeometry d;
  d.n = xb.size(0), d.c = xb.size(1), d.h = xb.size(2), d.w = xb.size(3);
  d.o = w.size(0), d.kh = w.size(2), d.kw = w.size(3);
  d.pad_top = g.pad_before[0], d.pad_left = g.pad_before[1];
  d.oh = g.out_size(0, d.h), d.ow = g.out_size(1, d.w);
  return BasicTensor<P>::wrap(
      dispatch<P>(ops::DirectConv{d}, xb.impl(), w.impl(), b.defined() ? &b.impl() : nullptr));
}

/// kron(G, G) as a (P, 9) matrix for m x m tiles (P = (m + 2)^2 positions, G is (m + 2) x 3):
/// row (m + 2) i + j, column 3r + s holds G[i][r] * G[j][s], so that (O * C, 9) weights @ its
/// transpose are the (O * C, P) transformed weights G g G^T.
template <class P>
BasicTensor<P> winograd_weight_matrix(DType dtype, int64_t m) {
  static constexpr double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static constexpr double G4[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                      {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                      {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  const int64_t s = m + 2;
  auto G = [&](int64_t i, int64_t r) { return m == 4 ? G4[i][r] : G2[i][r]; };
  BasicTensor<P> k = empty<P>({s * s, 9}, TensorOptions(DType::F64));
  double* d = k.template data_ptr<double>();
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 3; ++c) d[(s * i + j) * 9 + 3 * r + c] = G(i, r) * G(j, c);
  return k.to(dtype);
}

/// 3x3, stride-1 convolution as Winograd F(m x m, 3x3) (m = 2 or 4): (N, O, OH, OW)
/// from the (N, C, H, W) input xb. The weight transform is a matmul and the rest one fused op
/// with its own backward (and a differentiable recorded form), so autograd runs the backward
/// as Winograd too.
template <class P>
BasicTensor<P> conv2d_winograd(const BasicTensor<P>& xb, const BasicTensor<P>& w, const ops::ConvGeometry& g,
                               int64_t m) {
  const int64_t o = w.size(0), c = w.size(1);
  const ops::WinogradTiles t = winograd_tiles(xb, g, m);
  // The transform is part of the f32 Winograd kernel's arithmetic, not a product autocast
  // should round to bf16 (the output transform would amplify that rounding). Under autocast a
  // bf16/f16 weight meeting an f32 input is transformed in the input's dtype.
  const BasicTensor<P> wt = autocast::reduced_on_cpu(w) && w.dtype() != xb.dtype() ? w.to(xb.dtype()) : w;
  BasicTensor<P> u;
  {
    autocast::AutocastGuard exact(false);
    u = wt.reshape({o * c, 9}).mm(winograd_weight_matrix<P>(wt.dtype(), t.m).t()).t().reshape({t.positions(), o, c});
  }
  return BasicTensor<P>::wrap(dispatch<P>(ops::WinogradConv{t}, xb.impl(), u.impl()));
}

template <class P>
BasicTensor<P> conv_nd(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b, int nd,
                       const IntArgs& stride, const IntArgs& padding, const IntArgs& dilation, int64_t groups,
                       const char* op) {
  bool unbatched;
  BasicTensor<P> xb = batched(x, nd, op, unbatched);
  EMBER_CHECK(w.dim() == nd + 2, "[{}] weight must have {} dims (out, in / groups, kernel...), got shape {}", op, nd + 2,
              w.sizes());
  EMBER_CHECK(groups >= 1 && xb.size(1) % groups == 0 && w.size(0) % groups == 0,
              "[{}] groups={} must divide the input channels ({}) and the output channels ({})", op, groups, xb.size(1),
              w.size(0));
  EMBER_CHECK(w.size(1) * groups == xb.size(1),
              "[{}] weight of shape {} expects {} input channels, got input of shape {}", op, w.sizes(),
              w.size(1) * groups, x.sizes());
  IntArgs kernel;
  for (int d = 0; d < nd; ++d) kernel.push_back(w.size(2 + d));
  ops::ConvGeometry g = geometry(nd, kernel, stride.empty() ? IntArgs{1} : stride, padding, dilation, op);
  int64_t n = xb.size(0), o = w.size(0), k = w.size(1);  // not numel / o: o may be 0
  for (int d = 0; d < nd; ++d) k *= w.size(2 + d);
  BasicTensor<P> out;
  const ConvAlgorithm algorithm = conv_algorithm_for(xb, w, g, groups);
  if (algorithm != ConvAlgorithm::Im2col) {
    if (algorithm == ConvAlgorithm::Direct) {
      out = conv2d_direct(xb, w, b, g);
    } else {
      out = conv2d_winograd(xb, w, g,
                            algorithm == ConvAlgorithm::Winograd2x2   ? 2
                            : algorithm == ConvAlgorithm::Winograd4x4 ? 4
                                                                      : winograd_tile_size(xb, w, g));
      if (b.defined()) out = out + b.reshape({1, o, 1, 1});
    }
    return unbatched ? out.squeeze(0) : out;
  }
  const bool depthwise = nd == 2 && groups > 1 && groups == xb.size(1) && o == groups && xb.is_cpu() &&
                         (xb.dtype() == DType::F32 || xb.dtype() == DType::F64) && w.dtype() == xb.dtype() &&
                         (!b.defined() || (b.dtype() == xb.dtype() && b.is_cpu())) &&
                         conv_algorithm() != ConvAlgorithm::Im2col && xb.numel() > 0;
  if (depthwise) {
    // One kernel per channel plane, bias included (ops/depthwise_conv_ops.hpp).
    out = BasicTensor<P>::wrap(dispatch<P>(ops::DepthwiseConv{g}, xb.impl(), w.impl(), b.defined() ? &b.impl() : nullptr));
    return unbatched ? out.squeeze(0) : out;
  }
  bool pointwise = groups == 1;
  for (int d = 0; d < nd; ++d)
    pointwise = pointwise && g.kernel[d] == 1 && g.stride[d] == 1 && g.pad_before[d] == 0 && g.pad_after[d] == 0;
  if (pointwise) {
    // A 1x1 convolution is (O, C) @ (C, L) per sample, on the input as it lies: no im2col
    // copy, and the (N, O, L) result needs no permute. Forward + backward of 64 -> 128
    // channels at (8, 56, 56): 22.2 -> 18.1 ms at one thread.
    int64_t l = 1;  // explicit: reshape cannot infer -1 when the batch or channels are empty
    for (int d = 0; d < nd; ++d) l *= xb.size(2 + d);
    out = w.reshape({o, k}).matmul(xb.reshape({n, k, l}));
  } else if (groups == 1) {
    // One GEMM over the whole batch: columns (K, N, L), (O, K) @ (K, N * L), then the
    // (O, N, L) result viewed as (N, O, L). Its backward is one GEMM per operand too (the
    // weight's gradient needs no sum over N afterwards), and the bias add below writes the
    // output in (N, O, L) order anyway.
    g.batch_in_columns = true;
    BasicTensor<P> cols = im2col(xb, g);  // (C * taps, N, L)
    const int64_t l = cols.size(2);
    out = w.reshape({o, k}).mm(cols.reshape({k, n * l})).reshape({o, n, l}).permute({1, 0, 2});
    if (!b.defined()) out = out.contiguous();
  } else {
    BasicTensor<P> cols = im2col(xb, g);  // (N, C * taps, L)
    const int64_t l = cols.size(2);
    BasicTensor<P> cg = cols.reshape({n, groups, k, l});
    BasicTensor<P> wg = w.reshape({groups, o / groups, k});
    out = wg.matmul(cg).reshape({n, o, l});  // (1, G, O/G, K) @ (N, G, K, L)
  }
  if (b.defined()) out = out + b.reshape({1, o, 1});
  Shape s{n, o};
  for (int d = 0; d < nd; ++d) s.push_back(g.out_size(d, xb.size(2 + d)));
  out = out.reshape(s);
  return unbatched ? out.squeeze(0) : out;
}

/// Pads for padding="same": total d*(k-1) per dim, the extra element after (as PyTorch).
inline void same_padding(ops::ConvGeometry& g) {
  for (int d = 0; d < g.nd; ++d) {
    int64_t total = g.dilation[d] * (g.kernel[d] - 1);
    g.pad_before[d] = total / 2;
    g.pad_after[d] = total - total / 2;
  }
}

/// The padding options' checks, shared by the Conv modules (at construction) and conv_padded:
/// a known padding mode, padding by name "same" or "valid" (empty: by numbers), and "same"
/// only with stride 1.
inline void check_conv_padding(const IntArgs& stride, std::string_view padding_str, std::string_view padding_mode,
                               int nd, const char* op) {
  EMBER_CHECK(padding_mode == "zeros" || padding_mode == "reflect" || padding_mode == "replicate" ||
                  padding_mode == "circular",
              "[{}] padding_mode must be zeros, reflect, replicate or circular, got '{}'", op, padding_mode);
  EMBER_CHECK(padding_str.empty() || padding_str == "same" || padding_str == "valid",
              "[{}] padding must be 'same' or 'valid', got '{}'", op, padding_str);
  auto s = expand_arg(stride, nd, op, "stride");
  if (padding_str == "same")
    for (int d = 0; d < nd; ++d)
      EMBER_CHECK(s[d] == 1, "[{}] padding='same' needs stride 1, got stride {} in dim {}", op, s[d], d);
}

/// Convolution with padding by numbers or by name ("same", "valid"; empty: the numbers) and a
/// padding mode (zeros, reflect, replicate, circular), as Conv1d/2d/3d and libtorch's
/// ConvFuncOptions give them. Zero padding on both sides alike goes to the convolution itself;
/// other modes, and the uneven "same" padding of even kernels, pad the input first.
template <class P>
BasicTensor<P> conv_padded(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b, int nd,
                           const IntArgs& stride, const IntArgs& padding, std::string_view padding_str,
                           std::string_view padding_mode, const IntArgs& dilation, int64_t groups, const char* op) {
  // An empty stride is 1 (conv_nd's rule).
  check_conv_padding(stride.empty() ? IntArgs{1} : stride, padding_str, padding_mode, nd, op);
  EMBER_CHECK(w.dim() == nd + 2, "[{}] weight must have {} dims (out, in / groups, kernel...), got shape {}", op, nd + 2,
              w.sizes());
  auto p = expand_arg(padding, nd, op, "padding");
  auto dl = expand_arg(dilation, nd, op, "dilation");
  // Per-side padding in pad()'s order (last dim first).
  std::vector<int64_t> sides;
  bool symmetric = true, any = false;
  for (int d = nd - 1; d >= 0; --d) {
    int64_t lo = p[d], hi = p[d];
    if (padding_str == "valid") lo = hi = 0;
    if (padding_str == "same") {
      int64_t total = dl[d] * (w.size(2 + d) - 1);
      lo = total / 2, hi = total - lo;
    }
    symmetric = symmetric && lo == hi;
    any = any || lo != 0 || hi != 0;
    sides.push_back(lo), sides.push_back(hi);
  }
  BasicTensor<P> in = x;
  IntArgs conv_pad{0};
  if (any && (padding_mode != "zeros" || !symmetric)) {
    in = pad(x, sides, padding_mode == "zeros" ? "constant" : padding_mode);
  } else if (any) {
    conv_pad.clear();
    for (int d = 0; d < nd; ++d) conv_pad.push_back(sides[2 * (nd - 1 - d)]);
  }
  return conv_nd(in, w, b, nd, stride, conv_pad, dilation, groups, op);
}

}  // namespace detail

/// Convolution over 1, 2 or 3 spatial dims (cross-correlation, as PyTorch).
template <class P>
BasicTensor<P> conv1d(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {},
                      IntArgs stride = {1}, IntArgs padding = {0}, IntArgs dilation = {1}, int64_t groups = 1) {
  return detail::conv_nd(x, w, b, 1, stride, padding, dilation, groups, "conv1d");
}
template <class P>
BasicTensor<P> conv2d(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {},
                      IntArgs stride = {1}, IntArgs padding = {0}, IntArgs dilation = {1}, int64_t groups = 1) {
  return detail::conv_nd(x, w, b, 2, stride, padding, dilation, groups, "conv2d");
}
template <class P>
BasicTensor<P> conv3d(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {},
                      IntArgs stride = {1}, IntArgs padding = {0}, IntArgs dilation = {1}, int64_t groups = 1) {
  return detail::conv_nd(x, w, b, 3, stride, padding, dilation, groups, "conv3d");
}

namespace detail {

/// The output_padding that makes a transposed convolution of x produce `output_size`
/// (spatial sizes, or with the batch and channel dims in front, which are ignored), as
/// PyTorch's ConvTranspose modules choose it: each size must lie between the size that no
/// output_padding gives and that plus stride - 1.
template <class P>
IntArgs output_padding_for_size(const BasicTensor<P>& x, const std::vector<int64_t>& output_size, int nd,
                                const IntArgs& kernel, const IntArgs& stride, const IntArgs& padding,
                                const IntArgs& dilation, const char* op) {
  const int64_t leading = x.dim() == nd + 2 ? 2 : 1;  // (N, C, ...) or unbatched (C, ...)
  EMBER_CHECK(x.dim() == nd + 1 || x.dim() == nd + 2, "[{}] expects a {}-d or {}-d input, got shape {}", op, nd + 1,
              nd + 2, x.sizes());
  std::vector<int64_t> wanted = output_size;
  if (static_cast<int64_t>(wanted.size()) == nd + leading) wanted.erase(wanted.begin(), wanted.begin() + leading);
  EMBER_CHECK(static_cast<int64_t>(wanted.size()) == nd,
              "[{}] output_size must have {} or {} elements for an input of shape {}, got {}", op, nd, nd + leading,
              x.sizes(), Shape(output_size));
  // The sizes without output_padding, as conv_transpose_nd computes them (geometry() checks
  // the window terms; the input size times the stride is checked here).
  const ops::ConvGeometry g = geometry(nd, kernel, stride, padding, dilation, op);
  std::vector<int64_t> low, high;
  for (int d = 0; d < nd; ++d) {
    low.push_back(ember::detail::checked_add(ember::detail::checked_mul(x.size(leading + d) - 1, g.stride[d], op),
                                             g.dilation[d] * (g.kernel[d] - 1) + 1 - 2 * g.pad_before[d], op));
    high.push_back(low.back() + g.stride[d] - 1);
  }
  IntArgs out;
  for (int d = 0; d < nd; ++d) {
    EMBER_CHECK(wanted[d] >= low[d] && wanted[d] <= high[d],
                "[{}] requested an output size of {}, but valid sizes range from {} to {} (for an input of shape {})",
                op, Shape(wanted), Shape(low), Shape(high), x.sizes());
    out.push_back(wanted[d] - low[d]);
  }
  return out;
}

}  // namespace detail

/// Transposed convolution (the adjoint of conv): weight (in, out / groups, kernel...).
template <class P>
BasicTensor<P> conv_transpose_nd(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b, int nd,
                                 IntArgs stride, IntArgs padding, IntArgs output_padding, int64_t groups,
                                 IntArgs dilation, const char* op) {
  bool unbatched;
  BasicTensor<P> xb = detail::batched(x, nd, op, unbatched);
  EMBER_CHECK(w.dim() == nd + 2 && w.size(0) == xb.size(1),
              "[{}] weight of shape {} does not fit an input with {} channels (expects (in, out / groups, kernel...))",
              op, w.sizes(), xb.size(1));
  EMBER_CHECK(groups >= 1 && xb.size(1) % groups == 0, "[{}] groups={} must divide the input channels ({})", op,
              groups, xb.size(1));
  IntArgs kernel;
  for (int d = 0; d < nd; ++d) kernel.push_back(w.size(2 + d));
  ops::ConvGeometry g = detail::geometry(nd, kernel, stride, padding, dilation, op);
  auto op_pad = detail::expand_arg(output_padding, nd, op, "output_padding");
  std::array<int64_t, 3> spatial{1, 1, 1};
  std::vector<int64_t> trailing;  // F::pad's order: last dim first
  int64_t n = xb.size(0), cin = xb.size(1), cout = w.size(1) * groups, l = 1;
  Shape s{n, cout};
  for (int d = 0; d < nd; ++d) {
    EMBER_CHECK(op_pad[d] >= 0 && op_pad[d] < std::max(g.stride[d], g.dilation[d]),
                "[{}] output_padding {} must be smaller than stride or dilation", op, op_pad[d]);
    // geometry() bounds the window terms below 2^31; the input size times the stride may still overflow.
    const int64_t size = ember::detail::checked_add(
        ember::detail::checked_mul(xb.size(2 + d) - 1, g.stride[d], op),
        g.dilation[d] * (g.kernel[d] - 1) + op_pad[d] + 1 - 2 * g.pad_before[d], op);
    EMBER_CHECK(size >= 1, "[{}] the output size {} along spatial dim {} is too small (input {}, stride {}, padding {}, "
                "dilation {}, kernel {}, output_padding {})", op, size, d, xb.size(2 + d), g.stride[d],
                g.pad_before[d], g.dilation[d], g.kernel[d], op_pad[d]);
    // output_padding adds elements after the last window; keep the window count equal to the
    // input size. Elements beyond every window's reach (output_padding at least the stride,
    // which a larger dilation allows, and little padding) get only the bias: they are added
    // as zeros after col2im rather than as a negative padding.
    g.pad_after[d] -= g.stride[d] * (op_pad[d] / g.stride[d]);
    int64_t beyond = std::max<int64_t>(0, -g.pad_after[d]);
    g.pad_after[d] += beyond;
    // A 1-tap kernel with a wide padding can leave no element inside any window (the output
    // is the bias alone): col2im then builds an empty image, its windows starting in the
    // padding that remains.
    const int64_t excess = std::max<int64_t>(0, beyond - size);
    g.pad_before[d] -= excess;
    beyond -= excess;
    spatial[d] = size - beyond;
    trailing.insert(trailing.begin(), {0, beyond});
    l *= xb.size(2 + d);
    s.push_back(size);
  }
  int64_t taps = g.kernel_numel();
  BasicTensor<P> xf = xb.reshape({n, groups, cin / groups, l});
  BasicTensor<P> wg = w.reshape({groups, cin / groups, (cout / groups) * taps});
  BasicTensor<P> cols = wg.mT().matmul(xf).reshape({n, cout * taps, l});  // (N, G, Cout/G * taps, L)
  BasicTensor<P> out = detail::col2im(cols, g, spatial);
  if (std::any_of(trailing.begin(), trailing.end(), [](int64_t v) { return v > 0; })) out = ember::pad(out, trailing);
  if (b.defined()) {
    Shape bs(static_cast<size_t>(nd + 2), 1);
    bs[1] = cout;
    out = out + b.reshape(bs);
  }
  return unbatched ? out.squeeze(0) : out;
}
template <class P>
BasicTensor<P> conv_transpose1d(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {},
                                IntArgs stride = {1}, IntArgs padding = {0}, IntArgs output_padding = {0},
                                int64_t groups = 1, IntArgs dilation = {1}) {
  return conv_transpose_nd(x, w, b, 1, stride, padding, output_padding, groups, dilation, "conv_transpose1d");
}
template <class P>
BasicTensor<P> conv_transpose2d(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {},
                                IntArgs stride = {1}, IntArgs padding = {0}, IntArgs output_padding = {0},
                                int64_t groups = 1, IntArgs dilation = {1}) {
  return conv_transpose_nd(x, w, b, 2, stride, padding, output_padding, groups, dilation, "conv_transpose2d");
}
template <class P>
BasicTensor<P> conv_transpose3d(const BasicTensor<P>& x, const BasicTensor<P>& w, const BasicTensor<P>& b = {},
                                IntArgs stride = {1}, IntArgs padding = {0}, IntArgs output_padding = {0},
                                int64_t groups = 1, IntArgs dilation = {1}) {
  return conv_transpose_nd(x, w, b, 3, stride, padding, output_padding, groups, dilation, "conv_transpose3d");
}

namespace detail {
/// Pads for ceil_mode: extra elements after the input so that a last partial window exists,
/// provided it starts inside the input or the left padding (PyTorch's rule).
inline void apply_ceil_mode(ops::ConvGeometry& g, const Shape& in, int nd) {
  for (int d = 0; d < nd; ++d) {
    int64_t span = g.dilation[d] * (g.kernel[d] - 1) + 1;
    int64_t padded = in[2 + d] + 2 * g.pad_before[d];
    // Rounded towards -inf, as PyTorch's div_rtn: a kernel wider than the padded input gives
    // no window (C++'s / truncated -1 / 2 to 0: one window, reading the ceil overhang).
    const int64_t num = padded - span + g.stride[d] - 1;
    int64_t out = (num >= 0 ? num / g.stride[d] : -((-num + g.stride[d] - 1) / g.stride[d])) + 1;
    if (out < 1) continue;  // check_pool_output refuses it
    if ((out - 1) * g.stride[d] >= in[2 + d] + g.pad_before[d]) --out;
    int64_t need = (out - 1) * g.stride[d] + span - padded;
    if (need > 0) g.pad_after[d] += need;
  }
}
/// A pooling window count of 0 along some dim is refused, as PyTorch ("Output size is too
/// small"): an empty result would hide a kernel larger than the padded input.
inline void check_pool_output(const ops::ConvGeometry& g, const Shape& in, int nd, const char* op) {
  for (int d = 0; d < nd; ++d)
    EMBER_CHECK(g.out_size(d, in[2 + d]) >= 1,
                "[{}] the output size along spatial dim {} is 0: input {}, kernel {}, stride {}, padding {}, dilation {}",
                op, d, in[2 + d], g.kernel[d], g.stride[d], g.pad_before[d], g.dilation[d]);
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> max_pool_nd(const BasicTensor<P>& x, int nd, IntArgs kernel, IntArgs stride,
                                                      IntArgs padding, IntArgs dilation, bool ceil_mode,
                                                      bool want_indices, const char* op) {
  bool unbatched;
  BasicTensor<P> xb = batched(x, nd, op, unbatched);
  ops::ConvGeometry g = geometry(nd, kernel, stride, padding, dilation, op);
  for (int d = 0; d < nd; ++d)  // PyTorch's bound: half the effective (dilated) kernel
    EMBER_CHECK(g.pad_before[d] <= ((g.kernel[d] - 1) * g.dilation[d] + 1) / 2,
                "[{}] padding {} must be at most half the effective kernel size {} (kernel {}, dilation {})", op,
                g.pad_before[d], (g.kernel[d] - 1) * g.dilation[d] + 1, g.kernel[d], g.dilation[d]);
  if (ceil_mode) apply_ceil_mode(g, xb.sizes(), nd);
  check_pool_output(g, xb.sizes(), nd, op);
  auto [v, i] = dispatch<P>(ops::MaxPool{g}, xb.impl());  // a direct kernel, no im2col copy
  BasicTensor<P> out = BasicTensor<P>::wrap(std::move(v)), idx;
  if (want_indices) idx = BasicTensor<P>::wrap(std::move(i));
  if (unbatched) {
    out = out.squeeze(0);
    if (idx.defined()) idx = idx.squeeze(0);
  }
  return {out, idx};
}
template <class P>
BasicTensor<P> avg_pool_nd(const BasicTensor<P>& x, int nd, IntArgs kernel, IntArgs stride, IntArgs padding,
                           bool ceil_mode, bool count_include_pad, const char* op,
                           std::optional<int64_t> divisor_override = std::nullopt) {
  // As PyTorch: any nonzero divisor (negative too) replaces the count; avg_pool1d has none.
  EMBER_CHECK(!divisor_override || nd > 1, "[{}] has no divisor_override (got {})", op, *divisor_override);
  EMBER_CHECK(!divisor_override || *divisor_override != 0, "[{}] divisor_override must not be 0", op);
  bool unbatched;
  BasicTensor<P> xb = batched(x, nd, op, unbatched);
  ops::ConvGeometry g = geometry(nd, kernel, stride, padding, {1}, op);
  for (int d = 0; d < nd; ++d)
    EMBER_CHECK(2 * g.pad_before[d] <= g.kernel[d], "[{}] padding {} must be at most half the kernel size {}", op,
                g.pad_before[d], g.kernel[d]);
  // PyTorch's 3-d average pooling (alone among the poolings) refuses an input smaller than
  // the kernel in any dim, padding aside.
  if (nd == 3)
    for (int d = 0; d < nd; ++d)
      EMBER_CHECK(xb.size(2 + d) >= g.kernel[d], "[{}] input of shape {} is smaller than the kernel: {} < {} in spatial dim {}",
                  op, x.sizes(), xb.size(2 + d), g.kernel[d], d);
  std::array<int64_t, 3> sym_after = g.pad_after;
  if (ceil_mode) apply_ceil_mode(g, xb.sizes(), nd);
  check_pool_output(g, xb.sizes(), nd, op);
  int64_t n = xb.size(0), c = xb.size(1), taps = g.kernel_numel();
  BasicTensor<P> cols = im2col(xb, g);
  int64_t l = cols.size(2);
  BasicTensor<P> sum = cols.reshape({n, c, taps, l}).sum({2});
  Shape s{n, c};
  for (int d = 0; d < nd; ++d) s.push_back(g.out_size(d, xb.size(2 + d)));
  if (divisor_override) {
    BasicTensor<P> out = (sum / static_cast<double>(*divisor_override)).reshape(s);
    return unbatched ? out.squeeze(0) : out;
  }
  // Divisor per window: taps inside input + symmetric padding (count_include_pad) or inside the input only.
  BasicTensor<P> div;
  {
    ember::detail::NoGradGuardFor<P> ng;
    Shape one{1, 1};
    for (int d = 0; d < nd; ++d) one.push_back(xb.size(2 + d));
    ops::ConvGeometry gc = g;
    BasicTensor<P> ones_img = ones<P>(one, TensorOptions(x.dtype()).device(x.device()));
    if (count_include_pad) {
      // Padding counts, the ceil_mode overhang does not: count on an image padded with ones.
      Shape padded = one;
      for (int d = 0; d < nd; ++d) padded[2 + d] += g.pad_before[d] + sym_after[d];
      ones_img = ones<P>(padded, TensorOptions(x.dtype()).device(x.device()));
      for (int d = 0; d < nd; ++d) gc.pad_before[d] = 0, gc.pad_after[d] = g.pad_after[d] - sym_after[d];
    }
    div = im2col(ones_img, gc).sum({1}).reshape({1, 1, l});
  }
  BasicTensor<P> out = (sum / div).reshape(s);
  return unbatched ? out.squeeze(0) : out;
}
}  // namespace detail

template <class P>
BasicTensor<P> max_pool1d(const BasicTensor<P>& x, IntArgs kernel, IntArgs stride = {}, IntArgs padding = {0},
                          IntArgs dilation = {1}, bool ceil_mode = false) {
  return detail::max_pool_nd(x, 1, kernel, stride, padding, dilation, ceil_mode, false, "max_pool1d").first;
}
template <class P>
BasicTensor<P> max_pool2d(const BasicTensor<P>& x, IntArgs kernel, IntArgs stride = {}, IntArgs padding = {0},
                          IntArgs dilation = {1}, bool ceil_mode = false) {
  return detail::max_pool_nd(x, 2, kernel, stride, padding, dilation, ceil_mode, false, "max_pool2d").first;
}
/// (values, indices into each input row), as max_pool1d(..., return_indices=True).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> max_pool1d_with_indices(const BasicTensor<P>& x, IntArgs kernel,
                                                                  IntArgs stride = {}, IntArgs padding = {0},
                                                                  IntArgs dilation = {1}, bool ceil_mode = false) {
  return detail::max_pool_nd(x, 1, kernel, stride, padding, dilation, ceil_mode, true, "max_pool1d");
}
/// (values, flat indices into each input plane), as max_pool2d(..., return_indices=True).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> max_pool2d_with_indices(const BasicTensor<P>& x, IntArgs kernel,
                                                                  IntArgs stride = {}, IntArgs padding = {0},
                                                                  IntArgs dilation = {1}, bool ceil_mode = false) {
  return detail::max_pool_nd(x, 2, kernel, stride, padding, dilation, ceil_mode, true, "max_pool2d");
}
template <class P>
BasicTensor<P> max_pool3d(const BasicTensor<P>& x, IntArgs kernel, IntArgs stride = {}, IntArgs padding = {0},
                          IntArgs dilation = {1}, bool ceil_mode = false) {
  return detail::max_pool_nd(x, 3, kernel, stride, padding, dilation, ceil_mode, false, "max_pool3d").first;
}
/// (values, flat indices into each input volume), as max_pool3d(..., return_indices=True).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> max_pool3d_with_indices(const BasicTensor<P>& x, IntArgs kernel,
                                                                  IntArgs stride = {}, IntArgs padding = {0},
                                                                  IntArgs dilation = {1}, bool ceil_mode = false) {
  return detail::max_pool_nd(x, 3, kernel, stride, padding, dilation, ceil_mode, true, "max_pool3d");
}
template <class P>
BasicTensor<P> avg_pool1d(const BasicTensor<P>& x, IntArgs kernel, IntArgs stride = {}, IntArgs padding = {0},
                          bool ceil_mode = false, bool count_include_pad = true) {
  return detail::avg_pool_nd(x, 1, kernel, stride, padding, ceil_mode, count_include_pad, "avg_pool1d");
}
template <class P>
BasicTensor<P> avg_pool2d(const BasicTensor<P>& x, IntArgs kernel, IntArgs stride = {}, IntArgs padding = {0},
                          bool ceil_mode = false, bool count_include_pad = true,
                          std::optional<int64_t> divisor_override = std::nullopt) {
  return detail::avg_pool_nd(x, 2, kernel, stride, padding, ceil_mode, count_include_pad, "avg_pool2d",
                             divisor_override);
}
template <class P>
BasicTensor<P> avg_pool3d(const BasicTensor<P>& x, IntArgs kernel, IntArgs stride = {}, IntArgs padding = {0},
                          bool ceil_mode = false, bool count_include_pad = true,
                          std::optional<int64_t> divisor_override = std::nullopt) {
  return detail::avg_pool_nd(x, 3, kernel, stride, padding, ceil_mode, count_include_pad, "avg_pool3d",
                             divisor_override);
}

namespace detail {
/// Power-average pooling: (sum over the window of x^p)^(1/p), as PyTorch's, which averages x^p
/// (ceil_mode windows counted as avg_pool counts them) and scales by the kernel's taps. Its
/// sign(avg) relu(|avg|) factor is avg itself: a negative average (odd p, negative input) gives
/// NaN, in both.
template <class P>
BasicTensor<P> lp_pool_nd(const BasicTensor<P>& x, int nd, double norm_type, IntArgs kernel, IntArgs stride,
                          bool ceil_mode, const char* op) {
  EMBER_CHECK(norm_type > 0 && std::isfinite(norm_type), "[{}] norm_type must be positive and finite, got {}", op,
              norm_type);
  const auto k = expand_arg(kernel, nd, op, "kernel_size");
  BasicTensor<P> avg = avg_pool_nd(x.pow(norm_type), nd, kernel, stride, {0}, ceil_mode, true, op);
  return (avg.sign() * avg.abs().relu() * static_cast<double>(k[0] * k[1] * k[2])).pow(1.0 / norm_type);
}
}  // namespace detail

/// LP pooling: each window's p-norm (norm_type p), as torch.nn.functional.lp_pool1d/2d/3d.
template <class P>
BasicTensor<P> lp_pool1d(const BasicTensor<P>& x, double norm_type, IntArgs kernel, IntArgs stride = {},
                         bool ceil_mode = false) {
  return detail::lp_pool_nd(x, 1, norm_type, kernel, stride, ceil_mode, "lp_pool1d");
}
template <class P>
BasicTensor<P> lp_pool2d(const BasicTensor<P>& x, double norm_type, IntArgs kernel, IntArgs stride = {},
                         bool ceil_mode = false) {
  return detail::lp_pool_nd(x, 2, norm_type, kernel, stride, ceil_mode, "lp_pool2d");
}
template <class P>
BasicTensor<P> lp_pool3d(const BasicTensor<P>& x, double norm_type, IntArgs kernel, IntArgs stride = {},
                         bool ceil_mode = false) {
  return detail::lp_pool_nd(x, 3, norm_type, kernel, stride, ceil_mode, "lp_pool3d");
}

namespace detail {
/// (out, in) matrix averaging the adaptive window of each output position
/// (start = floor(i in / out), end = ceil((i + 1) in / out)).
template <class P>
BasicTensor<P> adaptive_matrix(int64_t in, int64_t out, DType t, Device dev) {
  BasicTensor<P> m = zeros<P>({out, in}, TensorOptions(DType::F64));
  double* p = m.template data_ptr<double>();
  for (int64_t i = 0; i < out; ++i) {
    int64_t s = (i * in) / out, e = ((i + 1) * in + out - 1) / out;
    for (int64_t j = s; j < e; ++j) p[i * in + j] = 1.0 / static_cast<double>(e - s);
  }
  return m.to(t).to(dev);
}
}  // namespace detail

namespace detail {
/// Adaptive average over `dim` window by window: each output reads only its window, so an
/// inf or NaN stays in the windows that hold it (the matrix product multiplies it by the
/// zeros of every other window: 0 * inf = NaN everywhere).
template <class P>
BasicTensor<P> adaptive_avg_windows(const BasicTensor<P>& x, int64_t dim, int64_t out) {
  const int64_t in = x.size(dim);
  std::vector<BasicTensor<P>> cells;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t s = (i * in) / out, e = ((i + 1) * in + out - 1) / out;
    cells.push_back(x.narrow(dim, s, e - s).mean({dim}, true));
  }
  return cat(cells, dim);
}
/// Whether the pooled result is all finite. When it is, so was every input element (each lies
/// in some window with a positive weight), and the matrix product is exact; when it is not,
/// the product may have spread an inf or NaN (0 * inf) and the windows are recomputed. The
/// test reads the output, usually much smaller than the input.
template <class P>
bool all_finite(const BasicTensor<P>& y) {
  ember::detail::NoGradGuardFor<P> ng;
  return y.numel() == 0 || y.isfinite().all().template item<bool>();
}
}  // namespace detail

/// Adaptive average pooling: separable, so one matrix product per spatial dim (window by
/// window when the input holds inf or NaN); a plain mean for an output of one.
template <class P>
BasicTensor<P> adaptive_avg_pool1d(const BasicTensor<P>& x, int64_t out) {
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3, "[adaptive_avg_pool1d] expects (C, L) or (N, C, L), got shape {}",
              x.sizes());
  EMBER_CHECK(out > 0, "[adaptive_avg_pool1d] output size must be positive, got {}", out);
  if (out == 1) return x.mean({-1}, true);
  autocast::AutocastGuard exact(false);  // averaging weights as a product: not rounded to bf16
  BasicTensor<P> y = x.matmul(detail::adaptive_matrix<P>(x.size(-1), out, x.dtype(), x.device()).t());
  return detail::all_finite(y) ? y : detail::adaptive_avg_windows(x, x.dim() - 1, out);
}
template <class P>
BasicTensor<P> adaptive_avg_pool2d(const BasicTensor<P>& x, const OptionalIntArgs& out) {
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, "[adaptive_avg_pool2d] expects (C, H, W) or (N, C, H, W), got shape {}",
              x.sizes());
  auto o = detail::expand_arg(detail::resolve_output_size(out, x, 2, "adaptive_avg_pool2d"), 2, "adaptive_avg_pool2d",
                              "output_size");
  EMBER_CHECK(o[0] > 0 && o[1] > 0, "[adaptive_avg_pool2d] output size must be positive, got {}x{}", o[0], o[1]);
  if (o[0] == 1 && o[1] == 1) return x.mean({-2, -1}, true);  // global pooling (a classifier's head)
  autocast::AutocastGuard exact(false);  // averaging weights as products: not rounded to bf16
  BasicTensor<P> ah = detail::adaptive_matrix<P>(x.size(-2), o[0], x.dtype(), x.device());
  BasicTensor<P> aw = detail::adaptive_matrix<P>(x.size(-1), o[1], x.dtype(), x.device());
  BasicTensor<P> y = ah.matmul(x).matmul(aw.t());
  if (detail::all_finite(y)) return y;
  return detail::adaptive_avg_windows(detail::adaptive_avg_windows(x, x.dim() - 1, o[1]), x.dim() - 2, o[0]);
}
template <class P>
BasicTensor<P> adaptive_avg_pool3d(const BasicTensor<P>& x, const OptionalIntArgs& out) {
  EMBER_CHECK(x.dim() == 4 || x.dim() == 5,
              "[adaptive_avg_pool3d] expects (C, D, H, W) or (N, C, D, H, W), got shape {}", x.sizes());
  auto o = detail::expand_arg(detail::resolve_output_size(out, x, 3, "adaptive_avg_pool3d"), 3, "adaptive_avg_pool3d",
                              "output_size");
  EMBER_CHECK(o[0] > 0 && o[1] > 0 && o[2] > 0, "[adaptive_avg_pool3d] output size must be positive, got {}x{}x{}",
              o[0], o[1], o[2]);
  const int64_t d = x.size(-3), h = x.size(-2), w = x.size(-1);
  EMBER_CHECK(d > 0 && h > 0 && w > 0, "[adaptive_avg_pool3d] input of shape {} has an empty spatial dim", x.sizes());
  if (o[0] == 1 && o[1] == 1 && o[2] == 1) return x.mean({-3, -2, -1}, true);
  autocast::AutocastGuard exact(false);  // averaging weights as products: not rounded to bf16
  BasicTensor<P> ad = detail::adaptive_matrix<P>(d, o[0], x.dtype(), x.device());
  BasicTensor<P> ah = detail::adaptive_matrix<P>(h, o[1], x.dtype(), x.device());
  BasicTensor<P> aw = detail::adaptive_matrix<P>(w, o[2], x.dtype(), x.device());
  // W and H as in 2-D, then D over the flattened (H, W) planes.
  BasicTensor<P> hw = ah.matmul(x).matmul(aw.t());
  Shape pooled = hw.sizes();
  pooled[pooled.size() - 3] = o[0];
  BasicTensor<P> y = ad.matmul(hw.flatten(-2)).reshape(pooled);
  if (detail::all_finite(y)) return y;
  const int64_t last = x.dim() - 1;
  return detail::adaptive_avg_windows(
      detail::adaptive_avg_windows(detail::adaptive_avg_windows(x, last, o[2]), last - 1, o[1]), last - 2, o[0]);
}
namespace detail {
/// Adaptive max pooling over each output cell's window (start floor(i in / out), end
/// ceil((i + 1) in / out) per dim): one max pool when every size divides evenly, else cell by
/// cell. With `want_indices`, also each maximum's flat position in its (N, C) plane, as
/// max_pool's (what max_unpool reads).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> adaptive_max_pool_nd(const BasicTensor<P>& x, int nd, const IntArgs& out,
                                                               bool want_indices, const char* op) {
  bool unbatched;
  batched(x, nd, op, unbatched);
  const auto o = expand_arg(out, nd, op, "output_size");
  const int64_t first = x.dim() - nd;
  std::array<int64_t, 3> in{1, 1, 1};
  bool even = true;
  int64_t cells_total = 1;
  for (int d = 0; d < nd; ++d) {
    EMBER_CHECK(o[d] > 0, "[{}] output size must be positive, got {}", op, o[d]);
    in[d] = x.size(first + d);
    EMBER_CHECK(in[d] > 0, "[{}] input of shape {} has an empty spatial dim", op, x.sizes());
    even = even && in[d] % o[d] == 0;
    cells_total = ember::detail::checked_mul(cells_total, o[d], op);
  }
  Shape shape = x.sizes();
  for (int d = 0; d < nd; ++d) shape[static_cast<size_t>(first + d)] = o[d];
  const TensorOptions index_options = TensorOptions(DType::I64).device(x.device());
  // An empty batch has nothing to pool; otherwise sizes beyond memory fail here, as an
  // allocation, before the loop below runs once per output cell.
  if (x.numel() == 0)
    return {resized_empty(x, shape, nd), want_indices ? empty<P>(shape, index_options) : BasicTensor<P>()};
  (void)empty<P>(shape, TensorOptions(x.dtype()).device(x.device()));
  if (even) {
    IntArgs kernel;
    for (int d = 0; d < nd; ++d) kernel.push_back(in[d] / o[d]);
    return max_pool_nd(x, nd, kernel, {}, {0}, {1}, false, want_indices, op);
  }
  // Each input position's flat index in its plane, windowed as the input: the map from a
  // window's own flat index to the plane's.
  BasicTensor<P> plane_index;
  if (want_indices) {
    Shape plane_shape(static_cast<size_t>(first), 1);
    for (int d = 0; d < nd; ++d) plane_shape.push_back(in[d]);
    plane_index = arange<P>(int64_t{0}, in[0] * in[1] * in[2], int64_t{1}, index_options).reshape(plane_shape);
  }
  std::vector<BasicTensor<P>> cells, cell_indices;
  for (int64_t cell = 0; cell < cells_total; ++cell) {
    BasicTensor<P> window = x, window_index = plane_index;
    for (int64_t d = nd - 1, rest = cell; d >= 0; --d) {
      const int64_t i = rest % o[d], s = (i * in[d]) / o[d], e = ((i + 1) * in[d] + o[d] - 1) / o[d];
      rest /= o[d];
      window = window.narrow(first + d, s, e - s);
      if (want_indices) window_index = window_index.narrow(first + d, s, e - s);
    }
    // max over the window with its index: the gradient goes to the first maximum, as
    // PyTorch's kernel (amax would share it between ties, such as a ReLU's zeros).
    auto [value, at] = window.flatten(first).max(-1);
    cells.push_back(value);
    if (want_indices)
      cell_indices.push_back(index_select(window_index.reshape({-1}), 0, at.reshape({-1})).reshape(at.sizes()));
  }
  return {stack(cells, -1).reshape(shape),
          want_indices ? stack(cell_indices, -1).reshape(shape) : BasicTensor<P>()};
}
}  // namespace detail

/// Adaptive max pooling: each output cell is the maximum of its window of the input.
template <class P>
BasicTensor<P> adaptive_max_pool1d(const BasicTensor<P>& x, int64_t out) {
  return detail::adaptive_max_pool_nd(x, 1, out, false, "adaptive_max_pool1d").first;
}
template <class P>
BasicTensor<P> adaptive_max_pool2d(const BasicTensor<P>& x, const OptionalIntArgs& out) {
  constexpr const char* op = "adaptive_max_pool2d";
  return detail::adaptive_max_pool_nd(x, 2, detail::resolve_output_size(out, x, 2, op), false, op).first;
}
template <class P>
BasicTensor<P> adaptive_max_pool3d(const BasicTensor<P>& x, const OptionalIntArgs& out) {
  constexpr const char* op = "adaptive_max_pool3d";
  return detail::adaptive_max_pool_nd(x, 3, detail::resolve_output_size(out, x, 3, op), false, op).first;
}
/// (values, indices): each maximum's flat position in its (N, C) plane, as PyTorch's
/// return_indices=True.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> adaptive_max_pool1d_with_indices(const BasicTensor<P>& x, int64_t out) {
  return detail::adaptive_max_pool_nd(x, 1, out, true, "adaptive_max_pool1d_with_indices");
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> adaptive_max_pool2d_with_indices(const BasicTensor<P>& x,
                                                                           const OptionalIntArgs& out) {
  constexpr const char* op = "adaptive_max_pool2d_with_indices";
  return detail::adaptive_max_pool_nd(x, 2, detail::resolve_output_size(out, x, 2, op), true, op);
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> adaptive_max_pool3d_with_indices(const BasicTensor<P>& x,
                                                                           const OptionalIntArgs& out) {
  constexpr const char* op = "adaptive_max_pool3d_with_indices";
  return detail::adaptive_max_pool_nd(x, 3, detail::resolve_output_size(out, x, 3, op), true, op);
}

// ---- normalisation over channels -------------------------------------------------------------
/// Batch normalisation of (N, C, ...): batch statistics when training (updating the running
/// ones in place with `momentum`, unbiased variance, as PyTorch), running statistics otherwise.
template <class P>
BasicTensor<P> batch_norm(const BasicTensor<P>& x, BasicTensor<P> running_mean, BasicTensor<P> running_var,
                          const BasicTensor<P>& weight = {}, const BasicTensor<P>& bias = {}, bool training = false,
                          double momentum = 0.1, double eps = 1e-5) {
  EMBER_CHECK(x.dim() >= 2, "[batch_norm] expects (N, C, ...) input, got shape {}", x.sizes());
  // As PyTorch: the running statistics are updated in place and never differentiated.
  EMBER_CHECK(!ember::detail::grad_enabled<P>() || !((running_mean.defined() && running_mean.requires_grad()) ||
                                                     (running_var.defined() && running_var.requires_grad())),
              "[batch_norm] running_mean and running_var must not require grad (they are not differentiable)");
  int64_t c = x.size(1);
  auto fusable = [&](const BasicTensor<P>& t) { return !t.defined() || (t.dtype() == x.dtype() && t.is_cpu()); };
  if (x.is_cpu() && (x.dtype() == DType::F32 || x.dtype() == DType::F64) && fusable(weight) && fusable(bias) &&
      fusable(running_mean) && fusable(running_var)) {
    // One fused op (ops/norm_ops.hpp); other dtypes and devices take the composite below.
    const bool eval_stats = !training;
    EMBER_CHECK(training || (running_mean.defined() && running_var.defined()),
                "[batch_norm] evaluation needs running statistics (track_running_stats)");
    auto r = dispatch<P>(ops::BatchNorm{eps, training}, x.impl(), weight.defined() ? &weight.impl() : nullptr,
                         bias.defined() ? &bias.impl() : nullptr, eval_stats ? &running_mean.impl() : nullptr,
                         eval_stats ? &running_var.impl() : nullptr);
    if (training && running_mean.defined()) {
      ember::detail::NoGradGuardFor<P> ng;
      const int64_t count = x.numel() / c;
      // The statistics are f64 (ops/norm_ops.hpp): the update in the running tensors' dtype, as PyTorch's.
      running_mean.mul_(1 - momentum).add_(BasicTensor<P>::wrap(std::move(r.mean)).to(x.dtype()) * momentum);
      running_var.mul_(1 - momentum)
          .add_(BasicTensor<P>::wrap(std::move(r.var)).to(x.dtype()) * (momentum * count / (count - 1.0)));
    }
    return BasicTensor<P>::wrap(std::move(r.y));
  }
  Shape dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Shape bs(static_cast<size_t>(x.dim()), 1);
  bs[1] = c;
  // f16 / bf16: statistics and the normalisation in f32 (PyTorch's), the result rounded once.
  const bool reduced = detail::reduced_float(x.dtype());
  const BasicTensor<P> xc = reduced ? x.to(DType::F32) : x;
  BasicTensor<P> mean, var;
  if (training) {
    int64_t count = x.numel() / c;
    EMBER_CHECK(count > 1, "[batch_norm] needs more than one value per channel when training, got input shape {}",
                x.sizes());
    auto [v, m] = xc.var_mean(dims, 0, false);
    mean = m, var = v;
    if (running_mean.defined()) {
      ember::detail::NoGradGuardFor<P> ng;
      running_mean.mul_(1 - momentum).add_((m.detach() * momentum).to(running_mean.dtype()));
      running_var.mul_(1 - momentum).add_((v.detach() * (momentum * count / (count - 1.0))).to(running_var.dtype()));
    }
  } else {
    EMBER_CHECK(running_mean.defined() && running_var.defined(),
                "[batch_norm] evaluation needs running statistics (track_running_stats)");
    mean = reduced ? detail::to_f32(running_mean) : running_mean;
    var = reduced ? detail::to_f32(running_var) : running_var;
  }
  BasicTensor<P> y = (xc - mean.reshape(bs)) * (var.reshape(bs) + eps).rsqrt();
  if (weight.defined()) y = y * (reduced ? detail::to_f32(weight) : weight).reshape(bs);
  if (bias.defined()) y = y + (reduced ? detail::to_f32(bias) : bias).reshape(bs);
  return reduced ? y.to(x.dtype()) : y;
}

template <class P>
BasicTensor<P> group_norm(const BasicTensor<P>& x, int64_t groups, const BasicTensor<P>& weight = {},
                          const BasicTensor<P>& bias = {}, double eps = 1e-5) {
  EMBER_CHECK(x.dim() >= 2, "[group_norm] expects (N, C, ...) input, got shape {}", x.sizes());
  int64_t n = x.size(0), c = x.size(1);
  EMBER_CHECK(groups > 0 && c % groups == 0, "[group_norm] {} channels are not divisible into {} groups", c, groups);
  // PyTorch's _verify_batch_size on (N * C / G, G, spatial...): one value per group is no statistic.
  EMBER_CHECK(x.numel() == 0 || x.numel() / groups > 1,
              "[group_norm] expected more than 1 value per group, got input shape {} with {} groups", x.sizes(),
              groups);
  if (detail::reduced_float(x.dtype()))
    return group_norm(x.to(DType::F32), groups, detail::to_f32(weight), detail::to_f32(bias), eps).to(x.dtype());
  int64_t per_group = c / groups;  // the values of one group of one sample (sizes, not numel: N may be 0)
  for (int64_t d = 2; d < x.dim(); ++d) per_group *= x.size(d);
  BasicTensor<P> g = x.reshape({n, groups, per_group}), y;
  if (x.is_cpu() && (x.dtype() == DType::F32 || x.dtype() == DType::F64) && x.numel() > 0 && eps >= 0 &&
      std::isfinite(eps)) {
    // Each group's values are a row of the fused layer normalisation (ops/norm_ops.hpp): one op
    // and one backward kernel instead of a composite's eight. (The composite below takes what
    // the fused op refuses, such as a negative eps, which PyTorch accepts here.)
    auto r = dispatch<P>(ops::LayerNorm{g.size(2), eps}, g.impl(), nullptr, nullptr);
    y = BasicTensor<P>::wrap(std::move(r.y)).reshape(x.sizes());
  } else {
    auto [var, mean] = g.var_mean({2}, 0, true);
    y = ((g - mean) * (var + eps).rsqrt()).reshape(x.sizes());
  }
  Shape bs(static_cast<size_t>(x.dim()), 1);
  bs[1] = c;
  if (weight.defined()) y = y * weight.reshape(bs);
  if (bias.defined()) y = y + bias.reshape(bs);
  return y;
}

/// Normalises each (sample, channel) over its spatial dims (no running statistics).
template <class P>
BasicTensor<P> instance_norm(const BasicTensor<P>& x, const BasicTensor<P>& weight = {}, const BasicTensor<P>& bias = {},
                             double eps = 1e-5) {
  EMBER_CHECK(x.dim() >= 3, "[instance_norm] expects (N, C, ...) input with spatial dims, got shape {}", x.sizes());
  int64_t n = x.size(0), c = x.size(1);
  EMBER_CHECK(x.numel() == 0 || x.numel() / (n * c) > 1,
              "[instance_norm] expected more than 1 spatial element, got input shape {}", x.sizes());
  EMBER_CHECK(!weight.defined() || weight.sizes() == Shape{c}, "[instance_norm] weight must have shape [{}], got {}", c,
              weight.defined() ? weight.sizes() : Shape{});
  EMBER_CHECK(!bias.defined() || bias.sizes() == Shape{c}, "[instance_norm] bias must have shape [{}], got {}", c,
              bias.defined() ? bias.sizes() : Shape{});
  if (x.numel() > 0 && eps >= 0 && std::isfinite(eps)) {
    // Batch normalisation of the (1, N * C, spatial) view with the weights repeated per
    // sample, as PyTorch's: the affine part inside the fused op, whose backward multiplies by
    // w after its cancellation (a separate y * w rounds dy * w to f32 before it).
    auto per_sample = [n](const BasicTensor<P>& t) { return t.defined() ? t.repeat({n}) : t; };
    const BasicTensor<P> none;
    return ember::nn::functional::batch_norm(x.reshape({1, n * c, x.numel() / (n * c)}), none, none, per_sample(weight),
                                             per_sample(bias), true, 0.0, eps)
        .reshape(x.sizes());
  }
  // An empty input, or an eps the fused op refuses (negative or infinite; PyTorch takes them):
  // group normalisation's composite, then the affine part.
  int64_t spatial = 1;  // explicit: reshape cannot infer -1 when N or C is 0
  for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  BasicTensor<P> y =
      n * c == 0 ? x.clone() : group_norm(x.reshape({1, n * c, spatial}), n * c, {}, {}, eps).reshape(x.sizes());
  Shape bs(static_cast<size_t>(x.dim()), 1);
  bs[1] = c;
  if (weight.defined()) y = y * weight.reshape(bs);
  if (bias.defined()) y = y + bias.reshape(bs);
  return y;
}

namespace detail {
/// Instance normalisation with running statistics, as PyTorch's instance_norm: with
/// use_input_stats each (sample, channel) is normalised by its own statistics and the running
/// ones (when given) move towards their batch averages by `momentum` (the variance unbiased);
/// without, every sample is normalised by the running statistics of its channel.
template <class P>
BasicTensor<P> instance_norm_stats(const BasicTensor<P>& x, BasicTensor<P> running_mean, BasicTensor<P> running_var,
                                   const BasicTensor<P>& weight,
                                   const BasicTensor<P>& bias, bool use_input_stats, double momentum, double eps) {
  EMBER_CHECK(x.dim() >= 3, "[instance_norm] expects (N, C, ...) input with spatial dims, got shape {}", x.sizes());
  const int64_t c = x.size(1);
  EMBER_CHECK(running_mean.defined() == running_var.defined(),
              "[instance_norm] needs both running statistics or neither");
  for (const BasicTensor<P>* s : {&running_mean, &running_var})
    EMBER_CHECK(!s->defined() || s->sizes() == Shape{c}, "[instance_norm] running statistics must have shape [{}], got {}",
                c, s->sizes());
  if (!use_input_stats) {
    EMBER_CHECK(running_mean.defined(), "[instance_norm] without input statistics needs running statistics");
    return ember::nn::functional::batch_norm(x, running_mean, running_var, weight, bias, false, momentum, eps);
  }
  BasicTensor<P> y = instance_norm(x, weight, bias, eps);
  if (running_mean.defined() && x.numel() > 0) {
    ember::detail::NoGradGuardFor<P> ng;
    BasicTensor<P> per = x.detach().reshape({x.size(0), c, -1});
    running_mean.mul_(1 - momentum).add_(per.mean({2}).mean({0}).to(running_mean.dtype()) * momentum);
    running_var.mul_(1 - momentum).add_(per.var({2}, 1).mean({0}).to(running_var.dtype()) * momentum);
  }
  return y;
}
}  // namespace detail

}  // namespace ember::nn::functional
