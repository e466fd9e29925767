#pragma once
/// The tiling of a Winograd F(m x m, 3x3) convolution (m = 2 or 4) and its four transforms,
/// shared by the ops (ops/winograd_ops.hpp) and the CPU kernels (kernels_cpu/winograd.cpp).

#include <cstdint>

namespace ember::ops {

/// Input (n, *, h, w) padded by pad_top/pad_left (and by whatever the output size implies at
/// the bottom/right), output (n, *, oh, ow) cut into ceil(oh / m) x ceil(ow / m) tiles per
/// image, each read from an (m + 2) x (m + 2) input patch and transformed to as many
/// positions(). Tile t = (sample, tile row, tile column) in row-major order.
struct WinogradTiles {
  int64_t n = 0, h = 0, w = 0;
  int64_t pad_top = 0, pad_left = 0;
  int64_t oh = 0, ow = 0;
  int64_t m = 2;  ///< output tile size: F(2x2, 3x3) or F(4x4, 3x3)
  int64_t tiles_h() const { return (oh + m - 1) / m; }
  int64_t tiles_w() const { return (ow + m - 1) / m; }
  int64_t positions() const { return (m + 2) * (m + 2); }
  int64_t tiles_per_sample() const { return tiles_h() * tiles_w(); }
  int64_t tiles() const { return n * tiles_per_sample(); }
};

/// Input: images -> B^T d B per tile; Output: A^T m A per tile -> images; the adjoints go
/// the other way (see ops/winograd_ops.hpp).
enum class WinogradTransform : uint8_t { Input, InputAdjoint, Output, OutputAdjoint };

}  // namespace ember::ops
