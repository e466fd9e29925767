// Shape and indexing ops, checked against hand-computed results (PyTorch semantics).

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace test_shape_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
template <class T = float>
std::vector<T> vals(const Tensor& t);
std::vector<float> vals_of(const Tensor& t) { return vals<float>(t); }
template <class T>
std::vector<T> vals(const Tensor& t) {
  Tensor c = t.to(dtype_of_v<T>).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}
using I = std::vector<int64_t>;
using F = std::vector<float>;
}  // namespace

TEST_CASE("cat, stack, split, chunk, unbind") {
  Tensor a = arange(6).view({2, 3}).to(DType::F32), b = arange(3).view({1, 3}).to(DType::F32);
  Tensor c = cat(std::vector<Tensor>{a, b}, 0);
  CHECK(c.sizes() == Shape{3, 3});
  CHECK(vals(c) == F{0, 1, 2, 3, 4, 5, 0, 1, 2});
  CHECK(cat(std::vector<Tensor>{a, a}, 1).sizes() == Shape{2, 6});
  CHECK_THROWS_AS(cat(std::vector<Tensor>{a, b.t()}, 0), Error);
  CHECK(cat(std::vector<Tensor>{a, a.to(DType::F64)}, 0).dtype() == DType::F64);
  CHECK(stack(std::vector<Tensor>{a, a}, 1).sizes() == Shape{2, 2, 3});
  CHECK(hstack(std::vector<Tensor>{a, a}).sizes() == Shape{2, 6});
  CHECK(vstack(std::vector<Tensor>{arange(3), arange(3)}).sizes() == Shape{2, 3});
  auto parts = split(arange(7), 3);
  CHECK(parts.size() == 3);
  CHECK(parts[2].numel() == 1);
  auto sized = split(arange(7), std::vector<int64_t>{2, 5});
  CHECK(sized[1].numel() == 5);
  CHECK_THROWS_AS(split(arange(7), std::vector<int64_t>{2, 2}), Error);
  CHECK(chunk(arange(10), 3).size() == 3);
  CHECK(unbind(a, 1).size() == 3);
}

TEST_CASE("flip, roll, repeat, tile, repeat_interleave") {
  Tensor x = arange(6).view({2, 3});
  CHECK(vals<int64_t>(flip(x, {1})) == I{2, 1, 0, 5, 4, 3});
  CHECK(vals<int64_t>(flip(x, {0, 1})) == I{5, 4, 3, 2, 1, 0});
  CHECK(vals<int64_t>(roll(arange(5), 2)) == I{3, 4, 0, 1, 2});
  CHECK(vals<int64_t>(roll(x, -1, 1)) == I{1, 2, 0, 4, 5, 3});
  CHECK(vals<int64_t>(repeat(tensor({1, 2}), {2, 2})) == I{1, 2, 1, 2, 1, 2, 1, 2});
  CHECK(repeat(x, {2, 1, 1}).sizes() == Shape{2, 2, 3});
  CHECK(tile(x, {2}).sizes() == Shape{2, 6});
  CHECK(vals<int64_t>(repeat_interleave(tensor({1, 2}), 2)) == I{1, 1, 2, 2});
}

TEST_CASE("pad modes") {
  Tensor x = arange(3).to(DType::F32).view({1, 3});
  CHECK(vals(pad(x, {1, 2})) == F{0, 0, 1, 2, 0, 0});
  CHECK(vals(pad(x, {1, 1}, "constant", 9)) == F{9, 0, 1, 2, 9});
  CHECK(vals(pad(x, {2, 2}, "reflect")) == F{2, 1, 0, 1, 2, 1, 0});
  CHECK(vals(pad(x, {2, 1}, "replicate")) == F{0, 0, 0, 1, 2, 2});
  CHECK(vals(pad(x, {1, 2}, "circular")) == F{2, 0, 1, 2, 0, 1});
  CHECK(vals(pad(x, {-1, 0})) == F{1, 2});
  CHECK_THROWS_AS(pad(x, {3, 0}, "reflect"), Error);
  CHECK_THROWS_AS(pad(x, {1}), Error);
}

TEST_CASE("gather, scatter, scatter_add, scatter_reduce") {
  Tensor x = tensor({{1.f, 2.f}, {3.f, 4.f}});
  Tensor idx = tensor({{0, 0}, {1, 0}});
  CHECK(vals(gather(x, 1, idx)) == F{1, 1, 4, 3});
  CHECK_THROWS_AS(gather(x, 1, tensor({{0, 2}, {0, 0}})), Error);
  Tensor z = zeros({2, 3});
  Tensor src = tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  Tensor s = scatter(z, 1, tensor({{2, 1, 0}, {0, 1, 2}}), src);
  CHECK(vals(s) == F{3, 2, 1, 4, 5, 6});
  Tensor sa = scatter_add(zeros({3}), 0, tensor({0, 1, 0, 2}), tensor({1.f, 2.f, 3.f, 4.f}));
  CHECK(vals(sa) == F{4, 2, 4});
  Tensor sm = scatter_reduce(ones({3}), 0, tensor({0, 0, 2}), tensor({2.f, 4.f, 6.f}), "mean");
  CHECK(vals(sm) == F{7.f / 3, 1, 3.5f});
  Tensor sx = scatter_reduce(zeros({2}), 0, tensor({0, 0}), tensor({-2.f, -1.f}), "amax", false);
  CHECK(vals(sx) == F{-1, 0});
  CHECK(vals(scatter(zeros({3}), 0, tensor({1}), 5.0)) == F{0, 5, 0});
  // A scalar src does not lift the shape check: index rows beyond the input's are refused.
  CHECK_THROWS_AS(scatter(zeros({2, 2}), 0, zeros({1, 5}, DType::I64), 1.0), Error);
  CHECK_THROWS_AS(scatter_add(zeros({2, 2}), 1, zeros({3, 1}, DType::I64), full({}, 1.f)), Error);
  // With include_self every write combines with the current value (no per-position counts).
  Tensor base = tensor({1.f, 5.f, -1.f});
  CHECK(vals(scatter_reduce(base, 0, tensor({0, 0, 2}), tensor({2.f, 4.f, 6.f}), "sum")) == F{7, 5, 5});
  CHECK(vals(scatter_reduce(base, 0, tensor({0, 0, 2}), tensor({2.f, 4.f, 6.f}), "prod")) == F{8, 5, -6});
  CHECK(vals(scatter_reduce(base, 0, tensor({0, 0, 2}), tensor({2.f, 4.f, -6.f}), "amax")) == F{4, 5, -1});
  CHECK(vals(scatter_reduce(base, 0, tensor({0, 0, 2}), tensor({2.f, 4.f, -6.f}), "amin")) == F{1, 5, -6});
  CHECK(vals(scatter_reduce(base, 0, tensor({0, 0, 2}), tensor({2.f, 4.f, 6.f}), "sum", false)) == F{6, 5, 6});
}

TEST_CASE("scatter_reduce amax/amin: a NaN result's gradient goes to the NaN elements") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (bool self : {true, false}) {
    for (const char* reduce : {"amax", "amin"}) {
      CAPTURE(self);
      CAPTURE(reduce);
      Tensor x = tensor<double>({1, 2}).requires_grad_();
      Tensor src = tensor<double>({nan, 3, 4}).requires_grad_();
      Tensor y = scatter_reduce(x, 0, tensor<int64_t>({0, 0, 1}), src, reduce, self);
      CHECK(std::isnan(y[0].item<double>()));
      (y * tensor<double>({10, 20})).sum().backward();
      // Group 0 (x[0] = 1, NaN, 3): all to the NaN. Group 1 (x[1] = 2, 4): the extreme one.
      const bool x1_wins = self && std::string(reduce) == "amin";
      CHECK(x.grad()[0].item<double>() == 0);
      CHECK(x.grad()[1].item<double>() == (x1_wins ? 20 : 0));
      CHECK(src.grad()[0].item<double>() == 10);
      CHECK(src.grad()[1].item<double>() == 0);
      CHECK(src.grad()[2].item<double>() == (x1_wins ? 0 : 20));
    }
  }
}

TEST_CASE("scatter_reduce prod: a zero's gradient with another zero in its group is 0, NaN beside an infinity") {
  const double inf = std::numeric_limits<double>::infinity();
  for (double x0 : {2.0, inf}) {
    CAPTURE(x0);
    Tensor x = tensor<double>({x0}).requires_grad_();
    Tensor src = tensor<double>({0, 0, 3}).requires_grad_();
    scatter_reduce(x, 0, tensor<int64_t>({0, 0, 0}), src, "prod").sum().backward();
    for (int64_t k = 0; k < 2; ++k) {
      const double g = src.grad()[k].item<double>();
      if (std::isinf(x0)) {
        CHECK(std::isnan(g));
      } else {
        CHECK(g == 0);
        CHECK(!std::signbit(g));
      }
    }
  }
}

TEST_CASE("masked_fill keeps integer tensors exact (the value is made an element first)") {
  // Through f32, 2^31 - 1 rounds to 2^31 and 2^53 + 1 to 2^53.
  Tensor i32 = tensor<int64_t>({2147483647, -2147483647, 7}).to(DType::I32);
  Tensor mask = tensor<int64_t>({0, 0, 1}).ne(0);
  for (Scalar v : {Scalar(3.0), Scalar(int64_t{3})}) {
    Tensor r = i32.masked_fill(mask, v);
    CHECK(r.dtype() == DType::I32);
    CHECK(r[0].item<int32_t>() == 2147483647);
    CHECK(r[1].item<int32_t>() == -2147483647);
    CHECK(r[2].item<int32_t>() == 3);
  }
  Tensor i64 = tensor<int64_t>({(int64_t{1} << 53) + 1, 5});
  CHECK(i64.masked_fill(tensor<int64_t>({0, 1}).ne(0), 2.0)[0].item<int64_t>() == (int64_t{1} << 53) + 1);
  CHECK(i32.masked_fill(mask, 2.5)[2].item<int32_t>() == 2);  // truncated, as PyTorch
  CHECK_THROWS_AS(i32.masked_fill(mask, 3e9), Error);          // no i32 value
}

// gather and the count-free scatters walk rows of the index's last dim (a typed loop per row,
// in parallel when d is the last dim). Checked against plain loops over positions on every
// dim, with a strided input, an index smaller than the input, both index dtypes and a scalar
// src; a bad index (too large, or negative: PyTorch refuses those too) throws naming it,
// whichever row it sits in.
TEST_CASE("gather and scatter along every dim against plain loops") {
  manual_seed(11);
  const Shape xs{4, 5, 6}, is{3, 4, 5};
  auto at = [](const Shape& s, int64_t a, int64_t b, int64_t c) { return (a * s[1] + b) * s[2] + c; };
  Tensor x = randn(xs);
  Tensor xt = x.permute({2, 1, 0}).contiguous().permute({2, 1, 0});  // same values, strided
  const std::vector<float> xv = vals(x);
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t size = xs[static_cast<size_t>(d)];
    Tensor idx = randint(0, size, is);
    const std::vector<int64_t> iv = vals<int64_t>(idx);
    std::vector<float> want(static_cast<size_t>(idx.numel()));
    for (int64_t a = 0; a < is[0]; ++a)
      for (int64_t b = 0; b < is[1]; ++b)
        for (int64_t c = 0; c < is[2]; ++c) {
          int64_t p[3] = {a, b, c};
          p[d] = iv[static_cast<size_t>(at(is, a, b, c))];
          want[static_cast<size_t>(at(is, a, b, c))] = xv[static_cast<size_t>(at(xs, p[0], p[1], p[2]))];
        }
    CHECK(vals(gather(x, d, idx)) == want);
    CHECK(vals(gather(xt, d, idx)) == want);
    CHECK(vals(gather(x, d, idx.to(DType::I32))) == want);

    Tensor src = randn(is);
    const std::vector<float> sv = vals(src);
    for (const char* red : {"none", "sum", "prod", "amax", "amin"}) {
      std::vector<float> ref = xv;
      for (int64_t a = 0; a < is[0]; ++a)
        for (int64_t b = 0; b < is[1]; ++b)
          for (int64_t c = 0; c < is[2]; ++c) {
            int64_t p[3] = {a, b, c};
            p[d] = iv[static_cast<size_t>(at(is, a, b, c))];
            float& o = ref[static_cast<size_t>(at(xs, p[0], p[1], p[2]))];
            const float v = sv[static_cast<size_t>(at(is, a, b, c))];
            const std::string r = red;
            o = r == "none" ? v : r == "sum" ? o + v : r == "prod" ? o * v : r == "amax" ? std::max(o, v) : std::min(o, v);
          }
      Tensor got = std::string(red) == "none" ? scatter(x, d, idx, src) : scatter_reduce(x, d, idx, src, red);
      CHECK_MESSAGE(vals(got) == ref, "dim ", d, " reduce ", red);
      if (std::string(red) == "sum") CHECK(vals(scatter_add(xt, d, idx, src)) == ref);
    }
    std::vector<float> filled = xv;
    for (int64_t k = 0; k < idx.numel(); ++k) {
      const int64_t a = k / (is[1] * is[2]), b = k / is[2] % is[1], c = k % is[2];
      int64_t p[3] = {a, b, c};
      p[d] = iv[static_cast<size_t>(k)];
      filled[static_cast<size_t>(at(xs, p[0], p[1], p[2]))] = 2.5f;
    }
    CHECK(vals(scatter(x, d, idx, 2.5)) == filled);

    // One bad index in the last row: the error names it, and x is untouched.
    for (const int64_t wrong : {size + 3, int64_t{-1}}) {
      std::vector<int64_t> bad = iv;
      bad.back() = wrong;
      Tensor bidx = from_blob(bad.data(), is, DType::I64).clone();
      const std::string says = "index " + std::to_string(wrong) + " is out of bounds";
      CHECK_THROWS_WITH_AS(gather(x, d, bidx), doctest::Contains(says.c_str()), Error);
      CHECK_THROWS_WITH_AS(scatter(x, d, bidx, src), doctest::Contains(says.c_str()), Error);
      CHECK_THROWS_WITH_AS(scatter_add(x, d, bidx, src), doctest::Contains(says.c_str()), Error);
      CHECK_THROWS_WITH_AS(scatter_reduce(x, d, bidx, src, "mean"), doctest::Contains(says.c_str()), Error);
      CHECK(vals(x) == xv);
    }
  }
}

TEST_CASE("index_select, index_add, index_copy, index_put, advanced index") {
  Tensor x = arange(6).view({3, 2}).to(DType::F32);
  CHECK(vals(index_select(x, 0, tensor({2, 0}))) == F{4, 5, 0, 1});
  CHECK_THROWS_AS(index_select(x, 0, tensor({3})), Error);
  CHECK_THROWS_AS(index_select(x, 0, tensor({0.5f})), Error);
  // Whole rows of a contiguous input are copied row by row; a transposed input takes the
  // strided path; empty rows and an empty index work.
  CHECK(vals(index_select(x.t(), 0, tensor({1, 1, 0}))) == F{1, 3, 5, 1, 3, 5, 0, 2, 4});
  CHECK(index_select(zeros({3, 0}), 0, tensor({2, 1})).sizes() == Shape{2, 0});
  CHECK(index_select(x, 0, empty({0}, DType::I64)).sizes() == Shape{0, 2});
  CHECK_THROWS_AS(index_select(x, 0, tensor({-1})), Error);
  CHECK(vals(index_add(zeros({3}), 0, tensor({0, 0, 2}), tensor({1.f, 2.f, 3.f}))) == F{3, 0, 3});
  // Rows (an embedding's backward: contiguous rows added whole) equal the strided path's sums.
  Tensor rows = arange(12).view({4, 3}).to(DType::F32), table = ones({3, 3});
  Tensor by_rows = index_add(table, 0, tensor({2, 0, 2, 1}), rows, 0.5);
  CHECK(vals(by_rows) == F{2.5f, 3, 3.5f, 5.5f, 6, 6.5f, 4, 5, 6});
  Tensor strided = index_add(table, 0, tensor({2, 0, 2, 1}), rows.t().contiguous().t(), 0.5);  // column-major src
  CHECK(vals(strided) == vals(by_rows));
  CHECK_THROWS_AS(index_add(table, 0, tensor({3, 0, 0, 0}), rows), Error);
  // Negative indices are refused, as by PyTorch (a -1 meant as padding must not reach the
  // last row): the f32 row-block path (a strided src is made contiguous for it), the
  // general path (i64) and index_copy.
  CHECK_THROWS_WITH_AS(index_add(table, 0, tensor({0, -1, 0, 0}), rows), doctest::Contains("index -1 is out of bounds"),
                       Error);
  CHECK_THROWS_AS(index_add(table, 0, tensor({0, -1, 0, 0}), rows.t().contiguous().t()), Error);
  CHECK_THROWS_AS(index_add(table.to(DType::I64), 0, tensor({0, -1, 0, 0}), rows.to(DType::I64)), Error);
  CHECK_THROWS_AS(index_copy(zeros({3}), 0, tensor({-1}), tensor({1.f})), Error);
  CHECK(vals(table) == F{1, 1, 1, 1, 1, 1, 1, 1, 1});  // never written, even when refused
  CHECK(vals(index_copy(zeros({3}), 0, tensor({2, 0}), tensor({1.f, 2.f}))) == F{2, 0, 1});
  Tensor p = index_put(zeros({3}), std::vector<Tensor>{tensor({0, 0, 2})}, tensor({1.f, 2.f, 3.f}), true);
  CHECK(vals(p) == F{3, 0, 3});
  Tensor m = index_put(x, std::vector<Tensor>{x.gt(2.5)}, full({}, -1.f));
  CHECK(vals(m) == F{0, 1, 2, -1, -1, -1});
  CHECK(vals(index(x, std::vector<Tensor>{tensor({2, 0}), tensor({1, 0})})) == F{5, 0});
  CHECK(index(x, std::vector<Tensor>{tensor({2, 0})}).sizes() == Shape{2, 2});
}

// Contiguous inputs take blocks around the indexed dim (memcpy per block, a typed gather for
// the last dim); the results must match a transposed (strided) input's, which takes views.
// index_add along the last dim adds runs of equal indices in a register: same order, so the
// same bits as element-by-element sums.
TEST_CASE("index_select and index_add along any dim of contiguous tensors, every element size") {
  manual_seed(5);
  Tensor idx = tensor({3, 0, 3, 3, 1, 3, 2});
  Tensor sel = tensor({3, 0, 3, 3, 1, 2});
  for (DType dt : {DType::F32, DType::I64, DType::U8, DType::F16}) {
    Tensor x = randint(0, 100, {4, 5, 6}).to(dt);
    Tensor xs = x.permute({2, 1, 0}).contiguous().permute({2, 1, 0});  // same values, strided
    for (int64_t d : {0, 1, 2}) {
      Tensor want = index_select(xs, d, sel);
      CHECK(index_select(x, d, sel).sizes() == want.sizes());
      CHECK((index_select(x, d, sel).to(DType::F64) - want.to(DType::F64)).abs().sum().item<double>() == 0);
    }
  }
  Tensor base = randn({3, 4, 4}), src = randn({3, 4, 7});
  for (double alpha : {1.0, 0.5}) {
    Tensor got = index_add(base, 2, idx, src, alpha);
    std::vector<float> want = vals(base);
    std::vector<float> sv = vals(src);
    const int64_t ix[] = {3, 0, 3, 3, 1, 3, 2};
    for (int64_t o = 0; o < 12; ++o)
      for (int64_t k = 0; k < 7; ++k) {
        float& dst = want[static_cast<size_t>(o * 4 + ix[k])];
        dst = dst + (alpha == 1.0 ? sv[static_cast<size_t>(o * 7 + k)] : sv[static_cast<size_t>(o * 7 + k)] * 0.5f);
      }
    CHECK(vals(got) == want);
    CHECK(vals(index_add(base, 2, idx, src.permute({2, 1, 0}).contiguous().permute({2, 1, 0}), alpha)) == want);
  }
}

TEST_CASE("masked ops, nonzero, where") {
  Tensor x = tensor({{1.f, -2.f}, {-3.f, 4.f}});
  CHECK(vals(masked_select(x, x.gt(0))) == F{1, 4});
  CHECK(vals(masked_fill(x, x.lt(0), 0.0)) == F{1, 0, 0, 4});
  CHECK(vals<int64_t>(nonzero(x.gt(0))) == I{0, 0, 1, 1});
  CHECK(nonzero(x.gt(0)).sizes() == Shape{2, 2});
  CHECK(vals(where(x.gt(0), x, 0.0)) == F{1, 0, 0, 4});
}

TEST_CASE("sort, argsort, topk, kthvalue, unique") {
  Tensor x = tensor({3.f, 1.f, NAN, 2.f, 1.f});
  auto [v, i] = sort(x);
  CHECK(vals<int64_t>(i) == I{1, 4, 3, 0, 2});  // stable, NaN last
  auto [vd, id] = sort(x, -1, true);
  CHECK(vals<int64_t>(id) == I{2, 0, 3, 1, 4});
  auto [tv, ti] = topk(tensor({1.f, 5.f, 3.f, 5.f}), 2);
  CHECK(vals(tv) == F{5, 5});
  CHECK(vals<int64_t>(ti) == I{1, 3});
  auto [kv, ki] = kthvalue(tensor({{3.f, 1.f, 2.f}}), 2, 1);
  CHECK(vals(kv) == F{2});
  CHECK(vals<int64_t>(ki) == I{2});
  auto [u, inv, cnt] = unique(tensor({2, 1, 2, 3}), true, true);
  CHECK(vals<int64_t>(u) == I{1, 2, 3});
  CHECK(vals<int64_t>(inv) == I{1, 0, 1, 2});
  CHECK(vals<int64_t>(cnt) == I{1, 2, 1});
  CHECK_THROWS_AS(topk(x, 6), Error);
}

// sort and topk sort (value, position) pairs per row, rows in parallel: checked against
// std::stable_sort of each row (NaN largest) along both dims of a strided input with many
// ties, NaN and both zeros; topk is the sorted prefix for every k (ties: lower index first).
TEST_CASE("sort and topk along either dim match a stable sort of each row") {
  manual_seed(9);
  Tensor base = randint(-4, 5, {37, 300}).to(DType::F32) * 0.5;
  std::vector<float> bv = vals(base);
  for (size_t i = 0; i < bv.size(); i += 23) bv[i] = NAN;
  for (size_t i = 5; i < bv.size(); i += 31) bv[i] = -0.0f;
  Tensor x = from_blob(bv.data(), {37, 300}, DType::F32).clone();
  x = x.t().contiguous().t();  // strided: columns contiguous
  auto less = [](float a, float b) { return std::isnan(b) ? !std::isnan(a) : (!std::isnan(a) && a < b); };
  for (int64_t d : {0, 1}) {
    const int64_t len = x.size(d), other = x.size(1 - d);
    for (bool desc : {false, true}) {
      auto [sv, si] = sort(x, d, desc);
      auto [tv, ti] = topk(x, 7, d, desc);
      std::vector<int64_t> got = vals<int64_t>(si.transpose(d, 1).contiguous());
      std::vector<int64_t> got_k = vals<int64_t>(ti.transpose(d, 1).contiguous());
      for (int64_t r = 0; r < other; ++r) {
        std::vector<int64_t> want(static_cast<size_t>(len));
        std::iota(want.begin(), want.end(), 0);
        auto at = [&](int64_t i) { return d == 1 ? bv[static_cast<size_t>(r * 300 + i)] : bv[static_cast<size_t>(i * 300 + r)]; };
        std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) { return desc ? less(at(b), at(a)) : less(at(a), at(b)); });
        CHECK_MESSAGE(std::equal(want.begin(), want.end(), got.begin() + r * len), "dim ", d, " desc ", desc, " row ", r);
        CHECK_MESSAGE(std::equal(want.begin(), want.begin() + 7, got_k.begin() + r * 7), "topk dim ", d, " row ", r);
      }
      CHECK(vals(sv).size() == static_cast<size_t>(37 * 300));
    }
  }
  for (int64_t k : {0, 1, 300}) CHECK(topk(x, k, 1).first.size(1) == k);
  CHECK(sort(zeros({3, 0}), 1).first.sizes() == Shape{3, 0});
}

// Advanced indexing copies one block of trailing dims per index position (a memcpy when they
// are contiguous in x, a strided copy otherwise); nonzero and masked_select count first and
// fill in one pass. Checked against index_select, per-element loops and a strided twin.
TEST_CASE("advanced indexing, nonzero and masked_select against plain loops") {
  manual_seed(13);
  Tensor x = randn({7, 5, 3});
  Tensor xs = x.permute({2, 1, 0}).contiguous().permute({2, 1, 0});  // same values, strided
  Tensor rows = tensor<int64_t>({6, 0, -1, 3, 3});
  for (const Tensor& src : {x, xs}) {
    Tensor want = index_select(x, 0, tensor<int64_t>({6, 0, 6, 3, 3}));
    CHECK((index(src, std::vector<Tensor>{rows}) - want).abs().max().item<double>() == 0);
    CHECK((index(src, std::vector<Tensor>{rows.to(DType::I32)}) - want).abs().max().item<double>() == 0);
    // Two index tensors broadcast against each other: picks (i, j) pairs, trailing dim kept.
    Tensor i = tensor<int64_t>({{1}, {4}}), j = tensor<int64_t>({0, 2, 4});
    Tensor pair = index(src, std::vector<Tensor>{i, j});
    CHECK(pair.sizes() == Shape{2, 3, 3});
    std::vector<float> xv = vals(x), pv = vals(pair);
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t c = 0; c < 3; ++c)
          CHECK(pv[static_cast<size_t>((a * 3 + b) * 3 + c)] == xv[static_cast<size_t>(((a == 0 ? 1 : 4) * 5 + b * 2) * 3 + c)]);
    CHECK_THROWS_AS(index(src, std::vector<Tensor>{tensor<int64_t>({7})}), Error);
  }
  // A bool mask over all dims: the selected elements in row-major order, as masked_select.
  Tensor m = x.gt(0.3);
  std::vector<float> xv = vals(x), sel;
  std::vector<bool> mv;
  for (float v : xv) mv.push_back(v > 0.3f);
  std::vector<int64_t> coords;
  for (size_t k = 0; k < xv.size(); ++k)
    if (mv[k]) sel.push_back(xv[k]), coords.insert(coords.end(), {static_cast<int64_t>(k / 15), static_cast<int64_t>(k / 3 % 5), static_cast<int64_t>(k % 3)});
  CHECK(vals(index(x, std::vector<Tensor>{m})) == sel);
  CHECK(vals(index(xs, std::vector<Tensor>{m})) == sel);
  CHECK(vals(masked_select(x, m)) == sel);
  CHECK(vals(masked_select(xs, m)) == sel);
  CHECK(vals<int64_t>(nonzero(m)) == coords);
  CHECK(vals<int64_t>(nonzero(m.permute({2, 1, 0}).contiguous().permute({2, 1, 0}))) == coords);
  CHECK(nonzero(zeros({4, 0, 2})).sizes() == Shape{0, 3});
  CHECK_THROWS_AS(index(zeros({3, 0}), std::vector<Tensor>{tensor<int64_t>({5})}), Error);  // empty rows, bad index
  CHECK(index(zeros({3, 0}), std::vector<Tensor>{tensor<int64_t>({2, 0})}).sizes() == Shape{2, 0});
  CHECK(nonzero(zeros({5})).sizes() == Shape{0, 1});
  CHECK(masked_select(x, zeros({7, 5, 3}, DType::Bool)).numel() == 0);
  CHECK(vals(masked_select(x, ones({3}, DType::Bool).lt(0).logical_not())).size() == xv.size());  // broadcast mask
}

// nonzero counts and writes blocks of rows in parallel, each block starting its coordinates
// from its first row's index: blocks that start inside a dim (655 rows of 50 per block here,
// against dims of 700), rows with and without nonzeros, and a 1-d input cut into rows, against
// a plain loop, at one and two threads.
TEST_CASE("nonzero and masked_select over many blocks match a plain loop") {
  manual_seed(21);
  Tensor x = randn({3, 700, 50}).gt(0.8);
  x.select(1, 5).zero_();  // whole rows of zeros
  for (int64_t at : {32768, 65536, 98304}) x.view({-1}).narrow(0, at, 1).fill_(1.0);  // masked_select's block starts
  std::vector<int64_t> want;
  std::vector<float> xv = vals(x.to(DType::F32));
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 700; ++b)
      for (int64_t c = 0; c < 50; ++c)
        if (xv[static_cast<size_t>((a * 700 + b) * 50 + c)] != 0) want.insert(want.end(), {a, b, c});
  const int threads = get_num_threads();
  for (int t : {1, 2}) {
    set_num_threads(t);
    Tensor got = nonzero(x);
    CHECK(got.sizes() == Shape{static_cast<int64_t>(want.size() / 3), 3});
    CHECK(vals<int64_t>(got) == want);
    CHECK(vals<int64_t>(nonzero(x.to(DType::F64).reshape({-1}))).size() == want.size() / 3);
    // 1-d: rows of 4096 (the last one short), in blocks of 8 rows.
    Tensor flat = randn({100003}).gt(0.5);
    std::vector<int64_t> want_flat;
    std::vector<float> fv = vals(flat.to(DType::F32));
    for (size_t i = 0; i < fv.size(); ++i)
      if (fv[i] != 0) want_flat.push_back(static_cast<int64_t>(i));
    CHECK(vals<int64_t>(nonzero(flat)) == want_flat);
    // masked_select: blocks of 32768 elements, counted and copied in parallel.
    Tensor values = randn({3, 700, 50});
    std::vector<float> all = vals(values), kept;
    for (size_t i = 0; i < all.size(); ++i)
      if (xv[i] != 0) kept.push_back(all[i]);
    CHECK(vals(masked_select(values, x)) == kept);
  }
  set_num_threads(threads);
}

// index_put walks precomputed offsets: rows (1-d blocks, any value step, a broadcast
// gradient's 0 included), flat blocks and strided blocks, accumulating repeated indices in
// position order. Checked against per-position loops.
TEST_CASE("index_put with rows, blocks, broadcast values and repeated indices") {
  manual_seed(19);
  Tensor base = randn({6, 4});
  Tensor rows = tensor<int64_t>({5, 1, 5, -6});  // -6 is row 0
  const int64_t at[] = {5, 1, 5, 0};
  Tensor v = randn({4, 4});
  for (bool acc : {false, true}) {
    for (const Tensor& vals : {v, v.t().contiguous().t(), randn({4}).expand({4, 4}), full({}, 2.5f)}) {
      std::vector<float> want = vals_of(base), vv = vals_of(vals.expand({4, 4}).contiguous());
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t j = 0; j < 4; ++j) {
          float& d = want[static_cast<size_t>(at[k] * 4 + j)];
          d = acc ? d + vv[static_cast<size_t>(k * 4 + j)] : vv[static_cast<size_t>(k * 4 + j)];
        }
      CHECK(vals_of(index_put(base, std::vector<Tensor>{rows}, vals, acc)) == want);
    }
  }
  // Blocks of two trailing dims, contiguous and strided (a permuted base).
  Tensor cube = randn({3, 4, 5}), cv = randn({2, 4, 5});
  Tensor cs = cube.permute({0, 2, 1}).contiguous().permute({0, 2, 1});
  Tensor want = index_put(cube, std::vector<Tensor>{tensor<int64_t>({2, 2})}, cv, true);
  std::vector<float> w = vals_of(cube), cvv = vals_of(cv);
  for (int64_t k = 0; k < 2; ++k)
    for (int64_t j = 0; j < 20; ++j) w[static_cast<size_t>(40 + j)] += cvv[static_cast<size_t>(k * 20 + j)];
  CHECK(vals_of(want) == w);
  CHECK(vals_of(index_put(cs, std::vector<Tensor>{tensor<int64_t>({2, 2})}, cv.permute({0, 2, 1}).contiguous().permute({0, 2, 1}), true)) == w);
}

// fill: zero bits take memset, other values whole vectors and a tail; -0.0 is not zero bits.
TEST_CASE("full and zeros write every element, with the value's exact bits") {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I32, DType::U8}) {
    for (int64_t n : {1, 7, 8, 37, 1000}) {
      CHECK(zeros({n}, dt).abs().sum().item<double>() == 0);
      CHECK(full({n}, 3.0, dt).sum().item<double>() == 3.0 * static_cast<double>(n));
    }
  }
  Tensor nz = full({37}, -0.0);
  for (float f : vals_of(nz)) CHECK(std::signbit(f));
  Tensor strided = zeros({6, 9}).t();
  strided.fill_(1.5);
  CHECK(strided.sum().item<double>() == 1.5 * 54);
}

TEST_CASE("one_hot, tril, triu, diag, meshgrid") {
  CHECK(vals<int64_t>(one_hot(tensor({0, 2}), 3)) == I{1, 0, 0, 0, 0, 1});
  CHECK_THROWS_AS(one_hot(tensor({3}), 3), Error);
  Tensor m = ones({3, 3});
  CHECK(vals(tril(m)) == F{1, 0, 0, 1, 1, 0, 1, 1, 1});
  CHECK(vals(triu(m, 1)) == F{0, 1, 1, 0, 0, 1, 0, 0, 0});
  // Every offset on a batch of non-square matrices, against the definition j - i <= k.
  Tensor b3 = arange(2 * 4 * 6).view({2, 4, 6}).to(DType::F32) + 1;
  std::vector<float> bv = vals(b3);
  for (int64_t k : {-5, -2, 0, 1, 3, 7}) {
    std::vector<float> lo = bv, up = bv;
    for (int64_t i = 0; i < 48; ++i) {
      const int64_t r = i / 6 % 4, c = i % 6;
      if (c - r > k) lo[static_cast<size_t>(i)] = 0;
      if (c - r < k) up[static_cast<size_t>(i)] = 0;
    }
    CHECK(vals(tril(b3, k)) == lo);
    CHECK(vals(triu(b3, k)) == up);
  }
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  CHECK(vals(tril(b3, big)) == bv);  // no wrap-around of row + k
  CHECK(vals(triu(b3, small)) == bv);
  CHECK(tril(b3, small).abs().sum().item<double>() == 0);
  CHECK(triu(b3, big).abs().sum().item<double>() == 0);
  CHECK(vals(diag(tensor({1.f, 2.f}))) == F{1, 0, 0, 2});
  CHECK(vals(diag(tensor({1.f, 2.f}), 1)) == F{0, 1, 0, 0, 0, 2, 0, 0, 0});
  CHECK(vals(diag(arange(9).view({3, 3}).to(DType::F32))) == F{0, 4, 8});
  auto g = meshgrid(std::vector<Tensor>{arange(2), arange(3)});
  CHECK(g[0].sizes() == Shape{2, 3});
  CHECK(vals<int64_t>(g[1]) == I{0, 1, 2, 0, 1, 2});
  auto gx = meshgrid(std::vector<Tensor>{arange(2), arange(3)}, "xy");
  CHECK(gx[0].sizes() == Shape{3, 2});
}

TEST_CASE("einsum matches explicit products") {
  Tensor a = randn({3, 4}), b = randn({4, 5}), v = randn({4});
  CHECK(einsum("ij,jk->ik", std::vector<Tensor>{a, b}).sub(a.mm(b)).abs().max().item<float>() < 1e-5f);
  CHECK(einsum("ij,jk", std::vector<Tensor>{a, b}).sizes() == Shape{3, 5});  // implicit output
  CHECK(einsum("ij->ji", std::vector<Tensor>{a}).sizes() == Shape{4, 3});
  CHECK(std::abs(einsum("i,i->", std::vector<Tensor>{v, v}).item<float>() - v.dot(v).item<float>()) < 1e-5f);
  Tensor x = randn({2, 3, 4}), y = randn({2, 4, 5});
  CHECK(einsum("bij,bjk->bik", std::vector<Tensor>{x, y}).sub(x.bmm(y)).abs().max().item<float>() < 1e-5f);
  CHECK(einsum("bij,bjk->bki", std::vector<Tensor>{x, y}).sizes() == Shape{2, 5, 3});
  CHECK(einsum("ij->", std::vector<Tensor>{a}).item<float>() == doctest::Approx(a.sum().item<float>()).epsilon(1e-4));
  CHECK(einsum("i,j->ij", std::vector<Tensor>{v, v}).sizes() == Shape{4, 4});
  CHECK_THROWS_AS(einsum("ij,jk->ik", std::vector<Tensor>{a, a}), Error);
}

TEST_CASE("einsum: repeated subscripts take diagonals, an ellipsis stands for the unnamed dims") {
  Tensor m = arange(9, DType::F64).view({3, 3});
  CHECK(einsum("ii->i", {m}).eq(tensor<double>({0, 4, 8})).all().item<bool>());  // the diagonal
  CHECK(einsum("ii", {m}).item<double>() == 12);                                   // the trace (implicit output)
  Tensor t = arange(8, DType::F64).view({2, 2, 2});
  CHECK(einsum("iii->i", {t}).eq(tensor<double>({0, 7})).all().item<bool>());
  CHECK(einsum("bii->b", {t}).eq(tensor<double>({3, 11})).all().item<bool>());  // a batch of traces
  Tensor v = tensor<double>({1, 2, 3});
  CHECK(einsum("ii,i->i", {m, v}).eq(tensor<double>({0, 8, 24})).all().item<bool>());
  CHECK_THROWS_WITH_AS(einsum("ii->i", {randn({2, 3})}), doctest::Contains("repeated"), Error);
  // The ellipsis broadcasts from the right across operands, as PyTorch.
  Tensor a = randn({5, 2, 3}, DType::F64), b = randn({3, 4}, DType::F64), c = randn({7, 1, 3, 4}, DType::F64);
  CHECK(einsum("...ij,...jk->...ik", {a, b}).sub(a.matmul(b)).abs().max().item<double>() < 1e-12);
  CHECK(einsum("...ij,...jk->...ik", {a, c}).sub(a.matmul(c)).abs().max().item<double>() < 1e-12);
  CHECK(einsum("...ij,...jk", {a, c}).sizes() == Shape{7, 5, 2, 4});  // implicit: ellipsis first
  CHECK(einsum("i...->...", {a}).sub(a.sum(0)).abs().max().item<double>() < 1e-12);
  CHECK(einsum("...", {a}).sizes() == a.sizes());
  // An output without the ellipsis sums its dims, as PyTorch.
  CHECK(einsum("...ij,...jk->ik", {a, c}).sub(a.matmul(c).sum({0, 1})).abs().max().item<double>() < 1e-12);
  CHECK_THROWS_AS(einsum("...i.j->ij", {a}), Error);
  CHECK_THROWS_WITH_AS(einsum("ijk...->i", {b}), doctest::Contains("rank"), Error);
}

TEST_CASE("einsum over three and more operands contracts left to right") {
  Tensor a = randn({3, 4}, DType::F64), b = randn({4, 5}, DType::F64), c = randn({5, 2}, DType::F64);
  Tensor d = randn({2, 6}, DType::F64);
  auto close = [](const Tensor& x, const Tensor& y) {
    return x.sizes() == y.sizes() && x.sub(y).abs().max().item<double>() < 1e-12;
  };
  CHECK(close(einsum("ij,jk,kl->il", {a, b, c}), a.mm(b).mm(c)));
  CHECK(close(einsum("ij,jk,kl,lm->mi", {a, b, c, d}), a.mm(b).mm(c).mm(d).t()));
  CHECK(close(einsum("ij,jk,kl", {a, b, c}), a.mm(b).mm(c)));  // implicit output
  Tensor x = randn({2, 3, 4}, DType::F64), y = randn({2, 4, 5}, DType::F64), z = randn({2, 5, 3}, DType::F64);
  CHECK(close(einsum("bij,bjk,bkl->bil", {x, y, z}), x.bmm(y).bmm(z)));
  CHECK(close(einsum("bij,bjk,bki->b", {x, y, z}), x.bmm(y).bmm(z).diagonal(0, 1, 2).sum({1})));  // batched trace
  Tensor u = randn({4}, DType::F64), v = randn({4}, DType::F64), w = randn({4}, DType::F64);
  CHECK(close(einsum("i,i,i->", {u, v, w}), u.mul(v).mul(w).sum()));
  CHECK(close(einsum("i,j,k", {u, v, w.narrow(0, 0, 3)}),
              u.view({4, 1, 1}).mul(v.view({1, 4, 1})).mul(w.narrow(0, 0, 3).view({1, 1, 3}))));
  CHECK(close(einsum("ij,j,k->ik", {a, u, w}), a.mv(u).outer(w)));
  // Broadcasting ellipses and a size-1 subscript across three operands.
  Tensor e = randn({7, 1, 3, 4}, DType::F64), f = randn({5, 4, 2}, DType::F64), g = randn({2, 3}, DType::F64);
  CHECK(close(einsum("...ij,...jk,kl->...il", {e, f, g}), e.matmul(f).matmul(g)));
  // PyTorch 1.13's values on fixed inputs (a size-1 subscript broadcasts; a diagonal).
  Tensor p = arange(6, DType::F64).view({2, 3}).sub(2), q = arange(12, DType::F64).view({3, 4}).div(4);
  Tensor r = tensor<double>({1, -1, 2, 0.5});
  CHECK(close(einsum("ij,jk,k->i", {p, q, r}), tensor<double>({-5.875, 26.75})));
  CHECK(close(einsum("ij,j,j->i", {p, tensor<double>({2}), tensor<double>({1, 0, -1})}), tensor<double>({-4, -4})));
  Tensor m = tensor<double>({{1, 2}, {3, 4}});
  Tensor trace_term = einsum("ii,ij,j->", {m, m, tensor<double>({1, -1})});
  CHECK(trace_term.dim() == 0);
  CHECK(trace_term.item<double>() == -5);
  // Errors name the operands: a size clash, a count mismatch, a rank mismatch.
  CHECK_THROWS_WITH_AS(einsum("ij,jk,kl->il", {a, b, randn({4, 2}, DType::F64)}),
                       doctest::Contains("'k' has size 5 in operand 1 ('jk', shape [4, 5]) but 4 in operand 2 ('kl', shape [4, 2])"),
                       Error);
  // The dims of an ellipsis are named as such, not by the letters that stand for them inside.
  CHECK_THROWS_WITH_AS(einsum("...,...->...", {randn({2}), randn({3})}),
                       doctest::Contains("a dim of '...' has size 2 in operand 0"), Error);
  CHECK_THROWS_WITH_AS(einsum("ij,jk,kl->il", {a, b}), doctest::Contains("names 3 operands but 2 were given"), Error);
  CHECK_THROWS_WITH_AS(einsum("ij,jk,k->il", {a, b, c}), doctest::Contains("operand 2 has rank 2"), Error);
}

TEST_CASE("list ops take a braced list as libtorch's do, with the std::vector form's results") {
  Tensor a = arange(6).view({2, 3}).to(DType::F32), b = arange(3).view({1, 3}).to(DType::F32);
  CHECK(vals(cat({a, b}, 0)) == vals(cat(std::vector<Tensor>{a, b}, 0)));
  CHECK(cat({a, a}, 1).sizes() == Shape{2, 6});
  CHECK(vals(cat({a, b})) == F{0, 1, 2, 3, 4, 5, 0, 1, 2});  // dim 0 by default
  CHECK_THROWS_AS(cat({a, b.t()}, 0), Error);
  CHECK(vals(stack({a, a * 2}, 1)) == vals(stack(std::vector<Tensor>{a, a * 2}, 1)));
  CHECK(stack({a, a}, -1).sizes() == Shape{2, 3, 2});
  CHECK_THROWS_AS(stack({a, b}), Error);
  CHECK(vals(hstack({a, a + 1})) == vals(hstack(std::vector<Tensor>{a, a + 1})));
  CHECK(vstack({arange(3), arange(3) * 2}).sizes() == Shape{2, 3});
  auto g = meshgrid({arange(2), arange(3)}, "xy");
  REQUIRE(g.size() == 2);
  CHECK(g[0].sizes() == Shape{3, 2});
  CHECK(vals(g[1]) == vals(meshgrid(std::vector<Tensor>{arange(2), arange(3)}, "xy")[1]));
  Tensor x = randn({3, 4}), y = randn({4, 5});
  CHECK(einsum("ij,jk->ik", {x, y}).sub(x.mm(y)).abs().max().item<float>() < 1e-5f);
  CHECK(einsum("ij->ji", {x}).sizes() == Shape{4, 3});
  CHECK_THROWS_AS(einsum("ij,jk->ik", {x, x}), Error);
}

TEST_CASE("typed accessors") {
  Tensor t = zeros({2, 3});
  auto acc = t.accessor<float, 2>();
  acc[1][2] = 5.0f;
  CHECK(t.index({1, 2}).item<float>() == 5.0f);
  const Tensor tt = t.t();  // not t.t().accessor(): the accessor would outlive the view's shape
  auto tr = tt.accessor<float, 2>();
  CHECK(tr[2][1] == 5.0f);
  CHECK_THROWS_AS((t.accessor<float, 3>()), Error);
  CHECK_THROWS_AS((t.accessor<double, 2>()), Error);
}

// x.index_put_(tensor indices, values) writes into x itself (no copy of x), with the results of
// the functional index_put; a bad index leaves x untouched.
TEST_CASE("index_put_ with index tensors writes in place") {
  manual_seed(23);
  Tensor buffer = randn({6, 3});
  const Tensor before = buffer.clone();
  const void* storage = buffer.data_ptr<float>();
  Tensor slots = tensor<int64_t>({4, 0, 4}), batch = randn({3, 3});
  for (bool acc : {false, true}) {
    Tensor b = before.clone();
    const void* p = b.data_ptr<float>();
    const uint32_t v0 = b.version();
    b.index_put_({slots}, batch, acc);
    CHECK(b.data_ptr<float>() == p);
    CHECK(b.version() != v0);  // saved copies of b now know it changed
    CHECK(vals_of(b) == vals_of(index_put(before, std::vector<Tensor>{slots}, batch, acc)));
  }
  // Two index tensors (single elements), a bool mask, a number, a strided (transposed) target.
  Tensor rows = tensor<int64_t>({0, 5}), cols = tensor<int64_t>({2, 1});
  buffer.index_put_({rows, cols}, tensor({7.f, 8.f}));
  CHECK(buffer.data_ptr<float>() == storage);
  CHECK(buffer.index({0, 2}).item<float>() == 7.f);
  CHECK(buffer.index({5, 1}).item<float>() == 8.f);
  buffer.index_put_({buffer.lt(0)}, 0.0);
  CHECK(buffer.min().item<float>() >= 0.f);
  Tensor t = before.clone().t();  // [3, 6], non-contiguous
  t.index_put_({tensor<int64_t>({1})}, -1.0);
  CHECK(vals_of(t.contiguous()) == vals_of(index_put(before.t(), std::vector<Tensor>{tensor<int64_t>({1})},
                                                    full({}, -1.f))));
  // Values that are a view of the target are read before any write (x[[1, 2]] = x[0:2]).
  Tensor s = tensor({1.f, 2.f, 3.f});
  s.index_put_({tensor<int64_t>({1, 2})}, s.narrow(0, 0, 2));
  CHECK(vals_of(s) == std::vector<float>{1.f, 1.f, 2.f});
  // Bad input: nothing is written.
  Tensor g = before.clone();
  const uint32_t version = g.version();
  CHECK_THROWS_WITH_AS(g.index_put_({tensor<int64_t>({0, 6})}, 1.0), doctest::Contains("[index_put_]"), Error);
  CHECK(vals_of(g) == vals_of(before));
  CHECK(g.version() == version);  // nothing written: saved copies of g stay valid
  CHECK_THROWS_WITH_AS(g.index_put_({slots}, randn({3, 3}, TensorOptions(DType::F64))),
                       doctest::Contains("[index_put_] values dtype f64"), Error);
  CHECK_THROWS_WITH_AS(g.index_put_({slots}, randn({2, 3})), doctest::Contains("index_put_"), Error);
  Tensor e = zeros({3}).expand({2, 3});
  CHECK_THROWS_WITH_AS(e.index_put_({tensor<int64_t>({0})}, 1.0), doctest::Contains("overlaps itself"), Error);
  CHECK(vals_of(g) == vals_of(before));
}

// Copies whose source is transposed against the destination (x.t().contiguous(), permutes that
// move the last dim) take 8 x 8 tiles, those that keep short contiguous rows step row by row:
// partial tiles, outer dims, every element size, a destination with gaps between rows, and
// tensors split between threads. Checked against a dtype conversion of the same view,
// which walks the elements one by one (another loop).
TEST_CASE("copies of transposed and permuted tensors, tiled, match an element-wise walk") {
  manual_seed(29);
  for (DType t : {DType::U8, DType::F16, DType::F32, DType::I64}) {
    CAPTURE(dtype_name(t));
    const DType other = t == DType::F32 ? DType::F64 : DType::F32;
    auto same = [&](const Tensor& got, const Tensor& view) {
      return got.sizes() == view.sizes() && got.to(other).eq(view.to(other)).all().item<bool>();
    };
    for (int64_t r : {7, 8, 9, 17, 40})
      for (int64_t c : {8, 13, 33}) {
        CAPTURE(r);
        CAPTURE(c);
        Tensor x = randint(0, 100, {r, c}).to(t);
        Tensor xt = x.t();
        Tensor y = xt.contiguous();
        CHECK(y.is_contiguous());
        CHECK(same(y, xt));
        Tensor b = randint(0, 100, {3, r, 2, c}).to(t);  // outer dims around the transposed pair
        CHECK(same(b.permute({2, 3, 0, 1}).contiguous(), b.permute({2, 3, 0, 1})));
        CHECK(same(b.permute({0, 3, 2, 1}).contiguous(), b.permute({0, 3, 2, 1})));
        // Permutes that keep the last dim: short contiguous rows stepped one by one.
        CHECK(same(b.permute({2, 0, 1, 3}).contiguous(), b.permute({2, 0, 1, 3})));
        CHECK(same(b.transpose(0, 2).contiguous(), b.transpose(0, 2)));
        Tensor wide = zeros({c, r + 5}, TensorOptions(t));
        Tensor dst = wide.narrow(1, 2, r);  // rows r + 5 apart
        dst.copy_(xt);
        CHECK(same(dst, xt));
        CHECK(wide.narrow(1, 0, 2).to(DType::F32).abs().sum().item<float>() == 0.f);  // gaps untouched
        CHECK(wide.narrow(1, r + 2, 3).to(DType::F32).abs().sum().item<float>() == 0.f);
      }
    // Large enough to be split between two threads mid-way through the outer dims.
    set_num_threads(2);
    Tensor big = randint(0, 100, {24, 33, 17, 24}).to(t);
    CHECK(same(big.permute({1, 0, 2, 3}).contiguous(), big.permute({1, 0, 2, 3})));
    CHECK(same(big.permute({2, 1, 0, 3}).contiguous(), big.permute({2, 1, 0, 3})));
    CHECK(same(big.permute({3, 1, 2, 0}).contiguous(), big.permute({3, 1, 2, 0})));
    set_num_threads(1);
  }
}

// Elementwise ops copy a transposed input of 4096+ elements before the loop (tiled copy): the
// results equal the contiguous computation. In place, an input overlapping the target is read
// before any write, whatever its size.
TEST_CASE("elementwise ops with a transposed input match the contiguous computation") {
  manual_seed(31);
  for (int64_t n : {63, 64, 100}) {
    CAPTURE(n);
    Tensor a = randn({n, n}), b = randn({n, n});
    Tensor at = a.t().contiguous();
    {  // against loops over the values themselves (no copy kernel on this side)
      const std::vector<float> av = vals_of(a), bv = vals_of(b), got = vals_of(a.t() + b);
      bool ok = true;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          ok = ok && got[static_cast<size_t>(i * n + j)] == av[static_cast<size_t>(j * n + i)] + bv[static_cast<size_t>(i * n + j)];
      CHECK(ok);
      std::vector<float> tv = vals_of(at);
      bool tok = true;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) tok = tok && tv[static_cast<size_t>(i * n + j)] == av[static_cast<size_t>(j * n + i)];
      CHECK(tok);
    }
    CHECK(vals_of(a.t() + b) == vals_of(at + b));
    Tensor c3 = randn({4, n, n});  // a transposed input broadcast over a batch
    CHECK(vals_of(c3 + a.t()) == vals_of(c3 + at));
    CHECK(vals_of(b * a.t()) == vals_of(b * at));
    // exp's vector and scalar forms may differ in the last bit, and which elements take the
    // scalar tail depends on the walk.
    CHECK((a.t().exp() - at.exp()).abs().max().item<float>() <= 1e-6f * at.exp().abs().max().item<float>());
    CHECK(vals_of(where(b.gt(0), a.t(), b)) == vals_of(where(b.gt(0), at, b)));
    Tensor c = randn({3, n, n});
    CHECK(vals_of(c.transpose(1, 2) - c) == vals_of(c.transpose(1, 2).contiguous() - c));
    // In place, reading the target's own transpose: every read sees the old values.
    Tensor x = a.clone();
    x.add_(x.t());
    CHECK(vals_of(x) == vals_of(a + at));
    Tensor r = a.clone();  // rows shifted by one: row i reads row i - 1 before it is written
    r.narrow(0, 1, n - 1).mul_(r.narrow(0, 0, n - 1));
    CHECK(vals_of(r.narrow(0, 1, n - 1)) == vals_of(a.narrow(0, 1, n - 1) * a.narrow(0, 0, n - 1)));
    Tensor s = a.clone();  // a row broadcast over its own tensor
    s.sub_(s.select(0, 0));
    CHECK(vals_of(s) == vals_of(a - a.select(0, 0)));
    // copy_ from an overlapping view of the destination reads it whole first.
    Tensor y = a.clone();
    y.copy_(y.t());
    CHECK(vals_of(y) == vals_of(at));
    Tensor z = a.clone();
    z.narrow(0, 1, n - 1).copy_(z.narrow(0, 0, n - 1));
    CHECK(vals_of(z.narrow(0, 1, n - 1)) == vals_of(a.narrow(0, 0, n - 1)));
  }
  // An expanded target has several elements at one address: in-place ops refuse it.
  Tensor e = zeros({2}).expand({4, 2});
  CHECK_THROWS_WITH_AS(e.add_(arange(8).view({4, 2}).to(DType::F32)),
                       doctest::Contains("[add_] in-place target of shape [4, 2] has stride 0"), Error);
}

TEST_CASE("0-d inputs, overflowing view bounds and other edges, as PyTorch") {
  const Tensor s = full({}, 1.f), s5 = full({}, 5.f), i0 = full({}, 0, DType::I64);
  // scatter into a 0-d tensor (was a segfault).
  CHECK(scatter(s, 0, i0, s5).item<float>() == 5.f);
  CHECK(scatter_add(s, 0, i0, s5).item<float>() == 6.f);
  CHECK(scatter_reduce(s, 0, i0, s5, "mean").item<float>() == 3.f);
  // Ops that need a dimension refuse a 0-d tensor cleanly (size(0) read past the shape).
  CHECK_THROWS_WITH_AS(s.size(0), doctest::Contains("0-d"), Error);
  CHECK_THROWS_WITH_AS(chunk(s, 2), doctest::Contains("[chunk]"), Error);
  CHECK_THROWS_WITH_AS(unbind(s), doctest::Contains("[unbind]"), Error);
  CHECK_THROWS_WITH_AS(split(s, 1), doctest::Contains("[split]"), Error);
  CHECK_THROWS_WITH_AS(repeat_interleave(s, 3, 0), doctest::Contains("[repeat_interleave]"), Error);
  CHECK_THROWS_WITH_AS(s.unflatten(0, {1}), doctest::Contains("[unflatten]"), Error);
  CHECK(flip(s5, {0}).item<float>() == 5.f);
  CHECK(roll(s5, 1, 0).item<float>() == 5.f);
  CHECK(vals(repeat_interleave(s5, 3)) == F{5, 5, 5});
  CHECK_THROWS_WITH_AS(flip(arange(4), {0, -1}), doctest::Contains("more than once"), Error);
  // topk of a 0-d tensor holds the element, also for k = 0 (was uninitialised).
  auto [tv, ti] = topk(s5, 0);
  CHECK(tv.item<float>() == 5.f);
  CHECK(ti.item<int64_t>() == 0);
  // chunk of an empty dim: `chunks` empty pieces.
  CHECK(chunk(empty({0}), 3).size() == 3);
  CHECK(chunk(zeros({2, 0}), 2, 1).size() == 2);
  // View bounds that overflow int64 are errors, not views outside the storage.
  const int64_t big = std::numeric_limits<int64_t>::max();
  CHECK_THROWS_WITH_AS(arange(5).narrow(0, 1, big), doctest::Contains("[narrow]"), Error);
  CHECK_THROWS_WITH_AS(arange(10).as_strided({3}, {(int64_t(1) << 62) + (int64_t(1) << 60)}, 0),
                       doctest::Contains("[as_strided]"), Error);
  CHECK_THROWS_WITH_AS(arange(10).as_strided({3}, {int64_t(1) << 62}, 0), doctest::Contains("[as_strided]"), Error);
  CHECK_THROWS_WITH_AS(arange(10).as_strided({2}, {1}, -3), doctest::Contains("[as_strided] the storage offset must be >= 0, got -3"), Error);
  CHECK_THROWS_WITH_AS(arange(1).expand({-2}), doctest::Contains("[expand]"), Error);
  CHECK(arange(5).index({Slice(0, None, big)}).numel() == 1);
  // A 0-d bool index is a new dim of size 1 (true) or 0 (false).
  const Tensor x = arange(12).view({3, 4});
  CHECK(index(x, {full({}, true, DType::Bool)}).sizes() == Shape{1, 3, 4});
  CHECK(index(x, {full({}, false, DType::Bool)}).sizes() == Shape{0, 3, 4});
  Tensor z = zeros({2, 2});
  z.index_put_({full({}, false, DType::Bool)}, full({}, 5.f));
  CHECK(vals(z) == F{0, 0, 0, 0});  // wrote every element before
  z.index_put_({full({}, true, DType::Bool)}, full({}, 5.f));
  CHECK(vals(z) == F{5, 5, 5, 5});
  // hstack lifts 0-d inputs to 1-D.
  CHECK(vals(hstack(std::vector<Tensor>{full({}, 1.f), full({}, 2.f)})) == F{1, 2});
  CHECK(vals(hstack(std::vector<Tensor>{arange(2).to(DType::F32), full({}, 9.f)})) == F{0, 1, 9});
  // Negative padding crops in every mode.
  const Tensor p = arange(6).view({2, 3}).to(DType::F32);
  CHECK(vals(pad(p, {-1, 1}, "reflect")) == F{1, 2, 1, 4, 5, 4});
  CHECK(vals(pad(p, {-1, 2}, "replicate")) == F{1, 2, 2, 2, 4, 5, 5, 5});
  CHECK(vals(pad(p, {-1, 2}, "circular")) == F{1, 2, 1, 2, 4, 5, 4, 5});
  CHECK_THROWS_AS(pad(p, {-2, -2}, "replicate"), Error);
  // einsum broadcasts a subscript of size 1 against the other operand's.
  CHECK(vals(einsum("ij,ij->ij", std::vector<Tensor>{p, arange(3).view({1, 3}).to(DType::F32)})) == F{0, 1, 4, 0, 4, 10});
  CHECK(einsum("bij,bjk->bik", std::vector<Tensor>{randn({1, 2, 3}), randn({4, 3, 5})}).sizes() == Shape{4, 2, 5});
  // index_put_ drops the value's extra leading 1-dims.
  Tensor r = zeros({2, 3});
  r.index_put_({0}, ones({1, 3}));
  CHECK(vals(r) == F{1, 1, 1, 0, 0, 0});
  // one_hot: no inference from an empty tensor, and -1 is the only negative.
  CHECK_THROWS_WITH_AS(one_hot(empty({0}, DType::I64)), doctest::Contains("empty"), Error);
  CHECK_THROWS_AS(one_hot(arange(3), -2), Error);
}

TEST_CASE("index expressions mixing index tensors with ints, slices, None and Ellipsis, as PyTorch") {
  // Shapes from PyTorch 1.13 for the same expressions on arange(120).reshape(2, 3, 4, 5).
  const Tensor x = arange(120).reshape({2, 3, 4, 5});
  const Tensor i = tensor<int64_t>({1, 3}), j = tensor<int64_t>({0, 1}), k = tensor<int64_t>({2, 0});
  auto same = [](const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && a.eq(b).all().item<bool>(); };

  CHECK(same(x.index({Slice(), k}), x.index_select(1, k)));
  CHECK(same(x.index({Ellipsis, k}), x.index_select(3, k)));
  CHECK(same(x.index({Slice(), Slice(), tensor<int64_t>({{0, 1}, {2, 3}})}),
             x.index_select(2, tensor<int64_t>({0, 1, 2, 3})).reshape({2, 3, 2, 2, 5})));
  // Integers select first: x[0, :, i] is x[0][:, i], (3, 2, 5).
  CHECK(same(x.index({0, Slice(), i}), x.select(0, 0).index_select(1, i)));
  CHECK(x.index({Slice(), 1, Slice(), i}).sizes() == Shape{2, 4, 2});
  CHECK(x.index({Slice(), 1, i, 2}).sizes() == Shape{2, 2});
  // Tensors next to each other: the broadcast dim stays where they were, (2, 2, 5).
  const Tensor adj = x.index({Slice(), j, i});
  CHECK(adj.sizes() == Shape{2, 2, 5});
  CHECK(same(adj, stack({x.select(1, 0).select(1, 1), x.select(1, 1).select(1, 3)}, 1)));
  // Separated by a slice: the broadcast dim goes in front, (2, 3, 5).
  const Tensor apart = x.index({j, Slice(), i});
  CHECK(apart.sizes() == Shape{2, 3, 5});
  CHECK(same(apart, stack({x.select(0, 0).select(1, 1), x.select(0, 1).select(1, 3)}, 0)));
  CHECK(same(apart.index({1, 2}), x.index({1, 2, 3})));
  // None, strided slices and a 0-d index tensor.
  CHECK(x.index({None, Slice(), tensor<int64_t>({1})}).sizes() == Shape{1, 2, 1, 4, 5});
  CHECK(same(x.index({Slice(1, None), tensor<int64_t>({2, 1}), Slice(None, None, 2)}),
             x.narrow(0, 1, 1).index_select(1, tensor<int64_t>({2, 1})).index({Slice(), Slice(), Slice(None, None, 2)})));
  // A 0-d integer tensor is an integer, as in PyTorch: it selects, and the index tensors around
  // it stay next to each other (x[:, [0, 1, 2], :, t0] is (2, 3, 4), x[t0, :, i] is (3, 2, 5)).
  const Tensor t0 = full({}, 1, kInt64);
  CHECK(same(x.index({Slice(), t0}), x.select(1, 1)));
  CHECK(same(x.index({Slice(), tensor<int64_t>({0, 1, 2}), Slice(), t0}), x.select(3, 1)));
  CHECK(same(x.index({t0, Slice(), i}), x.select(0, 1).index_select(1, i)));
  CHECK(same(x.index({t0.to(kInt32), 2}), x.index({1, 2})));
  CHECK(same(x.index({Slice(), k.to(kInt32)}), x.index_select(1, k)));  // i32 indices, as index({i32})
  // A bool mask indexes as many dims as it has.
  const Tensor m = tensor({{true, false, true, false}, {false, false, true, true}, {true, true, false, false}});
  const Tensor flat_pos = m.flatten().nonzero().squeeze(1);
  CHECK(same(x.index({Slice(), m}), x.reshape({2, 12, 5}).index_select(1, flat_pos)));
  CHECK(same(x.index({0, m}), x.select(0, 0).reshape({12, 5}).index_select(0, flat_pos)));

  // Writes: reading the same expression back gives the values written.
  Tensor y = zeros({2, 3, 4, 5}, kInt64);
  const Tensor v_apart = arange(30).reshape({2, 3, 5}) + 1;
  y.index_put_({j, Slice(), i}, v_apart);
  CHECK(same(y.index({j, Slice(), i}), v_apart));
  CHECK(y.sum().item<int64_t>() == v_apart.sum().item<int64_t>());  // nothing else written
  y.zero_();
  const Tensor v_adj = arange(20).reshape({2, 2, 5}) + 1;
  y.index_put_({Slice(), j, i}, v_adj);
  CHECK(same(y.index({Slice(), j, i}), v_adj));
  CHECK(y.sum().item<int64_t>() == v_adj.sum().item<int64_t>());
  y.zero_();
  y.index_put_({Slice(), Slice(), k}, 7);  // a number
  CHECK(y.eq(7).sum().item<int64_t>() == 2 * 3 * 2 * 5);
  CHECK(y.index({Slice(), Slice(), 1}).eq(0).all().item<bool>());
  y.zero_();
  y.index_put_({1, m}, arange(5) + 1);  // broadcast values over the 6 masked rows
  CHECK(same(y.index({1, m}), (arange(5) + 1).expand({6, 5})));
  y.zero_();
  y.index_put_({Slice(), m}, arange(5) + 1);  // a mask after a slice: its rows sit at dim 1
  CHECK(same(y.index({Slice(), m}), (arange(5) + 1).expand({2, 6, 5})));
  CHECK(y.sum().item<int64_t>() == 2 * 6 * 15);
  y.zero_();
  y.index_put_({Slice(), j, i}, v_adj.unsqueeze(0).unsqueeze(0));  // leading 1s dropped, as PyTorch's
  CHECK(same(y.index({Slice(), j, i}), v_adj));
  y.zero_();
  y.index_put_({Slice(), 1, Slice(), i}, arange(16).reshape({2, 4, 2}) + 1);
  CHECK(same(y.index({Slice(), 1, Slice(), i}), arange(16).reshape({2, 4, 2}) + 1));
  CHECK(y.sum().item<int64_t>() == 136);

  // Gradients flow through both the view and the pick.
  manual_seed(8);
  const Tensor a = randn({3, 4, 5}, kFloat64).requires_grad_();
  auto f = [&](const std::vector<Tensor>& in) {
    return in[0].index({tensor<int64_t>({2, 0, 2}), Slice(1), tensor<int64_t>({0, 4, 4})});
  };
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, {a}, {}, &why), why);

  CHECK_THROWS_WITH_AS(x.index({Slice(), tensor({1.0f})}), doctest::Contains("[index] an index tensor must be i64"),
                       Error);
  CHECK_THROWS_WITH_AS(x.index({0, 0, 0, 0, i}), doctest::Contains("too many indices (5)"), Error);
  CHECK_THROWS_WITH_AS(x.index({Ellipsis, i, Ellipsis}), doctest::Contains("one Ellipsis"), Error);
  // Errors name the dims as the caller counts them.
  CHECK_THROWS_WITH_AS(x.index({Slice(), tensor<int64_t>({3})}),
                       doctest::Contains("index 3 is out of bounds for dim 1 with size 3"), Error);
  CHECK_THROWS_WITH_AS(x.index({0, Slice(), tensor<int64_t>({0, -6})}),
                       doctest::Contains("index -6 is out of bounds for dim 2 with size 4"), Error);
  CHECK_THROWS_WITH_AS(x.index({None, Slice(), tensor<int64_t>({5})}),
                       doctest::Contains("index 5 is out of bounds for dim 1 with size 3"), Error);
  CHECK_THROWS_WITH_AS(x.index({Slice(), full({}, 1, kUInt8)}), doctest::Contains("u8"), Error);  // not a select
  CHECK_THROWS_WITH_AS(x.index({Slice(), m.narrow(1, 0, 3)}),
                       doctest::Contains("mask of shape [3, 3] does not match the shape [3, 4]"), Error);
  CHECK_THROWS_WITH_AS(y.index_put_({Slice(), 1, Slice(), i}, arange(3)), doctest::Contains("[index_put_]"), Error);
  CHECK_THROWS_WITH_AS(y.index_put_({j, Slice(), i}, arange(4)), doctest::Contains("[index_put_]"), Error);
}

}  // namespace test_shape_ops
