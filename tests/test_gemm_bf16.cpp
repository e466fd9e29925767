// bf16 matrix products (kernels_cpu/gemm_bf16.cpp on CPUs with AVX512_BF16: the packed GEMM,
// with AMX micro-tiles from 16 rows where the CPU has AMX (tests/meson.build runs these cases
// again with EMBER_MAX_CPU_ISA=avx512 for the VDPBF16PS micro-kernel), and dot products for
// up to four rows against a weight read in place; the f32 GEMM on upcast
// copies elsewhere) against a double reference over the bf16 values: products of two
// bf16 are exact, so the only errors are the f32 sums and the final rounding to bf16. Tile
// edges (12 rows, 32 columns), odd inner dimensions (a zero-padded last pair), one and two
// inner slices (1024 per slice), column blocks (512), row blocks (96) and the row chunks of
// sliced products (1056), every operand layout, alpha/beta,
// batches, and one and two threads (bitwise equal: threads split columns, never the sums).

#include <ember/ember.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#if defined(__x86_64__)
namespace ember::detail {
bool cpu_uses_bf16_gemm();  // kernels_cpu/dispatch.cpp
bool cpu_uses_amx();
}  // namespace ember::detail
#endif

namespace test_gemm_bf16 {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// An (r x c) bf16 operand: 0 contiguous, 1 transposed storage, 2 every other column of a
/// wider tensor.
Tensor bf16_operand(int64_t r, int64_t c, int layout) {
  if (layout == 1) return randn({c, r}).to(DType::BF16).t();
  if (layout == 2) return randn({r, 2 * c + 1}).to(DType::BF16).index({Slice(), Slice(1, 2 * c + 1, 2)});
  return randn({r, c}).to(DType::BF16);
}

/// Largest violation of |got - want| <= 2^-8 |want| (half a bf16 step, rounding) +
/// k 2^-23 (|a| @ |b|) (the f32 sums); > 1 fails. want and the bound in double from the
/// bf16 values.
double worst_ratio(const Tensor& got, const Tensor& a, const Tensor& b) {
  const Tensor ad = a.to(DType::F64), bd = b.to(DType::F64);
  const Tensor want = ad.matmul(bd), mag = ad.abs().matmul(bd.abs());
  const Tensor g = got.to(DType::F64).contiguous(), w = want.contiguous(), s = mag.contiguous();
  const double k = static_cast<double>(a.size(-1));
  double worst = 0;
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double gv = g.data_ptr<double>()[i], wv = w.data_ptr<double>()[i];
    if (!std::isfinite(gv)) return std::numeric_limits<double>::infinity();
    const double bound = std::ldexp(std::abs(wv), -8) + k * std::ldexp(s.data_ptr<double>()[i], -23) + 1e-30;
    worst = std::max(worst, std::abs(gv - wv) / bound);
  }
  return worst;
}

bool bitwise_equal(const Tensor& x, const Tensor& y) {
  const Tensor a = x.contiguous(), b = y.contiguous();
  if (a.sizes() != b.sizes()) return false;
  const auto* p = static_cast<const uint16_t*>(a.raw_data());
  const auto* q = static_cast<const uint16_t*>(b.raw_data());
  for (int64_t i = 0; i < a.numel(); ++i)
    if (p[i] != q[i]) return false;
  return true;
}

/// a @ b at one thread against the double reference, and at two threads bitwise the same.
void check_one_and_two_threads(const Tensor& a, const Tensor& b) {
  set_num_threads(1);
  const Tensor one = a.matmul(b);
  REQUIRE(one.dtype() == DType::BF16);
  CHECK(worst_ratio(one, a, b) <= 1.0);
  set_num_threads(2);
  CHECK(bitwise_equal(a.matmul(b), one));
}

}  // namespace

TEST_CASE("bf16 matmul: which kernel runs") {
#if defined(__x86_64__)
  const std::string kernel = detail::cpu_uses_amx()         ? "the AVX512_BF16 GEMM with AMX tiles from 16 rows"
                             : detail::cpu_uses_bf16_gemm() ? "the AVX512_BF16 GEMM"
                                                            : "the f32 GEMM on upcast copies";
  MESSAGE("bf16 products on this CPU: " << kernel);
#endif
  CHECK(matmul(ones({2, 3}).to(DType::BF16), ones({3, 2}).to(DType::BF16)).dtype() == DType::BF16);
}

TEST_CASE("bf16 matmul matches a double reference for every layout, edge and slice count") {
  manual_seed(23);
  struct Dims {
    int64_t m, n, k;
  };
  const Dims dims[] = {{1, 1, 1},    {1, 70, 33},   {5, 1, 17},     {12, 32, 2},   {13, 33, 3},
                       {25, 64, 64}, {7, 600, 40},  {40, 31, 1025}, {3, 5, 2100},  {100, 100, 257},
                       // AMX micro-tiles (32 x 32, 32 of the inner dimension per tile): one
                       // tile of rows, a partial second, a padded last pair block
                       {16, 17, 33}, {33, 65, 31}, {64, 32, 96}};
  for (const Dims& d : dims)
    for (int la = 0; la < 3; ++la)
      for (int lb = 0; lb < 3; ++lb) {
        const Tensor a = bf16_operand(d.m, d.k, la), b = bf16_operand(d.k, d.n, lb);
        INFO("m ", d.m, " n ", d.n, " k ", d.k, " layouts ", la, lb);
        check_one_and_two_threads(a, b);
      }
  set_num_threads(1);
}

TEST_CASE("bf16 matmul: the padding of a last partial pair block is zero, whatever the buffers held") {
  // AMX micro-tiles read 32 elements of the inner dimension at a time from the packing
  // buffers: a product with infinities first leaves them there, and a product whose inner
  // dimension is no multiple of 32 must then read zeros past its end in both operands
  // (inf * 0 would be NaN). The VDPBF16PS path pads pairs the same way.
  manual_seed(41);
  for (int la = 0; la < 2; ++la)
    for (int lb = 0; lb < 2; ++lb) {
      INFO("layouts ", la, lb);
      set_num_threads(1);
      const Tensor big_a = full({160, 1024}, std::numeric_limits<float>::infinity()).to(DType::BF16);
      const Tensor big_b = full({1024, 64}, -std::numeric_limits<float>::infinity()).to(DType::BF16);
      (void)big_a.matmul(big_b);
      const Tensor a = bf16_operand(40, 33, la), b = bf16_operand(33, 40, lb);
      CHECK(worst_ratio(a.matmul(b), a, b) <= 1.0);  // inf / NaN: an infinite ratio
    }
}

TEST_CASE("bf16 matmul: two inner slices with several column blocks, row blocks and row chunks") {
  manual_seed(37);
  struct Case {
    int64_t m, n, k;
    int la, lb;
  };
  // 1100 > 1024: two slices through the f32 partial block; 600 columns: two 512-column blocks;
  // 200 rows: three 96-row blocks; 1100 rows: two 1056-row chunks of a sliced product.
  const Case cases[] = {{200, 600, 1100, 0, 0}, {200, 600, 1100, 1, 1}, {200, 600, 1100, 2, 1}, {1100, 40, 1030, 0, 1}};
  for (const Case& c : cases) {
    const Tensor a = bf16_operand(c.m, c.k, c.la), b = bf16_operand(c.k, c.n, c.lb);
    INFO("m ", c.m, " n ", c.n, " k ", c.k, " layouts ", c.la, c.lb);
    check_one_and_two_threads(a, b);
  }
  set_num_threads(1);
}

TEST_CASE("bf16 products large enough for threads, batches and broadcast batches") {
  manual_seed(29);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    INFO("threads ", threads);
    const Tensor a = bf16_operand(150, 300, 0), b = bf16_operand(300, 700, 1);  // ~63 MFLOP: split columns
    CHECK(worst_ratio(a.matmul(b), a, b) <= 1.0);
    const Tensor x = randn({4, 40, 70}).to(DType::BF16), y = randn({4, 70, 50}).to(DType::BF16);
    const Tensor batched = bmm(x, y);
    for (int64_t i = 0; i < 4; ++i) CHECK(worst_ratio(batched.select(0, i), x.select(0, i), y.select(0, i)) <= 1.0);
    const Tensor w = randn({70, 9}).to(DType::BF16);
    const Tensor broadcast = x.matmul(w);
    for (int64_t i = 0; i < 4; ++i) CHECK(worst_ratio(broadcast.select(0, i), x.select(0, i), w) <= 1.0);
  }
  set_num_threads(1);
}

TEST_CASE("bf16 addmm, linear with bias, alpha and beta; beta = 0 ignores NaN in the input") {
  manual_seed(31);
  const Tensor a = bf16_operand(20, 45, 0), b = bf16_operand(45, 37, 0);
  const Tensor c = randn({20, 37}).to(DType::BF16);
  const Tensor ad = a.to(DType::F64), bd = b.to(DType::F64), cd = c.to(DType::F64);
  const Tensor got = addmm(c, a, b, 0.5, 2.0);
  const Tensor want = cd * 0.5 + ad.matmul(bd) * 2.0;
  const Tensor bound = cd.abs() * 0.5 + ad.abs().matmul(bd.abs()) * 2.0;
  // Two roundings to bf16: c's scaled copy is exact (0.5), the result's once.
  CHECK(((got.to(DType::F64) - want).abs() <= bound * std::ldexp(1.0, -7)).all().item<bool>());

  // One row against a weight read in place (the dot-product kernel), with beta.
  const Tensor row = a.narrow(0, 0, 1), wt = bf16_operand(37, 45, 0).t(), c_row = c.narrow(0, 0, 1);
  const Tensor got_row = addmm(c_row, row, wt, 0.5, 2.0);
  const Tensor want_row = c_row.to(DType::F64) * 0.5 + row.to(DType::F64).matmul(wt.to(DType::F64)) * 2.0;
  const Tensor bound_row =
      c_row.to(DType::F64).abs() * 0.5 + row.to(DType::F64).abs().matmul(wt.to(DType::F64).abs()) * 2.0;
  CHECK(((got_row.to(DType::F64) - want_row).abs() <= bound_row * std::ldexp(1.0, -7)).all().item<bool>());

  const Tensor nan_c = full({20, 37}, std::numeric_limits<double>::quiet_NaN()).to(DType::BF16);
  CHECK(bitwise_equal(addmm(nan_c, a, b, 0.0, 1.0), a.matmul(b)));

  const Tensor w = bf16_operand(37, 45, 0), bias = randn({37}).to(DType::BF16);
  const Tensor y = linear(a, w, bias);
  const Tensor yd = ad.matmul(w.to(DType::F64).t()) + bias.to(DType::F64);
  const Tensor ybound = ad.abs().matmul(w.to(DType::F64).abs().t()) + bias.to(DType::F64).abs();
  CHECK(((y.to(DType::F64) - yd).abs() <= ybound * std::ldexp(1.0, -7)).all().item<bool>());
}

}  // namespace test_gemm_bf16
