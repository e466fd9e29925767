// Winograd F(2x2, 3x3) transforms on the CPU (see include/ember/ops/winograd_ops.hpp).
//
// One (sample, channel) plane per task. A plane's tiles of one transform position are
// contiguous in the (16, C, T) layout, so every kernel works on blocks of consecutive tiles
// (buffers on the stack) with plain loops over the block that the compiler vectorises, and no
// per-element bounds tests: padding is handled once per image row by copying the row's valid
// span into a zero-filled buffer.
//
// The transform matrices (points 0, 1, -1 and infinity):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]      input:  V = B^T d B
//   A^T = [1 1 1 0; 0 1 -1 -1]                          output: Y = A^T M A
// (G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] transforms the weights, in functional_conv.hpp.)

#include <ember/core/device_hooks.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/winograd_ops.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <atomic>

namespace ember {
namespace {
std::atomic<ConvAlgorithm> g_conv_algorithm{ConvAlgorithm::Auto};
}
void set_conv_algorithm(ConvAlgorithm algorithm) { g_conv_algorithm.store(algorithm, std::memory_order_relaxed); }
ConvAlgorithm conv_algorithm() { return g_conv_algorithm.load(std::memory_order_relaxed); }
}  // namespace ember

namespace ember::ops {
namespace {

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

void check_input(const WinogradTiles& t, const TensorImpl& x, const char* op) {
  EMBER_CHECK(t.n >= 0 && t.h >= 1 && t.w >= 1 && t.pad_top >= 0 && t.pad_left >= 0 && t.oh >= 1 && t.ow >= 1,
              "[{}] invalid tiling: batch {}, input {}x{}, padding {}x{}, output {}x{}", op, t.n, t.h, t.w, t.pad_top,
              t.pad_left, t.oh, t.ow);
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[{}] supports f32 and f64, got {}", op, x.dtype);
}

/// Runs plane(src, dst, xs) for every (sample, channel) plane: `image` is the (N, C, *)
/// side's plane size, the (16, C, T) side is addressed by channel and sample. Planes go
/// sample-fastest, so consecutive planes continue each other's 16 position streams (a plane
/// alone holds only a few hundred bytes of each: in image order the streams were read in
/// short scattered runs, 2.5x slower on cnn_small_step).
template <class F>
void for_each_plane(const WinogradTiles& t, int64_t channels, DType dtype, const TensorImpl& src, TensorImpl& dst,
                    bool src_is_image, int64_t image, F&& plane) {
  const int64_t per_sample = t.tiles_h() * t.tiles_w(), xs = channels * t.tiles();
  auto run = [&]<class T>(T*) {
    const T* s = static_cast<const T*>(src.data());
    T* d = static_cast<T*>(dst.data());
    detail::parallel_for(t.n * channels, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t n = i % t.n, c = i / t.n, image_at = (n * channels + c) * image;
        const int64_t tiles_at = c * t.tiles() + n * per_sample;
        if (src_is_image) plane(s + image_at, d + tiles_at, xs);
        else plane(s + tiles_at, d + image_at, xs);
      }
    });
  };
  if (dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

/// (N, C, h, w) images -> (16, C, T) tiles through `plane`.
template <class F>
TensorRef image_to_tiles(const WinogradTiles& t, const TensorImpl& x, int64_t h, int64_t w, const char* op,
                         F&& plane) {
  check_input(t, x, op);
  EMBER_CHECK(x.ndim() == 4 && x.sizes[0] == t.n && x.sizes[2] == h && x.sizes[3] == w,
              "[{}] expects images of shape ({}, C, {}, {}), got {}", op, t.n, h, w, x.sizes);
  TensorRef xc = detail::contiguous_on_device(x, op);
  const int64_t sizes[3] = {16, x.sizes[1], t.tiles()};
  TensorRef out = detail::make_tensor(sizes, x.dtype, x.device(), op);
  for_each_plane(t, x.sizes[1], x.dtype, *xc, *out, true, h * w, plane);
  return out;
}

/// (16, C, T) tiles -> (N, C, h, w) images through `plane`.
template <class F>
TensorRef tiles_to_image(const WinogradTiles& t, const TensorImpl& v, int64_t h, int64_t w, const char* op,
                         F&& plane) {
  check_input(t, v, op);
  EMBER_CHECK(v.ndim() == 3 && v.sizes[0] == 16 && v.sizes[2] == t.tiles(),
              "[{}] expects transformed tiles of shape (16, C, {}), got {}", op, t.tiles(), v.sizes);
  TensorRef vc = detail::contiguous_on_device(v, op);
  const int64_t sizes[4] = {t.n, v.sizes[1], h, w};
  TensorRef out = detail::make_tensor(sizes, v.dtype, v.device(), op);
  for_each_plane(t, v.sizes[1], v.dtype, *vc, *out, false, h * w, plane);
  return out;
}

/// The fused kernels' chunks: `samples` consecutive samples each (the last may have fewer).
struct Chunks {
  int64_t samples, count;
};

/// Samples per chunk: the chunk's transformed input and output tiles (16 x (C + O) values per
/// tile) should stay within ~1.5 MiB, about one core's L2 here; within that, the count of
/// tiles that wastes least of the GEMM's 64-column panels (cnn_small_step's 7 x 7 tiles per
/// sample: 5 samples = 245 tiles fill 96% of 4 panels, 4 samples = 196 only 77%).
Chunks chunks_of(const WinogradTiles& t, int64_t c, int64_t o, size_t itemsize) {
  const int64_t per_sample = t.tiles_h() * t.tiles_w();
  const double bytes_per_sample = 16.0 * static_cast<double>(per_sample * (c + o) * static_cast<int64_t>(itemsize));
  int64_t best = 1;
  double best_fill = 0;
  for (int64_t k = 1; k <= std::max<int64_t>(t.n, 1); ++k) {
    if (k > 1 && k * bytes_per_sample > 1.5 * 1024 * 1024) break;
    const int64_t tiles = k * per_sample;
    const double fill = static_cast<double>(tiles) / static_cast<double>((tiles + 63) / 64 * 64);
    if (fill > best_fill + 1e-9) best = k, best_fill = fill;
  }
  return {best, (t.n + best - 1) / best};
}

/// Runs f(chunk) for every chunk: spread over the pool when there are several (each chunk's
/// GEMM then runs on its own thread), else on the caller (the GEMM may use the threads).
template <class F>
void for_each_chunk(const Chunks& ch, F&& f) {
  const int64_t pieces = std::min<int64_t>(get_num_threads(), ch.count);
  if (pieces <= 1) {
    for (int64_t k = 0; k < ch.count; ++k) f(k);
    return;
  }
  detail::parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w)
      for (int64_t k = w; k < ch.count; k += pieces) f(k);
  });
}

/// Applies plane(image, tiles, xs) to every (sample, channel) plane of samples [n0, n1): the
/// images are (N, channels, *) with `image` elements per plane, the chunk's tiles (16,
/// channels, chunk tiles).
template <class T, class Image, class Tiles, class F>
void chunk_planes(const WinogradTiles& t, int64_t n0, int64_t n1, int64_t channels, int64_t image, Image* img,
                  Tiles* tiles, F&& plane) {
  const int64_t per_sample = t.tiles_h() * t.tiles_w(), nt = (n1 - n0) * per_sample;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t n = n0; n < n1; ++n)
      plane(img + (n * channels + c) * image, tiles + c * nt + (n - n0) * per_sample, channels * nt);
}

/// (batch, rows, cols) view of a contiguous (batch, cols, rows) tensor: its transpose.
TensorRef transposed(const TensorImpl& x) {
  const int64_t b = x.sizes[0], r = x.sizes[2], c = x.sizes[1];
  const int64_t sizes[3] = {b, r, c}, strides[3] = {x.strides[0], x.strides[2], x.strides[1]};
  return detail::make_view(x.storage, x.dtype, sizes, strides, x.offset);
}

void check_conv(const WinogradTiles& t, const TensorImpl& x, const TensorImpl& u, const char* op) {
  check_input(t, x, op);
  EMBER_CHECK(x.ndim() == 4 && x.sizes[0] == t.n && x.sizes[2] == t.h && x.sizes[3] == t.w,
              "[{}] expects images of shape ({}, C, {}, {}), got {}", op, t.n, t.h, t.w, x.sizes);
  EMBER_CHECK(u.ndim() == 3 && u.sizes[0] == 16 && u.sizes[2] == x.sizes[1] && u.dtype == x.dtype,
              "[{}] expects transformed weights of shape (16, O, {}) and dtype {}, got {} ({})", op, x.sizes[1],
              x.dtype, u.sizes, u.dtype);
}

}  // namespace

TensorRef winograd_conv_cpu(const WinogradTiles& t, const TensorImpl& x, const TensorImpl& u) {
  check_conv(t, x, u, "winograd_conv");
  TensorRef xc = detail::contiguous_on_device(x, "winograd_conv"), uc = detail::contiguous_on_device(u, "winograd_conv");
  const int64_t c = x.sizes[1], o = u.sizes[1], per_sample = t.tiles_h() * t.tiles_w();
  const int64_t sizes[4] = {t.n, o, t.oh, t.ow};
  TensorRef y = detail::make_tensor(sizes, x.dtype, x.device(), "winograd_conv");
  const Chunks ch = chunks_of(t, c, o, itemsize(x.dtype));
  auto run = [&]<class T>(T*) {
    const T* xp = static_cast<const T*>(xc->data());
    T* yp = static_cast<T*>(y->data());
    for_each_chunk(ch, [&](int64_t k) {
      const int64_t n0 = k * ch.samples, n1 = std::min(t.n, n0 + ch.samples), nt = (n1 - n0) * per_sample;
      const int64_t vs[3] = {16, c, nt}, ms[3] = {16, o, nt};
      TensorRef v = detail::make_tensor(vs, x.dtype, x.device(), "winograd_conv");
      TensorRef m = detail::make_tensor(ms, x.dtype, x.device(), "winograd_conv");
      chunk_planes<T>(t, n0, n1, c, t.h * t.w, xp, static_cast<T*>(v->data()),
                      [&](const T* s, T* d, int64_t xs) { input_plane(t, s, d, xs); });
      detail::Kernels<Cpu>::gemm(*m, *uc, *v, 1.0, 0.0);
      chunk_planes<T>(t, n0, n1, o, t.oh * t.ow, yp, static_cast<const T*>(m->data()),
                      [&](T* d, const T* s, int64_t xs) { output_plane(t, s, d, xs); });
    });
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return y;
}

WinogradConvGrads winograd_conv_backward_cpu(const WinogradConvBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                             const TensorImpl& u) {
  const WinogradTiles& t = op.t;
  const char* name = "winograd_conv_backward";
  check_conv(t, x, u, name);
  EMBER_CHECK(dy.ndim() == 4 && dy.sizes[0] == t.n && dy.sizes[1] == u.sizes[1] && dy.sizes[2] == t.oh &&
                  dy.sizes[3] == t.ow && dy.dtype == x.dtype,
              "[{}] expects a gradient of shape ({}, {}, {}, {}) and dtype {}, got {} ({})", name, t.n, u.sizes[1],
              t.oh, t.ow, x.dtype, dy.sizes, dy.dtype);
  TensorRef xc = detail::contiguous_on_device(x, name), uc = detail::contiguous_on_device(u, name),
            dyc = detail::contiguous_on_device(dy, name);
  const int64_t c = x.sizes[1], o = u.sizes[1], per_sample = t.tiles_h() * t.tiles_w();
  const Chunks ch = chunks_of(t, c, o, itemsize(x.dtype));
  WinogradConvGrads g;
  if (op.need_x) g.dx = detail::make_tensor(x.sizes, x.dtype, x.device(), name);
  // du per chunk, summed in chunk order afterwards.
  TensorRef partial;
  if (op.need_u) {
    const int64_t ps[4] = {ch.count, 16, o, c};
    partial = detail::make_tensor(ps, x.dtype, x.device(), name);
  }
  TensorRef ut = transposed(*uc);  // (16, C, O)
  auto run = [&]<class T>(T*) {
    const T *xp = static_cast<const T*>(xc->data()), *dyp = static_cast<const T*>(dyc->data());
    T* dxp = g.dx ? static_cast<T*>(g.dx->data()) : nullptr;
    for_each_chunk(ch, [&](int64_t k) {
      const int64_t n0 = k * ch.samples, n1 = std::min(t.n, n0 + ch.samples), nt = (n1 - n0) * per_sample;
      const int64_t vs[3] = {16, c, nt}, ms[3] = {16, o, nt};
      TensorRef v = detail::make_tensor(vs, x.dtype, x.device(), name);
      TensorRef dm = detail::make_tensor(ms, x.dtype, x.device(), name);
      T* vp = static_cast<T*>(v->data());
      chunk_planes<T>(t, n0, n1, o, t.oh * t.ow, dyp, static_cast<T*>(dm->data()),
                      [&](const T* s, T* d, int64_t xs) { output_adjoint_plane(t, s, d, xs); });
      if (op.need_x) {  // dV = u^T @ dm, then its adjoint transform
        detail::Kernels<Cpu>::gemm(*v, *ut, *dm, 1.0, 0.0);
        chunk_planes<T>(t, n0, n1, c, t.h * t.w, dxp, static_cast<const T*>(vp),
                        [&](T* d, const T* s, int64_t xs) { input_adjoint_plane(t, s, d, xs); });
      }
      if (op.need_u) {  // this chunk's du = dm @ V^T
        chunk_planes<T>(t, n0, n1, c, t.h * t.w, xp, vp,
                        [&](const T* s, T* d, int64_t xs) { input_plane(t, s, d, xs); });
        const int64_t us[3] = {16, o, c}, ustrides[3] = {o * c, c, 1};
        TensorRef part = detail::make_view(partial->storage, x.dtype, us, ustrides, k * 16 * o * c);
        detail::Kernels<Cpu>::gemm(*part, *dm, *transposed(*v), 1.0, 0.0);
      }
    });
    if (op.need_u) {
      const int64_t us[3] = {16, o, c}, count = 16 * o * c;
      g.du = detail::make_tensor(us, x.dtype, x.device(), name);
      T* du = static_cast<T*>(g.du->data());
      const T* p = static_cast<const T*>(partial->data());
      std::fill(du, du + count, T(0));
      for (int64_t k = 0; k < ch.count; ++k)
        for (int64_t i = 0; i < count; ++i) du[i] += p[k * count + i];
    }
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return g;
}

TensorRef winograd_input_cpu(const WinogradTiles& t, const TensorImpl& x) {
  return image_to_tiles(t, x, t.h, t.w, "winograd_input",
                        [&](const auto* s, auto* d, int64_t xs) { input_plane(t, s, d, xs); });
}

TensorRef winograd_input_adjoint_cpu(const WinogradTiles& t, const TensorImpl& v) {
  return tiles_to_image(t, v, t.h, t.w, "winograd_input_adjoint",
                        [&](const auto* s, auto* d, int64_t xs) { input_adjoint_plane(t, s, d, xs); });
}

TensorRef winograd_output_cpu(const WinogradTiles& t, const TensorImpl& m) {
  return tiles_to_image(t, m, t.oh, t.ow, "winograd_output",
                        [&](const auto* s, auto* d, int64_t xs) { output_plane(t, s, d, xs); });
}

TensorRef winograd_output_adjoint_cpu(const WinogradTiles& t, const TensorImpl& y) {
  return image_to_tiles(t, y, t.oh, t.ow, "winograd_output_adjoint",
                        [&](const auto* s, auto* d, int64_t xs) { output_adjoint_plane(t, s, d, xs); });
}

}  // namespace ember::ops
