#pragma once
/// Zero-copy views between Ember tensors and Eigen matrices. Not part of ember.hpp (it pulls
/// in Eigen); include it where your code already speaks Eigen.
///
///   Eigen::MatrixXf m = ...;                       // column-major
///   ember::Tensor t = ember::from_eigen(m);         // [rows, cols] view, strides {1, rows}
///   auto view = ember::to_eigen<float>(t);          // Eigen::Map over the same memory
///
/// Layouts are mapped exactly through strides, never silently transposed: a column-major
/// matrix becomes a tensor with strides {1, rows}, and any 2-d strided tensor maps to an
/// Eigen::Map with the matching outer/inner strides.

#include <ember/ember.hpp>

#include <Eigen/Core>

namespace ember {

template <class T>
using EigenRowMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, Eigen::Unaligned,
                               Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;

/// A mutable Eigen view of a 1-d (column vector) or 2-d CPU tensor of dtype T.
template <class T, class P>
EigenRowMap<T> to_eigen(const BasicTensor<P>& t) {
  EMBER_CHECK(t.is_cpu(), "[to_eigen] needs a CPU tensor, got one on {}", t.device());
  EMBER_CHECK(t.dtype() == dtype_of_v<T>, "[to_eigen] tensor has dtype {}, requested {}", t.dtype(), dtype_of_v<T>);
  EMBER_CHECK(t.dim() == 1 || t.dim() == 2, "[to_eigen] needs a 1-d or 2-d tensor, got shape {}", t.sizes());
  int64_t rows = t.size(0), cols = t.dim() == 2 ? t.size(1) : 1;
  int64_t rs = t.stride(0), cs = t.dim() == 2 ? t.stride(1) : 1;
  return EigenRowMap<T>(t.template data_ptr<T>(), rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(rs, cs));
}

/// Not of a temporary: the map would outlive the memory it views (a freed block is reused by
/// the next tensor, so reads would silently see other data).
template <class T, class P>
EigenRowMap<T> to_eigen(BasicTensor<P>&& t) = delete;

/// A tensor viewing an Eigen matrix, map or block with direct access (no copy). The Eigen
/// object must outlive the tensor.
template <class P = DefaultPolicy, class Derived>
BasicTensor<P> from_eigen(Eigen::PlainObjectBase<Derived>& m) {
  using T = typename Derived::Scalar;
  constexpr bool row_major = Derived::IsRowMajor;
  Shape strides = row_major ? Shape{m.outerStride(), m.innerStride()} : Shape{m.innerStride(), m.outerStride()};
  detail::check_view_strides(strides, "from_eigen");
  return from_blob<P>(m.data(), {m.rows(), m.cols()}, strides, TensorOptions(dtype_of_v<T>));
}
template <class P = DefaultPolicy, class M, int Opt, class S>
BasicTensor<P> from_eigen(Eigen::Map<M, Opt, S>& m) {
  using T = typename M::Scalar;
  constexpr bool row_major = M::IsRowMajor;
  Shape strides = row_major ? Shape{m.outerStride(), m.innerStride()} : Shape{m.innerStride(), m.outerStride()};
  detail::check_view_strides(strides, "from_eigen");
  return from_blob<P>(const_cast<std::remove_const_t<T>*>(m.data()), {m.rows(), m.cols()}, strides,
                      TensorOptions(dtype_of_v<std::remove_const_t<T>>));
}

}  // namespace ember
