// Table-driven op tests in the spirit of ggml's test-backend-ops: every row of
// tests/support/op_table.hpp x every dtype the op accepts x a set of layouts, against the
// plain scalar references of kernels_cpu/reference/reference.hpp. Outputs are also written
// into test-owned buffers with guard bytes (in place where the dtype allows) and the guards
// and gaps are checked.

#include <doctest/doctest.h>

#include "support/op_table.hpp"
#include "support/tensor_io.hpp"

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace test_ops_table {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

namespace {

std::string dt_name(DType t) { return std::string(dtype_name(t)); }

/// One input geometry.
struct Layout {
  std::string name;
  Dims shape;
  bool transposed = false;
  int64_t gap = 1, offset = 0;
  bool specials = false;  ///< inject NaN, +-inf, +-0 (floating dtypes only)
  bool edges = false;     ///< every value an edge of the floating ranges (kEdges)
};

std::vector<Layout> elementwise_layouts(bool big) {
  std::vector<Layout> v = {
      {"contiguous 5x7x11x3", {5, 7, 11, 3}},
      {"transposed 5x7x11x3", {5, 7, 11, 3}, true},
      {"strided 3x5x7 (gap 2, offset 3)", {3, 5, 7}, false, 2, 3},
      {"1-d 37", {37}},
      {"zero-size 3x0x4", {3, 0, 4}},
      {"0-d", {}},
      {"specials 4x6", {4, 6}, false, 1, 0, true},
  };
  if (big) v.push_back({"odd 5x7x11x13", {5, 7, 11, 13}});
  return v;
}

const double kSpecials[] = {ref::kNaN, ref::kInf, -ref::kInf, 0.0, -0.0, ref::kNaN, 1.0, -1.0};
/// The edges of the floating ranges, where a batch form can part from the standard library:
/// just below overflow of exp/exp2/expm1 (f32: ln(max) = 88.72, 2^128; f64: 709.78, 2^1024),
/// subnormal inputs (log of f64 subnormals), results that underflow, +-0, and huge finite values.
const double kEdges[] = {88.5,  88.7,   -88.5, 89.0,    127.5,  127.0,  -103.0, 709.5,   709.7,  1023.5, 1023.0,
                         -745.0, 1e-310, -1e-310, 1e-40, -1e-40, 3e-39, 1e30,   -1e30,   1e300,  65504.0, 70000.0,
                         0.0,   -0.0,   6e-8,  1e-7,    20.0,   -20.0,  40.0,   1.0001,  0.9999, -15.0};

/// Inputs for a layout: domain values, with specials first when asked.
std::vector<double> make_values(Gen& g, DType t, const Layout& l, Domain dom, Domain idom) {
  int64_t n = ref::numel(l.shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = g.value(t, dom.lo, dom.hi, idom.lo, idom.hi);
  if (l.specials && is_floating(t))
    for (size_t i = 0; i < std::size(kSpecials) && i < v.size(); ++i) v[i * 3 % v.size()] = kSpecials[i];
  if (l.edges)
    for (size_t i = 0; i < v.size(); ++i) v[i] = round_to(t, kEdges[i % std::size(kEdges)]);
  return v;
}

bool same_bits(const ref::Array& a, const std::vector<double>& b) {
  for (size_t i = 0; i < b.size(); ++i) {
    double x = a.v[i], y = b[i];
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

#define REPORT(ctx, err) CHECK_MESSAGE((err).empty(), (ctx) << ": " << (err))

template <class F>
void guarded_run(const std::string& ctx, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    FAIL_CHECK(ctx << ": threw " << e.what());
  }
}

bool big_op(const char* name) {
  static const char* ops[] = {"exp", "sigmoid", "gelu", "add", "mul", "div", "maximum", "eq", "sum", "mean", "amax"};
  for (const char* o : ops)
    if (std::string(name) == o) return true;
  return false;
}

// ---- unary ----------------------------------------------------------------------------------------------
ref::Array unary_reference(const UnaryRow& row, DType dt, const ref::Array& x) {
  DType rt = result_dtype(row.op, dt);
  return ref::map(x, [&](double v) {
    if (is_floating(dt) || is_floating(rt)) {
      double r = ref::unary(row.op, v, row.params, finite_max(rt));
      return is_floating(rt) ? round_to(rt, r) : (r != 0 ? 1.0 : 0.0);
    }
    ops::UnaryParams params = row.params;
    if (row.op == U::Clamp && dt != DType::Bool) {  // the bounds convert to the dtype (u8: -1 is 255)
      params.ia = ref::wrap_int(params.ia, dtype_bits(dt), dtype_signed(dt));
      params.ib = ref::wrap_int(params.ib, dtype_bits(dt), dtype_signed(dt));
    }
    int64_t r = ref::unary_int(row.op, static_cast<int64_t>(v), params, dt == DType::Bool);
    if (rt == DType::Bool) return r != 0 ? 1.0 : 0.0;
    return static_cast<double>(ref::wrap_int(r, dtype_bits(rt), dtype_signed(rt)));
  });
}

void run_unary(const UnaryRow& row, DType dt, const Layout& l) {
  const char* name = ops::name(row.op);
  std::string ctx = std::string(name) + " " + dt_name(dt) + " " + l.name;
  Gen g(hash_name(ctx));
  Guarded in = Guarded::make(dt, l.shape, l.transposed, l.gap, l.offset);
  std::vector<double> vals = make_values(g, dt, l, row.dom, row.dom);
  in.set(vals);
  Tensor x = in.tensor();
  DType rt = result_dtype(row.op, dt);
  ref::Array want = unary_reference(row, dt, ref::Array(l.shape, vals));
  double tol = tolerance(rt, row.tol_f32, row.tol_f64);

  // Out of place.
  Tensor y = x.apply(ops::Unary{row.op, row.params});
  CHECK_MESSAGE(y.dtype() == rt, ctx << ": result dtype " << dt_name(y.dtype()) << ", expected " << dt_name(rt));
  REPORT(ctx + " (out of place)", compare(read(y), want, tol));
  if (l.edges) REPORT(ctx + " (sign of zero)", compare_zero_signs(read(y), want));
  CHECK_MESSAGE(same_bits(read(x), vals), ctx << ": input modified");
  CHECK_MESSAGE(in.untouched(), ctx << ": input buffer modified outside the view");

  // Into a guarded destination of the other layout: in place when the dtype allows.
  Guarded dst = Guarded::make(rt, l.shape, !l.transposed && l.shape.size() >= 2, 1, 5);
  Tensor d = dst.tensor();
  if (rt == dt) {
    d.copy_(x);
    dst.mark();
    dispatch<DefaultPolicy>(ops::Unary{row.op, row.params}, d.impl(), &d.impl());
  } else {
    d.copy_(y);
  }
  REPORT(ctx + (rt == dt ? " (in place)" : " (copy_ into from_blob)"), compare(dst.values(), want, tol));
  CHECK_MESSAGE(dst.untouched(), ctx << ": guard bytes or gaps of the destination were written");
}

// ---- binary ---------------------------------------------------------------------------------------------
struct BinLayout {
  std::string name;
  Layout a, b;
  bool wrapped_scalar = false;  ///< b is a Scalar (wrapped number)
};

std::vector<BinLayout> binary_layouts(bool big) {
  std::vector<BinLayout> v = {
      {"contiguous", {"", {5, 7, 11, 3}}, {"", {5, 7, 11, 3}}},
      {"a transposed, b strided", {"", {5, 7, 11, 3}, true}, {"", {5, 7, 11, 3}, false, 2, 1}},
      {"broadcast b [7,1,3]", {"", {5, 7, 11, 3}}, {"", {7, 1, 3}}},
      {"broadcast both [5,1,11,1] x [7,1,3]", {"", {5, 1, 11, 1}}, {"", {7, 1, 3}}},
      {"broadcast a [11,1] transposed", {"", {11, 1}, true}, {"", {5, 11, 4}}},
      {"0-d tensor b", {"", {4, 6}}, {"", {}}},
      {"wrapped scalar b", {"", {4, 6}}, {"", {}}, true},
      {"1-d 37", {"", {37}}, {"", {37}}},
      {"zero-size", {"", {3, 0, 4}}, {"", {1, 4}}},
      {"0-d", {"", {}}, {"", {}}},
      {"specials", {"", {4, 6}, false, 1, 0, true}, {"", {4, 6}, false, 1, 0, true}},
  };
  if (big) v.push_back({"odd 5x7x11x13", {"", {5, 7, 11, 13}}, {"", {5, 7, 11, 13}}});
  return v;
}

std::vector<double> binary_b_values(Gen& g, const BinaryRow& row, DType t, const Layout& l) {
  int64_t n = ref::numel(l.shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if (row.shift && is_integral(t)) {
      x = static_cast<double>(g.integer(0, dtype_bits(t) + 1));
    } else if (row.nonzero_b && t != DType::Bool) {
      x = g.value(t, row.b.lo, row.b.hi, row.ib.lo, row.ib.hi);
      if (dtype_signed(t) && g.coin()) x = -x;
    } else {
      x = g.value(t, row.b.lo, row.b.hi, row.ib.lo, row.ib.hi);
    }
  }
  if (l.specials && is_floating(t)) {
    // Different positions than a's specials so that specials meet numbers and each other.
    const double sb[] = {1.0, ref::kNaN, ref::kInf, -ref::kInf, 2.0, 0.0, -0.0, ref::kInf, -ref::kInf, ref::kNaN};
    for (size_t i = 0; i < std::size(sb) && i < v.size(); ++i) v[i * 3 % v.size()] = sb[i];
  }
  return v;
}

double binary_reference_value(const BinaryRow& row, DType dt, double a, double b, bool& fault) {
  DType rt = result_dtype(row.op, dt);
  if (is_floating(dt) || is_floating(rt)) {
    double r = ref::binary(row.op, a, b, dt != DType::F64);
    return is_floating(rt) ? round_to(rt, r) : (r != 0 ? 1.0 : 0.0);
  }
  int64_t r = ref::binary_int(row.op, static_cast<int64_t>(a), static_cast<int64_t>(b), dtype_bits(dt),
                              dtype_signed(dt), fault);
  if (rt == DType::Bool) return r != 0 ? 1.0 : 0.0;
  return static_cast<double>(ref::wrap_int(r, dtype_bits(rt), dtype_signed(rt)));
}

void run_binary(const BinaryRow& row, DType dt, const BinLayout& l) {
  const char* name = ops::name(row.op);
  std::string ctx = std::string(name) + " " + dt_name(dt) + " " + l.name;
  if (l.wrapped_scalar && dt == DType::Bool) return;
  Gen g(hash_name(ctx));
  Guarded ga = Guarded::make(dt, l.a.shape, l.a.transposed, l.a.gap, l.a.offset);
  Guarded gb = Guarded::make(dt, l.b.shape, l.b.transposed, l.b.gap, l.b.offset);
  std::vector<double> av = make_values(g, dt, l.a, row.a, row.ia);
  std::vector<double> bv = binary_b_values(g, row, dt, l.b);
  ga.set(av);
  gb.set(bv);
  Tensor a = ga.tensor(), b = gb.tensor();
  DType rt = result_dtype(row.op, dt);
  bool fault = false;
  ref::Array want = ref::zip(ref::Array(l.a.shape, av), ref::Array(l.b.shape, bv), [&](double x, double y) {
    return binary_reference_value(row, dt, x, y, fault);
  });
  REQUIRE_MESSAGE(!fault, ctx << ": the test's inputs hit an integer fault");
  double tol = tolerance(rt, row.tol_f32);
  auto apply = [&](const Tensor& x) {
    if (l.wrapped_scalar) {
      Scalar s = is_floating(dt) ? Scalar(bv[0]) : Scalar(static_cast<int64_t>(bv[0]));
      return Tensor::wrap(dispatch<DefaultPolicy>(ops::Binary{row.op}, x.impl(), x.scalar_like(s).impl()));
    }
    return Tensor::wrap(dispatch<DefaultPolicy>(ops::Binary{row.op}, x.impl(), b.impl()));
  };

  Tensor y = apply(a);
  CHECK_MESSAGE(y.dtype() == rt, ctx << ": result dtype " << dt_name(y.dtype()) << ", expected " << dt_name(rt));
  REPORT(ctx + " (out of place)", compare(read(y), want, tol));
  CHECK_MESSAGE(same_bits(read(a), av), ctx << ": input a modified");
  CHECK_MESSAGE(same_bits(read(b), bv), ctx << ": input b modified");
  CHECK_MESSAGE(ga.untouched(), ctx << ": input buffer modified");

  Guarded dst = Guarded::make(rt, want.shape, want.shape.size() >= 2, 1, 3);
  Tensor d = dst.tensor();
  bool inplace = rt == dt && want.shape == l.a.shape;
  if (inplace) {
    d.copy_(a);
    dst.mark();
    if (l.wrapped_scalar) {
      Scalar s = is_floating(dt) ? Scalar(bv[0]) : Scalar(static_cast<int64_t>(bv[0]));
      dispatch<DefaultPolicy>(ops::Binary{row.op}, d.impl(), d.scalar_like(s).impl(), &d.impl());
    } else {
      dispatch<DefaultPolicy>(ops::Binary{row.op}, d.impl(), b.impl(), &d.impl());
    }
  } else {
    d.copy_(y);
  }
  REPORT(ctx + (inplace ? " (in place)" : " (copy_ into from_blob)"), compare(dst.values(), want, tol));
  CHECK_MESSAGE(dst.untouched(), ctx << ": guard bytes or gaps of the destination were written");
}

// ---- reductions -----------------------------------------------------------------------------------------
std::vector<std::pair<Shape, bool>> dim_sets(int64_t rank) {
  std::vector<std::pair<Shape, bool>> v = {{Shape{}, false}, {Shape{}, true}};
  if (rank == 0) {
    v.push_back({Shape{0}, false});
    v.push_back({Shape{-1}, true});
    return v;
  }
  for (int64_t d = 0; d < rank; ++d) v.push_back({Shape{d}, d % 2 == 1});
  if (rank >= 2) v.push_back({Shape{0, -1}, true});
  if (rank >= 3) v.push_back({Shape{1, 2}, false});
  return v;
}

uint64_t mask_of(const Shape& dims, int64_t rank) {
  if (dims.size() == 0) return rank == 0 ? 0 : (uint64_t{1} << rank) - 1;
  uint64_t m = 0;
  for (int64_t d : dims) {
    if (rank == 0) continue;
    m |= uint64_t{1} << (d < 0 ? d + rank : d);
  }
  return m;
}

void run_reduce(const ReduceRow& row, DType dt, const Layout& l) {
  const char* name = ops::name(row.op);
  std::string ctx0 = std::string(name) + " " + dt_name(dt) + " " + l.name;
  Gen g(hash_name(ctx0));
  Guarded in = Guarded::make(dt, l.shape, l.transposed, l.gap, l.offset);
  std::vector<double> vals = make_values(g, dt, l, row.dom, row.idom);
  in.set(vals);
  Tensor x = in.tensor();
  ref::Array xa(l.shape, vals);
  ref::Array absx = ref::map(xa, [](double v) { return std::fabs(v); });
  DType rt = result_dtype(row.op, dt);
  int64_t rank = static_cast<int64_t>(l.shape.size());
  for (auto& dk : dim_sets(rank)) {
    auto& dims = std::get<0>(dk);
    auto& keepdim = std::get<1>(dk);
    std::string ctx = ctx0 + " dims " + dims.str() + (keepdim ? " keepdim" : "");
    uint64_t mask = mask_of(dims, rank);
    bool empty_reduced = false;
    for (int64_t d = 0; d < rank; ++d)
      if ((mask >> d & 1) && l.shape[static_cast<size_t>(d)] == 0) empty_reduced = true;
    if (empty_reduced && (row.op == R::Amax || row.op == R::Amin)) continue;  // refused (test_errors)
    guarded_run(ctx, [&] {
      ref::Array want = ref::reduce(row.op, xa, mask, keepdim);
      std::vector<double> scale(static_cast<size_t>(want.numel()), 0.0);
      if (row.op == R::Sum || row.op == R::Nansum || row.op == R::Mean || row.op == R::Norm1) {
        ref::Array s = ref::reduce(row.op == R::Mean ? R::Mean : R::Norm1, absx, mask, keepdim);
        for (size_t i = 0; i < scale.size(); ++i) scale[i] = std::isfinite(s.v[i]) ? s.v[i] : 0;
      }
      for (auto& v : want.v) v = round_to(rt, v);
      Tensor y = Tensor::wrap(dispatch<DefaultPolicy>(ops::Reduce{row.op, dims, keepdim, std::nullopt}, x.impl()));
      CHECK_MESSAGE(y.dtype() == rt, ctx << ": result dtype " << dt_name(y.dtype()) << ", expected " << dt_name(rt));
      REPORT(ctx, compare(read(y), want, tolerance(rt, row.tol_f32), &scale));
      Guarded dst = Guarded::make(rt, want.shape, want.shape.size() >= 2, 1, 2);
      dst.tensor().copy_(y);
      REPORT(ctx + " (copy_ into from_blob)", compare(dst.values(), want, tolerance(rt, row.tol_f32), &scale));
      CHECK_MESSAGE(dst.untouched(), ctx << ": guard bytes written");
    });
  }
  CHECK_MESSAGE(same_bits(read(x), vals), ctx0 << ": input modified");
}

std::vector<Layout> reduce_layouts(bool big) {
  std::vector<Layout> v = elementwise_layouts(false);
  if (big) v.push_back({"odd 5x7x11x13", {5, 7, 11, 13}});
  return v;
}

}  // namespace

TEST_CASE("op table: unary ops x dtypes x layouts") {
  for (const UnaryRow& row : kUnaryRows) {
    const char* name = ops::name(row.op);
    for (DType dt : kAllDTypes) {
      if (!accepts(row.op, dt)) continue;
      std::vector<Layout> layouts = elementwise_layouts(big_op(name) && dt == DType::F32);
      // Batch-sized rows of range edges (floating inputs only: the values are not integers).
      layouts.push_back({"edges 3x32", {3, 32}, false, 1, 0, false, true});
      for (const Layout& l : layouts) {
        if ((l.specials || l.edges) && (!is_floating(dt) || !row.specials)) continue;
        std::string ctx = std::string(name) + " " + dt_name(dt) + " " + l.name;
        guarded_run(ctx, [&] { run_unary(row, dt, l); });
      }
    }
  }
}

TEST_CASE("op table: binary ops x dtypes x layouts") {
  for (const BinaryRow& row : kBinaryRows) {
    const char* name = ops::name(row.op);
    for (DType dt : kAllDTypes) {
      if (!accepts(row.op, dt)) continue;
      for (const BinLayout& l : binary_layouts(big_op(name) && dt == DType::F32)) {
        if (l.a.specials && (!is_floating(dt) || !row.specials)) continue;
        std::string ctx = std::string(name) + " " + dt_name(dt) + " " + l.name;
        guarded_run(ctx, [&] { run_binary(row, dt, l); });
      }
    }
  }
}

// The table's runs are shorter than the drivers' chunk (256 elements). Here runs of 600
// mix layouts: a transposed input is gathered in chunks while a contiguous or broadcast
// one is read in place and a contiguous output written in place (a strided output through
// a buffer). Results must equal those of contiguous copies, which take the direct path.
TEST_CASE("elementwise runs longer than a chunk with mixed input and output layouts") {
  manual_seed(21);
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32}) {
    CAPTURE(dt_name(dt));
    Tensor a = (randn({300, 600}) * 10).to(dt), b = (randn({600, 300}) * 10).to(dt), row = (randn({600}) * 10).to(dt);
    Tensor bt = b.t();  // 300 x 600, strided
    auto same = [](const Tensor& x, const Tensor& y) {
      return x.sizes() == y.sizes() && (x.to(DType::F64) - y.to(DType::F64)).abs().max().item<double>() == 0;
    };
    Tensor want = a + bt.contiguous();
    CHECK(same(a + bt, want));
    CHECK(same(bt + a, bt.contiguous() + a));
    CHECK(same(bt * row, bt.contiguous() * row));
    CHECK(same(maximum(bt, a), maximum(bt.contiguous(), a)));
    Tensor into = zeros({600, 300}, dt).t();  // a strided output
    into.copy_(a);
    into.add_(bt);
    CHECK(same(into, want));
    if (is_floating(dt)) CHECK(same(bt.abs(), bt.contiguous().abs()));
  }
}

TEST_CASE("op table: reductions x dtypes x layouts x dims") {
  for (const ReduceRow& row : kReduceRows) {
    const char* name = ops::name(row.op);
    for (DType dt : kAllDTypes) {
      if (!accepts(row.op, dt)) continue;
      for (const Layout& l : reduce_layouts(big_op(name) && dt == DType::F32)) {
        if (l.specials && !is_floating(dt)) continue;
        std::string ctx = std::string(name) + " " + dt_name(dt) + " " + l.name;
        guarded_run(ctx, [&] { run_reduce(row, dt, l); });
      }
    }
  }
}

// ---- softmax, scans, arg-reductions -----------------------------------------------------------------------
namespace {
std::vector<Layout> along_layouts() {
  return {
      {"contiguous 5x7x3", {5, 7, 3}},
      {"transposed 4x6x9", {4, 6, 9}, true},
      {"strided 3x5x7", {3, 5, 7}, false, 2, 3},
      {"1-d 37", {37}},
      {"zero-size 3x0x4", {3, 0, 4}},
      {"0-d", {}},
      {"specials 4x6", {4, 6}, false, 1, 0, true},
  };
}
/// Values in multiples of 0.5 so that ties occur.
std::vector<double> tie_values(Gen& g, DType t, const Layout& l, double lo, double hi) {
  std::vector<double> v = make_values(g, t, l, {lo, hi}, {lo, hi});
  if (is_floating(t))
    for (auto& x : v)
      if (std::isfinite(x)) x = round_to(t, std::nearbyint(x * 2) / 2);
  return v;
}
}  // namespace

// Reducing the rows of a matrix (kept columns contiguous) runs in strips of 4 vectors of
// columns, each lane its own output; a middle dim of (3, 5, 70) likewise, per block of the
// outer dim. NaN must reach only its own column, infinities count, and columns past the last
// full strip take the scalar loop: 70 columns, NaN and inf in both parts.
TEST_CASE("amax, amin, norms and sums over the rows of a matrix, NaN per column") {
  for (DType dt : {DType::F32, DType::F64}) {
    Gen g(11);
    std::vector<double> vals(5 * 70);
    for (auto& v : vals) v = g.uniform(-5, 5);
    vals[2 * 70 + 3] = ref::kNaN, vals[4 * 70 + 40] = ref::kNaN, vals[0 * 70 + 68] = ref::kNaN;
    vals[1 * 70 + 5] = ref::kInf, vals[3 * 70 + 6] = -ref::kInf, vals[2 * 70 + 69] = -ref::kInf;
    Tensor x = from_blob(vals.data(), {5, 70}, TensorOptions(DType::F64)).clone().to(dt);
    ref::Array xa({5, 70}, vals);
    // The same rows as the middle dim of (3, 5, 70) (blocks of the outer kept dim).
    std::vector<double> vals3;
    for (int b = 0; b < 3; ++b)
      for (double v : vals) vals3.push_back(b == 1 && std::isfinite(v) ? -v : v);
    Tensor x3 = from_blob(vals3.data(), {3, 5, 70}, TensorOptions(DType::F64)).clone().to(dt);
    ref::Array xa3({3, 5, 70}, vals3);
    for (R op : {R::Amax, R::Amin, R::NormInf, R::Norm1, R::Norm2, R::Sum, R::Mean}) {
      ref::Array want = ref::reduce(op, xa, 1, false);
      for (auto& v : want.v) v = round_to(dt, v);
      Tensor y = Tensor::wrap(dispatch<DefaultPolicy>(ops::Reduce{op, Shape{0}, false, std::nullopt}, x.impl()));
      REPORT(std::string(ops::name(op)) + " " + dt_name(dt), compare(read(y), want, tolerance(dt, 1e-6)));
      ref::Array want3 = ref::reduce(op, xa3, 2, true);
      for (auto& v : want3.v) v = round_to(dt, v);
      Tensor y3 = Tensor::wrap(dispatch<DefaultPolicy>(ops::Reduce{op, Shape{1}, true, std::nullopt}, x3.impl()));
      REPORT(std::string(ops::name(op)) + " " + dt_name(dt) + " middle dim", compare(read(y3), want3, tolerance(dt, 1e-6)));
    }
  }
}

TEST_CASE("op table: softmax and log_softmax") {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (const Layout& l : along_layouts()) {
      int64_t rank = static_cast<int64_t>(l.shape.size());
      for (int64_t dim = -1; dim < std::max<int64_t>(rank, 1); ++dim) {
        for (bool log : {false, true}) {
          std::string ctx = std::string(log ? "log_softmax " : "softmax ") + dt_name(dt) + " " + l.name +
                            " dim " + std::to_string(dim);
          guarded_run(ctx, [&] {
            Gen g(hash_name(ctx));
            Guarded in = Guarded::make(dt, l.shape, l.transposed, l.gap, l.offset);
            std::vector<double> vals = make_values(g, dt, l, {-5, 5}, {-5, 5});
            if (l.specials) {  // a row with +inf, a row of -inf, a row with NaN, a row with -inf
              for (int64_t j = 0; j < 6; ++j) vals[static_cast<size_t>(6 + j)] = -ref::kInf;
              vals[0] = ref::kInf, vals[14] = ref::kNaN, vals[19] = -ref::kInf;
            }
            in.set(vals);
            int64_t d = rank == 0 ? 0 : (dim < 0 ? dim + rank : dim);
            ref::Array want = ref::softmax(ref::Array(l.shape, vals), d, log);
            for (auto& v : want.v) v = round_to(dt, v);
            Tensor y = log ? in.tensor().log_softmax(dim) : in.tensor().softmax(dim);
            REPORT(ctx, compare(read(y), want, tolerance(dt, 1e-5)));
          });
        }
      }
    }
  }
}

// Softmax over a dim that is not the last, of contiguous tensors, runs in strips of the
// inner dims (one lane per line). Lines with NaN, +inf or only -inf must come out as the
// scalar path makes them: they sit in lanes of full strips here, for f32 and f64 alike.
TEST_CASE("softmax and log_softmax over a middle dim, in strips, with special lines") {
  for (DType dt : {DType::F32, DType::F64}) {
    for (bool log : {false, true}) {
      for (const ref::Dims& shape : {ref::Dims{3, 5, 19}, ref::Dims{2, 6, 8, 8}}) {
        std::string ctx = std::string(log ? "log_softmax " : "softmax ") + dt_name(dt) + " " + dims_str(shape);
        Gen g(hash_name(ctx));
        const int64_t n = shape[1], inner = ref::numel(shape) / (shape[0] * n);
        std::vector<double> vals(static_cast<size_t>(ref::numel(shape)));
        for (auto& v : vals) v = g.uniform(-5, 5);
        auto at = [&](int64_t o, int64_t k, int64_t i) -> double& {
          return vals[static_cast<size_t>((o * n + k) * inner + i)];
        };
        for (int64_t k = 0; k < n; ++k) at(0, k, 2) = -ref::kInf;  // a line of -inf: NaN
        at(0, 1, 4) = ref::kInf;                                   // +inf: NaN (inf - inf)
        at(0, 3, 9) = ref::kNaN;
        at(0, 0, 10) = -ref::kInf;                                 // one -inf: a zero
        at(1, 2, 3) = 90, at(1, 4, 3) = 88;                        // exp would overflow unshifted
        Tensor x = from_blob(vals.data(), Shape(shape), TensorOptions(DType::F64)).clone().to(dt);
        ref::Array want = ref::softmax(ref::Array(shape, vals), 1, log);
        for (auto& v : want.v) v = round_to(dt, v);
        REPORT(ctx, compare(read(log ? x.log_softmax(1) : x.softmax(1)), want, tolerance(dt, 1e-5)));
      }
    }
  }
}

TEST_CASE("op table: cumulative ops") {
  struct CumRow {
    const char* name;
    ref::Cum op;
    Domain dom;
    bool floats_only;
  };
  const CumRow rows[] = {{"cumsum", ref::Cum::Sum, {-3, 3}, false},
                         {"cumprod", ref::Cum::Prod, {0.5, 1.5}, false},
                         {"cummax", ref::Cum::Max, {-2, 2}, false},
                         {"cummin", ref::Cum::Min, {-2, 2}, false},
                         {"logcumsumexp", ref::Cum::Logsumexp, {-5, 5}, true}};
  for (const CumRow& row : rows) {
    for (DType dt : kAllDTypes) {
      if (row.floats_only && !is_floating(dt)) continue;
      for (const Layout& l : along_layouts()) {
        if (l.specials && !is_floating(dt)) continue;
        int64_t rank = static_cast<int64_t>(l.shape.size());
        for (int64_t dim = -1; dim < std::max<int64_t>(rank, 1); ++dim) {
          std::string ctx = std::string(row.name) + " " + dt_name(dt) + " " + l.name + " dim " + std::to_string(dim);
          guarded_run(ctx, [&] {
            Gen g(hash_name(ctx));
            Guarded in = Guarded::make(dt, l.shape, l.transposed, l.gap, l.offset);
            std::vector<double> vals = tie_values(g, dt, l, row.dom.lo, row.dom.hi);
            if (row.op == ref::Cum::Prod && is_integral(dt))
              for (auto& v : vals) v = std::clamp(v, -2.0, 2.0);
            in.set(vals);
            Tensor x = in.tensor();
            int64_t d = rank == 0 ? 0 : (dim < 0 ? dim + rank : dim);
            ref::Array idx;
            bool with_idx = row.op == ref::Cum::Max || row.op == ref::Cum::Min;
            ref::Array want = ref::cumulative(row.op, ref::Array(l.shape, vals), d, with_idx ? &idx : nullptr);
            DType rt = (row.op == ref::Cum::Sum || row.op == ref::Cum::Prod) && !is_floating(dt) ? DType::I64 : dt;
            for (auto& v : want.v) v = round_to(rt, v);
            Tensor y, yi;
            switch (row.op) {
              case ref::Cum::Sum: y = x.cumsum(dim); break;
              case ref::Cum::Prod: y = x.cumprod(dim); break;
              case ref::Cum::Max: std::tie(y, yi) = x.cummax(dim); break;
              case ref::Cum::Min: std::tie(y, yi) = x.cummin(dim); break;
              case ref::Cum::Logsumexp: y = x.logcumsumexp(dim); break;
            }
            CHECK_MESSAGE(y.dtype() == rt, ctx << ": dtype " << dt_name(y.dtype()));
            double tol = row.op == ref::Cum::Logsumexp ? tolerance(rt, 1e-5) : tolerance(rt, 1e-6);
            REPORT(ctx, compare(read(y), want, tol));
            if (with_idx) REPORT(ctx + " (indices)", compare(read(yi), idx, 0));
          });
        }
      }
    }
  }
}

TEST_CASE("op table: argmax, argmin, max and min along a dim") {
  for (DType dt : kAllDTypes) {
    for (const Layout& l : along_layouts()) {
      if (l.specials && !is_floating(dt)) continue;
      int64_t rank = static_cast<int64_t>(l.shape.size());
      for (int64_t dim = -1; dim < std::max<int64_t>(rank, 1); ++dim) {
        int64_t d = rank == 0 ? 0 : (dim < 0 ? dim + rank : dim);
        if (rank > 0 && l.shape[static_cast<size_t>(d)] == 0) continue;  // refused (test_errors)
        for (bool is_max : {true, false}) {
          for (bool keepdim : {false, true}) {
            std::string ctx = std::string(is_max ? "max " : "min ") + dt_name(dt) + " " + l.name + " dim " +
                              std::to_string(dim) + (keepdim ? " keepdim" : "");
            guarded_run(ctx, [&] {
              Gen g(hash_name(ctx));
              Guarded in = Guarded::make(dt, l.shape, l.transposed, l.gap, l.offset);
              std::vector<double> vals = tie_values(g, dt, l, -2, 2);
              in.set(vals);
              Tensor x = in.tensor();
              auto want_vi = ref::arg_reduce(is_max, ref::Array(l.shape, vals), d, keepdim);
              auto& wv = std::get<0>(want_vi);
              auto& wi = std::get<1>(want_vi);
              auto got_vi = is_max ? x.max(dim, keepdim) : x.min(dim, keepdim);
              auto& v = std::get<0>(got_vi);
              auto& i = std::get<1>(got_vi);
              Tensor ai = is_max ? x.argmax(dim, keepdim) : x.argmin(dim, keepdim);
              CHECK(v.dtype() == dt);
              CHECK(i.dtype() == DType::I64);
              REPORT(ctx + " (values)", compare(read(v), wv, 0));
              REPORT(ctx + " (indices)", compare(read(i), wi, 0));
              REPORT(ctx + " (arg)", compare(read(ai), wi, 0));
            });
          }
        }
      }
    }
  }
  // argmax over all elements: the flat index of the first maximum.
  Tensor t = tensor({3.f, 7.f, 7.f, -1.f, 7.f, 2.f}).reshape({2, 3});
  CHECK(t.argmax().item<int64_t>() == 1);
  CHECK(t.argmin().item<int64_t>() == 3);
  CHECK(t.t().argmax().item<int64_t>() == 2);  // t.t() = [[3, -1], [7, 7], [7, 2]]
}

TEST_CASE("op table: matmul shapes, layouts and dtypes") {
  struct MmCase {
    Dims a, b;
    bool ta = false, tb = false;
  };
  const MmCase cases[] = {
      {{7}, {7}},                       // dot
      {{5, 7}, {7}},                    // matrix-vector (the vector as a one-column matrix view)
      {{5, 7}, {7}, true, false},       // transposed matrix-vector
      {{7}, {7, 3}},                    // vector-matrix (a one-row view)
      {{7}, {7, 3}, false, true},
      {{0, 7}, {7}},                    // no rows
      {{5, 0}, {0}},                    // k = 0: zeros
      {{5, 7}, {7, 3}},
      {{5, 7}, {7, 3}, true, false},
      {{5, 7}, {7, 3}, false, true},
      {{5, 7}, {7, 3}, true, true},
      {{2, 5, 7}, {7, 3}},              // batched x matrix (folded into one GEMM)
      {{2, 5, 7}, {7, 3}, true, false}, // the same with a non-contiguous batched operand
      {{2, 0, 7}, {7, 3}},              // empty batch rows
      {{2, 5, 0}, {0, 3}},              // k = 0 with batch dims: zeros
      {{5, 7}, {4, 7, 3}, true, false}, // matrix x batched
      {{3, 1, 5, 7}, {2, 7, 6}, false, true},  // broadcast batches
      {{1, 13}, {13, 1}},
      {{1, 40}, {40, 9}, false, true},  // one row against a transposed weight: Linear at batch 1 (GEMV)
      {{1, 40}, {40, 9}, true, false},
      {{1, 64}, {64, 16}, false, true}, // GEMV: k and n whole multiples of the vector width
      {{1, 3}, {3, 5}, false, true},    // GEMV: k shorter than a vector
      {{1, 17}, {17, 33}, false, true}, // GEMV: tails in k and in n
      {{1, 40}, {40, 83}},              // row GEMV (row-major B): 4-vector blocks, a vector, a tail
      {{1, 40}, {40, 83}, true, false}, // the same with a strided row of A
      {{17, 33}, {33, 19}},
      {{5, 0}, {0, 3}},                 // k = 0: zeros
      {{0, 4}, {4, 3}},
      {{2, 3, 4}, {2, 4, 5}},
  };
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (const MmCase& c : cases) {
      std::string ctx = "matmul " + dt_name(dt) + " " + dims_str(c.a) + (c.ta ? "T" : "") + " @ " + dims_str(c.b) +
                        (c.tb ? "T" : "");
      guarded_run(ctx, [&] {
        Gen g(hash_name(ctx));
        Guarded ga = Guarded::make(dt, c.a, c.ta), gb = Guarded::make(dt, c.b, c.tb);
        Layout la{"", c.a}, lb{"", c.b};
        std::vector<double> av = make_values(g, dt, la, {-2, 2}, {-2, 2}), bv = make_values(g, dt, lb, {-2, 2}, {-2, 2});
        ga.set(av);
        gb.set(bv);
        ref::Array A(c.a, av), Bm(c.b, bv);
        ref::Array want = ref::matmul(A, Bm);
        ref::Array scale_arr = ref::matmul(ref::map(A, [](double v) { return std::fabs(v); }),
                                           ref::map(Bm, [](double v) { return std::fabs(v); }));
        for (auto& v : want.v) v = round_to(dt, v);
        Tensor y = ga.tensor().matmul(gb.tensor());
        CHECK(y.dtype() == dt);
        REPORT(ctx, compare(read(y), want, tolerance(dt, 1e-5), &scale_arr.v));
      });
    }
  }
}

// Matrix-vector products read a strided vector in place (a column of a matrix, a step-2
// slice) and an expanded one (stride 0) through the general path; all equal the products of
// contiguous copies, with the same gradients.
TEST_CASE("matrix-vector products with strided and expanded vectors") {
  manual_seed(17);
  Tensor m = randn({6, 9}), big = randn({9, 4}), row = randn({20});
  for (const Tensor& v : {big.select(1, 2), row.narrow(0, 0, 18).view({9, 2}).select(1, 0), randn({1}).expand({9})}) {
    Tensor want = m.matmul(v.contiguous());
    CHECK((m.matmul(v) - want).abs().max().item<double>() < 1e-5);
    Tensor w = randn({9, 6});
    CHECK((v.matmul(w) - v.contiguous().matmul(w)).abs().max().item<double>() < 1e-5);
  }
  Tensor a = randn({6, 9}).requires_grad_(true), x = randn({9, 3}).requires_grad_(true);
  Tensor y = a.matmul(x.select(1, 1));
  y.backward(ones({6}));
  CHECK((a.grad() - x.select(1, 1).detach().unsqueeze(0).expand({6, 9})).abs().max().item<double>() < 1e-6);
  CHECK((x.grad().select(1, 1) - a.detach().sum({0})).abs().max().item<double>() < 1e-5);
  CHECK(x.grad().select(1, 0).abs().max().item<double>() == 0);
}

TEST_CASE("op table: addmm of a single row scales and accumulates as it should (the GEMV path)") {
  manual_seed(77);
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor a = randn({1, 37}, dt), w = randn({11, 37}, dt), c = randn({1, 11}, dt);
    Tensor want = (c.to(DType::F64) * 2.0 + a.to(DType::F64).matmul(w.to(DType::F64).t()) * 0.5).to(dt);
    Tensor got = addmm(c, a, w.t(), 2.0, 0.5);
    CHECK((got - want).abs().amax().item<double>() < (dt == DType::F32 ? 1e-4 : 1e-12));
    Tensor bias = randn({11}, dt);  // Linear: a broadcast bias
    Tensor lin = addmm(bias, a, w.t());
    CHECK((lin - (a.matmul(w.t()) + bias)).abs().amax().item<double>() < (dt == DType::F32 ? 1e-4 : 1e-12));
    // Bias rows are copied straight into the output for a contiguous vector; a strided one
    // or a (1, n) row goes through the broadcast copy. Several rows check every row gets it.
    Tensor a3 = randn({3, 37}, dt), wide = randn({22}, dt);
    Tensor strided_bias = wide.index({Slice(0, 22, 2)});
    Tensor want3 = a3.matmul(w.t()) + strided_bias;
    CHECK((addmm(strided_bias, a3, w.t()) - want3).abs().amax().item<double>() < (dt == DType::F32 ? 1e-4 : 1e-12));
    CHECK((addmm(strided_bias.contiguous(), a3, w.t()) - want3).abs().amax().item<double>() <
          (dt == DType::F32 ? 1e-4 : 1e-12));
    CHECK((addmm(strided_bias.unsqueeze(0), a3, w.t()) - want3).abs().amax().item<double>() <
          (dt == DType::F32 ? 1e-4 : 1e-12));
    CHECK_THROWS_AS(addmm(randn({12}, dt), a3, w.t()), ember::Error);  // bias of the wrong length
    // linear: the weight read in place (MatmulKind::Linear), 2-d and 3-d input.
    CHECK((linear(a3, w, strided_bias) - want3).abs().amax().item<double>() < (dt == DType::F32 ? 1e-4 : 1e-12));
    Tensor a23 = randn({2, 3, 37}, dt);
    Tensor want23 = a23.matmul(w.t()) + strided_bias;
    CHECK(linear(a23, w, strided_bias).sizes() == Shape{2, 3, 11});
    CHECK((linear(a23, w, strided_bias) - want23).abs().amax().item<double>() < (dt == DType::F32 ? 1e-4 : 1e-12));
    CHECK((linear(a23, w) - a23.matmul(w.t())).abs().amax().item<double>() < (dt == DType::F32 ? 1e-4 : 1e-12));
    CHECK_THROWS_AS(addmm(bias.to(dt == DType::F32 ? DType::F64 : DType::F32), a3, w.t()), ember::Error);
  }
}

// ---- API forms ---------------------------------------------------------------------------------------------
TEST_CASE("unary ops called without parameters use PyTorch's defaults") {
  std::vector<double> vals = {-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 25.0};
  Tensor x = from_blob(vals.data(), {7}, TensorOptions(DType::F64)).clone();
  auto check = [&](const char* what, const Tensor& got, ops::UnaryOp op, ops::UnaryParams p) {
    ref::Array want = ref::map(ref::Array({7}, vals), [&](double v) { return ref::unary(op, v, p); });
    REPORT(std::string(what), compare(read(got), want, 1e-12));
  };
  check("leaky_relu() slope 0.01", x.leaky_relu(), U::LeakyRelu, P(0.01));
  check("elu() alpha 1", x.elu(), U::Elu, P(1.0));
  check("celu() alpha 1", x.celu(), U::Celu, P(1.0));
  check("softplus() beta 1 threshold 20", x.softplus(), U::Softplus, P(1.0, 20.0));
  check("hardtanh() [-1, 1]", x.hardtanh(), U::Hardtanh, P(-1.0, 1.0));
  REPORT(std::string("logit() no eps"), compare(read(x.sigmoid().logit()), ref::Array({7}, vals), 1e-6));  // 1 - sigmoid(25) loses digits
  CHECK_THROWS_AS(x.clamp(), Error);  // neither bound given
  std::vector<double> sp = {ref::kNaN, ref::kInf, -ref::kInf, 1.5};
  Tensor s = from_blob(sp.data(), {4}, TensorOptions(DType::F64)).clone();
  ref::Array want({4}, {0.0, finite_max(DType::F64), -finite_max(DType::F64), 1.5});
  REPORT(std::string("nan_to_num()"), compare(read(s.nan_to_num()), want, 0));
  // The named parametric forms pass their parameters through.
  check("leaky_relu(0.2)", x.leaky_relu(0.2), U::LeakyRelu, P(0.2));
  check("hardtanh(-2, 0.5)", x.hardtanh(-2, 0.5), U::Hardtanh, P(-2, 0.5));
  check("clamp(-1, 1)", x.clamp(Scalar(-1.0), Scalar(1.0)), U::Clamp, P(-1, 1));
  check("clamp_min(0)", x.clamp_min(0.0), U::Clamp, P(0, 0, 0, true, false));
  check("softplus(2, 1)", x.softplus(2, 1), U::Softplus, P(2, 1));
}

// The float kernels compare with bounds rounded up (min) or down (max) to float, which must
// answer as a comparison in double would: bounds between two floats, beyond float's range,
// infinite, or tiny (where rounding to nearest would give a zero of the wrong sign), and values
// next to them; results compared bit for bit. 45 values: vector runs and the scalar tail both
// see them.
TEST_CASE("clamp and hardtanh on f32 compare with the double bounds exactly") {
  constexpr double kFltMax = 3.4028234663852886e38;
  auto to_f32 = [](double v) {  // IEEE rounding, overflow to infinity
    if (std::fabs(v) >= 0x1.ffffffp127) return v > 0 ? ref::kInf : -ref::kInf;
    if (std::fabs(v) > kFltMax) return v > 0 ? kFltMax : -kFltMax;
    return static_cast<double>(static_cast<float>(v));
  };
  const std::vector<double> bounds = {0.1, -0.1, 1.0 / 3, 2.0, 1e300, -1e300, ref::kInf, -ref::kInf,
                                      3.4028235e38, -3.4028235e38, 1e-45, 1e-50, -1e-50};
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::lowest(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (double b : bounds) {
    if (std::isinf(b) || std::fabs(b) > kFltMax) continue;
    float f = static_cast<float>(b);
    xs.push_back(f);
    xs.push_back(std::nextafter(f, std::numeric_limits<float>::infinity()));
    xs.push_back(std::nextafter(f, -std::numeric_limits<float>::infinity()));
  }
  while (xs.size() < 45) xs.push_back(static_cast<float>(xs.size()) * 0.25f - 5.0f);
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor x = from_blob(xs.data(), {n}, TensorOptions(DType::F32)).clone();
  auto expect = [&](std::optional<double> lo, std::optional<double> hi, bool hardtanh) {
    ref::Array want({n});
    for (int64_t i = 0; i < n; ++i) {
      double r = xs[static_cast<size_t>(i)];
      if (hardtanh) r = r < *lo ? to_f32(*lo) : (r > *hi ? to_f32(*hi) : r);
      else {
        if (lo && r < *lo) r = to_f32(*lo);
        if (hi && r > *hi) r = to_f32(*hi);
      }
      want.v[static_cast<size_t>(i)] = r;
    }
    return want;
  };
  auto same_bits = [](const Tensor& got, const ref::Array& want) {
    ref::Array g = read(got);
    for (size_t i = 0; i < want.v.size(); ++i) {
      double a = g.v[i], b = want.v[i];
      bool ok = std::isnan(a) ? std::isnan(b) : (a == b && std::signbit(a) == std::signbit(b));
      if (!ok) return fmt::format("element {}: got {}, expected {}", i, a, b);
    }
    return std::string();
  };
  for (double lo : bounds) {
    std::string l = fmt::format("{}", lo);
    REPORT("clamp_min(" + l + ")", same_bits(x.clamp_min(lo), expect(lo, std::nullopt, false)));
    REPORT("clamp_max(" + l + ")", same_bits(x.clamp_max(lo), expect(std::nullopt, lo, false)));
    for (double hi : bounds) {
      std::string h = fmt::format("{}, {}", l, hi);
      REPORT("clamp(" + h + ")", same_bits(x.clamp(Scalar(lo), Scalar(hi)), expect(lo, hi, false)));
      if (lo <= hi) REPORT("hardtanh(" + h + ")", same_bits(x.hardtanh(lo, hi), expect(lo, hi, true)));
    }
  }
}

// x.pow(e) for e in {0, 0.5, 1, 2, 3, -1} runs special-cased code (x * x, sqrt, ...), which
// must give pow's values: exactly for 0, 1, 2, -1, within an ulp for 0.5 and 3, and pow's
// answers for zeros of either sign, infinities and NaN.
TEST_CASE("pow with a common scalar exponent agrees with std::pow") {
  std::vector<double> xs = {0.0, -0.0, ref::kInf, -ref::kInf, ref::kNaN, 1.0, -1.0, 1e-300, -1e-300, 1e300, -1e300};
  Gen g(7);
  while (xs.size() < 45) xs.push_back(g.uniform(-4, 4));
  const int64_t n = static_cast<int64_t>(xs.size());
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor x = from_blob(xs.data(), {n}, TensorOptions(DType::F64)).clone().to(dt);
    ref::Array xv = read(x);  // the values as rounded to dt
    const double ulp = dt == DType::F32 ? 0x1p-23 : 0x1p-52;
    for (double e : {0.0, 0.5, 1.0, 2.0, 3.0, -1.0}) {
      ref::Array got = read(x.pow(e));
      const bool exact = e != 0.5 && e != 3.0;
      for (int64_t i = 0; i < n; ++i) {
        double v = xv.v[static_cast<size_t>(i)], r = got.v[static_cast<size_t>(i)];
        double w = dt == DType::F32 ? static_cast<double>(std::pow(static_cast<float>(v), static_cast<float>(e)))
                                    : std::pow(v, e);
        bool ok;
        if (std::isnan(w)) ok = std::isnan(r);
        else if (std::isinf(w) || w == 0 || exact) ok = r == w && std::signbit(r) == std::signbit(w);
        else ok = std::fabs(r - w) <= ulp * std::fabs(w);
        CHECK_MESSAGE(ok, dt_name(dt) << " pow(" << v << ", " << e << ") = " << r << ", std::pow gives " << w);
      }
    }
  }
}

// The batch forms of fmod, remainder and floor division compute a - trunc(a / b) * b with one
// fma, which is exact even when a / b rounds up to the next integer; hypot uses one fma and a
// square root where the squares stay in range. Checked bit for bit (fmod family) or to an ulp
// (hypot) against the standard library on quotients up to and past the exact range, near-
// integer quotients (a = n * b nudged by an ulp), huge and tiny operands and specials.
TEST_CASE("fmod, remainder, floor division and hypot over batches agree with the standard library") {
  Gen g(31);
  for (DType dt : {DType::F32, DType::F64}) {
    const bool f32 = dt == DType::F32;
    auto round = [&](double v) { return f32 ? static_cast<double>(static_cast<float>(v)) : v; };
    auto nudge = [&](double v, int k) {
      for (; k > 0; --k) v = f32 ? std::nextafter(static_cast<float>(v), INFINITY) : std::nextafter(v, INFINITY);
      for (; k < 0; ++k) v = f32 ? std::nextafter(static_cast<float>(v), -INFINITY) : std::nextafter(v, -INFINITY);
      return v;
    };
    std::vector<double> as, bs;
    for (int i = 0; i < 4000; ++i) {
      double b = round(g.uniform(0.1, 10) * (g.uniform(0, 1) < 0.5 ? -1 : 1) * std::ldexp(1.0, static_cast<int>(g.uniform(-30, 30))));
      double q = std::trunc(std::ldexp(g.uniform(0, 1), static_cast<int>(g.uniform(0, f32 ? 27 : 56))));
      double a = round(q * b * (g.uniform(0, 1) < 0.5 ? -1 : 1));
      as.push_back(nudge(a, static_cast<int>(g.uniform(-3, 4))));
      bs.push_back(b);
    }
    for (double scale : {f32 ? 1e30 : 1e300, f32 ? 1e-30 : 1e-300})  // squares out of range: whole batches
      for (int i = 0; i < 32; ++i) as.push_back(round(scale * g.uniform(-4, 4))), bs.push_back(round(scale * g.uniform(-4, 4)));
    const double sp[] = {0.0, -0.0, ref::kInf, -ref::kInf, ref::kNaN, 1e-310, 1e30, -1e-30, 3.0, -3.0};
    for (double a : sp)
      for (double b : sp) as.push_back(round(a)), bs.push_back(round(b));
    const int64_t n = static_cast<int64_t>(as.size());
    Tensor a = from_blob(as.data(), {n}, TensorOptions(DType::F64)).clone().to(dt);
    Tensor b = from_blob(bs.data(), {n}, TensorOptions(DType::F64)).clone().to(dt);
    ref::Array av = read(a), bv = read(b);
    ref::Array fm = read(fmod(a, b)), rm = read(remainder(a, b)), fd = read(a.div(b, "floor")), hy = read(hypot(a, b));
    auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y)); };
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 10; ++i) {
      const size_t k = static_cast<size_t>(i);
      const double x = av.v[k], y = bv.v[k];
      // PyTorch's formulas, evaluated in the tensor's own precision.
      auto want = [&]<class T>(T p, T q) {
        const T m = std::fmod(p, q);
        const T r = m != 0 && (q < 0) != (m < 0) ? m + q : m;
        T d = (p - m) / q;
        if (m != 0 && (q < 0) != (m < 0)) d -= 1;
        T f = std::floor(d);
        if (d - f > T(0.5)) f += 1;
        const T fd = q == 0 ? p / q : d == 0 ? std::copysign(T(0), p / q) : f;
        return std::array<double, 4>{m, r, fd, std::hypot(p, q)};
      };
      const std::array<double, 4> w = f32 ? want(static_cast<float>(x), static_cast<float>(y)) : want(x, y);
      const double wf = w[0], wr = w[1], wd = w[2], wh = w[3];
      const double ulp = f32 ? 0x1p-23 : 0x1p-52;
      const bool hyp_ok = same(hy.v[k], wh) || std::fabs(hy.v[k] - wh) <= ulp * std::fabs(wh);
      const bool ok = same(fm.v[k], wf) && same(rm.v[k], wr) && same(fd.v[k], wd) && hyp_ok;
      if (!ok) ++bad;
      CHECK_MESSAGE(ok, dt_name(dt) << " a=" << x << " b=" << y << ": fmod " << fm.v[k] << " vs " << wf << ", remainder "
                                    << rm.v[k] << " vs " << wr << ", floor div " << fd.v[k] << " vs " << wd << ", hypot "
                                    << hy.v[k] << " vs " << wh);
    }
  }
}

// f32 gelu and its derivative over batches take the normal CDF as erfc itself for negative x
// (no 1 + erf cancellation): relative accuracy holds into the tail, where gelu(-8) is
// -2.5e-15. The bound grows with x^2 (the rounding of x^2 / 2 inside exp is amplified by it).
TEST_CASE("f32 gelu and gelu_backward stay accurate into the negative tail") {
  const int n = 18001;
  std::vector<float> xs(n);
  for (int i = 0; i < n; ++i) xs[static_cast<size_t>(i)] = -9.f + 18.f * static_cast<float>(i) / (n - 1);
  Tensor x = from_blob(xs.data(), {n}, TensorOptions(DType::F32)).clone();
  ref::Array g = read(x.gelu()), d = read(gelu_backward(ones_like(x), x));
  int bad = 0;
  for (int i = 0; i < n && bad < 10; ++i) {
    const double v = xs[static_cast<size_t>(i)], z = v / std::sqrt(2.0);
    const double cdf = v >= 0 ? 0.5 * (1 + std::erf(z)) : 0.5 * std::erfc(-z);  // no cancellation
    const double want = v * cdf, want_d = cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
    const double rel = (8 + v * v) * 0x1p-23;
    const double got = g.v[static_cast<size_t>(i)], got_d = d.v[static_cast<size_t>(i)];
    const bool ok = std::fabs(got - want) <= rel * std::fabs(want) && std::fabs(got_d - want_d) <= 4e-7 + rel * std::fabs(want_d);
    bad += !ok;
    CHECK_MESSAGE(ok, "x=" << v << ": gelu " << got << " vs " << want << ", gelu_backward " << got_d << " vs " << want_d);
  }
}

TEST_CASE("nan_to_num defaults use the limits of reduced float dtypes") {
  for (DType dt : {DType::F16, DType::BF16, DType::F32}) {
    std::vector<double> sp = {ref::kNaN, ref::kInf, -ref::kInf};
    Tensor s = from_blob(sp.data(), {3}, TensorOptions(DType::F64)).clone().to(dt);
    ref::Array want({3}, {0.0, finite_max(dt), -finite_max(dt)});
    REPORT("nan_to_num() " + dt_name(dt), compare(read(s.nan_to_num(0.0)), want, 0));
  }
}

// Reduction kernels exist for accumulator dtypes only: f16/bf16 reduce in f32, and a sum in
// a narrower integer dtype accumulates in i64 and wraps to the same bits as PyTorch's sum.
TEST_CASE("sum with a dtype argument accumulates in a kernel's dtype and casts") {
  Tensor big = tensor({2147483647, 1, 5}).to(DType::I32);
  Tensor s32 = big.sum({0}, false, DType::I32);
  CHECK(s32.dtype() == DType::I32);
  CHECK(s32.item<int32_t>() == -2147483643);  // wrapped, as torch.sum(x, dtype=torch.int32)
  CHECK(big.sum({0}, false, DType::I64).item<int64_t>() == 2147483653);
  Tensor s8 = tensor({100, 100, 100}).to(DType::I32).sum({0}, false, DType::I8);
  CHECK(s8.dtype() == DType::I8);
  CHECK(s8.item<int64_t>() == 44);  // 300 mod 256
  CHECK(tensor({1.5f, 2.25f}).to(DType::F16).sum({0}, false, DType::F16).item<float>() == 3.75f);
  CHECK(tensor({1.5f, 2.25f}).sum({0}, false, DType::F64).dtype() == DType::F64);
  CHECK(tensor({0, 3, 0}).to(DType::U8).sum({0}, false, DType::Bool).item<bool>());
  // The input is converted to the requested dtype first: 1 and -1 are both true, 0.5 is true,
  // 3e9 saturates to INT32_MAX like .to(i32) (it would wrap if summed as i64 first).
  CHECK(tensor({1, -1}).sum({0}, false, DType::Bool).item<bool>());
  CHECK(tensor({0.5f}).sum({0}, false, DType::Bool).item<bool>());
  CHECK(tensor({3e9f}).sum({0}, false, DType::I32).item<int32_t>() == tensor({3e9f}).to(DType::I32).item<int32_t>());
}

// floor, ceil, trunc and round keep the sign of x, also where the result is zero (xsimd's SSE2
// forms convert through integers and lost it; ember-tests-base runs this on that build).
TEST_CASE("rounding ops and div_trunc keep the sign of a zero result") {
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = -0.49f + 0.01f * static_cast<float>(i % 8) - (i % 2 ? 0.f : 0.f);
  v[3] = -0.0f;
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor x = from_blob(v.data(), {64}, TensorOptions(DType::F32)).clone().to(dt);
    ref::Array xv = read(x);
    for (const char* name : {"floor", "ceil", "trunc", "round", "div_trunc"}) {
      const std::string n = name;
      Tensor y = n == "floor" ? x.floor() : n == "ceil" ? x.ceil() : n == "trunc" ? x.trunc() : n == "round" ? x.round()
                                                                                 : x.div(full({64}, 2.0, dt), "trunc");
      ref::Array got = read(y);
      for (size_t i = 0; i < v.size(); ++i) {
        const double a = xv.v[i];
        const double w = n == "floor" ? std::floor(a) : n == "ceil" ? std::ceil(a) : n == "trunc" ? std::trunc(a)
                       : n == "round" ? std::nearbyint(a) : std::trunc(a / 2);
        CHECK_MESSAGE((got.v[i] == w && std::signbit(got.v[i]) == std::signbit(w)), dt_name(dt), " ", n, "(", a, ") = ", got.v[i], ", want ", w);
      }
    }
  }
}

// Integer add, sub, mul (i32) and bitwise ops run over xsimd batches in the AVX2 build; like
// the scalar code they wrap modulo 2^bits. Operands near the limits, runs with tails.
TEST_CASE("integer arithmetic wraps like the scalar code, in batches and tails") {
  const int64_t n = 77;
  std::vector<int64_t> av(n), bv(n);
  for (int64_t i = 0; i < n; ++i) av[static_cast<size_t>(i)] = i * 977 % 509 - 254, bv[static_cast<size_t>(i)] = i * 613 % 401 - 200;
  Tensor a64 = from_blob(av.data(), {n}, TensorOptions(DType::I64)).clone(), b64 = from_blob(bv.data(), {n}, TensorOptions(DType::I64)).clone();
  auto check = [&]<class T>(DType dt, int64_t scale) {
    Tensor a = (a64 * scale).to(dt), b = (b64 * scale).to(dt);
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    using U = std::make_unsigned_t<T>;
    Tensor s = a + b, d = a - b, x = bitwise_xor(a, b), o = bitwise_or(a, b), m = a * b;
    for (int64_t i = 0; i < n; ++i) {
      const U ua = static_cast<U>(pa[i]), ub = static_cast<U>(pb[i]);
      CHECK(s.data_ptr<T>()[i] == static_cast<T>(static_cast<U>(ua + ub)));
      CHECK(d.data_ptr<T>()[i] == static_cast<T>(static_cast<U>(ua - ub)));
      CHECK(x.data_ptr<T>()[i] == static_cast<T>(ua ^ ub));
      CHECK(o.data_ptr<T>()[i] == static_cast<T>(ua | ub));
      CHECK(m.data_ptr<T>()[i] == static_cast<T>(static_cast<U>(static_cast<uint64_t>(ua) * ub)));
    }
  };
  check.operator()<int8_t>(DType::I8, 1);
  check.operator()<int32_t>(DType::I32, 8454143);  // products and sums past 2^31
  check.operator()<int64_t>(DType::I64, int64_t{1} << 55);
  Tensor u = tensor({250, 5, 255, 0, 128, 7, 9, 200, 201}).to(DType::U8);
  CHECK((u + u).data_ptr<uint8_t>()[0] == 244);
  Tensor w = tensor({6, 5, 0, 128, 0, 0, 0, 0, 0}).to(DType::U8);
  CHECK((u - w).data_ptr<uint8_t>()[3] == 128);  // 0 - 128 wraps
  CHECK((u - w).data_ptr<uint8_t>()[0] == 244);
}

// all()/any() of a whole contiguous bool tensor scan bytes (memchr / 8-byte words and a
// tail): a single false or true at every position of runs around the word size.
TEST_CASE("all and any of whole bool tensors find a single odd element anywhere") {
  for (int64_t n : {0, 1, 7, 8, 9, 16, 17, 100}) {
    CHECK(ones({n}, DType::Bool).all().item<bool>());
    CHECK(!zeros({n}, DType::Bool).any().item<bool>());
    CHECK(zeros({n}, DType::Bool).all().item<bool>() == (n == 0));
    CHECK(ones({n}, DType::Bool).any().item<bool>() == (n > 0));
    for (int64_t i = 0; i < n; ++i) {
      std::vector<uint8_t> t(static_cast<size_t>(n), 1), f(static_cast<size_t>(n), 0);
      t[static_cast<size_t>(i)] = 0;
      f[static_cast<size_t>(i)] = 1;
      Tensor a = from_blob(t.data(), {n}, TensorOptions(DType::Bool)).clone();
      Tensor b = from_blob(f.data(), {n}, TensorOptions(DType::Bool)).clone();
      CHECK_MESSAGE(!a.all().item<bool>(), "n ", n, " false at ", i);
      CHECK_MESSAGE(b.any().item<bool>(), "n ", n, " true at ", i);
      CHECK(a.view({1, n}).all().item<bool>() == false);
    }
  }
  Tensor m = ones({4, 6}, DType::Bool);
  m.index_put_({2, 5}, false);
  CHECK(!m.t().all().item<bool>());  // strided: the general reduction
  CHECK(m.all({1}).sum().item<int64_t>() == 3);
}

TEST_CASE("mixed-dtype binary ops promote like PyTorch") {
  Tensor i = tensor({1, 2, 3}).to(DType::I32);
  Tensor f = tensor({0.5f, 1.5f, 2.5f});
  Tensor h = tensor({1.f, 2.f, 3.f}).to(DType::F16);
  Tensor u = tensor({1, 2, 3}).to(DType::U8);
  Tensor s8 = tensor({-1, 2, -3}).to(DType::I8);
  CHECK(i.add(f).dtype() == DType::F32);
  CHECK(i.add(h).dtype() == DType::F16);
  CHECK(h.add(tensor({1.f}).to(DType::BF16)).dtype() == DType::F32);
  CHECK(u.add(s8).dtype() == DType::I32);
  CHECK(i.div(i).dtype() == DType::F32);
  CHECK(i.add(2.5).dtype() == DType::F32);           // float scalar raises the category
  CHECK(h.mul(2.5).dtype() == DType::F16);           // but not the width
  CHECK(u.add(int64_t{300}).dtype() == DType::U8);   // int scalar keeps the tensor's dtype
  CHECK(i.eq(f).dtype() == DType::Bool);
  ref::Array got = read(u.add(s8));
  CHECK(got.v == std::vector<double>{0, 4, 0});
  // Numbers next to f32/f64 tensors are made in the tensor's dtype: the same rounding as a
  // cast from the number itself (an integer past 2^53 is not rounded twice through f64).
  const int64_t big = (int64_t{1} << 53) + (int64_t{1} << 29) + 1;
  CHECK((ones({2}) * big)[1].item<float>() == static_cast<float>(big));
  CHECK((ones({2}) * 0.1)[1].item<float>() == 0.1f);
  CHECK((ones({2}, DType::F64) * 0.1)[1].item<double>() == 0.1);
  CHECK((ones({2}) * 3).dtype() == DType::F32);
  CHECK((ones({2}) * true).dtype() == DType::F32);
}

TEST_CASE("long f32 sums cascade: a million rows, columns, strided and contiguous runs") {
  // One accumulator down a million floats was off by ~3e-5 (columns), ~1e-6 (runs); blocks
  // added as a binary tree (kernels_cpu/cascade_sum.hpp) keep every layout near 1e-7, as
  // PyTorch's cascade sum. Uniform [0, 1) data: no cancellation, so relative error is fair.
  manual_seed(3);
  auto check = [](const char* what, const Tensor& got, const Tensor& want) {
    const double err = (got.to(DType::F64) - want).abs().div(want.abs()).amax().item<double>();
    INFO(std::string(what) << ": max relative error " << err);
    CHECK(err < 4e-7);
  };
  Tensor col = rand({1 << 20, 3}), col64 = col.to(DType::F64);
  check("sum of columns", col.sum({0}), col64.sum({0}));
  check("mean of columns", col.mean({0}), col64.mean({0}));
  check("nansum of columns", col.nansum({0}), col64.sum({0}));
  check("sum over a stride-3 dim", col.t().sum({1}), col64.t().sum({1}));
  Tensor wide = rand({1 << 16, 70});  // a last strip narrower than the others
  check("sum of 70 columns", wide.sum({0}), wide.to(DType::F64).sum({0}));
  Tensor rows = rand({2, 1 << 21}), rows64 = rows.to(DType::F64);
  check("sum of long rows", rows.sum({1}), rows64.sum({1}));
  check("2-norm of long rows", rows.norm(2, {1}), rows64.norm(2, {1}));
  Tensor mid = rand({2, 1 << 19, 2});
  check("sum over a middle dim", mid.sum({1}), mid.to(DType::F64).sum({1}));
  // Whole-tensor reductions without a SIMD form (nansum) go by 32K chunks: each chunk too.
  Tensor flat = rand({1 << 22});
  check("nansum of 4M", flat.nansum(), flat.to(DType::F64).sum());
}

TEST_CASE("long f32 dot products cascade too: dot, and a vector times a tall matrix") {
  // The batch-1 GEMV kernels ran one accumulator per lane down all of k: 1.4e-5 relative for
  // dot over 4M elements, 1.8e-4 for (1M) @ (1M, 64) (here 64K rows). PyTorch: ~7e-7.
  manual_seed(4);
  Tensor a = rand({1 << 22}), b = rand({1 << 22});
  const double want = (a.to(DType::F64) * b.to(DType::F64)).sum().item<double>();
  CHECK(std::abs(a.dot(b).item<double>() - want) / want < 4e-7);
  // 83 columns: 64 + 16 + 3 with AVX-512 (32 + 32 + 8 + 8 + 3 with AVX2), so the four-vector
  // loop, the one-vector loop and the scalar tail all cascade.
  Tensor v = rand({1 << 16}), w = rand({1 << 16, 83});
  Tensor wantv = v.to(DType::F64).matmul(w.to(DType::F64));
  CHECK((v.matmul(w).to(DType::F64) - wantv).abs().div(wantv).amax().item<double>() < 4e-7);
  // A matrix times a long vector (1.2e-5 through Eigen in the baseline build).
  Tensor m = w.t().contiguous().narrow(0, 0, 5);
  Tensor wantm = m.to(DType::F64).matmul(v.to(DType::F64));
  CHECK((m.matmul(v).to(DType::F64) - wantm).abs().div(wantm).amax().item<double>() < 4e-7);
}

}  // namespace test_ops_table
