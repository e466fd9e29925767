// Integer arithmetic wraps modulo 2^bits, as PyTorch's does on the CPU: sums, products, scans,
// matrix products, scatter/index accumulation and powers that overflow give the wrapped value
// (never undefined behaviour; the sanitizer stage of CI runs these cases under UBSan). The
// expected values are computed here in uint64_t, independently of the kernels.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <cstdint>
#include <limits>
#include <vector>

namespace test_int_wrap {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

Tensor i64(const std::vector<int64_t>& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(DType::I64));
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<int64_t>()[i] = v[i];
  return t;
}
std::vector<int64_t> values(const Tensor& t) {
  Tensor c = t.contiguous();
  REQUIRE(c.dtype() == DType::I64);
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
}  // namespace

TEST_CASE("integer sums and products wrap like PyTorch's") {
  const std::vector<int64_t> v = {kMax, 3, kMax, 7, -5, kMin, 1000000007};
  int64_t s = 0, p = 1;
  for (int64_t x : v) s = wrap_add(s, x), p = wrap_mul(p, x);
  CHECK(i64(v).sum().item<int64_t>() == s);
  CHECK(i64(v).nansum().item<int64_t>() == s);
  CHECK(i64(v).prod().item<int64_t>() == p);
  // Over a dim, through the strip path (reduced dim first) and the row path (reduced dim last).
  Tensor m = i64(v).unsqueeze(1).expand({7, 9}).contiguous();
  for (int64_t x : values(m.sum({0}))) CHECK(x == s);
  for (int64_t x : values(m.prod({0}))) CHECK(x == p);
  for (int64_t x : values(m.t().contiguous().sum({1}))) CHECK(x == s);
  // A long tensor: the chunked full reduction combines chunk sums, which overflow too.
  Tensor big = full({1 << 17}, kMax / 1000, TensorOptions(DType::I64));
  int64_t want = 0;
  for (int i = 0; i < (1 << 17); ++i) want = wrap_add(want, kMax / 1000);
  CHECK(big.sum().item<int64_t>() == want);
}

TEST_CASE("integer cumsum and cumprod wrap like PyTorch's") {
  const std::vector<int64_t> v = {kMax, 2, 3, kMax, kMin, -9};
  std::vector<int64_t> cs, cp;
  int64_t s = 0, p = 1;
  for (int64_t x : v) cs.push_back(s = wrap_add(s, x)), cp.push_back(p = wrap_mul(p, x));
  CHECK(values(i64(v).cumsum(0)) == cs);
  CHECK(values(i64(v).cumprod(0)) == cp);
  // Along dim 0 of a matrix: rows added as vectors.
  Tensor m = i64(v).unsqueeze(1).expand({6, 5}).contiguous();
  Tensor ms = m.cumsum(0), mp = m.cumprod(0);
  for (int64_t c = 0; c < 5; ++c) {
    CHECK(values(ms.select(1, c)) == cs);
    CHECK(values(mp.select(1, c)) == cp);
  }
}

TEST_CASE("integer scatter_add, index_add, pow, abs and neg wrap like PyTorch's") {
  Tensor base = i64({kMax, kMin});
  Tensor idx = i64({0, 1, 0});
  Tensor src = i64({1, -1, kMax});
  const std::vector<int64_t> acc = {wrap_add(wrap_add(kMax, 1), kMax), wrap_add(kMin, -1)};
  CHECK(values(scatter_add(base, 0, idx, src)) == acc);
  CHECK(values(index_add(base, 0, idx, src)) == acc);
  CHECK(values(scatter_reduce(base, 0, idx, src, "sum")) == acc);
  // Without the input's own values: the counted path.
  CHECK(values(scatter_reduce(base, 0, idx, src, "sum", false)) == std::vector<int64_t>{wrap_add(1, kMax), -1});
  CHECK(values(scatter_reduce(base, 0, idx, src, "prod", false)) == std::vector<int64_t>{kMax, -1});
  CHECK(values(scatter_reduce(base, 0, idx, i64({kMax, 1, kMax}), "prod", false)) ==
        std::vector<int64_t>{wrap_mul(kMax, kMax), 1});
  CHECK(values(index_put(base, std::vector<Tensor>{idx}, src, true)) == acc);
  // An integer mean floors, as PyTorch's: (-3 + 0) / 2 = -2, (5 + 2) / 2 = 3; with the input's
  // zeros counted: -3 / 3 = -1, 7 / 3 = 2.
  const Tensor mi = i64({0, 0, 1, 1}), ms = i64({-3, 0, 5, 2});
  CHECK(values(scatter_reduce(i64({0, 0}), 0, mi, ms, "mean", false)) == std::vector<int64_t>{-2, 3});
  CHECK(values(scatter_reduce(i64({0, 0}), 0, mi, ms, "mean")) == std::vector<int64_t>{-1, 2});
  // An integer tensor takes an alpha its dtype can hold.
  CHECK_THROWS_WITH_AS(index_add(base, 0, idx, src, 0.5), doctest::Contains("alpha 0.5 is not a value"), Error);
  CHECK_THROWS_WITH_AS(index_add(base, 0, idx, src, 1e30), doctest::Contains("is not a value"), Error);
  CHECK_THROWS_WITH_AS(index_add(base.to(DType::I32), 0, idx, src.to(DType::I32), 3e9),
                       doctest::Contains("dtype i32"), Error);
  CHECK_THROWS_WITH_AS(index_add(base.to(DType::I8), 0, idx, src.to(DType::I8), 1000), doctest::Contains("dtype i8"),
                       Error);
  CHECK(values(index_add(i64({0, 0}).to(DType::I8), 0, idx, i64({1, 1, 0}).to(DType::I8), -128).to(DType::I64)) ==
        std::vector<int64_t>{-128, -128});  // the dtype's lowest value is an alpha it holds

  int64_t p = 1;
  for (int i = 0; i < 41; ++i) p = wrap_mul(p, 3);
  CHECK(i64({3}).pow(41).item<int64_t>() == p);
  CHECK(i64({kMin}).abs().item<int64_t>() == kMin);
  CHECK(i64({kMin}).neg().item<int64_t>() == kMin);
  CHECK(i64({3037000501}).square().item<int64_t>() == wrap_mul(3037000501, 3037000501));
  // Long enough for the vector forms of neg and abs, each integer dtype's lowest value among
  // ordinary ones (it maps to itself; computed here in uint64_t, then narrowed).
  for (DType t : {DType::I8, DType::I32, DType::I64}) {
    CAPTURE(dtype_name(t));
    const int bits = t == DType::I8 ? 8 : t == DType::I32 ? 32 : 64;
    const int64_t lowest = bits == 64 ? kMin : -(int64_t{1} << (bits - 1));
    std::vector<int64_t> v;
    for (int k = 0; k < 37; ++k) v.push_back(k % 5 == 0 ? lowest : (k * 7) % 23 - 11);
    auto narrow = [&](uint64_t u) {  // two's complement in `bits` bits, sign-extended
      return bits == 64 ? static_cast<int64_t>(u) : static_cast<int64_t>(u << (64 - bits)) >> (64 - bits);
    };
    std::vector<int64_t> neg, abs;
    for (int64_t x : v) {
      neg.push_back(narrow(0 - static_cast<uint64_t>(x)));
      abs.push_back(x < 0 ? narrow(0 - static_cast<uint64_t>(x)) : x);
    }
    const Tensor tv = i64(v).to(t);
    CHECK(values(tv.neg().to(DType::I64)) == neg);
    CHECK(values(tv.abs().to(DType::I64)) == abs);
  }
  CHECK(i64({50001}).to(DType::I32).square().item<int32_t>() ==
        static_cast<int32_t>(static_cast<uint32_t>(50001u * 50001u)));
}

TEST_CASE("integer matmul, mm, bmm, addmm, dot and outer agree with f64 for i8, u8, i32 and i64") {
  manual_seed(5);
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    CAPTURE(dtype_name(t));
    // Values 0..3 over k <= 7: every product fits in i8, so f64 is an exact reference.
    auto make = [&](const Shape& s) { return randint(0, 4, s).to(t); };
    auto same = [](const Tensor& got, const Tensor& want) {
      return got.dtype() == want.dtype() && got.sizes() == want.sizes() &&
             got.to(DType::F64).eq(want.to(DType::F64)).all().item<bool>();
    };
    auto f = [](const Tensor& x) { return x.to(DType::F64); };
    Tensor a = make({5, 7}), b = make({7, 3}), v = make({7}), bt = make({3, 7}).t();
    CHECK(same(a.matmul(b), f(a).matmul(f(b)).to(t)));
    CHECK(same(a.matmul(bt), f(a).matmul(f(bt)).to(t)));             // transposed (column-major) B
    CHECK(same(a.t().t().mm(b), f(a).mm(f(b)).to(t)));
    CHECK(same(a.matmul(v), f(a).matmul(f(v)).to(t)));               // matrix @ vector
    CHECK(same(v.matmul(b), f(v).matmul(f(b)).to(t)));               // vector @ matrix
    CHECK(same(v.dot(v), f(v).dot(f(v)).to(t)));
    CHECK(same(v.outer(v), f(v).outer(f(v)).to(t)));
    Tensor ba = make({2, 1, 5, 7}), bb = make({3, 7, 2});            // broadcast batch dims
    CHECK(same(ba.matmul(bb), f(ba).matmul(f(bb)).to(t)));
    Tensor b3 = make({4, 5, 7}), c3 = make({4, 7, 2});
    CHECK(same(b3.bmm(c3), f(b3).bmm(f(c3)).to(t)));
    Tensor c = make({5, 3});
    CHECK(same(c.addmm(a, b, 2, 1), f(c).addmm(f(a), f(b), 2, 1).to(t)));
    Tensor a2 = make({5, 2}), b2 = make({2, 3});
    CHECK(same(c.addmm(a2, b2, 2, 3), f(c).addmm(f(a2), f(b2), 2, 3).to(t)));
    CHECK(same(c.addmm(a, b, 0, 1), f(a).mm(f(b)).to(t)));
    Tensor e = make({5, 0}), g = make({0, 3});                        // empty inner dim: zeros
    CHECK(same(e.mm(g), zeros({5, 3}, TensorOptions(t))));
    CHECK_THROWS_WITH_AS(c.addmm(a, b, 0.5, 1), doctest::Contains("integer beta"), Error);
    if (t == DType::I8 || t == DType::U8)  // a factor the dtype cannot hold
      CHECK_THROWS_WITH_AS(c.addmm(a, b, 1, 300), doctest::Contains("alpha their dtype holds, got 300"), Error);
    if (t == DType::U8) CHECK_THROWS_WITH_AS(c.addmm(a, b, -1, 1), doctest::Contains("beta"), Error);
  }
}

// i8, u8 and i32 products run packed blocks of 2 vectors of columns and 4 rows; i64 a plain
// loop. Shapes with several blocks, partial last blocks and rows, strided and transposed
// operands and full-range values (whose sums wrap) against the i64 product truncated to the
// dtype (the same value modulo 2^bits), and the same bits at one and two threads.
TEST_CASE("integer matmul: packed blocks, strides and wrapping sums against the i64 product") {
  manual_seed(6);
  const int threads = get_num_threads();
  for (DType t : {DType::I8, DType::U8, DType::I32}) {
    CAPTURE(dtype_name(t));
    const int64_t lo = t == DType::I32 ? -2000000000 : t == DType::I8 ? -128 : 0;
    const int64_t hi = t == DType::I32 ? 2000000000 : t == DType::I8 ? 128 : 256;
    auto make = [&](const Shape& s) { return randint(lo, hi, s, TensorOptions(DType::I64)).to(t); };
    auto want = [&](const Tensor& x, const Tensor& y) { return x.to(DType::I64).matmul(y.to(DType::I64)).to(t); };
    auto same = [](const Tensor& got, const Tensor& ref) {
      return got.dtype() == ref.dtype() && got.sizes() == ref.sizes() && got.to(DType::I64).eq(ref.to(DType::I64)).all().item<bool>();
    };
    Tensor a = make({14, 37}), b = make({37, 45});  // 14, 35, 9 rows: last blocks of 2, 3 and 1
    CHECK(same(a.matmul(b), want(a, b)));
    Tensor bt = make({45, 37}).t(), at = make({37, 13}).t();  // column-major operands
    CHECK(same(at.matmul(bt), want(at, bt)));
    Tensor wide = make({6, 70, 90});  // every other row and column, and a transposed view
    Tensor as = wide.select(0, 1).index({Slice(0, None, 2), Slice(0, None, 2)});
    Tensor bs = wide.select(0, 2).t().index({Slice(0, 45), Slice(0, None, 2)});
    CHECK(same(as.matmul(bs), want(as, bs)));
    CHECK(a.mm(make({37, 0})).sizes() == Shape{14, 0});  // no columns: nothing to split or write
    CHECK(make({0}).outer(make({5})).sizes() == Shape{0, 5});
    CHECK(make({2, 0, 4}).bmm(make({2, 4, 3})).sizes() == Shape{2, 0, 3});
    Tensor ba = make({3, 9, 21}), bb = make({3, 21, 33});
    CHECK(same(ba.bmm(bb), want(ba, bb)));
    Tensor c = make({14, 45});
    const Tensor sum = c.to(DType::I64) * 3 + a.to(DType::I64).matmul(b.to(DType::I64)) * 5;  // beta 3, alpha 5
    CHECK(same(c.addmm(a, b, 3, 5), sum.to(t)));
    Tensor big_a = make({130, 70}), big_b = make({70, 120});
    set_num_threads(1);
    Tensor one = big_a.matmul(big_b);
    set_num_threads(2);
    Tensor two = big_a.matmul(big_b);
    set_num_threads(threads);
    CHECK(same(one, want(big_a, big_b)));
    CHECK(same(one, two));
  }
}

TEST_CASE("integer matmul wraps like PyTorch's") {
  Tensor a = i64({kMax, kMax, 5}).reshape({1, 3});
  Tensor b = i64({3, 1, kMax}).reshape({3, 1});
  const int64_t d = wrap_add(wrap_add(wrap_mul(kMax, 3), kMax), wrap_mul(5, kMax));
  CHECK(a.matmul(b).item<int64_t>() == d);
  CHECK(a.reshape({3}).dot(b.reshape({3})).item<int64_t>() == d);
  CHECK(a.matmul(b.reshape({3})).item<int64_t>() == d);
  // i8: 100 * 3 + 100 * 2 = 500, which is -12 modulo 256.
  Tensor x = tensor({100, 100}).to(DType::I8).reshape({1, 2}), y = tensor({3, 2}).to(DType::I8).reshape({2, 1});
  CHECK(x.matmul(y).to(DType::I64).item<int64_t>() == -12);
}

}  // namespace test_int_wrap
