#pragma once
/// The members of BasicTensor that enter the policy's layer chain (declared in tensor.hpp,
/// which includes this file at its end). They are defined out of the class, so they are not
/// inline: for DefaultPolicy they are compiled once into the library (src/tensor_instances.cpp,
/// from the list in core/tensor_instances.hpp) and a user's program calls them there, instead
/// of instantiating and optimising the whole chain (autocast, profiler, autograd, the backend
/// switch and the op's checks) for every op it uses. With the factories (core/factories.hpp)
/// that was over a third of the compile of bench/compile_time.sh's 20-line program (cc1plus
/// instructions 8.61 G -> 5.37 G, its object code 33 KB -> 3 KB); the price is one call per op.

#include <ember/core/tensor.hpp>
#include <ember/core/tensor_instances.hpp>
#include <ember/dispatch/default_policy.hpp>

#include <utility>

namespace ember {

template <class P>
BasicTensor<P> BasicTensor<P>::clone() const {
  return wrap(dispatch<P>(ops::To{dtype(), device()}, impl()));
}
template <class P>
BasicTensor<P> BasicTensor<P>::to(DType t) const {
  return t == dtype() ? *this : wrap(dispatch<P>(ops::To{t, device()}, impl()));
}

template <class P>
BasicTensor<P>& BasicTensor<P>::copy_(const BasicTensor& src) {
  dispatch<P>(ops::CopyInto{}, impl(), src.impl());
  return *this;
}
template <class P>
BasicTensor<P>& BasicTensor<P>::fill_(Scalar v) {
  dispatch<P>(ops::Fill{v}, impl());
  return *this;
}

template <class P>
BasicTensor<P> BasicTensor<P>::clamp(const BasicTensor& lo, const BasicTensor& hi) const {
  return wrap(dispatch<P>(ops::ClampTensors{}, impl(), lo.impl(), hi.impl()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::lerp(const BasicTensor& end, const BasicTensor& weight) const {
  check_lerp(end, &weight);
  return wrap(dispatch<P>(ops::Lerp{}, impl(), end.impl(), weight.impl()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::where(const BasicTensor& cond, const BasicTensor& other) const {
  return wrap(dispatch<P>(ops::Where{}, cond.impl(), impl(), other.impl()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::sum(const Shape& dims, bool keepdim, DType t) const {
  return wrap(dispatch<P>(ops::Reduce{ops::ReduceOp::Sum, dims, keepdim, t}, impl()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::softmax(int64_t d) const {
  return wrap(dispatch<P>(ops::Softmax{d, false}, impl()));
}
template <class P>
BasicTensor<P> BasicTensor<P>::log_softmax(int64_t d) const {
  return wrap(dispatch<P>(ops::Softmax{d, true}, impl()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::addmm(const BasicTensor& m1, const BasicTensor& m2, Scalar beta, Scalar alpha) const {
  return wrap(dispatch<P>(ops::Matmul{ops::MatmulKind::Addmm, beta.to_double(), alpha.to_double()}, m1.impl(),
                          m2.impl(), &impl()));
}
template <class P>
BasicTensor<P> BasicTensor<P>::baddbmm(const BasicTensor& b1, const BasicTensor& b2, Scalar beta, Scalar alpha) const {
  return wrap(dispatch<P>(ops::Matmul{ops::MatmulKind::Baddbmm, beta.to_double(), alpha.to_double()}, b1.impl(),
                          b2.impl(), &impl()));
}

template <class P>
template <class Op>
BasicTensor<P> BasicTensor<P>::apply(const Op& op) const {
  return wrap(dispatch<P>(op, impl()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::unary(ops::UnaryOp op, ops::UnaryParams p) const {
  if (dtype() == DType::Bool) {  // as PyTorch: sign of a bool is itself, its square an i64
    if (op == ops::UnaryOp::Sign) return clone();
    if (op == ops::UnaryOp::Square) return to(DType::I64).square();
  }
  return apply(ops::Unary{op, p});
}

template <class P>
BasicTensor<P>& BasicTensor<P>::unary_inplace(ops::UnaryOp op, ops::UnaryParams p) {
  if (op == ops::UnaryOp::Sign && dtype() == DType::Bool) return *this;  // the identity
  dispatch<P>(ops::Unary{op, p}, impl(), impl_.get());
  return *this;
}

template <class P>
BasicTensor<P> BasicTensor<P>::binary(ops::BinaryOp op, const BasicTensor& o) const {
  return wrap(dispatch<P>(ops::Binary{op}, impl(), o.impl()));
}

template <class P>
BasicTensor<P>& BasicTensor<P>::binary_inplace(ops::BinaryOp op, const BasicTensor& o) {
  dispatch<P>(ops::Binary{op}, impl(), o.impl(), impl_.get());
  return *this;
}

template <class P>
BasicTensor<P> BasicTensor<P>::reduce(ops::ReduceOp op, const Shape& dims, bool keepdim) const {
  BasicTensor r = wrap(dispatch<P>(ops::Reduce{op, dims, keepdim, std::nullopt}, impl()));
  // all/any of uint8 give uint8, as PyTorch's (a legacy of masks stored as bytes).
  if ((op == ops::ReduceOp::All || op == ops::ReduceOp::Any) && dtype() == DType::U8) return r.to(DType::U8);
  return r;
}

template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::arg(detail::ArgReduceOp op, int64_t d, bool keepdim,
                                                             bool values) const {
  auto [v, i] = dispatch<P>(ops::ArgReduce{op, d, keepdim, values}, impl());
  return {wrap(std::move(v)), wrap(std::move(i))};
}

template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::cum(detail::CumOp op, int64_t d) const {
  auto [v, i] = dispatch<P>(ops::Cumulative{op, d}, impl());
  return {wrap(std::move(v)), i ? wrap(std::move(i)) : BasicTensor()};
}

template <class P>
BasicTensor<P> BasicTensor<P>::mat(ops::MatmulKind k, const BasicTensor& o) const {
  if (k == ops::MatmulKind::Matmul && dim() >= 3 && o.dim() == 2 && size(-1) == o.size(0) && size(-1) > 0 &&
      dtype() == o.dtype() && device() == o.device()) {
    // (..., m, k) @ (k, n): fold the batch dims into the rows, as PyTorch does, so that this
    // is one GEMM and the weight's gradient is one GEMM too (not a per-batch product that
    // is then summed over the batch). Mismatched operands take the general path, whose
    // errors name matmul.
    Shape s = sizes();
    const int64_t kk = s.back();
    BasicTensor y = wrap(dispatch<P>(ops::Matmul{ops::MatmulKind::Mm}, reshape({-1, kk}).impl(), o.impl(),
                                     static_cast<const Impl*>(nullptr)));
    s[s.size() - 1] = o.size(1);
    return y.reshape(s);
  }
  return wrap(dispatch<P>(ops::Matmul{k}, impl(), o.impl(), static_cast<const Impl*>(nullptr)));
}

EMBER_TENSOR_MEMBER_INSTANCES(extern template)

}  // namespace ember
