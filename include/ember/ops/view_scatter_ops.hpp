#pragma once
/// The functional forms of writing through a view, as torch::select_scatter, slice_scatter and
/// diagonal_scatter: a copy of the input with src written where the view would see it. src
/// must have the view's shape exactly (no broadcasting) and is cast to the input's dtype, as
/// PyTorch's. Differentiable in both (the gradient of the input is zero where src went).
///
///   Tensor row_set = select_scatter(x, zeros({4}), 0, 1);       // x with row 1 zeroed
///   Tensor odd = slice_scatter(x, y, 0, 1, std::nullopt, 2);    // rows 1, 3, ... from y
///   Tensor diag = diagonal_scatter(m, ones({3}));               // m with a unit diagonal

#include <ember/ops/shape_ops.hpp>

#include <optional>

namespace ember {

namespace detail {
/// A copy of input with src written through view(copy).
template <class P, class View>
BasicTensor<P> scatter_into_view(const BasicTensor<P>& input, const BasicTensor<P>& src, const char* op,
                                 const View& view) {
  EMBER_CHECK(input.defined() && src.defined(), "[{}] got an undefined tensor", op);
  BasicTensor<P> out = input.clone();
  BasicTensor<P> target = view(out);
  EMBER_CHECK(src.sizes() == target.sizes(), "[{}] src has shape {} but the view of the input {} has shape {}", op,
              src.sizes(), input.sizes(), target.sizes());
  target.copy_(src);
  return out;
}
}  // namespace detail

template <class P>
BasicTensor<P> select_scatter(const BasicTensor<P>& input, const BasicTensor<P>& src, int64_t dim, int64_t index) {
  const int64_t d = wrap_dim(dim, input.dim(), "select_scatter");
  EMBER_CHECK(index >= -input.size(d) && index < input.size(d),
              "[select_scatter] index {} is out of range for dim {} of the input {}", index, dim, input.sizes());
  return detail::scatter_into_view(input, src, "select_scatter",
                                   [&](const BasicTensor<P>& x) { return x.select(dim, index); });
}

template <class P>
BasicTensor<P> slice_scatter(const BasicTensor<P>& input, const BasicTensor<P>& src, int64_t dim = 0,
                             std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
                             int64_t step = 1) {
  wrap_dim(dim, input.dim(), "slice_scatter");
  EMBER_CHECK(step > 0, "[slice_scatter] step must be positive, got {}", step);
  return detail::scatter_into_view(input, src, "slice_scatter",
                                   [&](const BasicTensor<P>& x) { return x.slice(dim, start, end, step); });
}

template <class P>
BasicTensor<P> diagonal_scatter(const BasicTensor<P>& input, const BasicTensor<P>& src, int64_t offset = 0,
                                int64_t dim1 = 0, int64_t dim2 = 1) {
  EMBER_CHECK(wrap_dim(dim1, input.dim(), "diagonal_scatter") != wrap_dim(dim2, input.dim(), "diagonal_scatter"),
              "[diagonal_scatter] dim1 and dim2 name the same dim ({} and {}) of the input {}", dim1, dim2,
              input.sizes());
  return detail::scatter_into_view(input, src, "diagonal_scatter",
                                   [&](const BasicTensor<P>& x) { return x.diagonal(offset, dim1, dim2); });
}

}  // namespace ember
