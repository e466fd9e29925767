// Winograd F(2x2, 3x3) transforms on the CPU (ops/winograd_ops.hpp), compiled once per
// instruction set like the other kernels (kernels_cpu/meson.build). F(4x4, 3x3) is in
// winograd4.cpp.
//
// Each (sample, channel) plane is transformed on its own. A plane's tiles of one transform
// position are contiguous in the (16, C, tiles) layout, so every kernel works on blocks of
// consecutive tiles (buffers on the stack) with plain loops over the block that the compiler
// vectorises; bounds are tested only for the tiles at an image's edges.
//
// The transform matrices (points 0, 1, -1 and infinity):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]      input:  V = B^T d B
//   A^T = [1 1 1 0; 0 1 -1 -1]                          output: Y = A^T M A
// (G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] transforms the weights, in functional_conv.hpp.)

#include "arch_kernels.hpp"
#include "winograd4.hpp"

#include <algorithm>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using ops::WinogradTiles;

/// Tiles handled per step. Each kernel works on a block of tiles that are consecutive in the
/// position streams (whole tile rows, or part of one very wide row), so that its arithmetic
/// runs as flat loops over up to kTiles tiles (a tile row alone is often 7 tiles: loops that
/// short cost 3x more than the memory traffic) with its buffers on the stack.
constexpr int64_t kTiles = 128;

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

// The input side keeps a block's padded input rows split by row parity a and column offset m:
// q[4a + m][q' * bw + l] = padded(2q' + a, 2l + m) for m in 0..3. Tile (row q, column l) of the
// block, at n = q * bw + l, then reads its patch element (k, m) at q[4 (k & 1) + m][n + (k >> 1) bw]:
// every access is a fixed offset from n, so the arithmetic is one flat loop over the block
// (a block is often 7 tiles wide: loops per tile row ran mostly scalar, ~4x slower).

/// Floor of a / b for b > 0.
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// Splits padded image row r (zero outside the image) into a block's four q arrays: q[m][l] =
/// padded(r, col0 + 2l + m) for l < bw. It reads the image directly: a copy of the row into a
/// zero-padded buffer first made the wide loads of the split wait on the copy's stores
/// (store-forwarding stalls, a third of the input transform's time).
template <class T>
void split_row(const WinogradTiles& g, const T* x, int64_t r, int64_t col0, int64_t bw, T* const q[4]) {
  if (r < 0 || r >= g.h) {
    for (int m = 0; m < 4; ++m) std::fill(q[m], q[m] + bw, T(0));
    return;
  }
  const T* row = x + r * g.w;
  // Tiles [lo, hi) read only columns inside the image; the few at the edges test each column.
  const int64_t lo = std::clamp<int64_t>(floor_div(-col0 + 1, 2), 0, bw);
  const int64_t hi = std::clamp<int64_t>(floor_div(g.w - col0 - 4, 2) + 1, lo, bw);
  auto edge = [&](int64_t l) {
    for (int m = 0; m < 4; ++m) {
      const int64_t col = col0 + 2 * l + m;
      q[m][l] = col >= 0 && col < g.w ? row[col] : T(0);
    }
  };
  for (int64_t l = 0; l < lo; ++l) edge(l);
  if (hi > lo) {  // (only then is col0 + 2 lo a column of the row)
    const T* in = row + (col0 + 2 * lo);
    T *q0 = q[0] + lo, *q1 = q[1] + lo, *q2 = q[2] + lo, *q3 = q[3] + lo;
    for (int64_t l = 0; l < hi - lo; ++l) {
      q0[l] = in[2 * l];
      q1[l] = in[2 * l + 1];
      q2[l] = in[2 * l + 2];
      q3[l] = in[2 * l + 3];
    }
  }
  for (int64_t l = hi; l < bw; ++l) edge(l);
}

/// Row stride of the q arrays: a block's tile rows plus one.
constexpr int64_t kSplit = 2 * kTiles;

/// The flat loops, apart so that restrict tells the compiler that their arrays do not overlap
/// (it did not vectorise them otherwise). out[p * xs + i]: position p of tile i.
template <class T>
void input_tiles(int64_t n, int64_t bw, const T* __restrict q, T* __restrict out, int64_t xs) {
EMBER_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    T d[4][4], t[4][4];
    for (int k = 0; k < 4; ++k)
      for (int m = 0; m < 4; ++m) d[k][m] = q[(4 * (k & 1) + m) * kSplit + i + (k >> 1) * bw];
    for (int m = 0; m < 4; ++m) {  // B^T down the columns
      t[0][m] = d[0][m] - d[2][m];
      t[1][m] = d[1][m] + d[2][m];
      t[2][m] = d[2][m] - d[1][m];
      t[3][m] = d[1][m] - d[3][m];
    }
    for (int a = 0; a < 4; ++a) {  // B along the rows
      out[(4 * a) * xs + i] = t[a][0] - t[a][2];
      out[(4 * a + 1) * xs + i] = t[a][1] + t[a][2];
      out[(4 * a + 2) * xs + i] = t[a][2] - t[a][1];
      out[(4 * a + 3) * xs + i] = t[a][1] - t[a][3];
    }
  }
}

/// B v B^T of tiles [0, n) (positions `xs` apart from `in`): rows 0, 1 of each patch into q,
/// rows 2, 3 into lower; then lower added one tile row further down q.
template <class T>
void input_adjoint_tiles(int64_t n, int64_t bw, const T* __restrict in, int64_t xs, T* __restrict q,
                         T* __restrict lower) {
  for (int64_t i = 0; i < n; ++i) {
    T u[4][4];
    for (int a = 0; a < 4; ++a) {  // B^T along the rows' adjoint
      const T v0 = in[(4 * a) * xs + i], v1 = in[(4 * a + 1) * xs + i], v2 = in[(4 * a + 2) * xs + i],
              v3 = in[(4 * a + 3) * xs + i];
      u[a][0] = v0;
      u[a][1] = v1 - v2 + v3;
      u[a][2] = v1 + v2 - v0;
      u[a][3] = -v3;
    }
    for (int m = 0; m < 4; ++m) {  // and down the columns
      q[m * kSplit + i] = u[0][m];
      q[(4 + m) * kSplit + i] = u[1][m] - u[2][m] + u[3][m];
      lower[m * kTiles + i] = u[1][m] + u[2][m] - u[0][m];
      lower[(4 + m) * kTiles + i] = -u[3][m];
    }
  }
  for (int p = 0; p < 8; ++p) {
    T* qp = q + p * kSplit;
    std::fill(qp + n, qp + n + bw, T(0));
    for (int64_t i = 0; i < n; ++i) qp[i + bw] += lower[p * kTiles + i];
  }
}

/// V = B^T d B for the tiles of one input plane; v points at the plane's first tile of
/// position 0, positions `xs` apart.
template <class T>
void input_plane(const WinogradTiles& g, const T* x, T* v, int64_t xs) {
  const int64_t tw = g.tiles_w();
  T q[8][kSplit];
  for_each_block(g, [&](const Block& b) {
    const int64_t bw = b.width(), nq = b.ty1 - b.ty0, n = nq * bw, col0 = 2 * b.tx0 - g.pad_left;
    for (int64_t rr = 0; rr < 2 * nq + 2; ++rr) {
      const int64_t at = (rr >> 1) * bw, a = rr & 1;
      T* const dst[4] = {q[4 * a] + at, q[4 * a + 1] + at, q[4 * a + 2] + at, q[4 * a + 3] + at};
      split_row(g, x, 2 * b.ty0 - g.pad_top + rr, col0, bw, dst);
    }
    input_tiles(n, bw, &q[0][0], v + b.ty0 * tw + b.tx0, xs);
  });
}

/// The adjoint: x = sum over tiles of B v B^T at the tile's patch. The patch elements go to
/// the q arrays (rows k = 0, 1 first, then rows 2, 3 added one tile row further down, so that
/// no loop writes an element twice), and the arrays are summed back into image rows.
template <class T>
void input_adjoint_plane(const WinogradTiles& g, const T* v, T* x, int64_t xs) {
  std::fill(x, x + g.h * g.w, T(0));
  const int64_t tw = g.tiles_w();
  T q[8][kSplit], lower[8][kTiles], s[2 * kTiles + 2];
  for_each_block(g, [&](const Block& b) {
    const int64_t bw = b.width(), nq = b.ty1 - b.ty0, n = nq * bw, col0 = 2 * b.tx0 - g.pad_left;
    input_adjoint_tiles(n, bw, v + b.ty0 * tw + b.tx0, xs, &q[0][0], &lower[0][0]);
    const Valid c = valid_columns(col0, 2 * bw + 2, g.w);
    if (c.lo == c.hi) return;
    for (int64_t rr = 0; rr < 2 * nq + 2; ++rr) {
      const int64_t r = 2 * b.ty0 - g.pad_top + rr;
      if (r < 0 || r >= g.h) continue;
      const int64_t at = (rr >> 1) * bw, a = rr & 1;
      const T *m0 = q[4 * a] + at, *m1 = q[4 * a + 1] + at, *m2 = q[4 * a + 2] + at, *m3 = q[4 * a + 3] + at;
      s[0] = m0[0], s[1] = m1[0];  // column 2l + m: tile l's m, plus tile l - 1's m + 2
      for (int64_t l = 1; l < bw; ++l) {
        s[2 * l] = m0[l] + m2[l - 1];
        s[2 * l + 1] = m1[l] + m3[l - 1];
      }
      s[2 * bw] = m2[bw - 1], s[2 * bw + 1] = m3[bw - 1];
      T* dst = x + r * g.w + col0;
      for (int64_t j = c.lo; j < c.hi; ++j) dst[j] += s[j];
    }
  });
}

/// dst[j] for j < cols from the even and odd columns.
template <class T>
void interleave(const T* even, const T* odd, int64_t cols, T* dst) {
  for (int64_t l = 0; l < cols / 2; ++l) {
    dst[2 * l] = even[l];
    dst[2 * l + 1] = odd[l];
  }
  if (cols & 1) dst[cols - 1] = even[cols / 2];
}

/// The even and odd columns of src[0, cols), zero up to bw each (each element written once:
/// std::fill's calls were a tenth of the output adjoint's time).
template <class T>
void deinterleave(const T* src, int64_t cols, int64_t bw, T* even, T* odd) {
  int64_t l = 0;
  for (; 2 * l + 1 < cols; ++l) {
    even[l] = src[2 * l];
    odd[l] = src[2 * l + 1];
  }
  for (; l < bw; ++l) {
    even[l] = 2 * l < cols ? src[2 * l] : T(0);
    odd[l] = T(0);
  }
}

/// A^T m A of tiles [0, n) (positions `xs` apart from `in`): out[(2a + b) * kTiles + i] is
/// output (a, b) of tile i.
template <class T>
void output_tiles(int64_t n, const T* __restrict in, int64_t xs, T* __restrict out) {
  for (int64_t i = 0; i < n; ++i) {
    T c0[4], c1[4];
    for (int r = 0; r < 4; ++r) {  // A along the columns of row r
      const T a0 = in[(4 * r) * xs + i], a1 = in[(4 * r + 1) * xs + i], a2 = in[(4 * r + 2) * xs + i],
              a3 = in[(4 * r + 3) * xs + i];
      c0[r] = a0 + a1 + a2;
      c1[r] = a1 - a2 - a3;
    }
    out[i] = c0[0] + c0[1] + c0[2];  // A^T down the rows
    out[kTiles + i] = c1[0] + c1[1] + c1[2];
    out[2 * kTiles + i] = c0[1] - c0[2] - c0[3];
    out[3 * kTiles + i] = c1[1] - c1[2] - c1[3];
  }
}

/// A y A^T of tiles [0, n) from their outputs y[(2a + b) * kTiles + i]: buf[p * kTiles + i].
template <class T>
void output_adjoint_tiles(int64_t n, const T* __restrict y, T* __restrict out, int64_t xs) {
EMBER_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    const T y00 = y[i], y01 = y[kTiles + i], y10 = y[2 * kTiles + i], y11 = y[3 * kTiles + i];
    const T h0[4] = {y00, y00 + y01, y00 - y01, -y01};  // A^T along the columns of each row
    const T h1[4] = {y10, y10 + y11, y10 - y11, -y11};
    for (int j = 0; j < 4; ++j) {  // A down the rows
      out[j * xs + i] = h0[j];
      out[(4 + j) * xs + i] = h0[j] + h1[j];
      out[(8 + j) * xs + i] = h0[j] - h1[j];
      out[(12 + j) * xs + i] = -h1[j];
    }
  }
}

/// Y = A^T M A for the tiles of one output plane.
template <class T>
void output_plane(const WinogradTiles& g, const T* m, T* y, int64_t xs) {
  const int64_t tw = g.tiles_w();
  T out[4][kTiles];
  for_each_block(g, [&](const Block& b) {
    const int64_t bw = b.width();
    output_tiles(b.count(), m + b.ty0 * tw + b.tx0, xs, &out[0][0]);
    const int64_t col0 = 2 * b.tx0, cols = std::min(2 * bw, g.ow - col0);
    for (int64_t ty = b.ty0; ty < b.ty1; ++ty) {
      const int64_t at = (ty - b.ty0) * bw;
      for (int a = 0; a < 2 && 2 * ty + a < g.oh; ++a)
        interleave(out[2 * a] + at, out[2 * a + 1] + at, cols, y + (2 * ty + a) * g.ow + col0);
    }
  });
}

/// The adjoint: M = A Y A^T of every tile (outputs past the edge read as 0).
template <class T>
void output_adjoint_plane(const WinogradTiles& g, const T* y, T* m, int64_t xs) {
  const int64_t tw = g.tiles_w();
  T d[4][kTiles];
  for_each_block(g, [&](const Block& b) {
    const int64_t n = b.count(), bw = b.width(), col0 = 2 * b.tx0, cols = std::min(2 * bw, g.ow - col0);
    for (int64_t ty = b.ty0; ty < b.ty1; ++ty) {  // d[2a + b] = output (a, b) of each tile
      const int64_t at = (ty - b.ty0) * bw;
      for (int a = 0; a < 2; ++a)  // a tile row's second output row may lie past the image
        deinterleave(2 * ty + a < g.oh ? y + (2 * ty + a) * g.ow + col0 : nullptr, 2 * ty + a < g.oh ? cols : 0, bw,
                     d[2 * a] + at, d[2 * a + 1] + at);
    }
    output_adjoint_tiles(n, &d[0][0], m + b.ty0 * tw + b.tx0, xs);
  });
}

}  // namespace

void winograd_transform(ops::WinogradTransform kind, const WinogradTiles& t, int64_t n0, int64_t n1, int64_t c0,
                        int64_t c1, const detail::TensorImpl& src, detail::TensorImpl& dst) {
  using K = ops::WinogradTransform;
  const bool to_tiles = kind == K::Input || kind == K::OutputAdjoint;
  const detail::TensorImpl& image = to_tiles ? src : dst;
  const detail::TensorImpl& tiles_t = to_tiles ? dst : src;
  // The tiles (P, channels, samples' tiles) may be padded between positions and channels
  // (src/ops/winograd.cpp's chunk buffers): positions xs apart, channels `row` apart.
  const int64_t channels = image.sizes[1], plane = image.sizes[2] * image.sizes[3];
  const int64_t per_sample = t.tiles_per_sample(), xs = tiles_t.strides[0], row = tiles_t.strides[1];
  auto run = [&]<class T>(T*) {
    T* img = static_cast<T*>(image.data());
    T* tiles = static_cast<T*>(tiles_t.data());
    for (int64_t c = c0; c < c1; ++c)  // samples inside: consecutive planes continue each other's streams
      for (int64_t n = n0; n < n1; ++n) {
        T* im = img + (n * channels + c) * plane;
        T* ti = tiles + c * row + (n - n0) * per_sample;
        if (t.m == 4) {
          winograd4_plane(kind, t, im, ti, xs);
          continue;
        }
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
