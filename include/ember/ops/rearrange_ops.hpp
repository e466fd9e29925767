#pragma once
/// Rearranging elements, as libtorch's: movedim (moveaxis), swapaxes (swapdims), rot90,
/// roll over several dims, atleast_1d/2d/3d, take_along_dim, repeat_interleave with a
/// tensor of repeats, and Tensor::unfold (sliding windows as a view).
///
///   Tensor nhwc = movedim(nchw, 1, -1);               // channels last, a view
///   Tensor top = take_along_dim(x, x.argsort(1).narrow(1, 0, 3), 1);  // 3 smallest per row
///   Tensor frames = signal.unfold(-1, 400, 160);       // (..., n_frames, 400) windows, a view
///
/// Composites of views, flip, cat, gather and index_select: differentiable wherever those
/// are, and on every device that has them.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace ember {

namespace detail {
/// dims wrapped for rank ndim, each named once.
inline Shape wrapped_dims(const Shape& dims, int64_t ndim, const char* op) {
  check_distinct_dims(dims, ndim, op);
  Shape r;
  for (int64_t d : dims) r.push_back(wrap_dim(d, ndim, op));
  return r;
}
}  // namespace detail

/// x with dims `source` moved to positions `destination`; the other dims keep their order.
template <class P>
BasicTensor<P> movedim(const BasicTensor<P>& x, const Shape& source, const Shape& destination) {
  EMBER_CHECK(source.size() == destination.size(),
              "[movedim] source {} and destination {} must name as many dims", source, destination);
  const int64_t n = x.dim();
  const Shape src = detail::wrapped_dims(source, n, "movedim"), dst = detail::wrapped_dims(destination, n, "movedim");
  if (n == 0) return x.view(x.sizes());
  Shape perm(static_cast<size_t>(n), -1);
  std::vector<bool> moved(static_cast<size_t>(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    perm[static_cast<size_t>(dst[i])] = src[i];
    moved[static_cast<size_t>(src[i])] = true;
  }
  int64_t next = 0;  // the unmoved dims, in order, fill the free positions
  for (int64_t& p : perm) {
    if (p >= 0) continue;
    while (moved[static_cast<size_t>(next)]) ++next;
    p = next++;
  }
  return x.permute(perm);
}
template <class P>
BasicTensor<P> movedim(const BasicTensor<P>& x, int64_t source, int64_t destination) {
  return movedim(x, Shape{source}, Shape{destination});
}
template <class P>
BasicTensor<P> moveaxis(const BasicTensor<P>& x, const Shape& source, const Shape& destination) {
  return movedim(x, source, destination);
}
template <class P>
BasicTensor<P> moveaxis(const BasicTensor<P>& x, int64_t source, int64_t destination) {
  return movedim(x, source, destination);
}
/// transpose under NumPy's names.
template <class P>
BasicTensor<P> swapaxes(const BasicTensor<P>& x, int64_t a, int64_t b) {
  return x.transpose(a, b);
}
template <class P>
BasicTensor<P> swapdims(const BasicTensor<P>& x, int64_t a, int64_t b) {
  return x.transpose(a, b);
}

/// x rotated by k quarter turns in the plane of dims, from the first dim towards the second
/// (k < 0 turns the other way). A copy, as PyTorch's.
template <class P>
BasicTensor<P> rot90(const BasicTensor<P>& x, int64_t k = 1, const Shape& dims = {0, 1}) {
  EMBER_CHECK(dims.size() == 2, "[rot90] expects two rotation dims, got {}", dims);
  EMBER_CHECK(x.dim() >= 2, "[rot90] expects a tensor of at least 2 dims, got shape {}", x.sizes());
  const Shape d = detail::wrapped_dims(dims, x.dim(), "rot90");
  switch (((k % 4) + 4) % 4) {
    case 1: return x.flip(d[1]).transpose(d[0], d[1]);
    case 2: return x.flip(d);
    case 3: return x.flip(d[0]).transpose(d[0], d[1]);
    default: return x.clone();
  }
}

/// Rolls by shifts[i] along dims[i] (libtorch's roll(shifts, dims)); with no dims, one shift
/// rolls the flattened tensor.
template <class P>
BasicTensor<P> roll(const BasicTensor<P>& x, const Shape& shifts, const Shape& dims) {
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, "[roll] without dims takes one shift, got {}", shifts);
    return roll(x, shifts[0]);
  }
  EMBER_CHECK(shifts.size() == dims.size(), "[roll] shifts {} and dims {} must have one entry each", shifts, dims);
  BasicTensor<P> r = x;
  for (size_t i = 0; i < dims.size(); ++i) r = roll(r, shifts[i], dims[i]);
  return r;
}

/// Views with at least 1, 2 or 3 dims, as NumPy's: a 0-d tensor becomes (1), (1, 1) or
/// (1, 1, 1); a vector (1, n) or (1, n, 1); a matrix (m, n, 1).
template <class P>
BasicTensor<P> atleast_1d(const BasicTensor<P>& x) {
  return x.dim() >= 1 ? x : x.reshape({1});
}
template <class P>
BasicTensor<P> atleast_2d(const BasicTensor<P>& x) {
  return x.dim() >= 2 ? x : atleast_1d(x).unsqueeze(0);
}
template <class P>
BasicTensor<P> atleast_3d(const BasicTensor<P>& x) {
  if (x.dim() >= 3) return x;
  if (x.dim() == 2) return x.unsqueeze(-1);
  return atleast_2d(x).unsqueeze(-1);
}

/// Values picked along dim by i64 indices of x's rank, the other dims broadcast (NumPy's
/// take_along_axis); with no dim, flat positions into x. gather with broadcasting.
template <class P>
BasicTensor<P> take_along_dim(const BasicTensor<P>& x, const BasicTensor<P>& indices,
                              std::optional<int64_t> dim = std::nullopt) {
  EMBER_CHECK(indices.dtype() == DType::I64, "[take_along_dim] indices must be i64, got {}", indices.dtype());
  if (!dim) return x.reshape({-1}).gather(0, indices.reshape({-1}));
  EMBER_CHECK(x.dim() == indices.dim(),
              "[take_along_dim] x and indices need the same rank, got shapes {} and {}", x.sizes(), indices.sizes());
  const int64_t d = wrap_dim(*dim, x.dim(), "take_along_dim");
  if (x.dim() == 0) return x.reshape({1}).gather(0, indices.reshape({1})).reshape({});
  Shape picked = x.sizes();
  picked[static_cast<size_t>(d)] = indices.size(d);
  const Shape shape = ops::broadcast_shapes(picked, indices.sizes(), "take_along_dim");
  Shape source = shape;
  source[static_cast<size_t>(d)] = x.size(d);
  return x.expand(source).gather(d, indices.expand(shape));
}

/// Element (or slice along dim) i repeated repeats[i] times; repeats: an integer tensor with
/// one count per slice, or a single count for all. output_size, when given, must be the total.
template <class P>
BasicTensor<P> repeat_interleave(const BasicTensor<P>& x, const BasicTensor<P>& repeats,
                                 std::optional<int64_t> dim = std::nullopt,
                                 std::optional<int64_t> output_size = std::nullopt) {
  EMBER_CHECK((repeats.dtype() == DType::I64 || repeats.dtype() == DType::I32) && repeats.dim() <= 1,
              "[repeat_interleave] repeats must be a 0-d or 1-d i64 or i32 tensor, got {} of shape {}", repeats.dtype(),
              repeats.sizes());
  if (dim) detail::check_not_0d(x.dim(), "repeat_interleave");
  const BasicTensor<P> src = dim ? x : x.reshape({-1});
  const int64_t d = dim ? wrap_dim(*dim, x.dim(), "repeat_interleave") : 0;
  const int64_t n = src.size(d);
  const BasicTensor<P> counts = repeats.detach().to(kCPU, DType::I64).contiguous();
  EMBER_CHECK(counts.numel() == 1 || counts.numel() == n,
              "[repeat_interleave] {} repeats given for a dim of size {} (shape {})", counts.numel(), n, x.sizes());
  const int64_t* c = counts.template data_ptr<int64_t>();
  auto count = [&](int64_t i) { return c[counts.numel() == 1 ? 0 : i]; };
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(count(i) >= 0, "[repeat_interleave] negative repeat {} at position {}", count(i), i);
    total = detail::checked_add(total, count(i), "repeat_interleave");
  }
  EMBER_CHECK(!output_size || *output_size == total,
              "[repeat_interleave] output_size {} differs from the sum of repeats {}", output_size.value_or(0), total);
  BasicTensor<P> idx = empty<P>({total}, TensorOptions(DType::I64));
  int64_t* ip = idx.template data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) ip = std::fill_n(ip, count(i), i);
  return index_select(src, d, x.is_cpu() ? idx : idx.to(x.device()));
}
/// repeat_interleave(repeats) alone: position i repeated repeats[i] times ([1, 2] -> [0, 1, 1]),
/// in repeats' dtype.
template <class P>
BasicTensor<P> repeat_interleave(const BasicTensor<P>& repeats) {
  EMBER_CHECK(repeats.dim() == 1, "[repeat_interleave] repeats must be 1-d here, got shape {}", repeats.sizes());
  return repeat_interleave(arange<P>(repeats.size(0), TensorOptions(repeats.dtype()).device(repeats.device())),
                           repeats, 0);
}

// ---- BasicTensor's method forms (declared in core/tensor.hpp) -----------------------------------

template <class P>
BasicTensor<P> BasicTensor<P>::movedim(const Shape& source, const Shape& destination) const {
  return ember::movedim(*this, source, destination);
}
template <class P>
BasicTensor<P> BasicTensor<P>::movedim(int64_t source, int64_t destination) const {
  return ember::movedim(*this, source, destination);
}
template <class P>
BasicTensor<P> BasicTensor<P>::rot90(int64_t k, const Shape& dims) const {
  return ember::rot90(*this, k, dims);
}
template <class P>
BasicTensor<P> BasicTensor<P>::roll(const Shape& shifts, const Shape& dims) const {
  return ember::roll(*this, shifts, dims);
}
template <class P>
BasicTensor<P> BasicTensor<P>::take_along_dim(const BasicTensor& indices, std::optional<int64_t> dim) const {
  return ember::take_along_dim(*this, indices, dim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::repeat_interleave(const BasicTensor& repeats, std::optional<int64_t> dim,
                                                 std::optional<int64_t> output_size) const {
  return ember::repeat_interleave(*this, repeats, dim, output_size);
}
/// Windows of `size` elements every `step` along dim, as a new last dim: a view (writes
/// through it reach x, and overlapping windows share elements).
template <class P>
BasicTensor<P> BasicTensor<P>::unfold(int64_t dim, int64_t size, int64_t step) const {
  const int64_t d = wrap_dim(dim, this->dim(), "unfold");
  const int64_t len = this->dim() == 0 ? 1 : this->size(d);
  EMBER_CHECK(size >= 0 && size <= len, "[unfold] window size {} does not fit dim {} of size {} (shape {})", size, d,
              len, sizes());
  EMBER_CHECK(step > 0, "[unfold] step must be positive, got {}", step);
  if (this->dim() == 0) return as_strided({size}, {1});
  Shape s = sizes(), st = strides();
  s[static_cast<size_t>(d)] = (len - size) / step + 1;
  st[static_cast<size_t>(d)] = detail::checked_mul(strides()[static_cast<size_t>(d)], step, "unfold");
  s.push_back(size);
  st.push_back(strides()[static_cast<size_t>(d)]);
  return as_strided(s, st);
}

}  // namespace ember
