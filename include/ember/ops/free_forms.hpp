#pragma once
/// Free forms of Tensor methods, as libtorch spells them beside the methods: reductions
/// (ember::sum(x, {1}), ember::max(x, 1) for values and indices, ember::max(a, b) for the
/// elementwise maximum), scans, views (ember::reshape(x, {2, -1}), ember::transpose(x, 0, 1)),
/// and the small composites libtorch users reach for (where(cond), argwhere, broadcast_to,
/// split_with_sizes, fliplr, flipud, dist, unravel_index).

#include <ember/ops/shape_ops.hpp>

#include <optional>
#include <utility>
#include <vector>

namespace ember {

// ---- reductions ---------------------------------------------------------------------------------
#define EMBER_FREE_REDUCTION(n)                                                   \
  template <class P>                                                              \
  BasicTensor<P> n(const BasicTensor<P>& x) {                                     \
    return x.n();                                                                 \
  }                                                                               \
  template <class P>                                                              \
  BasicTensor<P> n(const BasicTensor<P>& x, const Shape& dims, bool keepdim = false) { \
    return x.n(dims, keepdim);                                                    \
  }                                                                               \
  template <class P, SingleDim I>                                                 \
  BasicTensor<P> n(const BasicTensor<P>& x, I dim, bool keepdim = false) {        \
    return x.n(dim, keepdim);                                                     \
  }
EMBER_FREE_REDUCTION(sum)
EMBER_FREE_REDUCTION(nansum)
EMBER_FREE_REDUCTION(prod)
EMBER_FREE_REDUCTION(mean)
EMBER_FREE_REDUCTION(amax)
EMBER_FREE_REDUCTION(amin)
EMBER_FREE_REDUCTION(all)
EMBER_FREE_REDUCTION(any)
EMBER_FREE_REDUCTION(count_nonzero)
#undef EMBER_FREE_REDUCTION

/// The largest element; {values, indices} along a dim; or the elementwise maximum of two
/// tensors (torch::max(a, b)). min alike.
template <class P>
BasicTensor<P> max(const BasicTensor<P>& x) {
  return x.max();
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> max(const BasicTensor<P>& x, int64_t dim, bool keepdim = false) {
  return x.max(dim, keepdim);
}
template <class P>
BasicTensor<P> max(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.maximum(b);
}
template <class P>
BasicTensor<P> min(const BasicTensor<P>& x) {
  return x.min();
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> min(const BasicTensor<P>& x, int64_t dim, bool keepdim = false) {
  return x.min(dim, keepdim);
}
template <class P>
BasicTensor<P> min(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.minimum(b);
}
template <class P>
BasicTensor<P> argmax(const BasicTensor<P>& x, std::optional<int64_t> dim = {}, bool keepdim = false) {
  return x.argmax(dim, keepdim);
}
template <class P>
BasicTensor<P> argmin(const BasicTensor<P>& x, std::optional<int64_t> dim = {}, bool keepdim = false) {
  return x.argmin(dim, keepdim);
}

/// Variance and standard deviation: over every element, over dims with a correction, or as
/// libtorch's var(x, /*unbiased=*/false).
#define EMBER_FREE_SPREAD(n)                                                                      \
  template <class P>                                                                              \
  BasicTensor<P> n(const BasicTensor<P>& x, const Shape& dims = {}, double correction = 1,        \
                   bool keepdim = false) {                                                        \
    return x.n(dims, correction, keepdim);                                                        \
  }                                                                                               \
  template <class P, SingleDim I>                                                                 \
  BasicTensor<P> n(const BasicTensor<P>& x, I dim, double correction = 1, bool keepdim = false) { \
    return x.n(dim, correction, keepdim);                                                         \
  }                                                                                               \
  template <class P, std::same_as<bool> B>                                                        \
  BasicTensor<P> n(const BasicTensor<P>& x, B unbiased) {                                         \
    return x.n(unbiased);                                                                         \
  }
EMBER_FREE_SPREAD(var)
EMBER_FREE_SPREAD(std)
#undef EMBER_FREE_SPREAD

template <class P>
BasicTensor<P> norm(const BasicTensor<P>& x, double p = 2, const Shape& dims = {}, bool keepdim = false) {
  return x.norm(p, dims, keepdim);
}
/// The p-norm of a - b (broadcast), as torch::dist.
template <class P>
BasicTensor<P> dist(const BasicTensor<P>& a, const BasicTensor<P>& b, double p = 2) {
  return a.sub(b).norm(p);
}

// ---- scans --------------------------------------------------------------------------------------
template <class P>
BasicTensor<P> cumsum(const BasicTensor<P>& x, int64_t dim) {
  return x.cumsum(dim);
}
template <class P>
BasicTensor<P> cumprod(const BasicTensor<P>& x, int64_t dim) {
  return x.cumprod(dim);
}
template <class P>
BasicTensor<P> logcumsumexp(const BasicTensor<P>& x, int64_t dim) {
  return x.logcumsumexp(dim);
}

// ---- views --------------------------------------------------------------------------------------
template <class P>
BasicTensor<P> reshape(const BasicTensor<P>& x, const Shape& shape) {
  return x.reshape(shape);
}
template <class P>
BasicTensor<P> flatten(const BasicTensor<P>& x, int64_t start = 0, int64_t end = -1) {
  return x.flatten(start, end);
}
template <class P>
BasicTensor<P> unflatten(const BasicTensor<P>& x, int64_t dim, const Shape& sizes) {
  return x.unflatten(dim, sizes);
}
template <class P>
BasicTensor<P> transpose(const BasicTensor<P>& x, int64_t d0, int64_t d1) {
  return x.transpose(d0, d1);
}
template <class P>
BasicTensor<P> t(const BasicTensor<P>& x) {
  return x.t();
}
template <class P>
BasicTensor<P> permute(const BasicTensor<P>& x, const Shape& dims) {
  return x.permute(dims);
}
template <class P>
BasicTensor<P> squeeze(const BasicTensor<P>& x) {
  return x.squeeze();
}
template <class P>
BasicTensor<P> squeeze(const BasicTensor<P>& x, int64_t dim) {
  return x.squeeze(dim);
}
template <class P>
BasicTensor<P> unsqueeze(const BasicTensor<P>& x, int64_t dim) {
  return x.unsqueeze(dim);
}
template <class P>
BasicTensor<P> narrow(const BasicTensor<P>& x, int64_t dim, int64_t start, int64_t length) {
  return x.narrow(dim, start, length);
}
template <class P>
BasicTensor<P> select(const BasicTensor<P>& x, int64_t dim, int64_t index) {
  return x.select(dim, index);
}
template <class P>
BasicTensor<P> diagonal(const BasicTensor<P>& x, int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1) {
  return x.diagonal(offset, d0, d1);
}
template <class P>
BasicTensor<P> clone(const BasicTensor<P>& x) {
  return x.clone();
}
/// x viewed at a broadcast shape (-1 keeps a dim), as torch::broadcast_to (expand).
template <class P>
BasicTensor<P> broadcast_to(const BasicTensor<P>& x, const Shape& shape) {
  return x.expand(shape);
}

// ---- small composites ---------------------------------------------------------------------------
/// One i64 index tensor per dim of cond, holding the coordinates of its nonzero elements:
/// torch::where(cond), nonzero(cond) as a tuple (a 0-d cond counts as 1-d).
template <class P>
std::vector<BasicTensor<P>> where(const BasicTensor<P>& cond) {
  const BasicTensor<P> coords = nonzero(cond.dim() == 0 ? cond.reshape({1}) : cond);
  std::vector<BasicTensor<P>> per_dim;
  for (int64_t d = 0; d < coords.size(1); ++d) per_dim.push_back(coords.select(1, d));
  return per_dim;
}
/// The coordinates of x's nonzero elements, one row each (torch::argwhere, nonzero).
template <class P>
BasicTensor<P> argwhere(const BasicTensor<P>& x) {
  return nonzero(x);
}
/// The coordinates in a tensor of `shape` of each flat index (torch::unravel_index): one i64
/// tensor per dim of shape, each of the indices' shape. Indices are integers in
/// [-numel, numel); a negative one counts from the end. Others are refused (PyTorch 2 wraps
/// them silently; NumPy refuses them too).
template <class P>
std::vector<BasicTensor<P>> unravel_index(const BasicTensor<P>& indices, const Shape& shape) {
  constexpr const char* op = "unravel_index";
  EMBER_CHECK(indices.defined() && !indices.is_floating_point() && indices.dtype() != DType::Bool,
              "[{}] expects an integer tensor of indices, got {}", op,
              indices.defined() ? dtype_name(indices.dtype()) : std::string_view("an undefined tensor"));
  const int64_t n = checked_numel(shape, op);
  BasicTensor<P> flat = indices.to(DType::I64);
  std::vector<BasicTensor<P>> coords(shape.size());
  if (flat.numel() == 0) {  // (a shape with a zero dim takes no index but these)
    for (auto& c : coords) c = flat.clone();
    return coords;
  }
  const int64_t low = flat.min().template item<int64_t>(), high = flat.max().template item<int64_t>();
  EMBER_CHECK(low >= -n && high < n, "[{}] index {} is outside [{}, {}) for shape {}", op, low < -n ? low : high, -n, n,
              shape);
  flat = where(flat.lt(int64_t{0}), flat + n, flat);
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = flat.remainder(shape[d]);  // all indices are below n, so shape[d] > 0 here
    flat = flat.div(shape[d], "floor");
  }
  return coords;
}

template <class P>
std::vector<BasicTensor<P>> split_with_sizes(const BasicTensor<P>& x, const std::vector<int64_t>& sizes,
                                             int64_t dim = 0) {
  return x.split(sizes, dim);
}
/// x flipped left-right (dim 1; 2 or more dims) and up-down (dim 0; 1 or more dims).
template <class P>
BasicTensor<P> fliplr(const BasicTensor<P>& x) {
  EMBER_CHECK(x.dim() >= 2, "[fliplr] expects at least 2 dims, got shape {}", x.sizes());
  return flip(x, {1});
}
template <class P>
BasicTensor<P> flipud(const BasicTensor<P>& x) {
  EMBER_CHECK(x.dim() >= 1, "[flipud] expects at least 1 dim, got a 0-d tensor");
  return flip(x, {0});
}

template <class P>
BasicTensor<P> renorm(const BasicTensor<P>& x, double p, int64_t dim, double maxnorm) {
  return x.renorm(p, dim, maxnorm);
}

}  // namespace ember
