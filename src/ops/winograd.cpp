// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution on the CPU (see include/ember/ops/winograd_ops.hpp): the
// ops' checks, the chunking of the fused convolution, and its GEMMs. The transforms
// themselves are kernels (kernels_cpu/winograd.cpp, one build per instruction set).

#include <ember/core/device_hooks.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/winograd_ops.hpp>
#include <ember/runtime/threading.hpp>

#include "ordered_sums.hpp"

#include <algorithm>

namespace ember::ops {
namespace {

void check_input(const WinogradTiles& t, const TensorImpl& x, const char* op) {
  EMBER_CHECK(t.n >= 0 && t.h >= 1 && t.w >= 1 && t.pad_top >= 0 && t.pad_left >= 0 && t.oh >= 1 && t.ow >= 1 &&
                  (t.m == 2 || t.m == 4),
              "[{}] invalid tiling: batch {}, input {}x{}, padding {}x{}, output {}x{}, tiles {}x{} (2x2 or 4x4)", op,
              t.n, t.h, t.w, t.pad_top, t.pad_left, t.oh, t.ow, t.m, t.m);
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[{}] supports f32 and f64, got {}", op, x.dtype);
}

/// A whole-batch transform for the unfused ops, parallel over channels. The kernel walks each
/// channel's planes sample after sample, so consecutive planes continue each other's
/// position streams (a plane alone holds only a few hundred bytes of each: in image order the
/// streams were read in short scattered runs, 2.5x slower on cnn_small_step).
void transform_all(WinogradTransform kind, const WinogradTiles& t, int64_t channels, const TensorImpl& src,
                   TensorImpl& dst) {
  detail::parallel_for(channels, 1, [&](int64_t c0, int64_t c1) {
    detail::Kernels<Cpu>::winograd_transform(kind, t, 0, t.n, c0, c1, src, dst);
  });
}

/// (N, C, h, w) images -> (P, C, T) tiles (P = t.positions()).
TensorRef image_to_tiles(WinogradTransform kind, const WinogradTiles& t, const TensorImpl& x, int64_t h, int64_t w,
                         const char* op) {
  check_input(t, x, op);
  EMBER_CHECK(x.ndim() == 4 && x.sizes[0] == t.n && x.sizes[2] == h && x.sizes[3] == w,
              "[{}] expects images of shape ({}, C, {}, {}), got {}", op, t.n, h, w, x.sizes);
  TensorRef xc = detail::contiguous_on_device(x, op);
  const int64_t sizes[3] = {t.positions(), x.sizes[1], t.tiles()};
  TensorRef out = detail::make_tensor(sizes, x.dtype, x.device(), op);
  transform_all(kind, t, x.sizes[1], *xc, *out);
  return out;
}

/// (P, C, T) tiles -> (N, C, h, w) images.
TensorRef tiles_to_image(WinogradTransform kind, const WinogradTiles& t, const TensorImpl& v, int64_t h, int64_t w,
                         const char* op) {
  check_input(t, v, op);
  EMBER_CHECK(v.ndim() == 3 && v.sizes[0] == t.positions() && v.sizes[2] == t.tiles(),
              "[{}] expects transformed tiles of shape ({}, C, {}), got {}", op, t.positions(), t.tiles(), v.sizes);
  TensorRef vc = detail::contiguous_on_device(v, op);
  const int64_t sizes[4] = {t.n, v.sizes[1], h, w};
  TensorRef out = detail::make_tensor(sizes, v.dtype, v.device(), op);
  transform_all(kind, t, v.sizes[1], *vc, *out);
  return out;
}

/// The fused kernels' chunks: `samples` consecutive samples each (the last may have fewer).
struct Chunks {
  int64_t samples, count;
};

/// Samples per chunk: the chunk's transformed input and output tiles (P x (C + O) values per
/// tile) should stay within ~1.5 MiB, about one core's L2 here; within that, the count of
/// tiles that wastes least of the GEMM's 64-column panels (cnn_small_step's 7 x 7 tiles per
/// sample: 5 samples = 245 tiles fill 96% of 4 panels, 4 samples = 196 only 77%). But at
/// least 64 tiles, cache or not: with few tiles per sample and many channels (4 x 4 tiles,
/// 512 channels) one-sample chunks ran products 16 columns wide that re-read all of the
/// 16 MB transformed weight for each sample (1.7x slower than im2col; now faster).
Chunks chunks_of(const WinogradTiles& t, int64_t c, int64_t o, size_t itemsize) {
  const int64_t per_sample = std::max<int64_t>(t.tiles_per_sample(), 1), n = std::max<int64_t>(t.n, 1);
  const double bytes_per_sample =
      static_cast<double>(t.positions() * per_sample * (c + o) * static_cast<int64_t>(itemsize));
  const int64_t least = std::min(n, (64 + per_sample - 1) / per_sample);
  int64_t best = least;
  double best_fill = 0;
  for (int64_t k = least; k <= n; ++k) {
    if (k > least && k * bytes_per_sample > 1.5 * 1024 * 1024) break;
    const int64_t tiles = k * per_sample;
    const double fill = static_cast<double>(tiles) / static_cast<double>((tiles + 63) / 64 * 64);
    if (fill > best_fill + 1e-9) best = k, best_fill = fill;
  }
  return {best, (t.n + best - 1) / best};
}

/// Runs f(k) for k in [0, count): spread over the pool when there are several (each f's GEMMs
/// then run on its own thread), else on the caller (the GEMMs may use the threads).
template <class F>
void for_each_chunk(int64_t count, F&& f) {
  const int64_t pieces = std::min<int64_t>(get_num_threads(), count);
  if (pieces <= 1) {
    for (int64_t k = 0; k < count; ++k) f(k);
    return;
  }
  detail::parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w)
      for (int64_t k = w; k < count; k += pieces) f(k);
  });
}

/// A (P, rows, nt) buffer of transformed tiles whose positions are an odd number of cache
/// lines apart (rows * nt rounded up): a transform writes its P position streams side by side,
/// and at a stride of a multiple of 4 KiB they all fall into one L1 set (F(4x4) chunks of 64
/// tiles over 32 or 64 channels: 8 or 16 KiB, and all 36 streams conflicted; 3x slower).
TensorRef tile_buffer(const WinogradTiles& t, int64_t rows, int64_t nt, DType dtype, const char* name) {
  const int64_t line = 64 / static_cast<int64_t>(itemsize(dtype));
  int64_t lines = (rows * nt + line - 1) / line;
  lines += 1 - lines % 2;
  const int64_t flat[1] = {t.positions() * lines * line};
  TensorRef buffer = detail::make_tensor(flat, dtype, Device::cpu(), name);
  const int64_t sizes[3] = {t.positions(), rows, nt}, strides[3] = {lines * line, nt, 1};
  return detail::make_view(buffer->storage, dtype, sizes, strides, buffer->offset);
}

/// Chunk k: its samples [n0, n1) and fresh (P, C, tiles) / (P, O, tiles) buffers for the
/// transformed input and output side.
struct Chunk {
  int64_t n0, n1;
  TensorRef in, out;
};
Chunk chunk(const WinogradTiles& t, const Chunks& ch, int64_t k, int64_t c, int64_t o, DType dtype, const char* name) {
  const int64_t n0 = k * ch.samples, n1 = std::min(t.n, n0 + ch.samples), nt = (n1 - n0) * t.tiles_per_sample();
  return {n0, n1, tile_buffer(t, c, nt, dtype, name), tile_buffer(t, o, nt, dtype, name)};
}

/// One transform of the samples [n0, n1) between images and a chunk's tiles.
void transform_chunk(WinogradTransform kind, const WinogradTiles& t, int64_t n0, int64_t n1, const TensorImpl& src,
                     TensorImpl& dst) {
  const TensorImpl& tiles = kind == WinogradTransform::Input || kind == WinogradTransform::OutputAdjoint ? dst : src;
  detail::Kernels<Cpu>::winograd_transform(kind, t, n0, n1, 0, tiles.sizes[1], src, dst);
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
  EMBER_CHECK(u.ndim() == 3 && u.sizes[0] == t.positions() && u.sizes[2] == x.sizes[1] && u.dtype == x.dtype,
              "[{}] expects transformed weights of shape ({}, O, {}) and dtype {}, got {} ({})", op, t.positions(), x.sizes[1],
              x.dtype, u.sizes, u.dtype);
}

}  // namespace

TensorRef winograd_conv_cpu(const WinogradTiles& t, const TensorImpl& x, const TensorImpl& u) {
  const char* name = "winograd_conv";
  check_conv(t, x, u, name);
  TensorRef xc = detail::contiguous_on_device(x, name), uc = detail::contiguous_on_device(u, name);
  const int64_t c = x.sizes[1], o = u.sizes[1];
  const int64_t sizes[4] = {t.n, o, t.oh, t.ow};
  TensorRef y = detail::make_tensor(sizes, x.dtype, x.device(), name);
  const Chunks ch = chunks_of(t, c, o, itemsize(x.dtype));
  for_each_chunk(ch.count, [&](int64_t k) {
    const Chunk b = chunk(t, ch, k, c, o, x.dtype, name);
    transform_chunk(WinogradTransform::Input, t, b.n0, b.n1, *xc, *b.in);
    detail::Kernels<Cpu>::gemm(*b.out, *uc, *b.in, 1.0, 0.0);
    transform_chunk(WinogradTransform::Output, t, b.n0, b.n1, *b.out, *y);
  });
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
  const int64_t c = x.sizes[1], o = u.sizes[1];
  const Chunks ch = chunks_of(t, c, o, itemsize(x.dtype));
  WinogradConvGrads g;
  if (op.need_x) g.dx = detail::make_tensor(x.sizes, x.dtype, x.device(), name);
  // du: each of at most kGroups groups of consecutive chunks adds its chunks' products into its
  // own partial sum in chunk order (one partial per chunk took gigabytes for big batches of
  // small images with many channels); the partials are added in group order. The groups
  // depend on the chunk count only, so du does not depend on the thread count.
  constexpr int64_t kGroups = 16;
  const int64_t per_group = (ch.count + kGroups - 1) / kGroups,
                groups = per_group ? (ch.count + per_group - 1) / per_group : 0;
  const int64_t p = t.positions();
  const int64_t ps[4] = {groups, p, o, c}, us[3] = {p, o, c}, ustrides[3] = {o * c, c, 1};
  TensorRef partial = op.need_u ? detail::make_tensor(ps, x.dtype, x.device(), name) : TensorRef();
  TensorRef ut = transposed(*uc);  // (P, C, O)
  for_each_chunk(groups, [&](int64_t group) {
    TensorRef part = op.need_u ? detail::make_view(partial->storage, x.dtype, us, ustrides, group * p * o * c)
                               : TensorRef();
    const int64_t first = group * per_group, last = std::min(ch.count, first + per_group);
    for (int64_t k = first; k < last; ++k) {
      const Chunk b = chunk(t, ch, k, c, o, x.dtype, name);  // b.in: dV, then V; b.out: dm
      transform_chunk(WinogradTransform::OutputAdjoint, t, b.n0, b.n1, *dyc, *b.out);
      if (op.need_x) {  // dV = u^T @ dm, then its adjoint transform
        detail::Kernels<Cpu>::gemm(*b.in, *ut, *b.out, 1.0, 0.0);
        transform_chunk(WinogradTransform::InputAdjoint, t, b.n0, b.n1, *b.in, *g.dx);
      }
      if (op.need_u) {  // the group's du += dm @ V^T
        transform_chunk(WinogradTransform::Input, t, b.n0, b.n1, *xc, *b.in);
        detail::Kernels<Cpu>::gemm(*part, *b.out, *transposed(*b.in), 1.0, k == first ? 0.0 : 1.0);
      }
    }
  });
  if (op.need_u) g.du = sum_in_order(*partial, groups, p * o * c, 0, Shape{p, o, c}, name);
  return g;
}

TensorRef winograd_input_cpu(const WinogradTiles& t, const TensorImpl& x) {
  return image_to_tiles(WinogradTransform::Input, t, x, t.h, t.w, "winograd_input");
}

TensorRef winograd_input_adjoint_cpu(const WinogradTiles& t, const TensorImpl& v) {
  return tiles_to_image(WinogradTransform::InputAdjoint, t, v, t.h, t.w, "winograd_input_adjoint");
}

TensorRef winograd_output_cpu(const WinogradTiles& t, const TensorImpl& m) {
  return tiles_to_image(WinogradTransform::Output, t, m, t.oh, t.ow, "winograd_output");
}

TensorRef winograd_output_adjoint_cpu(const WinogradTiles& t, const TensorImpl& y) {
  return image_to_tiles(WinogradTransform::OutputAdjoint, t, y, t.oh, t.ow, "winograd_output_adjoint");
}

}  // namespace ember::ops
