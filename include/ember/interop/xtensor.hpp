#pragma once
/// Zero-copy views between Ember tensors and xtensor (xt::adapt). Not part of ember.hpp;
/// include it where your code already speaks xtensor. Shapes and strides (in elements) carry
/// over exactly; nothing is transposed or copied.

#include <ember/ember.hpp>

#include <xtensor/xadapt.hpp>

#include <vector>

namespace ember {

/// An xtensor adaptor over a CPU tensor of dtype T (any rank, any non-negative strides).
/// Not of a temporary: the adaptor would outlive the memory it views.
template <class T, class P>
auto to_xtensor(BasicTensor<P>&& t) = delete;
template <class T, class P>
auto to_xtensor(const BasicTensor<P>& t) {
  EMBER_CHECK(t.is_cpu(), "[to_xtensor] needs a CPU tensor, got one on {}", t.device());
  EMBER_CHECK(t.dtype() == dtype_of_v<T>, "[to_xtensor] tensor has dtype {}, requested {}", t.dtype(),
              dtype_of_v<T>);
  std::vector<size_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<std::ptrdiff_t> strides(t.strides().begin(), t.strides().end());
  // The buffer size is the element count, not the span the strides reach: xtensor resizes
  // an adaptor's buffer to the shape's product and refuses any other size, so a view with
  // gaps (a column, an expanded dim) threw std::runtime_error. Elements are reached through
  // the strides either way.
  return xt::adapt(t.template data_ptr<T>(), static_cast<size_t>(t.numel()), xt::no_ownership(), shape, strides);
}

/// A tensor viewing an xtensor container's memory (xt::xarray / xt::xtensor / adaptors with
/// non-negative strides). The container must outlive the tensor.
template <class P = DefaultPolicy, class E>
BasicTensor<P> from_xtensor(E& e) {
  using T = typename E::value_type;
  Shape shape, strides;
  for (size_t d = 0; d < e.dimension(); ++d) {
    shape.push_back(static_cast<int64_t>(e.shape()[d]));
    // xtensor reports stride 0 for size-1 dims; any stride is valid there.
    strides.push_back(static_cast<int64_t>(e.strides()[d]));
  }
  detail::check_view_strides(strides, "from_xtensor");
  return from_blob<P>(e.data() + e.data_offset(), shape, strides, TensorOptions(dtype_of_v<T>));
}

}  // namespace ember
