// Checks, dtype rules and output allocation of the elementwise ops (see ops/descriptors.hpp).

#include <ember/core/half.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/descriptors.hpp>

#include <cmath>
#include <optional>

namespace ember::ops {
namespace {

int category(DType t) { return t == DType::Bool ? 0 : is_floating(t) ? 2 : 1; }
int priority(const TensorImpl& t) { return t.wrapped_number ? 0 : t.ndim() == 0 ? 1 : 2; }

/// PyTorch's result_type for two operands: dimensioned tensors outrank 0-d tensors, which
/// outrank wrapped numbers; a lower-ranked operand only raises the category.
DType result_type(const TensorImpl& a, const TensorImpl& b) {
  int pa = priority(a), pb = priority(b);
  if (pa == pb) return promote_types(a.dtype, b.dtype);
  const TensorImpl& hi = pa > pb ? a : b;
  const TensorImpl& lo = pa > pb ? b : a;
  if (category(lo.dtype) <= category(hi.dtype)) return hi.dtype;
  if (!lo.wrapped_number) return lo.dtype;
  return category(lo.dtype) == 2 ? kDefaultFloat : DType::I64;
}

/// PyTorch's combine_categories: the higher-ranked result stands unless the lower-ranked one
/// is of a higher category (bool < integer < float).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || category(*lower) <= category(*higher)) return higher;
  return promote_types(*higher, *lower);
}


void check_same_device(const TensorImpl& a, const TensorImpl& b, const char* op) {
  EMBER_CHECK(a.device() == b.device() || b.wrapped_number || a.wrapped_number,
              "[{}] expected tensors on one device, got {} and {}", op, a.device(), b.device());
}

/// Sets up the output: a new tensor, or the in-place target (with a temporary when the
/// result dtype differs from the target's).
void make_output(Prepared& p, IntArrayRef shape, DType result, TensorImpl* out, const char* op) {
  if (!out) {
    p.out_owned = detail::make_tensor(shape, result, p.in[0]->device(), op);
    p.out = p.out_owned.get();
    return;
  }
  EMBER_CHECK(Shape(shape) == out->sizes, "[{}_] in-place op would broadcast its output of shape {} to shape {}",
              op, out->sizes, Shape(shape));
  for (size_t i = 0; i < out->sizes.size(); ++i)  // an expanded target: several elements, one address
    EMBER_CHECK(out->strides[i] != 0 || out->sizes[i] <= 1,
                "[{}_] in-place target of shape {} has stride 0 in dim {}: it overlaps itself", op, out->sizes, i);
  EMBER_CHECK(can_cast(result, out->dtype), "[{}_] result type {} can't be cast to the in-place output type {}", op,
              result, out->dtype);
  detail::bump_version(*out->storage);
  p.target = out;
  if (result == out->dtype && out->contiguous) {
    p.out = out;
  } else {
    p.out_owned = detail::make_tensor(shape, result, out->device(), op);
    p.out = p.out_owned.get();
    p.cast_back = true;
  }
}

/// Whether an f16/bf16 product or quotient with a 0-d second operand of another dtype must be
/// computed in f32 from the operand's own value, as PyTorch 2 does (its "opmath" scalar path
/// for mul and the three divisions): h * 1e10 is 0 where h is 0, not NaN through f16(1e10) =
/// inf, and h / f32(6e-8) is not h / f16(6e-8). Where the operand is exact in the reduced
/// dtype (x * 0.5) both ways agree, and the one-pass kernel stays. On a device, PyTorch does
/// this for CPU scalars only: here a wrapped number (a device's 0-d tensor is read in f16).
bool scales_in_f32(BinaryOp op, DType compute, const TensorImpl& x, const TensorImpl& y) {
  if (!is_reduced_float(compute) || y.ndim() != 0 || y.dtype == compute) return false;
  if (op != BinaryOp::Mul && op != BinaryOp::Div && op != BinaryOp::DivTrunc && op != BinaryOp::DivFloor) return false;
  if (!x.device().is_cpu() && !y.wrapped_number) return false;
  if (!y.device().is_cpu()) return true;  // a wrapped number made on the device: not read back
  const double v = detail::read_scalar(y, ops::name(op)).to<double>();
  const float f = static_cast<float>(v);
  const double rounded = compute == DType::F16 ? static_cast<float>(Half(f)) : static_cast<float>(BFloat16(f));
  return !(rounded == v || v != v);
}

}  // namespace

Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out;
  out.resize_for_overwrite(n);  // every dim written below
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, "[{}] shapes {} and {} cannot be broadcast together", op,
                Shape(a).str(), Shape(b).str());
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DType result_type(std::span<const TensorImpl* const> operands) {
  std::optional<DType> level[3];  // by priority: wrapped numbers, 0-d tensors, dimensioned
  for (const TensorImpl* t : operands) {
    const int p = priority(*t);
    DType d = t->dtype;
    if (p == 0 && is_floating(d)) d = kDefaultFloat;  // a Python float has no width of its own
    level[p] = level[p] ? promote_types(*level[p], d) : d;
  }
  return *combine(level[2], combine(level[1], level[0]));
}

void check_operands(const char* op, const TensorImpl& a, const TensorImpl& b, const TensorImpl& c) {
  check_same_device(a, b, op);
  check_same_device(a, c, op);
  broadcast_shapes(broadcast_shapes(a.sizes, b.sizes, op), c.sizes, op);
}

void broadcast_inputs(Prepared& p, const char* op) {
  if (p.same_shape) return;
  for (int i = 0; i < p.n_in; ++i)
    if (!(p.in[i]->sizes == p.out->sizes)) {
      p.owned[i] = broadcast_to(*p.in[i], p.out->sizes, op);
      p.in[i] = p.owned[i].get();
    }
}

void finish_cast_back(Prepared& p, void (*copy)(TensorImpl&, const TensorImpl&)) { copy(*p.target, *p.out); }

bool aliases_output(const TensorImpl& x, const TensorImpl& out) {
  if (x.storage.get() != out.storage.get() || x.numel == 0 || out.numel == 0) return false;
  if (x.offset == out.offset && x.sizes == out.sizes && x.strides == out.strides) return false;  // out itself
  // Element ranges [first, last] (strides are non-negative); disjoint ranges cannot overlap.
  auto last = [](const TensorImpl& t) {
    int64_t e = t.offset;
    for (size_t d = 0; d < t.sizes.size(); ++d) e += (t.sizes[d] - 1) * t.strides[d];
    return e;
  };
  return x.offset <= last(out) && out.offset <= last(x);
}

bool reads_transposed(const TensorImpl& x, const TensorImpl& out) {
  constexpr int64_t kMinElements = 4096;  // below, the elementwise loop's lines stay in L1
  // CPU only: device kernels read strided operands without a per-line penalty of this kind.
  constexpr int64_t kTile = 8;  // the tiled copy's tile (kernels_cpu/elementwise.cpp)
  if (x.contiguous || x.numel < kMinElements || !out.contiguous || !x.device().is_cpu() || x.ndim() < 2 ||
      out.ndim() < 1 || x.sizes.back() != out.sizes.back())
    return false;
  const int last = static_cast<int>(x.ndim()) - 1;
  if (x.sizes[last] < kTile || x.strides[last] == 0 || x.strides[last] == 1) return false;
  for (int d = 0; d < last; ++d)
    if (x.strides[d] == 1 && x.sizes[d] >= kTile) return true;
  return false;
}

TensorRef broadcast_to(const TensorImpl& x, IntArrayRef shape, const char* op) {
  EMBER_CHECK(shape.size() >= x.sizes.size(), "[{}] cannot broadcast shape {} to {}", op, x.sizes,
              Shape(shape).str());
  size_t lead = shape.size() - x.sizes.size();
  Shape strides;
  strides.resize_for_overwrite(shape.size());  // every stride written below
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      strides[i] = 0;
      continue;
    }
    int64_t d = x.sizes[i - lead];
    EMBER_CHECK(d == shape[i] || d == 1, "[{}] cannot broadcast shape {} to {}", op, x.sizes, Shape(shape).str());
    strides[i] = (d == shape[i]) ? x.strides[i - lead] : 0;
  }
  return detail::make_view(x.storage, x.dtype, shape, strides, x.offset);
}

Prepared prepare_unary(const Unary& u, const TensorImpl& x, TensorImpl* out) {
  const char* op = u.name();
  Prepared p;
  p.n_in = 1;
  p.in[0] = &x;
  DType compute = x.dtype, result = x.dtype;
  switch (rule(u.op)) {
    case UnaryRule::Float:
      if (!is_floating(x.dtype)) compute = result = kDefaultFloat;
      break;
    case UnaryRule::Same:
      EMBER_CHECK(x.dtype != DType::Bool || takes_bool(u.op), "[{}] is not defined for bool tensors", op);
      if (u.op == UnaryOp::Clamp) {
        EMBER_CHECK(u.p.has_a || u.p.has_b, "[clamp] at least one of min and max must be given");
      }
      break;
    case UnaryRule::Pred:
      result = DType::Bool;
      break;
    case UnaryRule::Int:
      EMBER_CHECK(is_integral(x.dtype, true), "[{}] needs an integer or bool tensor, got {}", op, x.dtype);
      break;
    case UnaryRule::Logical:
      result = DType::Bool;
      break;
  }
  if (u.op == UnaryOp::Celu) EMBER_CHECK(u.p.a != 0, "[celu] alpha cannot be 0 (it divides)");
  if (u.op == UnaryOp::Digamma)
    EMBER_CHECK(u.p.a >= 0 && u.p.a <= 10000 && u.p.a == std::floor(u.p.a),
                "[polygamma] n must be an integer in [0, 10000], got {}", u.p.a);
  if (u.op == UnaryOp::Logit)
    EMBER_CHECK(!u.p.has_a || u.p.a < 0.5, "[logit] eps must be below 0.5 (negative: no clamp), got {}", u.p.a);
  p.want[0] = compute;
  p.same_shape = true;
  make_output(p, x.sizes, result, out, op);
  return p;
}

Prepared prepare_binary(const Binary& b, const TensorImpl& x, const TensorImpl& y, TensorImpl* out) {
  const char* op = b.name();
  check_same_device(x, y, op);
  Prepared p;
  p.n_in = 2;
  p.in[0] = &x;
  p.in[1] = &y;
  DType compute = result_type(x, y), result = compute;
  switch (rule(b.op)) {
    case BinaryRule::Arith:
      EMBER_CHECK(compute != DType::Bool || takes_bool(b.op), "[{}] is not defined for bool tensors", op);
      // PyTorch refuses a bool operand even when the other one promotes (mask - 1): inverting
      // a mask is logical_not.
      // An integer base to a negative integer scalar power (x.pow(-1)) is refused, as PyTorch;
      // a tensor of exponents gives 0 (or 1, +-1 for bases 1, -1) where they are negative.
      if (b.op == BinaryOp::Pow && is_integral(compute, false) && y.wrapped_number && y.dtype == DType::I64 &&
          y.device().is_cpu())
        EMBER_CHECK(*static_cast<const int64_t*>(y.data()) >= 0,
                    "[pow] integers to negative integer powers are not allowed, got {} to the power {}", x.dtype,
                    *static_cast<const int64_t*>(y.data()));
      // Operands of one dtype, as PyTorch; a number too, where the tensor's dtype holds its
      // type (x.heaviside(0.5) of an f32 x), which PyTorch has no form for.
      if (b.op == BinaryOp::Heaviside)
        EMBER_CHECK(x.dtype == y.dtype || (x.wrapped_number && compute == y.dtype) ||
                        (y.wrapped_number && compute == x.dtype),
                    "[heaviside] x and values must have the same dtype, got {} and {}", x.dtype, y.dtype);
      if (b.op == BinaryOp::Sub)
        EMBER_CHECK(x.dtype != DType::Bool && y.dtype != DType::Bool,
                    "[sub] is not defined for bool tensors ({} - {}); use logical_not to invert a mask", x.dtype,
                    y.dtype);
      break;
    case BinaryRule::TrueDiv:
    case BinaryRule::Float:
      if (!is_floating(compute)) compute = result = kDefaultFloat;
      break;
    case BinaryRule::Compare:
    case BinaryRule::Logical:
      result = DType::Bool;
      break;
    case BinaryRule::Bitwise:
      EMBER_CHECK(is_integral(compute, true), "[{}] needs integer or bool tensors, got {} and {}", op, x.dtype,
                  y.dtype);
      if (b.op == BinaryOp::ShiftLeft || b.op == BinaryOp::ShiftRight)
        EMBER_CHECK(compute != DType::Bool, "[{}] is not defined for bool tensors", op);
      break;
  }
  p.same_shape = x.sizes == y.sizes;
  if (scales_in_f32(b.op, compute, x, y)) {
    // Computed in f32 into a temporary, then rounded once into the f16/bf16 result.
    p.want[0] = p.want[1] = DType::F32;
    Shape shape = p.same_shape ? x.sizes : broadcast_shapes(x.sizes, y.sizes, op);
    if (out) {
      make_output(p, shape, DType::F32, out, op);
    } else {
      p.result_holder = detail::make_tensor(shape, result, x.device(), op);
      p.target = p.result_holder.get();
      p.out_owned = detail::make_tensor(shape, DType::F32, x.device(), op);
      p.out = p.out_owned.get();
      p.cast_back = true;
    }
    return p;
  }
  p.want[0] = p.want[1] = compute;
  if (p.same_shape)
    make_output(p, x.sizes, result, out, op);  // no Shape copy on the common path
  else
    make_output(p, broadcast_shapes(x.sizes, y.sizes, op), result, out, op);
  return p;
}

Prepared prepare_where(const TensorImpl& c, const TensorImpl& a, const TensorImpl& b) {
  check_same_device(a, b, "where");
  EMBER_CHECK(c.device() == a.device() || c.wrapped_number, "[where] condition is on {} but values on {}", c.device(),
              a.device());
  EMBER_CHECK(c.dtype == DType::Bool, "[where] condition must be bool, got {}", c.dtype);
  Prepared p;
  p.n_in = 3;
  p.in[0] = &c;
  p.in[1] = &a;
  p.in[2] = &b;
  DType t = result_type(a, b);
  p.want[0] = DType::Bool;
  p.want[1] = p.want[2] = t;
  Shape shape = broadcast_shapes(broadcast_shapes(c.sizes, a.sizes, "where"), b.sizes, "where");
  make_output(p, shape, t, nullptr, "where");
  return p;
}

void check_copy(const TensorImpl& dst, const TensorImpl& src) {
  (void)broadcast_shapes(dst.sizes, src.sizes, "copy_");
  EMBER_CHECK(dst.device().is_cpu() || src.device().is_cpu() || dst.device() == src.device(),
              "[copy_] copies between two accelerators ({} and {}) are not supported", dst.device(), src.device());
  check_writable(dst, "copy_");
}

void check_writable(const TensorImpl& dst, const char* op) {
  // Writing through a view with overlapping elements (an expanded tensor) is ambiguous.
  for (size_t i = 0; i < dst.sizes.size(); ++i)
    EMBER_CHECK(dst.strides[i] != 0 || dst.sizes[i] <= 1,
                "[{}] destination of shape {} has stride 0 in dim {}: it overlaps itself", op, dst.sizes, i);
}

}  // namespace ember::ops
