// Winograd F(2x2, 3x3) transforms on the CPU (ops/winograd_ops.hpp), compiled once per
// instruction set like the other kernels (kernels_cpu/meson.build).
//
// Each (sample, channel) plane is transformed on its own. A plane's tiles of one transform
// position are contiguous in the (16, C, tiles) layout, so every kernel works on blocks of
// consecutive tiles (buffers on the stack) with plain loops over the block that the compiler
// vectorises, and no per-element bounds tests: padding is handled once per image row by
// copying the row's valid span into a zero-filled buffer.
//
// The transform matrices (points 0, 1, -1 and infinity):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]      input:  V = B^T d B
//   A^T = [1 1 1 0; 0 1 -1 -1]                          output: Y = A^T M A
// (G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] transforms the weights, in functional_conv.hpp.)

#include "arch_kernels.hpp"

#include <algorithm>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using ops::WinogradTiles;

/// Tiles handled per step. Each kernel works on a block of tiles that are consecutive in the
/// position streams (whole tile rows, or part of one very wide row), so that its arithmetic
/// runs as flat loops over up to kTiles tiles (a tile row alone is often 7 tiles: loops that
/// short cost 3x more than the memory traffic) with its buffers on the stack.
constexpr int64_t kTiles = 256;

struct Block {
  int64_t ty0, ty1, tx0, tx1;
  int64_t width() const { return tx1 - tx0; }
  int64_t count() const { return (ty1 - ty0) * width(); }
};

template <class F>
void for_each_block(const WinogradTiles& g, F&& f) {
  const int64_t th = g.tiles_h(), tw = g.tiles_w();
  if (tw <= kTiles) {
    const int64_t rows = kTiles / tw;
    for (int64_t ty = 0; ty < th; ty += rows) f(Block{ty, std::min(th, ty + rows), 0, tw});
  } else {
    for (int64_t ty = 0; ty < th; ++ty)
      for (int64_t tx = 0; tx < tw; tx += kTiles) f(Block{ty, ty + 1, tx, std::min(tw, tx + kTiles)});
  }
}

/// Where a row of `width` buffer columns starting at image column `col0` overlaps the image
/// (columns [lo, hi) of the buffer).
struct Valid {
  int64_t lo, hi;
};
Valid valid_columns(int64_t col0, int64_t width, int64_t w) {
  const int64_t lo = std::clamp<int64_t>(-col0, 0, width);
  return {lo, std::clamp<int64_t>(w - col0, lo, width)};
}

/// V = B^T d B for the tiles of one input plane; v points at the plane's first tile of
/// position 0, positions `xs` apart.
template <class T>
void input_plane(const WinogradTiles& g, const T* x, T* v, int64_t xs) {
  const int64_t tw = g.tiles_w();
  T buf[16][kTiles], rows[4][2 * kTiles + 2], t[4][2 * kTiles + 2];
  for_each_block(g, [&](const Block& b) {
    const int64_t bw = b.width(), width = 2 * bw + 2, col0 = 2 * b.tx0 - g.pad_left;
    const Valid c = valid_columns(col0, width, g.w);
    for (int64_t ty = b.ty0; ty < b.ty1; ++ty) {
      for (int k = 0; k < 4; ++k) {
        const int64_t r = 2 * ty - g.pad_top + k;
        std::fill(rows[k], rows[k] + width, T(0));
        if (r >= 0 && r < g.h) std::copy(x + r * g.w + col0 + c.lo, x + r * g.w + col0 + c.hi, rows[k] + c.lo);
      }
      for (int64_t j = 0; j < width; ++j) {  // B^T along the rows
        t[0][j] = rows[0][j] - rows[2][j];
        t[1][j] = rows[1][j] + rows[2][j];
        t[2][j] = rows[2][j] - rows[1][j];
        t[3][j] = rows[1][j] - rows[3][j];
      }
      const int64_t at = (ty - b.ty0) * bw;
      for (int i = 0; i < 4; ++i) {  // B along the columns: tile l reads columns 2l .. 2l + 3
        const T* s = t[i];
        T *o0 = buf[4 * i] + at, *o1 = buf[4 * i + 1] + at, *o2 = buf[4 * i + 2] + at, *o3 = buf[4 * i + 3] + at;
        for (int64_t l = 0; l < bw; ++l) {
          const T e0 = s[2 * l], d0 = s[2 * l + 1], e1 = s[2 * l + 2], d1 = s[2 * l + 3];
          o0[l] = e0 - e1;
          o1[l] = d0 + e1;
          o2[l] = e1 - d0;
          o3[l] = d0 - d1;
        }
      }
    }
    T* out = v + b.ty0 * tw + b.tx0;
    for (int p = 0; p < 16; ++p) std::copy(buf[p], buf[p] + b.count(), out + p * xs);
  });
}

/// The adjoint: x = sum over tiles of B v B^T at the tile's patch.
template <class T>
void input_adjoint_plane(const WinogradTiles& g, const T* v, T* x, int64_t xs) {
  std::fill(x, x + g.h * g.w, T(0));
  const int64_t tw = g.tiles_w();
  T q[16][kTiles], row[2 * kTiles + 2];
  for_each_block(g, [&](const Block& b) {
    const int64_t n = b.count(), bw = b.width(), width = 2 * bw + 2, col0 = 2 * b.tx0 - g.pad_left;
    const T* in = v + b.ty0 * tw + b.tx0;
    for (int j = 0; j < 4; ++j) {  // B along the rows of each column j: q[4k + j] for row k
      const T *a0 = in + j * xs, *a1 = a0 + 4 * xs, *a2 = a1 + 4 * xs, *a3 = a2 + 4 * xs;
      for (int64_t l = 0; l < n; ++l) {
        q[j][l] = a0[l];
        q[4 + j][l] = a1[l] - a2[l] + a3[l];
        q[8 + j][l] = a1[l] + a2[l] - a0[l];
        q[12 + j][l] = -a3[l];
      }
    }
    const Valid c = valid_columns(col0, width, g.w);
    if (c.lo == c.hi) return;
    for (int64_t ty = b.ty0; ty < b.ty1; ++ty) {
      const int64_t at = (ty - b.ty0) * bw;
      for (int k = 0; k < 4; ++k) {
        const int64_t r = 2 * ty - g.pad_top + k;
        if (r < 0 || r >= g.h) continue;
        const T *q0 = q[4 * k] + at, *q1 = q[4 * k + 1] + at, *q2 = q[4 * k + 2] + at, *q3 = q[4 * k + 3] + at;
        // B^T along the columns; tile l adds to columns 2l .. 2l + 3, so neighbours overlap.
        for (int64_t l = 0; l < bw; ++l) {
          row[2 * l] = q0[l];
          row[2 * l + 1] = q1[l] - q2[l] + q3[l];
        }
        row[2 * bw] = row[2 * bw + 1] = T(0);
        for (int64_t l = 0; l < bw; ++l) {
          row[2 * l + 2] += q1[l] + q2[l] - q0[l];
          row[2 * l + 3] -= q3[l];
        }
        T* dst = x + r * g.w + col0;
        for (int64_t j = c.lo; j < c.hi; ++j) dst[j] += row[j];
      }
    }
  });
}

/// Y = A^T M A for the tiles of one output plane. Each loop touches at most four of the 16
/// position streams: they lie C * T elements apart, often a multiple of 4 KiB, and reading all
/// 16 at once thrashes an 8-way L1 set (measured 4x slower on cnn_small_step).
template <class T>
void output_plane(const WinogradTiles& g, const T* m, T* y, int64_t xs) {
  const int64_t tw = g.tiles_w();
  T c[8][kTiles], out[4][kTiles];
  for_each_block(g, [&](const Block& b) {
    const int64_t n = b.count(), bw = b.width();
    const T* in = m + b.ty0 * tw + b.tx0;
    for (int i = 0; i < 4; ++i) {  // A along the columns of row i
      const T *a0 = in + 4 * i * xs, *a1 = a0 + xs, *a2 = a1 + xs, *a3 = a2 + xs;
      for (int64_t l = 0; l < n; ++l) {
        c[2 * i][l] = a0[l] + a1[l] + a2[l];
        c[2 * i + 1][l] = a1[l] - a2[l] - a3[l];
      }
    }
    for (int64_t l = 0; l < n; ++l) {  // A^T along the rows: out[2a + b] is output (a, b) of the tile
      out[0][l] = c[0][l] + c[2][l] + c[4][l];
      out[1][l] = c[1][l] + c[3][l] + c[5][l];
      out[2][l] = c[2][l] - c[4][l] - c[6][l];
      out[3][l] = c[3][l] - c[5][l] - c[7][l];
    }
    const int64_t col0 = 2 * b.tx0, cols = std::min(2 * bw, g.ow - col0);
    for (int64_t ty = b.ty0; ty < b.ty1; ++ty) {
      const int64_t at = (ty - b.ty0) * bw;
      for (int a = 0; a < 2 && 2 * ty + a < g.oh; ++a) {
        T* dst = y + (2 * ty + a) * g.ow + col0;
        const T *even = out[2 * a] + at, *odd = out[2 * a + 1] + at;
        for (int64_t j = 0; j < cols; ++j) dst[j] = (j & 1) ? odd[j / 2] : even[j / 2];
      }
    }
  });
}

/// The adjoint: M = A Y A^T of every tile (outputs past the edge read as 0), written four
/// position streams at a time (see output_plane).
template <class T>
void output_adjoint_plane(const WinogradTiles& g, const T* y, T* m, int64_t xs) {
  const int64_t tw = g.tiles_w();
  T d[4][kTiles], h0[kTiles], h1[kTiles];
  for_each_block(g, [&](const Block& b) {
    const int64_t n = b.count(), bw = b.width(), col0 = 2 * b.tx0, cols = std::min(2 * bw, g.ow - col0);
    for (int64_t ty = b.ty0; ty < b.ty1; ++ty) {  // d[2a + b] = output (a, b) of each tile
      const int64_t at = (ty - b.ty0) * bw;
      for (int a = 0; a < 2; ++a) {
        T *even = d[2 * a] + at, *odd = d[2 * a + 1] + at;
        std::fill(even, even + bw, T(0));
        std::fill(odd, odd + bw, T(0));
        if (2 * ty + a >= g.oh) continue;
        const T* src = y + (2 * ty + a) * g.ow + col0;
        for (int64_t j = 0; j < cols; ++j) ((j & 1) ? odd : even)[j / 2] = src[j];
      }
    }
    T* out = m + b.ty0 * tw + b.tx0;
    for (int j = 0; j < 4; ++j) {  // column j of A^T applied to each tile row, then A along the rows
      for (int64_t l = 0; l < n; ++l) {
        const T e0 = d[0][l], o0 = d[1][l], e1 = d[2][l], o1 = d[3][l];
        h0[l] = j == 0 ? e0 : j == 1 ? e0 + o0 : j == 2 ? e0 - o0 : -o0;
        h1[l] = j == 0 ? e1 : j == 1 ? e1 + o1 : j == 2 ? e1 - o1 : -o1;
      }
      T *o0 = out + j * xs, *o1 = o0 + 4 * xs, *o2 = o1 + 4 * xs, *o3 = o2 + 4 * xs;
      for (int64_t l = 0; l < n; ++l) {
        o0[l] = h0[l];
        o1[l] = h0[l] + h1[l];
        o2[l] = h0[l] - h1[l];
        o3[l] = -h1[l];
      }
    }
  });
}

}  // namespace

void winograd_transform(ops::WinogradTransform kind, const WinogradTiles& t, int64_t n0, int64_t n1, int64_t c0,
                        int64_t c1, const detail::TensorImpl& src, detail::TensorImpl& dst) {
  using K = ops::WinogradTransform;
  const bool to_tiles = kind == K::Input || kind == K::OutputAdjoint;
  const detail::TensorImpl& image = to_tiles ? src : dst;
  const int64_t channels = image.sizes[1], plane = image.sizes[2] * image.sizes[3];
  const int64_t per_sample = t.tiles_per_sample(), nt = (n1 - n0) * per_sample, xs = channels * nt;
  auto run = [&]<class T>(T*) {
    T* img = static_cast<T*>(to_tiles ? src.data() : dst.data());
    T* tiles = static_cast<T*>(to_tiles ? dst.data() : src.data());
    for (int64_t c = c0; c < c1; ++c)  // samples inside: consecutive planes continue each other's streams
      for (int64_t n = n0; n < n1; ++n) {
        T* im = img + (n * channels + c) * plane;
        T* ti = tiles + c * nt + (n - n0) * per_sample;
        switch (kind) {
          case K::Input: input_plane(t, im, ti, xs); break;
          case K::InputAdjoint: input_adjoint_plane(t, ti, im, xs); break;
          case K::Output: output_plane(t, ti, im, xs); break;
          case K::OutputAdjoint: output_adjoint_plane(t, im, ti, xs); break;
        }
      }
  };
  if (src.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
