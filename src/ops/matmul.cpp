// Shape rules of the matrix products. Everything reduces to a batched GEMM over 3-d views
// (batch, m, k) x (batch, k, n); batch dims broadcast exactly as torch.matmul does.

#include <ember/core/device_hooks.hpp>
#include <ember/ops/reduction_ops.hpp>

#include <cstring>

namespace ember::ops {
namespace {

Ref<TensorImpl> view3(const TensorImpl& x, int64_t batch, int64_t r, int64_t c, int64_t sb, int64_t sr, int64_t sc) {
  const int64_t sizes[3] = {batch, r, c};
  const int64_t strides[3] = {sb, sr, sc};
  return detail::make_view(x.storage, x.dtype, sizes, strides, x.offset);
}

/// Whether GEMM reads x (r, c) in place: unit stride along rows or columns, the other stride
/// spanning a whole row/column.
bool gemm_readable(int64_t r, int64_t c, int64_t sr, int64_t sc) {
  bool row_major = (sc == 1 || c == 1) && (r == 1 || sr >= c);
  bool col_major = (sr == 1 || r == 1) && (c == 1 || sc >= r);
  return row_major || col_major;
}

/// The common case of two CPU matrices (Linear, mm, addmm) without the batch machinery: the
/// operands go to the GEMM as they are and the output is the result, so a batch-1 Linear costs
/// one new tensor instead of seven views. False (nothing planned) when an operand's layout
/// needs the general path.
bool plan_matrices(GemmPlan& plan, const char* op, const TensorImpl& a, const TensorImpl& b, const TensorImpl* c,
                   double beta) {
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  EMBER_CHECK(k == b.sizes[0], "[{}] shapes {} and {} cannot be multiplied ({} != {})", op, a.sizes, b.sizes, k,
              b.sizes[0]);
  if (!gemm_readable(m, k, a.strides[0], a.strides[1]) || !gemm_readable(k, n, b.strides[0], b.strides[1]))
    return false;
  if (c) {
    EMBER_CHECK(c->dtype == a.dtype, "[{}] input dtype {} differs from the matrices' {}", op, c->dtype, a.dtype);
    EMBER_CHECK(c->device() == a.device(), "[{}] input on {}, the matrices on {}", op, c->device(), a.device());
  }
  const int64_t out_sizes[2] = {m, n};
  plan.out = detail::make_tensor(out_sizes, a.dtype, a.device(), op);
  plan.a = &a;  // the caller holds the inputs for the product's duration
  plan.b = &b;
  plan.beta = c ? beta : 0;
  const bool bias_vector = c && c->ndim() == 1 && c->sizes[0] == n && (c->strides[0] == 1 || n == 1);
  if (bias_vector && (a.dtype == DType::F32 || a.dtype == DType::F64)) {
    // A bias vector (Linear): the kernel reads it where it would read out's prior value.
    plan.bias_row = c;
  } else if (bias_vector) {
    // A bias vector of another dtype: copied into each row directly rather than through a
    // broadcast view.
    const size_t row_bytes = static_cast<size_t>(n) * itemsize(a.dtype);
    char* dst = static_cast<char*>(plan.out->data());
    for (int64_t i = 0; i < m; ++i) std::memcpy(dst + i * row_bytes, c->data(), row_bytes);
  } else if (c) {
    Ref<TensorImpl> bc = broadcast_to(*c, out_sizes, op);
    detail::copy_on_device(*plan.out, *bc);
  }
  return true;
}

/// The plan for every kind but Linear (which maps onto Mm/Addmm); `op` names it in errors.
/// Out of line: prepare_gemm calls it from two places, and an inlined copy of it is 12 KB of
/// the static footprint.
[[gnu::noinline]] GemmPlan plan_gemm(MatmulKind kind, const char* op, const TensorImpl& a, const TensorImpl& b,
                                     const TensorImpl* c, double beta, double alpha) {
  EMBER_CHECK(a.device() == b.device(), "[{}] expected tensors on one device, got {} and {}", op, a.device(),
              b.device());
  EMBER_CHECK(a.dtype == b.dtype, "[{}] expected one dtype, got {} and {}", op, a.dtype, b.dtype);
  EMBER_CHECK(a.dtype != DType::Bool, "[{}] supports floating and integer dtypes, got {}", op, a.dtype);
  int64_t na = a.ndim(), nb = b.ndim();
  switch (kind) {
    case MatmulKind::Linear:  // prepare_gemm maps it onto Mm/Addmm before this
    case MatmulKind::Mm:
    case MatmulKind::Addmm:
      EMBER_CHECK(na == 2 && nb == 2, "[{}] expects 2-d matrices, got shapes {} and {}", op, a.sizes, b.sizes);
      break;
    case MatmulKind::Bmm:
    case MatmulKind::Baddbmm:
      EMBER_CHECK(na == 3 && nb == 3, "[{}] expects 3-d batches, got shapes {} and {}", op, a.sizes, b.sizes);
      EMBER_CHECK(a.sizes[0] == b.sizes[0], "[{}] batch sizes differ: shapes {} and {}", op, a.sizes, b.sizes);
      break;
    case MatmulKind::Dot:
      EMBER_CHECK(na == 1 && nb == 1, "[dot] expects 1-d tensors, got shapes {} and {}", a.sizes, b.sizes);
      break;
    case MatmulKind::Outer:
      EMBER_CHECK(na == 1 && nb == 1, "[outer] expects 1-d tensors, got shapes {} and {}", a.sizes, b.sizes);
      break;
    case MatmulKind::Matmul:
      EMBER_CHECK(na >= 1 && nb >= 1, "[matmul] both arguments need at least 1 dim, got shapes {} and {}", a.sizes,
                  b.sizes);
      break;
  }
  GemmPlan plan;
  plan.alpha = alpha;
  if (kind == MatmulKind::Outer) {
    int64_t m = a.sizes[0], n = b.sizes[0];
    plan.a_view = view3(a, 1, m, 1, 0, a.strides[0], 1);
    plan.b_view = view3(b, 1, 1, n, 0, 1, b.strides[0]);
    plan.a = plan.a_view.get(), plan.b = plan.b_view.get();
    plan.out = detail::make_tensor(Shape{1, m, n}, a.dtype, a.device(), op);
    const int64_t rs[2] = {m, n};
    plan.result = detail::make_view(plan.out->storage, a.dtype, rs, contiguous_strides(rs), 0);
    return plan;
  }
  if (na == 2 && nb == 2 && a.device().is_cpu() && plan_matrices(plan, op, a, b, c, beta)) return plan;
  // Promote 1-d operands: a (k) -> (1, k); b (k) -> (k, 1); removed from the result later.
  int64_t k = a.sizes[na - 1];
  int64_t kb = nb == 1 ? b.sizes[0] : b.sizes[nb - 2];
  EMBER_CHECK(k == kb, "[{}] shapes {} and {} cannot be multiplied ({} != {})", op, a.sizes, b.sizes, k, kb);
  if (!c && a.device().is_cpu() && ((na == 2 && nb == 1) || (na == 1 && nb == 2))) {
    // Matrix-vector products (J @ v, v @ W): the vector as a one-column or one-row matrix
    // view and the two-matrix plan, whose output a 1-d view presents; three new tensors
    // instead of the batch machinery's nine.
    const TensorImpl& vec = nb == 1 ? b : a;
    const int64_t vs[2] = {nb == 1 ? k : 1, nb == 1 ? 1 : k};
    const int64_t vst[2] = {nb == 1 ? vec.strides[0] : 1, nb == 1 ? 1 : vec.strides[0]};
    Ref<TensorImpl> v = detail::make_view(vec.storage, vec.dtype, vs, vst, vec.offset);
    if (plan_matrices(plan, op, nb == 1 ? a : *v, nb == 1 ? *v : b, nullptr, 0)) {
      (nb == 1 ? plan.b_view : plan.a_view) = std::move(v);  // plan.a / plan.b point at it
      const int64_t rs[1] = {nb == 1 ? a.sizes[0] : b.sizes[1]};
      plan.result = detail::make_view(plan.out->storage, a.dtype, rs, contiguous_strides(rs), 0);
      return plan;
    }
  }
  int64_t m = na == 1 ? 1 : a.sizes[na - 2];
  int64_t n = nb == 1 ? 1 : b.sizes[nb - 1];
  // Batch dims broadcast.
  Shape ba, bb;
  for (int64_t i = 0; i + 2 < na; ++i) ba.push_back(a.sizes[i]);
  for (int64_t i = 0; i + 2 < nb; ++i) bb.push_back(b.sizes[i]);
  size_t nbatch = std::max(ba.size(), bb.size());
  Shape batch(nbatch);
  for (size_t i = 0; i < nbatch; ++i) {
    int64_t da = i < nbatch - ba.size() ? 1 : ba[i - (nbatch - ba.size())];
    int64_t db = i < nbatch - bb.size() ? 1 : bb[i - (nbatch - bb.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, "[{}] batch dims of shapes {} and {} cannot be broadcast", op,
                a.sizes, b.sizes);
    batch[i] = da == 1 ? db : da;
  }
  int64_t nb_total = 1;
  for (int64_t d : batch) nb_total *= d;
  // Materialise broadcast batches as contiguous (batch, m, k) / (batch, k, n).
  auto as3 = [&](const TensorImpl& x, bool is_a) -> Ref<TensorImpl> {
    Shape full = batch;
    if (is_a) {
      full.push_back(m), full.push_back(k);
    } else {
      full.push_back(k), full.push_back(n);
    }
    Shape xs = x.sizes;
    if (x.ndim() == 1) {
      if (is_a) xs = Shape{1, k};
      else xs = Shape{k, 1};
    }
    Ref<TensorImpl> xv = x.ndim() == 1 ? detail::make_view(x.storage, x.dtype, xs,
                                                           is_a ? Shape{0, x.strides[0]} : Shape{x.strides[0], 0},
                                                           x.offset)
                                       : Ref<TensorImpl>::share(const_cast<TensorImpl*>(&x));
    Ref<TensorImpl> bx = broadcast_to(*xv, full, op);
    int64_t r = full[full.size() - 2], cc = full[full.size() - 1];
    // A batch that is one strided (r, c) matrix repeated or laid out uniformly keeps its strides.
    bool uniform = true;
    int64_t sb = 0;
    if (!batch.empty()) {
      // Check that batch dims collapse into one stride.
      Shape bs(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) bs[i] = bx->strides[i];
      int64_t expect = -1;
      for (size_t i = batch.size(); i-- > 0;) {
        if (batch[i] == 1) continue;
        if (expect == -1) {
          sb = bs[i];
          expect = bs[i] * batch[i];
        } else if (bs[i] != expect) {
          uniform = false;
        } else {
          expect = bs[i] * batch[i];
        }
      }
    }
    int64_t sr = bx->strides[full.size() - 2], sc = bx->strides[full.size() - 1];
    // GEMM takes a matrix whose unit stride is along rows or columns and whose other stride
    // spans a whole row/column (so stride-0 broadcast rows are materialised).
    if (uniform && gemm_readable(r, cc, sr, sc)) return view3(*bx, nb_total, r, cc, sb, sr, sc);
    Ref<TensorImpl> c = detail::contiguous_on_device(*bx, op);  // GEMM cannot read it in place
    return view3(*c, nb_total, r, cc, r * cc, cc, 1);
  };
  plan.a_view = as3(a, true);
  plan.b_view = as3(b, false);
  plan.a = plan.a_view.get(), plan.b = plan.b_view.get();
  Shape out_shape = batch;
  if (na > 1) out_shape.push_back(m);
  if (nb > 1) out_shape.push_back(n);
  if (c) {
    EMBER_CHECK(c->dtype == a.dtype, "[{}] input dtype {} differs from the matrices' {}", op, c->dtype, a.dtype);
    Shape full = batch;
    full.push_back(m), full.push_back(n);
    Ref<TensorImpl> bc = broadcast_to(*c, full, op);
    plan.out = detail::make_tensor(Shape{nb_total, m, n}, a.dtype, a.device(), op);
    Ref<TensorImpl> dst = detail::make_view(plan.out->storage, a.dtype, full, contiguous_strides(full), 0);
    detail::copy_on_device(*dst, *bc);
    plan.beta = beta;
  } else {
    plan.out = detail::make_tensor(Shape{nb_total, m, n}, a.dtype, a.device(), op);
    plan.beta = 0;
  }
  plan.result = detail::make_view(plan.out->storage, a.dtype, out_shape, contiguous_strides(out_shape), 0);
  return plan;
}

}  // namespace

GemmPlan prepare_gemm(MatmulKind kind, const TensorImpl& a, const TensorImpl& b, const TensorImpl* c, double beta,
                      double alpha) {
  constexpr const char* names[] = {"matmul", "mm", "bmm", "addmm", "baddbmm", "dot", "outer", "linear"};
  const char* op = names[static_cast<int>(kind)];
  if (kind != MatmulKind::Linear) return plan_gemm(kind, op, a, b, c, beta, alpha);
  // The weight (n, k) is read as its transpose: a plain geometry swap, not a recorded view.
  // Devices, dtypes and the bias are checked by plan_gemm, in linear's name.
  EMBER_CHECK(a.ndim() == 2 && b.ndim() == 2, "[linear] expects a 2-d input and a 2-d weight, got shapes {} and {}",
              a.sizes, b.sizes);
  EMBER_CHECK(a.sizes[1] == b.sizes[1], "[linear] input has {} features, the weight expects {} (shapes {} and {})",
              a.sizes[1], b.sizes[1], a.sizes, b.sizes);
  const int64_t sizes[2] = {b.sizes[1], b.sizes[0]}, strides[2] = {b.strides[1], b.strides[0]};
  Ref<TensorImpl> bt = detail::make_view(b.storage, b.dtype, sizes, strides, b.offset);
  GemmPlan plan = plan_gemm(c ? MatmulKind::Addmm : MatmulKind::Mm, op, a, *bt, c, beta, alpha);
  if (!plan.b_view) plan.b_view = std::move(bt);  // the plan reads it: keep it alive
  return plan;
}

void check_linear_features(const TensorImpl& x, const TensorImpl& w) {
  EMBER_CHECK(x.ndim() >= 1 && w.ndim() == 2 && x.sizes.back() == w.sizes[1],
              "[linear] input has {} features, the weight expects {} (shapes {} and {})",
              x.ndim() ? x.sizes.back() : 0, w.ndim() == 2 ? w.sizes[1] : 0, x.sizes, w.sizes);
}

TensorRef finish_gemm(GemmPlan& plan) { return plan.result ? std::move(plan.result) : std::move(plan.out); }

}  // namespace ember::ops
