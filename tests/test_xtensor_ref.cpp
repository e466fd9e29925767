// A second, independent oracle: xtensor (Debian's xtensor-dev) for broadcasting binary ops,
// sum/mean/amax over random dim sets with keepdim, and basic slicing with Slice/None/Ellipsis.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>
#include <xtensor/xstrided_view.hpp>
#include <xtensor/xview.hpp>

#include <random>
#include <string>
#include <vector>

namespace test_xtensor_ref {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

using XA = xt::xarray<double>;

Tensor to_ember(const XA& x, DType t = DType::F64) {
  std::vector<double> buf(x.begin(), x.end());
  Shape s;
  for (auto d : x.shape()) s.push_back(static_cast<int64_t>(d));
  return from_blob(buf.data(), s, TensorOptions(DType::F64)).clone().to(t);
}
/// Elements of t in row-major order, shape checked separately.
std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(DType::F64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}
std::vector<int64_t> shape_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }
std::vector<int64_t> shape_of(const XA& x) { return {x.shape().begin(), x.shape().end()}; }

bool close(const std::vector<double>& a, const XA& b, double tol) {
  if (a.size() != b.size()) return false;
  size_t i = 0;
  for (double v : b) {
    if (!(std::fabs(a[i] - v) <= tol * (1 + std::fabs(v)))) return false;
    ++i;
  }
  return true;
}

struct Rng {
  std::mt19937_64 g{12345};
  int64_t i(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); }
  XA array(const std::vector<size_t>& shape) {
    XA x = xt::zeros<double>(shape);
    std::uniform_real_distribution<double> u(-3, 3);
    for (auto& v : x) v = u(g);
    return x;
  }
  std::vector<size_t> shape(int rank, int64_t maxd = 5) {
    std::vector<size_t> s;
    for (int k = 0; k < rank; ++k) s.push_back(static_cast<size_t>(i(1, maxd)));
    return s;
  }
};

/// xtensor's strided view, which takes integers, ranges, all, newaxis and ellipsis.
template <class... S>
XA sv(const XA& x, S... s) {
  xt::xstrided_slice_vector v{xt::xstrided_slice<std::ptrdiff_t>(s)...};
  XA r = xt::strided_view(x, v);  // (xt::eval of a strided view mis-types its rank in 0.24)
  return r;
}

std::string str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t k = 0; k < s.size(); ++k) r += (k ? "," : "") + std::to_string(s[k]);
  return r + "]";
}

}  // namespace

TEST_CASE("xtensor oracle: broadcasting binary ops on random shapes") {
  Rng r;
  for (int iter = 0; iter < 150; ++iter) {
    int rank = static_cast<int>(r.i(0, 4));
    std::vector<size_t> out = r.shape(rank);
    // Each operand: a suffix of out's dims, with some dims set to 1.
    auto operand_shape = [&] {
      int ra = static_cast<int>(r.i(0, rank));
      std::vector<size_t> s(out.end() - ra, out.end());
      for (auto& d : s)
        if (r.i(0, 2) == 0) d = 1;
      return s;
    };
    XA a = r.array(operand_shape()), b = r.array(operand_shape());
    Tensor ea = to_ember(a), eb = to_ember(b);
    if (iter % 3 == 1 && ea.dim() >= 2) ea = ea.transpose(-1, -2).contiguous().transpose(-1, -2);
    std::string ctx = str(shape_of(a)) + " op " + str(shape_of(b));
    XA sum = a + b, prod = a * b, mx = xt::maximum(a, b), q = a / (xt::abs(b) + 1.0);
    Tensor es = ea.add(eb), ep = ea.mul(eb), em = ea.maximum(eb), eq = ea.div(eb.abs().add(1.0));
    CHECK_MESSAGE(shape_of(es) == shape_of(sum), ctx);
    CHECK_MESSAGE(close(values(es), sum, 1e-14), ctx);
    CHECK_MESSAGE(close(values(ep), prod, 1e-14), ctx);
    CHECK_MESSAGE(close(values(em), mx, 0), ctx);
    CHECK_MESSAGE(close(values(eq), q, 1e-14), ctx);
    // f32 through the SIMD paths.
    Tensor fs = ea.to(DType::F32).sub(eb.to(DType::F32));
    CHECK_MESSAGE(close(values(fs), a - b, 1e-6), ctx << " f32");
  }
}

TEST_CASE("xtensor oracle: sum, mean, amax over random dim sets with keepdim") {
  Rng r;
  for (int iter = 0; iter < 150; ++iter) {
    int rank = static_cast<int>(r.i(1, 4));
    XA x = r.array(r.shape(rank, 6));
    std::vector<size_t> axes;
    Shape dims;
    for (int d = 0; d < rank; ++d)
      if (r.i(0, 1)) axes.push_back(static_cast<size_t>(d)), dims.push_back(r.i(0, 1) ? d : d - rank);
    if (axes.empty()) axes.push_back(0), dims.push_back(0);
    bool keepdim = r.i(0, 1) == 1;
    Tensor e = to_ember(x);
    if (iter % 2 == 1 && rank >= 2) e = e.transpose(0, rank - 1).contiguous().transpose(0, rank - 1);
    std::string ctx = str(shape_of(x)) + " dims " + dims.str() + (keepdim ? " keepdim" : "");
    XA s, m, mx;
    if (keepdim) {
      s = xt::sum(x, axes, xt::keep_dims);
      m = xt::mean(x, axes, xt::keep_dims);
      mx = xt::amax(x, axes, xt::keep_dims);
    } else {
      s = xt::sum(x, axes);
      m = xt::mean(x, axes);
      mx = xt::amax(x, axes);
    }
    Tensor es = e.sum(dims, keepdim), em = e.mean(dims, keepdim), ex = e.amax(dims, keepdim);
    CHECK_MESSAGE(shape_of(es) == shape_of(s), ctx << " sum shape " << str(shape_of(es)) << " vs " << str(shape_of(s)));
    CHECK_MESSAGE(shape_of(ex) == shape_of(mx), ctx);
    CHECK_MESSAGE(close(values(es), s, 1e-12), ctx << " sum");
    CHECK_MESSAGE(close(values(em), m, 1e-12), ctx << " mean");
    CHECK_MESSAGE(close(values(ex), mx, 0), ctx << " amax");
    Tensor f = e.to(DType::F32).sum(dims, keepdim);
    CHECK_MESSAGE(close(values(f), s, 1e-5), ctx << " f32 sum");
  }
}

TEST_CASE("xtensor oracle: basic slicing with Slice, None, Ellipsis and integers") {
  XA x = xt::arange<double>(0, 4 * 5 * 6).reshape({4, 5, 6});
  Tensor e = to_ember(x);
  auto same = [&](const Tensor& t, const XA& want, const std::string& what) {
    XA w = want;
    CHECK_MESSAGE(shape_of(t) == shape_of(w), what << ": shape " << str(shape_of(t)) << " vs " << str(shape_of(w)));
    CHECK_MESSAGE(close(values(t), w, 0), what);
  };
  same(e.index({1}), sv(x, 1), "[1]");
  same(e.index({Slice(1, 3)}), sv(x, xt::range(1, 3)), "[1:3]");
  same(e.index({Slice(), 2}), sv(x, xt::all(), 2), "[:, 2]");
  same(e.index({Slice(), Slice(0, 5, 2), -1}), sv(x, xt::all(), xt::range(0, 5, 2), 5), "[:, ::2, -1]");
  same(e.index({Ellipsis, 3}), sv(x, xt::ellipsis(), 3), "[..., 3]");
  same(e.index({None, 2}), sv(x, xt::newaxis(), 2), "[None, 2]");
  same(e.index({Slice(1), None, Ellipsis, Slice(4, 1, 1)}),
       sv(x, xt::range(1, 4), xt::newaxis(), xt::ellipsis(), xt::range(4, 1)), "[1:, None, ..., 4:1]");
  same(e.index({Slice(-3, -1), Ellipsis, None}), sv(x, xt::range(1, 3), xt::ellipsis(), xt::newaxis()),
       "[-3:-1, ..., None]");
  same(e.index({Slice(0, 100, 3), 0, Slice(-100, 100, 4)}), sv(x, xt::range(0, 4, 3), 0, xt::range(0, 6, 4)),
       "[0:100:3, 0, -100:100:4]");
  same(e.index({2, 1, 5}), sv(x, 2, 1, 5), "[2, 1, 5]");

  // Random slices against xtensor.
  std::mt19937_64 g(7);
  auto ri = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); };
  for (int iter = 0; iter < 200; ++iter) {
    int64_t s0 = ri(-6, 6), e0 = ri(-6, 6), st0 = ri(1, 3);
    int64_t s2 = ri(-8, 8), e2 = ri(-8, 8), st2 = ri(1, 4), i1 = ri(-5, 4);
    auto norm = [](int64_t v, int64_t n) { return std::min(std::max<int64_t>(v < 0 ? v + n : v, 0), n); };
    int64_t a0 = norm(s0, 4), b0 = norm(e0, 4), a2 = norm(s2, 6), b2 = norm(e2, 6);
    if (b0 < a0) b0 = a0;
    if (b2 < a2) b2 = a2;
    Tensor t = e.index({Slice(s0, e0, st0), i1, None, Slice(s2, e2, st2)});
    XA w = sv(x, xt::range(a0, b0, st0), i1 < 0 ? i1 + 5 : i1, xt::newaxis(), xt::range(a2, b2, st2));
    std::string ctx = std::to_string(s0) + ":" + std::to_string(e0) + ":" + std::to_string(st0) + ", " +
                      std::to_string(i1) + ", None, " + std::to_string(s2) + ":" + std::to_string(e2) + ":" +
                      std::to_string(st2);
    XA we = w;
    CHECK_MESSAGE(shape_of(t) == shape_of(we), ctx);
    if (shape_of(t) == shape_of(we)) CHECK_MESSAGE(close(values(t), we, 0), ctx);
  }
}

}  // namespace test_xtensor_ref
