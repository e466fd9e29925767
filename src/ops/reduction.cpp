// Checks, dtype rules and output allocation of reductions, scans and softmax.

#include <ember/core/device_hooks.hpp>
#include <ember/ops/reduction_ops.hpp>

namespace ember::ops {
namespace {

uint64_t dims_mask(const TensorImpl& x, IntArrayRef dims, const char* op) {
  int64_t n = x.ndim();
  EMBER_CHECK(n <= 64, "[{}] tensors of rank {} exceed the 64 dims reductions support", op, n);
  if (dims.empty()) return n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
  uint64_t mask = 0;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, n, op);
    EMBER_CHECK(!(mask >> w & 1), "[{}] dim {} appears more than once in {}", op, w, Shape(dims).str());
    if (n > 0) mask |= uint64_t{1} << w;
  }
  return mask;
}

Ref<TensorImpl> cast(const TensorImpl& x, DType t) {
  if (x.dtype == t) return Ref<TensorImpl>::share(const_cast<TensorImpl*>(&x));
  Ref<TensorImpl> out = detail::make_tensor(x.sizes, t, x.device(), "reduce");
  detail::copy_on_device(*out, x);
  return out;
}

}  // namespace

ReducePlan prepare_reduce(ReduceOp op, const TensorImpl& x, IntArrayRef dims, bool keepdim,
                          std::optional<DType> dtype) {
  const char* name = ops::name(op);
  ReducePlan plan;
  plan.mask = dims_mask(x, dims, name);
  DType in = x.dtype, out = x.dtype;
  switch (rule(op)) {
    case ReduceRule::Sum:
      if (!is_floating(in)) in = out = DType::I64;
      break;
    case ReduceRule::Float:
      if (op == ReduceOp::Mean) {
        EMBER_CHECK(is_floating(in) || dtype, "[mean] needs a floating tensor (or a dtype), got {}", in);
      }
      if (!is_floating(in)) in = out = kDefaultFloat;
      break;
    case ReduceRule::Same:
      break;
    case ReduceRule::Bool:
      out = DType::Bool;
      break;
    case ReduceRule::Count:
      out = DType::I64;
      break;
  }
  if (dtype) {
    EMBER_CHECK(rule(op) == ReduceRule::Sum || rule(op) == ReduceRule::Float,
                "[{}] does not take a dtype argument", name);
    EMBER_CHECK(rule(op) != ReduceRule::Float || is_floating(*dtype), "[{}] dtype must be floating, got {}", name,
                *dtype);
    in = out = *dtype;
  }
  if (op == ReduceOp::Amax || op == ReduceOp::Amin) {
    for (int64_t d = 0; d < x.ndim(); ++d)
      EMBER_CHECK(!(plan.mask >> d & 1) || x.sizes[d] > 0,
                  "[{}] cannot reduce over dim {} of size 0 (shape {}): there is no identity", name, d, x.sizes);
  }
  // Reduced-precision floats accumulate in f32 and are cast back by finish_reduce; sums and
  // products asked for in a narrower integer type (or bool) accumulate in i64, which wraps to
  // the same bits. The kernels are built for these accumulator types only.
  auto accumulator = [&](DType t) {
    if (is_reduced_float(t)) return DType::F32;
    if (rule(op) == ReduceRule::Sum && !is_floating(t)) return DType::I64;
    return t;
  };
  DType acc = accumulator(in), out_acc = accumulator(out);
  // A requested dtype converts the input first (as torch.sum(x, dtype=...) does: 0.5 summed
  // as bool is true, 3e9 as i32 saturates like .to(i32)), then to the accumulator.
  plan.input = dtype && *dtype != acc ? cast(*cast(x, *dtype), acc) : cast(x, acc);
  Shape keep = x.sizes;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (plan.mask >> d & 1) keep[d] = 1;
  plan.out = detail::make_tensor(keep, out_acc, x.device(), name);
  Shape fin;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (keepdim || !(plan.mask >> d & 1)) fin.push_back(keep[d]);
  plan.final_shape = fin;
  if (out_acc != out) plan.cast_to = out;
  return plan;
}

TensorRef finish_reduce(ReducePlan& plan) {
  const Shape& fin = plan.final_shape;
  TensorRef r = plan.out;
  if (plan.cast_to) {
    TensorRef c = detail::make_tensor(r->sizes, *plan.cast_to, r->device(), "reduce");
    detail::copy_on_device(*c, *r);
    r = c;
  }
  return detail::make_view(r->storage, r->dtype, fin, contiguous_strides(fin), r->offset);
}

ArgPlan prepare_arg_reduce(const char* op, const TensorImpl& x, int64_t dim, bool keepdim, bool values) {
  ArgPlan plan;
  plan.dim = wrap_dim(dim, x.ndim(), op);
  EMBER_CHECK(x.ndim() == 0 || x.sizes[plan.dim] > 0, "[{}] cannot reduce over dim {} of size 0 (shape {})", op,
              plan.dim, x.sizes);
  plan.keepdim = keepdim;
  plan.input = Ref<TensorImpl>::share(const_cast<TensorImpl*>(&x));
  Shape keep = x.sizes;
  if (x.ndim() > 0) keep[plan.dim] = 1;
  plan.indices = detail::make_tensor(keep, DType::I64, x.device(), op);
  if (values) plan.values = detail::make_tensor(keep, x.dtype, x.device(), op);
  return plan;
}

std::pair<TensorRef, TensorRef> finish_arg_reduce(ArgPlan& plan) {
  auto squeeze = [&](TensorRef& t) -> TensorRef {
    if (!t || plan.keepdim || t->ndim() == 0) return t;
    Shape s = t->sizes;
    s.erase(static_cast<size_t>(plan.dim));
    return detail::make_view(t->storage, t->dtype, s, contiguous_strides(s), t->offset);
  };
  return {squeeze(plan.values), squeeze(plan.indices)};
}

std::pair<TensorRef, int64_t> prepare_softmax(const char* op, const TensorImpl& x, int64_t dim) {
  int64_t d = wrap_dim(dim, x.ndim(), op);
  EMBER_CHECK(is_floating(x.dtype), "[{}] needs a floating tensor, got {}", op, x.dtype);
  return {Ref<TensorImpl>::share(const_cast<TensorImpl*>(&x)), d};
}

CumPlan prepare_cumulative(const Cumulative& c, const TensorImpl& x) {
  const char* op = c.name();
  CumPlan plan;
  plan.dim = wrap_dim(c.dim, x.ndim(), op);
  DType t = x.dtype;
  if ((c.op == detail::CumOp::Sum || c.op == detail::CumOp::Prod) && !is_floating(t)) t = DType::I64;
  if (c.op == detail::CumOp::Logsumexp) {
    EMBER_CHECK(is_floating(t), "[logcumsumexp] needs a floating tensor, got {}", t);
  }
  plan.input = cast(x, t);
  plan.out = detail::make_tensor(x.sizes, t, x.device(), op);
  if (c.op == detail::CumOp::Max || c.op == detail::CumOp::Min)
    plan.indices = detail::make_tensor(x.sizes, DType::I64, x.device(), op);
  return plan;
}

}  // namespace ember::ops
