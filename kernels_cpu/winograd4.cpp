// Winograd F(4x4, 3x3) transforms on the CPU (ops/winograd_ops.hpp), compiled once per
// instruction set like the other kernels. F(2x2, 3x3) is in winograd.cpp.
//
// A 4x4 output tile reads a 6x6 input patch, and its transforms have 36 positions. Each
// (sample, channel) plane is transformed on its own, in blocks of up to kTiles consecutive
// tiles: the patches (or outputs) of a block are gathered into stack arrays element by
// element (bounds tested only for tiles at the image's edges), and the arithmetic runs as
// flat loops over the block's tiles that the compiler vectorises. With 4x4 tiles an image row
// holds few tiles (a 14x14 output has 4 per row), so the flat loops span whole planes.
//
// The matrices (Lavin & Gray; points 0, 1, -1, 2, -2 and infinity):
//   B^T = [4  0 -5  0 1 0]     A^T = [1 1  1 1  1 0]     G = [ 1/4     0    0 ]
//         [0 -4 -4  1 1 0]           [0 1 -1 2 -2 0]         [-1/6 -1/6 -1/6 ]
//         [0  4 -4 -1 1 0]           [0 1  1 4  4 0]         [-1/6  1/6 -1/6 ]
//         [0 -2 -1  2 1 0]           [0 1 -1 8 -8 1]         [1/24 1/12  1/6 ]
//         [0  2 -1 -2 1 0]                                   [1/24 -1/12 1/6 ]
//         [0  4  0 -5 0 1]                                   [  0     0    1 ]
// input V = B^T d B, output Y = A^T M A; G g G^T transforms the weights (functional_conv.hpp).

#include "winograd4.hpp"

#include <algorithm>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using ops::WinogradTiles;

/// Tiles per block: 36 stack rows of kTiles values (18 KiB in f64).
constexpr int64_t kTiles = 64;

// The 1-D transforms, applied down the columns and along the rows of a tile (to_positions,
// from_positions). The loops over a tile's rows and columns there are unrolled by pragma:
// GCC's own limit left them rolled, and then did not vectorise the loop over tiles around
// them (5x slower).

/// r = B^T d.
template <class T>
inline void input_1d(const T (&d)[6], T (&r)[6]) {
  r[0] = T(4) * d[0] - T(5) * d[2] + d[4];
  r[1] = d[3] + d[4] - T(4) * (d[1] + d[2]);
  r[2] = T(4) * (d[1] - d[2]) + d[4] - d[3];
  r[3] = T(2) * (d[3] - d[1]) + d[4] - d[2];
  r[4] = T(2) * (d[1] - d[3]) + d[4] - d[2];
  r[5] = T(4) * d[1] - T(5) * d[3] + d[5];
}

/// d = B e (the adjoint of input_1d).
template <class T>
inline void input_adjoint_1d(const T (&e)[6], T (&d)[6]) {
  d[0] = T(4) * e[0];
  d[1] = T(4) * (e[2] - e[1] + e[5]) + T(2) * (e[4] - e[3]);
  d[2] = -T(5) * e[0] - T(4) * (e[1] + e[2]) - e[3] - e[4];
  d[3] = e[1] - e[2] + T(2) * (e[3] - e[4]) - T(5) * e[5];
  d[4] = e[0] + e[1] + e[2] + e[3] + e[4];
  d[5] = e[5];
}

/// y = A^T m.
template <class T>
inline void output_1d(const T (&m)[6], T (&y)[4]) {
  const T s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
  y[0] = m[0] + s12 + s34;
  y[1] = d12 + T(2) * d34;
  y[2] = s12 + T(4) * s34;
  y[3] = d12 + T(8) * d34 + m[5];
}

/// m = A y (the adjoint of output_1d).
template <class T>
inline void output_adjoint_1d(const T (&y)[4], T (&m)[6]) {
  const T s02 = y[0] + y[2], s13 = y[1] + y[3], q02 = y[0] + T(4) * y[2], q13 = T(2) * y[1] + T(8) * y[3];
  m[0] = y[0];
  m[1] = s02 + s13;
  m[2] = s02 - s13;
  m[3] = q02 + q13;
  m[4] = q02 - q13;
  m[5] = y[3];
}

/// Calls f(first, n) for the blocks of a plane's `count` tiles: [first, first + n), n <= kTiles.
template <class F>
void for_each_block(int64_t count, F&& f) {
  for (int64_t first = 0; first < count; first += kTiles) f(first, std::min(kTiles, count - first));
}

/// Calls f(i, q, l) for the block's tiles i = 0, 1, ... starting at plane tile `first`.
template <class F>
void for_each_tile(int64_t first, int64_t n, int64_t tw, F&& f) {
  int64_t q = first / tw, l = first % tw;
  for (int64_t i = 0; i < n; ++i) {
    f(i, q, l);
    if (++l == tw) l = 0, ++q;
  }
}

/// The positions (6 x 6: out[(6a + b) * xs + i]) of tiles [0, n) from their In x In stack
/// arrays src[In r + c][i] (input patches, or outputs for the adjoint): `transform` (In -> 6
/// values: B^T, or A) down the columns, then along the rows.
template <int In, class T, class F>
void to_positions(int64_t n, const T* __restrict src, T* __restrict out, int64_t xs, F transform) {
EMBER_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    T col[In][6];
#pragma GCC unroll 6
    for (int c = 0; c < In; ++c) {
      T v[In];
#pragma GCC unroll 6
      for (int r = 0; r < In; ++r) v[r] = src[(In * r + c) * kTiles + i];
      transform(v, col[c]);
    }
#pragma GCC unroll 6
    for (int a = 0; a < 6; ++a) {
      T row[In], r[6];
#pragma GCC unroll 6
      for (int c = 0; c < In; ++c) row[c] = col[c][a];
      transform(row, r);
#pragma GCC unroll 6
      for (int b = 0; b < 6; ++b) out[(6 * a + b) * xs + i] = r[b];
    }
  }
}

/// The other way: Out x Out stack arrays dst[Out k + c][i] (output tiles, or input patches for
/// the adjoint) of tiles [0, n) from their positions in[(6a + b) * xs + i]: `transform` (6 ->
/// Out values: A^T, or B) along the rows, then down the columns.
template <int Out, class T, class F>
void from_positions(int64_t n, const T* __restrict in, int64_t xs, T* __restrict dst, F transform) {
  for (int64_t i = 0; i < n; ++i) {
    T rows[6][Out];
#pragma GCC unroll 6
    for (int a = 0; a < 6; ++a) {
      T v[6];
#pragma GCC unroll 6
      for (int b = 0; b < 6; ++b) v[b] = in[(6 * a + b) * xs + i];
      transform(v, rows[a]);
    }
#pragma GCC unroll 6
    for (int c = 0; c < Out; ++c) {
      T v[6], r[Out];
#pragma GCC unroll 6
      for (int a = 0; a < 6; ++a) v[a] = rows[a][c];
      transform(v, r);
#pragma GCC unroll 6
      for (int k = 0; k < Out; ++k) dst[(Out * k + c) * kTiles + i] = r[k];
    }
  }
}

/// Whether the size x size window at (r, c) lies inside a rows x cols image.
inline bool inside(int64_t r, int64_t c, int64_t size, int64_t rows, int64_t cols) {
  return r >= 0 && c >= 0 && r + size <= rows && c + size <= cols;
}

/// Calls f(i, size * k + m, e) for element (k, m) of each of the block's tiles i's window: its
/// size x size input patch (size 6: from (4q - pad_top, 4l - pad_left) in the h x w input) or
/// its outputs (size 4: from (4q, 4l) in the oh x ow output); e is the element's index in the
/// plane, or -1 outside it (bounds tested only for the tiles at the edges).
template <int Size, class F>
void for_each_window_element(const WinogradTiles& g, int64_t first, int64_t n, F&& f) {
  const bool patch = Size == 6;
  const int64_t rows = patch ? g.h : g.oh, cols = patch ? g.w : g.ow;
  for_each_tile(first, n, g.tiles_w(), [&](int64_t i, int64_t q, int64_t l) {
    const int64_t r0 = 4 * q - (patch ? g.pad_top : 0), c0 = 4 * l - (patch ? g.pad_left : 0);
    if (inside(r0, c0, Size, rows, cols)) {
      for (int k = 0; k < Size; ++k)
        for (int m = 0; m < Size; ++m) f(i, Size * k + m, (r0 + k) * cols + c0 + m);
      return;
    }
    for (int k = 0; k < Size; ++k)
      for (int m = 0; m < Size; ++m) {
        const int64_t r = r0 + k, c = c0 + m;
        f(i, Size * k + m, r >= 0 && r < rows && c >= 0 && c < cols ? r * cols + c : -1);
      }
  });
}

template <class T>
void input_plane(const WinogradTiles& g, const T* x, T* v, int64_t xs) {
  T d[36][kTiles];
  for_each_block(g.tiles_per_sample(), [&](int64_t first, int64_t n) {
    for_each_window_element<6>(g, first, n, [&](int64_t i, int p, int64_t e) { d[p][i] = e >= 0 ? x[e] : T(0); });
    to_positions<6>(n, &d[0][0], v + first, xs, [](const T(&p)[6], T(&r)[6]) { input_1d(p, r); });
  });
}

template <class T>
void input_adjoint_plane(const WinogradTiles& g, const T* v, T* x, int64_t xs) {
  std::fill(x, x + g.h * g.w, T(0));
  T d[36][kTiles];
  for_each_block(g.tiles_per_sample(), [&](int64_t first, int64_t n) {
    from_positions<6>(n, v + first, xs, &d[0][0], [](const T(&e)[6], T(&r)[6]) { input_adjoint_1d(e, r); });
    for_each_window_element<6>(g, first, n, [&](int64_t i, int p, int64_t e) {  // overlaps added in tile order
      if (e >= 0) x[e] += d[p][i];
    });
  });
}

template <class T>
void output_plane(const WinogradTiles& g, const T* mt, T* y, int64_t xs) {
  T out[16][kTiles];
  for_each_block(g.tiles_per_sample(), [&](int64_t first, int64_t n) {
    from_positions<4>(n, mt + first, xs, &out[0][0], [](const T(&m)[6], T(&r)[4]) { output_1d(m, r); });
    for_each_window_element<4>(g, first, n, [&](int64_t i, int p, int64_t e) {  // past the edge: dropped
      if (e >= 0) y[e] = out[p][i];
    });
  });
}

template <class T>
void output_adjoint_plane(const WinogradTiles& g, const T* y, T* mt, int64_t xs) {
  T d[16][kTiles];
  for_each_block(g.tiles_per_sample(), [&](int64_t first, int64_t n) {
    for_each_window_element<4>(g, first, n, [&](int64_t i, int p, int64_t e) {  // past the edge: 0
      d[p][i] = e >= 0 ? y[e] : T(0);
    });
    to_positions<4>(n, &d[0][0], mt + first, xs, [](const T(&y)[4], T(&r)[6]) { output_adjoint_1d(y, r); });
  });
}

}  // namespace

template <class T>
void winograd4_plane(ops::WinogradTransform kind, const WinogradTiles& t, T* image, T* tiles, int64_t xs) {
  using K = ops::WinogradTransform;
  switch (kind) {
    case K::Input: input_plane(t, image, tiles, xs); break;
    case K::InputAdjoint: input_adjoint_plane(t, tiles, image, xs); break;
    case K::Output: output_plane(t, tiles, image, xs); break;
    case K::OutputAdjoint: output_adjoint_plane(t, image, tiles, xs); break;
  }
}
template void winograd4_plane<float>(ops::WinogradTransform, const WinogradTiles&, float*, float*, int64_t);
template void winograd4_plane<double>(ops::WinogradTransform, const WinogradTiles&, double*, double*, int64_t);

}  // namespace ember::cpu::EMBER_CPU_ARCH
