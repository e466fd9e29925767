#pragma once
/// The geometry of a direct 2-D convolution (stride 1, dilation 1, one group), shared by the
/// ops (ops/direct_conv_ops.hpp) and the CPU kernels (kernels_cpu/direct_conv.cpp).

#include <cstdint>

namespace ember::ops {

/// Input (n, c, h, w), weight (o, c, kh, kw), output (n, o, oh, ow). Each sample's input is
/// read through a zero-padded copy of padded_h() x padded_w() per channel whose row
/// pad_top + r, column pad_left + s holds input (r, s); output (i, j) reads its rows i .. i + kh
/// - 1 and columns j .. j + kw - 1.
struct DirectConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, o = 0, kh = 1, kw = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t oh = 0, ow = 0;
  int64_t padded_h() const { return oh + kh - 1; }
  int64_t padded_w() const { return ow + kw - 1; }
  int64_t taps() const { return c * kh * kw; }
  /// Elements of one sample's padded copy (all channels).
  int64_t padded_sample() const { return c * padded_h() * padded_w(); }
};

}  // namespace ember::ops
