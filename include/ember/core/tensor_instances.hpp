#pragma once
/// The DefaultPolicy instances of the tensor API that the library compiles once
/// (src/tensor_instances.cpp) and users' programs only declare (`extern template`, where
/// core/tensor_entries.hpp, core/factories.hpp, ops/functions.hpp and
/// autograd/tensor_autograd.hpp expand these lists): the members and functions that enter the
/// layer chain, the common factories and backward. One list for both sides, so they cannot drift.
///
/// Other policies instantiate these templates in the program that uses them, as before.

/// BasicTensor<DefaultPolicy>'s members (PREFIX: `extern template` or `template`).
#define EMBER_TENSOR_MEMBER_INSTANCES(PREFIX)                                                  \
  PREFIX Tensor Tensor::apply<ops::ViewOp>(const ops::ViewOp&) const;                          \
  PREFIX Tensor Tensor::apply<ops::Unary>(const ops::Unary&) const;                            \
  PREFIX Tensor Tensor::unary(ops::UnaryOp, ops::UnaryParams) const;                           \
  PREFIX Tensor& Tensor::unary_inplace(ops::UnaryOp, ops::UnaryParams);                        \
  PREFIX Tensor Tensor::binary(ops::BinaryOp, const Tensor&) const;                            \
  PREFIX Tensor& Tensor::binary_inplace(ops::BinaryOp, const Tensor&);                         \
  PREFIX Tensor Tensor::reduce(ops::ReduceOp, const Shape&, bool) const;                       \
  PREFIX Tensor Tensor::sum(const Shape&, bool, DType) const;                                  \
  PREFIX std::pair<Tensor, Tensor> Tensor::arg(detail::ArgReduceOp, int64_t, bool, bool) const; \
  PREFIX std::pair<Tensor, Tensor> Tensor::cum(detail::CumOp, int64_t) const;                  \
  PREFIX Tensor Tensor::mat(ops::MatmulKind, const Tensor&) const;                             \
  PREFIX Tensor Tensor::addmm(const Tensor&, const Tensor&, Scalar, Scalar) const;             \
  PREFIX Tensor Tensor::baddbmm(const Tensor&, const Tensor&, Scalar, Scalar) const;           \
  PREFIX Tensor Tensor::softmax(int64_t) const;                                                \
  PREFIX Tensor Tensor::log_softmax(int64_t) const;                                            \
  PREFIX Tensor Tensor::clone() const;                                                         \
  PREFIX Tensor Tensor::to(DType) const;                                                       \
  PREFIX Tensor Tensor::to(Device) const;                                                      \
  PREFIX Tensor& Tensor::copy_(const Tensor&);                                                 \
  PREFIX Tensor& Tensor::fill_(Scalar);                                                        \
  PREFIX Tensor Tensor::where(const Tensor&, const Tensor&) const;                             \
  PREFIX Tensor Tensor::clamp(const Tensor&, const Tensor&) const;                             \
  PREFIX Tensor Tensor::lerp(const Tensor&, const Tensor&) const;                              \
  PREFIX Tensor Tensor::scalar_like(Scalar) const;                                             \
  PREFIX Tensor Tensor::reshape(const Shape&) const;                                           \
  PREFIX Tensor Tensor::transpose(int64_t, int64_t) const;                                     \
  PREFIX Tensor Tensor::t() const;                                                             \
  PREFIX Tensor Tensor::flatten(int64_t, int64_t) const;                                       \
  PREFIX Tensor Tensor::index(std::span<const TensorIndex>) const;                             \
  PREFIX float Tensor::item<float>() const;                                                    \
  PREFIX double Tensor::item<double>() const;                                                  \
  PREFIX int64_t Tensor::item<int64_t>() const;                                                \
  PREFIX bool Tensor::item<bool>() const;

/// The factories (PREFIX as above).
#define EMBER_TENSOR_FACTORY_INSTANCES(PREFIX)                                       \
  PREFIX Tensor empty<DefaultPolicy>(const Shape&, TensorOptions);                   \
  PREFIX Tensor full<DefaultPolicy>(const Shape&, Scalar, TensorOptions);            \
  PREFIX Tensor zeros<DefaultPolicy>(const Shape&, TensorOptions);                   \
  PREFIX Tensor ones<DefaultPolicy>(const Shape&, TensorOptions);                    \
  PREFIX Tensor arange<DefaultPolicy>(Scalar, Scalar, Scalar, TensorOptions);        \
  PREFIX Tensor linspace<DefaultPolicy>(double, double, int64_t, TensorOptions);     \
  PREFIX Tensor eye<DefaultPolicy>(int64_t, std::optional<int64_t>, TensorOptions);  \
  PREFIX Tensor rand<DefaultPolicy>(const Shape&, TensorOptions);                    \
  PREFIX Tensor randn<DefaultPolicy>(const Shape&, TensorOptions);                   \
  PREFIX Tensor randint<DefaultPolicy>(int64_t, int64_t, const Shape&, TensorOptions);

/// Free functions of ops/functions.hpp that enter the chain themselves (PREFIX as above).
#define EMBER_TENSOR_FUNCTION_INSTANCES(PREFIX)                                            \
  PREFIX Tensor linear<DefaultPolicy>(const Tensor&, const Tensor&, const Tensor&);        \
  PREFIX Tensor detail::linear_rows<DefaultPolicy>(const Tensor&, const Tensor&, const Tensor&, bool);

/// Backward through the engine (autograd/tensor_autograd.hpp; PREFIX as above).
#define EMBER_TENSOR_AUTOGRAD_INSTANCES(PREFIX)                                                        \
  PREFIX void autograd::backward<DefaultPolicy>(const std::vector<Tensor>&, const std::vector<Tensor>&, \
                                                std::optional<bool>, bool, const std::vector<Tensor>&); \
  PREFIX void Tensor::backward(const Tensor&, std::optional<bool>, bool, const std::vector<Tensor>&) const;
