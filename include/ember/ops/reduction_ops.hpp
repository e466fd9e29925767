#pragma once
/// Descriptors of reductions, scans, softmax and matrix products.

#include <ember/ops/descriptors.hpp>

#include <optional>

namespace ember::ops {

struct ReducePlan {
  TensorRef out;    ///< keepdim layout (reduced dims have size 1)
  TensorRef input;  ///< cast to the accumulation dtype where needed
  uint64_t mask = 0;
  Shape final_shape;  ///< shape returned (keepdim or squeezed)
  std::optional<DType> cast_to;  ///< f16/bf16 results accumulate in f32 and are cast at the end
};
ReducePlan prepare_reduce(ReduceOp op, const TensorImpl& x, IntArrayRef dims, bool keepdim,
                          std::optional<DType> dtype);
TensorRef finish_reduce(ReducePlan& plan);

struct Reduce {
  ReduceOp op;
  Shape dims;  ///< empty: all dims
  bool keepdim = false;
  std::optional<DType> dtype;
  const char* name() const { return ops::name(op); }

  template <class BL>
  TensorRef run(const TensorImpl& x) const {
    ReducePlan plan = prepare_reduce(op, x, dims, keepdim, dtype);
    on_backend<BL>(x.device(), name(),
                   [&]<class B>() { detail::Kernels<B>::reduce(op, *plan.out, *plan.input, plan.mask); });
    return finish_reduce(plan);
  }
};

struct ArgPlan {
  TensorRef values, indices, input;
  int64_t dim = 0;
  bool keepdim = false;
};
ArgPlan prepare_arg_reduce(const char* op, const TensorImpl& x, int64_t dim, bool keepdim, bool values);
std::pair<TensorRef, TensorRef> finish_arg_reduce(ArgPlan& plan);

/// max/min along a dim with indices, and argmax/argmin (values not materialised).
struct ArgReduce {
  detail::ArgReduceOp op;
  int64_t dim;
  bool keepdim = false;
  bool want_values = true;
  const char* name() const {
    if (op == detail::ArgReduceOp::Max) return want_values ? "max" : "argmax";
    return want_values ? "min" : "argmin";
  }
  template <class BL>
  std::pair<TensorRef, TensorRef> run(const TensorImpl& x) const {
    ArgPlan plan = prepare_arg_reduce(name(), x, dim, keepdim, want_values);
    on_backend<BL>(x.device(), name(), [&]<class B>() {
      detail::Kernels<B>::arg_reduce(op, plan.values.get(), *plan.indices, *plan.input, plan.dim);
    });
    return finish_arg_reduce(plan);
  }
};

std::pair<TensorRef, int64_t> prepare_softmax(const char* op, const TensorImpl& x, int64_t dim);

struct Softmax {
  int64_t dim;
  bool log = false;
  const char* name() const { return log ? "log_softmax" : "softmax"; }
  template <class BL>
  TensorRef run(const TensorImpl& x) const {
    // Not a structured binding: clang captures those in lambdas only from version 16, and
    // Ember's headers must build with the clang of Debian 12 (14).
    const auto prepared = prepare_softmax(name(), x, dim);
    const TensorRef& in = prepared.first;
    const int64_t d = prepared.second;
    TensorRef out = detail::make_tensor(in->sizes, in->dtype, in->device(), name());
    on_backend<BL>(x.device(), name(), [&]<class B>() { detail::Kernels<B>::softmax(*out, *in, d, log); });
    return out;
  }
};

struct Cumulative {
  detail::CumOp op;
  int64_t dim;
  const char* name() const {
    static constexpr const char* n[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
    return n[static_cast<int>(op)];
  }
  template <class BL>
  std::pair<TensorRef, TensorRef> run(const TensorImpl& x) const;
};
struct CumPlan {
  TensorRef out, indices, input;
  int64_t dim;
};
CumPlan prepare_cumulative(const Cumulative& op, const TensorImpl& x);

template <class BL>
std::pair<TensorRef, TensorRef> Cumulative::run(const TensorImpl& x) const {
  CumPlan plan = prepare_cumulative(*this, x);
  on_backend<BL>(x.device(), name(), [&]<class B>() {
    detail::Kernels<B>::cumulative(op, *plan.out, plan.indices.get(), *plan.input, plan.dim);
  });
  return {std::move(plan.out), std::move(plan.indices)};
}

// ---- matrix products ----------------------------------------------------------------------------
/// What a matrix product was reduced to: out(batch, m, n) = alpha * a(batch, m, k) @ b(batch, k, n)
/// + beta * out, then viewed as `result`. Two CPU matrices stay 2-d (out (m, n), no batch).
struct GemmPlan {
  TensorRef out, result;  ///< result empty: out is the result
  TensorRef a_view, b_view;  ///< views made for the product, when the inputs could not be used
  const TensorImpl* a = nullptr;  ///< the operands the kernel reads: the views, or the inputs
  const TensorImpl* b = nullptr;
  double alpha = 1, beta = 0;
  /// CPU f32/f64 matrices only: out's prior value is this row (the bias vector of a Linear or
  /// an addmm) in every row, for the kernel to read in its stores; out is not filled with it.
  const TensorImpl* bias_row = nullptr;
};
/// Linear: a (m, k) @ b^T + c for a weight b (n, k) read in place (torch.nn.functional.linear
/// on 2-d input): no transposed view of the weight is made, and the weight's gradient goes to
/// it directly.
enum class MatmulKind : uint8_t { Matmul, Mm, Bmm, Addmm, Baddbmm, Dot, Outer, Linear };
GemmPlan prepare_gemm(MatmulKind kind, const TensorImpl& a, const TensorImpl& b, const TensorImpl* c,
                      double beta, double alpha);
/// linear's check of an input of any rank against its (out, in) weight, naming the user's
/// shapes (the product itself sees the input folded to 2-d). Compiled once, in src/.
void check_linear_features(const TensorImpl& x, const TensorImpl& w);
TensorRef finish_gemm(GemmPlan& plan);

struct Matmul {
  explicit Matmul(MatmulKind k, double beta_ = 1, double alpha_ = 1) : kind(k), beta(beta_), alpha(alpha_) {}
  MatmulKind kind = MatmulKind::Matmul;
  double beta = 1, alpha = 1;
  /// ReLU of the result (Linear only: nn::functional::linear_relu). The CPU GEMM applies it in
  /// its stores, so the product's output is written once; its values are relu(linear(...))'s.
  bool relu = false;
  const char* name() const {
    static constexpr const char* n[] = {"matmul", "mm", "bmm", "addmm", "baddbmm", "dot", "outer", "linear"};
    return relu ? "linear_relu" : n[static_cast<int>(kind)];
  }
  template <class BL>
  TensorRef run(const TensorImpl& a, const TensorImpl& b, const TensorImpl* c = nullptr) const {
    GemmPlan plan = prepare_gemm(kind, a, b, c, beta, alpha);
    on_backend<BL>(a.device(), name(), [&]<class B>() {
      if constexpr (std::is_same_v<B, Cpu>) {
        const bool two_d_float = !plan.result && plan.out->ndim() == 2 &&
                                 (plan.out->dtype == DType::F32 || plan.out->dtype == DType::F64);
        if (plan.bias_row || (relu && two_d_float))
          return detail::Kernels<B>::gemm_bias(*plan.out, *plan.a, *plan.b, plan.bias_row, plan.alpha, plan.beta,
                                               relu);
      }
      detail::Kernels<B>::gemm(*plan.out, *plan.a, *plan.b, plan.alpha, plan.beta);
      if (relu) detail::Kernels<B>::unary(UnaryOp::Relu, UnaryParams{}, *plan.out, *plan.out);
    });
    return finish_gemm(plan);
  }
};

}  // namespace ember::ops
