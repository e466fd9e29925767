// The f32 CPU GEMM (kernels_cpu/gemm_packed.hpp on AVX2/AVX-512 machines, Eigen elsewhere)
// against a double-precision reference loop: every operand layout, tile edges in both
// dimensions, inner dimensions of one and several KC slices, alpha/beta, batches, and one
// and two threads.

#include <ember/ember.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace test_gemm {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// out[i, j] = beta * c[i, j] + alpha * sum_p a[i, p] * b[p, j], in double; c may be empty.
/// The operands are copied to row-major doubles (b transposed) first and multiplied with
/// plain pointer loops: element accessors made this reference most of the suite's time
/// under the sanitizers (-O0). (The copies use Ember's conversion, not the GEMM under test.)
std::vector<double> reference(const Tensor& a, const Tensor& b, const Tensor* c, double beta, double alpha) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const Tensor ad = a.to(DType::F64).contiguous(), btd = b.t().to(DType::F64).contiguous();
  const double* A = ad.data_ptr<double>();
  const double* Bt = btd.data_ptr<double>();
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double* ar = A + i * k;
      const double* br = Bt + j * k;
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += ar[p] * br[p];
      double r = alpha * s;
      if (c && beta != 0) r += beta * double(c->accessor<float, 2>()[i][j]);
      out[static_cast<size_t>(i * n + j)] = r;
    }
  return out;
}

/// Largest error relative to the magnitude scale of the sum (sqrt(k)-growth of N(0,1) terms).
double max_error(const Tensor& got, const std::vector<double>& want, int64_t k) {
  auto G = got.accessor<float, 2>();
  double worst = 0;
  for (int64_t i = 0; i < got.size(0); ++i)
    for (int64_t j = 0; j < got.size(1); ++j) {
      const double w = want[static_cast<size_t>(i * got.size(1) + j)], g = G[i][j];
      if (std::isnan(g)) return INFINITY;
      worst = std::max(worst, std::abs(g - w) / (1.0 + std::sqrt(double(k))));
    }
  return worst;
}

/// An (r x c) operand in the given layout: 0 contiguous, 1 transposed storage, 2 every other
/// column of a wider tensor (strided rows and columns).
Tensor operand(int64_t r, int64_t c, int layout) {
  if (layout == 1) return randn({c, r}).t();
  if (layout == 2) return randn({r, 2 * c + 1}).index({Slice(), Slice(1, 2 * c + 1, 2)});
  return randn({r, c});
}

/// One product of the layout sweeps below: its operands and their double reference, made
/// once for both thread counts.
struct Product {
  int64_t m, n, k;
  int la, lb;
  Tensor a, b;
  std::vector<double> want;
};
Product make_product(int64_t m, int64_t n, int64_t k, int la, int lb) {
  Tensor a = operand(m, k, la), b = operand(k, n, lb);
  std::vector<double> want = reference(a, b, nullptr, 0, 1);
  return {m, n, k, la, lb, a, b, std::move(want)};
}
/// Each product with 1 and then 2 threads (switching the count rebuilds the pool, so it is
/// the outer loop).
void check_products(const std::vector<Product>& products) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Product& p : products) {
      INFO("threads ", threads, " m ", p.m, " n ", p.n, " k ", p.k, " layouts ", p.la, p.lb);
      CHECK(max_error(p.a.matmul(p.b), p.want, p.k) < 1e-5);
    }
  }
  set_num_threads(1);
}

}  // namespace

TEST_CASE("f32 matmul matches a double reference for every layout, edge and slice count") {
  manual_seed(11);
  struct Dims {
    int64_t m, n, k;
  };
  // Tile edges (6/8/12 rows, 16/32/64 columns), one and several inner slices (512 per
  // slice), column blocks wider than one packed block of B, GEMV-shaped rows, and outputs
  // narrow enough to be computed as the transposed product (37 x 9, 300 x 5). The 6-row tile
  // reads a row-major B with at most 64 inner steps in place, apart from a partial last
  // panel (the Winograd products: 64 x 245 over 32, 32 x 245 over 64; 65 steps are packed),
  // and any row-major B when C has at most 48 rows (32 x 250 over 300; 44 x 192 over 1100:
  // a partial row panel and three inner slices).
  const Dims dims[] = {{1, 1, 1},      {1, 70, 33},    {5, 1, 17},    {7, 13, 3},     {13, 31, 64},
                       {12, 64, 511},  {65, 65, 513},  {100, 33, 1100}, {31, 1030, 40}, {200, 48, 9},
                       {37, 9, 600},   {300, 5, 1100}, {64, 245, 32},   {32, 245, 64},  {7, 130, 65},
                       {32, 250, 300}, {44, 192, 1100}};
  std::vector<Product> products;
  for (const Dims& d : dims)
    for (int la = 0; la < 3; ++la)
      for (int lb = 0; lb < 3; ++lb) products.push_back(make_product(d.m, d.n, d.k, la, lb));
  check_products(products);
}

TEST_CASE("f32 matmul: packed transposed A, row chunks, row tasks and the threaded transposed product") {
  // The paths the small shapes above do not reach (on AVX2/AVX-512 machines):
  //  - a transposed A whose step stride is a multiple of 128 floats is packed panel by panel,
  //    not read in place: 256 x 600 (sr 1, sc 256) and 1024 x 2100 (sc 1024), more than 8
  //    panels and 2-5 inner slices;
  //  - a packed A of more than 2M floats goes in row chunks: 1024 x 2100 with strided rows
  //    and columns;
  //  - C at most one tile wide with 2 threads splits by rows: 2000 x 12 (each task packs B);
  //  - so does a C at least twice as tall as wide whose A is read in place: 512 x 128 over 784
  //    with B's columns contiguous (a batch-128 Linear's transposed product);
  //  - a narrow C computed as the transposed product, on 2 threads: 2000 x 5;
  //  - a wide C over few rows with B's columns contiguous, computed as the transposed product
  //    and written back in 8 x 8 transposes: 20 x 300 and 8 x 64 (row and column tails, none),
  //    and 43 x 517, large enough for two threads to write back a half each;
  //  - a long product with a transposed A read in place by the 12-row tile: 384 x 70 over
  //    1100 (three slices, a partial B panel) and 130 x 64 over 600 (a partial last row panel).
  manual_seed(14);
  struct Case {
    int64_t m, n, k;
    int la, lb;
  };
  const Case cases[] = {{256, 40, 600, 1, 0}, {1024, 40, 2100, 1, 1}, {1024, 40, 2100, 2, 0}, {2000, 12, 600, 0, 0},
                        {2000, 5, 600, 0, 1},  {20, 300, 700, 0, 1},   {8, 64, 256, 0, 1},
                        {384, 70, 1100, 1, 0}, {130, 64, 600, 1, 2}, {512, 128, 784, 0, 1},
                        {43, 517, 700, 0, 1}};
  std::vector<Product> products;
  for (const Case& c : cases) products.push_back(make_product(c.m, c.n, c.k, c.la, c.lb));
  check_products(products);
}

TEST_CASE("addmm applies alpha and beta, and beta = 0 ignores NaN in the input") {
  manual_seed(12);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const Tensor a = randn({37, 530}), b = randn({530, 70}).t().contiguous().t();
    Tensor c = randn({37, 70});
    CHECK(max_error(c.addmm(a, b, 0.5, -2.0), reference(a, b, &c, 0.5, -2.0), 530) < 1e-5);
    Tensor nan_c = full({37, 70}, NAN);
    CHECK(max_error(nan_c.addmm(a, b, 0.0, 1.5), reference(a, b, nullptr, 0, 1.5), 530) < 1e-5);
    // A narrow output goes through the transposed product; alpha and beta still apply.
    const Tensor bn = randn({530, 6});
    Tensor cn = randn({37, 6});
    CHECK(max_error(cn.addmm(a, bn, 0.25, 3.0), reference(a, bn, &cn, 0.25, 3.0), 530) < 1e-5);
    Tensor nan_cn = full({37, 6}, NAN);
    CHECK(max_error(nan_cn.addmm(a, bn, 0.0, 1.0), reference(a, bn, nullptr, 0, 1.0), 530) < 1e-5);
    // A Linear's forward at a small batch (bias in C, beta 1) through the wide transposed
    // product; and at beta 0 with NaN in C.
    const Tensor aw = randn({20, 700}), bw = randn({300, 700}).t();
    Tensor cw = randn({20, 300});
    CHECK(max_error(cw.addmm(aw, bw, 0.5, -2.0), reference(aw, bw, &cw, 0.5, -2.0), 700) < 1e-5);
    Tensor nan_cw = full({20, 300}, NAN);
    CHECK(max_error(nan_cw.addmm(aw, bw, 0.0, 1.5), reference(aw, bw, nullptr, 0, 1.5), 700) < 1e-5);
    // One row (batch-1 inference) goes through the GEMV kernels: a weight-like right operand
    // with contiguous columns (dot products, four columns per reduction, 70 = 4 * 17 + 2) and
    // a row-major one (scaled row sums); 530 = 16 * 33 + 2 leaves a tail in every dot product.
    const Tensor a1 = randn({1, 530});
    for (const Tensor& b1 : {randn({70, 530}).t(), randn({530, 70})}) {
      Tensor c1 = randn({1, 70});
      CHECK(max_error(c1.addmm(a1, b1, 0.5, -2.0), reference(a1, b1, &c1, 0.5, -2.0), 530) < 1e-5);
      Tensor nan_c1 = full({1, 70}, NAN);
      CHECK(max_error(nan_c1.addmm(a1, b1, 0.0, 1.5), reference(a1, b1, nullptr, 0, 1.5), 530) < 1e-5);
    }
    // A 1-D input (a bias row) at beta 0 is ignored too, NaN and inf included, on every path:
    // f32 (the packed GEMM where there is one; batch 1: the GEMV) and f64 (Eigen's product).
    for (DType dt : {DType::F32, DType::F64}) {
      for (int64_t rows : {1, 37}) {
        INFO((dt == DType::F64 ? "f64" : "f32"), " rows ", rows);
        const Tensor x = randn({rows, 530}, dt), w = randn({530, 70}, dt);
        Tensor bias = randn({70}, dt);
        bias.select(0, 0).fill_(NAN);
        bias.select(0, 1).fill_(INFINITY);
        const Tensor got = bias.addmm(x, w, 0.0, 1.5);
        CHECK(got.isfinite().all().item<bool>());
        CHECK(max_error(got.to(DType::F32), reference(x.to(DType::F32), w.to(DType::F32), nullptr, 0, 1.5), 530) < 1e-4);
      }
    }
    // An empty inner dim: the output is beta * bias, a -0 bias staying -0 (as PyTorch's).
    const Tensor neg_zero = full({3}, -0.0, DType::F64), scaled = neg_zero.addmm(randn({2, 0}, DType::F64), randn({0, 3}, DType::F64));
    CHECK(std::signbit(scaled.index({1, 2}).item<double>()));
  }
  set_num_threads(1);
}

TEST_CASE("batched f32 products match the reference, and one and two threads agree bitwise") {
  manual_seed(13);
  const Tensor a = randn({3, 70, 600}), b = randn({3, 90, 600}).transpose(1, 2);
  set_num_threads(1);
  const Tensor one = a.matmul(b), big1 = randn({300, 700}).matmul(randn({700, 260}));
  manual_seed(13);
  randn({3, 70, 600}), randn({3, 90, 600});
  set_num_threads(2);
  const Tensor two = a.matmul(b), big2 = randn({300, 700}).matmul(randn({700, 260}));
  set_num_threads(1);
  for (int64_t i = 0; i < 3; ++i)
    CHECK(max_error(one.select(0, i), reference(a.select(0, i), b.select(0, i), nullptr, 0, 1), 600) < 1e-5);
  // Each output is summed in the same order whatever the split over threads: Ember's own
  // GEMM (f32, AVX2 and up), and Eigen's (f64; f32 elsewhere) in blocks that start where its
  // micro-kernels start. f64: a wide product (split by columns: x86's AVX2 micro-kernel takes
  // 12 columns, so blocks of 32 moved some to its narrower kernels) and a tall one (by rows).
  CHECK(one.eq(two).all().item<bool>());
  CHECK(big1.eq(big2).all().item<bool>());
  // 313 columns and 65 rows: a last block of one column or row would be a matrix-vector
  // product, summed in another order; 8 x 55586 over 9 on 3 threads: one of 2 columns,
  // small enough for Eigen's coefficient-wise product. 2 x 10000 over 120 (f32): under a
  // 16 KiB L1 (Eigen's default on ARM) Eigen cuts the 10000 columns into blocks of 11, not
  // of its 12-column micro-kernel.
  struct Shape {
    int64_t m, n, k;
    DType dt;
  };
  for (const Shape& s : {Shape{100, 300, 257, DType::F64}, Shape{300, 100, 257, DType::F64},
                         Shape{100, 313, 257, DType::F64}, Shape{65, 60, 600, DType::F64},
                         Shape{100, 313, 257, DType::F32}, Shape{2, 10000, 120, DType::F32},
                         Shape{8, 55586, 9, DType::F64}}) {
    INFO((s.dt == DType::F64 ? "f64" : "f32"), " m ", s.m, " n ", s.n, " k ", s.k);
    const Tensor x = randn({s.m, s.k}, s.dt), y = randn({s.k, s.n}, s.dt);
    set_num_threads(1);
    const Tensor single = x.matmul(y);
    for (int threads : {2, 3}) {
      set_num_threads(threads);
      CHECK(single.eq(x.matmul(y)).all().item<bool>());
    }
    set_num_threads(1);
  }
}

TEST_CASE("one row over a large weight splits its columns between threads, bitwise as one thread") {
  // 600 x 301 floats (705 KiB) is above the split threshold (also under an executor, which
  // counts 1 us a hand-off); 301 columns leave a partial block
  // and a tail of a four-column group; both GEMV kernels (contiguous columns, contiguous rows);
  // 1, 2 and 3 threads, and an executor claiming 512 (more threads than columns).
  manual_seed(16);
  const Tensor a1 = randn({1, 600});
  for (const Tensor& b1 : {randn({301, 600}).t(), randn({600, 301})}) {
    const Tensor c1 = randn({1, 301});
    std::vector<Tensor> got;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      got.push_back(c1.addmm(a1, b1, 0.5, -2.0));
      Tensor nan_c1 = full({1, 301}, NAN);
      CHECK(max_error(nan_c1.addmm(a1, b1, 0.0, 1.5), reference(a1, b1, nullptr, 0, 1.5), 600) < 1e-5);
    }
    set_num_threads(1);
    // An executor that claims more threads than there are columns (blocks stay >= 32 columns).
    Executor serial;
    serial.run = [](void*, void (*task)(void*, int64_t), void* task_ctx, int64_t n) {
      for (int64_t i = 0; i < n; ++i) task(task_ctx, i);
    };
    serial.concurrency = 512;
    set_executor(serial);
    got.push_back(c1.addmm(a1, b1, 0.5, -2.0));
    set_executor(Executor{});
    CHECK(max_error(got[0], reference(a1, b1, &c1, 0.5, -2.0), 600) < 1e-5);
    CHECK(got[0].eq(got[1]).all().item<bool>());
    CHECK(got[0].eq(got[2]).all().item<bool>());
    CHECK(got[0].eq(got[3]).all().item<bool>());
  }
}

TEST_CASE("one row times a narrow row-major matrix: the partial vector of columns, f32 and f64") {
  // x @ W with W's rows contiguous and n % (vector width) columns left over (all of them when
  // W is narrower than one vector): one masked vector of columns, four chains of rows. Column
  // counts on both sides of 8 and 16 floats (4 and 8 doubles), k with and without a remainder
  // of rows, a cascaded k (> 1024 rows), a strided x, beta 0 with NaN in C (C never read) and
  // beta != 0. f64 takes this kernel only for long dot products (k >= 4096).
  manual_seed(19);
  for (const int64_t n : {1, 3, 7, 8, 13, 15, 17, 23}) {
    for (const int64_t k : {3, 530, 1030}) {
      INFO("f32 n ", n, " k ", k);
      const Tensor x = randn({1, 2 * k}).narrow(1, 0, k), xs = randn({1, 2 * k}).index({Slice(), Slice(0, None, 2)});
      const Tensor w = randn({k, n}), c = randn({1, n});
      for (const Tensor& a : {x, xs}) {
        CHECK(max_error(c.addmm(a, w, 0.5, -2.0), reference(a, w, &c, 0.5, -2.0), k) < 1e-5);
        CHECK(max_error(full({1, n}, NAN).addmm(a, w, 0.0, 1.5), reference(a, w, nullptr, 0, 1.5), k) < 1e-5);
      }
    }
    INFO("f64 n ", n);
    const int64_t k = 4099;
    const Tensor x = randn({1, k}, DType::F64), w = randn({k, n}, DType::F64), c = randn({1, n}, DType::F64);
    const Tensor got = c.addmm(x, w, 0.5, -2.0).contiguous();
    const double *X = x.data_ptr<double>(), *Wp = w.data_ptr<double>(), *C = c.data_ptr<double>();
    for (int64_t j = 0; j < n; ++j) {
      long double dot = 0;
      for (int64_t i = 0; i < k; ++i) dot += static_cast<long double>(X[i]) * Wp[i * n + j];
      const double want = static_cast<double>(0.5L * C[j] - 2.0L * dot);
      CHECK(std::abs(got.data_ptr<double>()[j] - want) < 1e-12 * std::sqrt(double(k)));
    }
  }
}

TEST_CASE("linear with a bias on every GEMM path, against x @ w^T + b") {
  // The packed GEMM starts its sums from the bias (beta 1): with one inner slice (k <= 512)
  // the result must equal the product rounded and then the bias added, bitwise; with more
  // slices it is checked against the double reference. The other paths add the bias after
  // the product, bitwise the same at any k. Shapes reach the batch-1
  // GEMV (1 x 70), the wide transposed product (20 x 300; 43 x 517, written back by both
  // threads), the narrow transposed product (300 x 5), the packed GEMM with partial tiles
  // (37 x 70) and three inner slices (100 x 33 over 1100).
  manual_seed(15);
  struct Dims {
    int64_t m, n, k;
  };
  // (5 x 1 over 5000: a matrix times a long vector, through the GEMV rather than the packed
  // GEMM, so the bias must be added after it.)
  const Dims dims[] = {{1, 70, 530},  {20, 300, 256},   {43, 517, 480}, {300, 5, 200},
                       {37, 70, 500}, {100, 33, 1100}, {5, 1, 5000}};
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Dims& d : dims) {
      INFO("threads ", threads, " m ", d.m, " n ", d.n, " k ", d.k);
      const Tensor x = randn({d.m, d.k}), w = randn({d.n, d.k}), b = randn({d.n}) * 10;
      const Tensor y = linear(x, w, b);
      std::vector<double> want = reference(x, w.t(), nullptr, 0, 1);
      auto B = b.accessor<float, 1>();
      for (int64_t i = 0; i < d.m; ++i)
        for (int64_t j = 0; j < d.n; ++j) want[static_cast<size_t>(i * d.n + j)] += B[j];
      CHECK(max_error(y, want, d.k) < 1e-5);
      if (d.k <= 512 || d.m == 1) CHECK((y == x.matmul(w.t()) + b).all().item<bool>());
    }
    // f64 (Eigen's product, the bias added after it: bitwise even where Eigen cuts the inner
    // dimension into slices) and an empty inner dim.
    for (int64_t k : {40, 3000}) {
      const Tensor xd = randn({9, k}, DType::F64), wd = randn({7, k}, DType::F64), bd = randn({7}, DType::F64);
      CHECK((linear(xd, wd, bd) == xd.matmul(wd.t()) + bd).all().item<bool>());
    }
    const Tensor x0 = randn({4, 0}), w0 = randn({3, 0}), b0 = randn({3});
    CHECK((linear(x0, w0, b0) == b0.expand({4, 3})).all().item<bool>());
  }
  set_num_threads(1);
}

TEST_CASE("linear_relu equals relu(linear) bit for bit on every GEMM path") {
  // The ReLU runs in the packed GEMM's stores (full and partial tiles, the last of several
  // inner slices, the transposed products' write-back) and after the other paths (batch-1
  // GEMV, f64 through Eigen, f16, an empty inner dim): each must give ReLU's exact values,
  // NaN passing and -0 becoming +0. Compared as bytes, so a -0 would show.
  manual_seed(16);
  auto same_bytes = [](const Tensor& a, const Tensor& b) {
    const Tensor x = a.contiguous(), y = b.contiguous();
    if (x.sizes() != y.sizes() || x.dtype() != y.dtype()) return false;
    return std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.numel()) * itemsize(x.dtype())) == 0;
  };
  struct Dims {
    int64_t m, n, k;
  };
  const Dims dims[] = {{1, 70, 530}, {20, 300, 256}, {43, 517, 480}, {300, 5, 200},
                       {37, 70, 500}, {100, 33, 1100}, {6, 1, 1}, {128, 512, 64}, {5, 1, 5000}};
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Dims& d : dims) {
      INFO("threads ", threads, " m ", d.m, " n ", d.n, " k ", d.k);
      Tensor x = randn({d.m, d.k}), w = randn({d.n, d.k}), b = randn({d.n});
      x.index_put_({d.m - 1, 0}, std::numeric_limits<double>::quiet_NaN());  // a NaN row
      if (d.k == 1) x = -x.abs(), w = zeros({d.n, 1});  // products of -0: ReLU gives +0
      CHECK(same_bytes(linear_relu(x, w, b), linear(x, w, b).relu()));
      CHECK(same_bytes(linear_relu(x, w), linear(x, w).relu()));
    }
    const Tensor x3 = randn({2, 5, 40}), w3 = randn({30, 40}), b3 = randn({30});
    CHECK(same_bytes(linear_relu(x3, w3, b3), linear(x3, w3, b3).relu()));
    const Tensor xd = randn({9, 40}, DType::F64), wd = randn({7, 40}, DType::F64), bd = randn({7}, DType::F64);
    CHECK(same_bytes(linear_relu(xd, wd, bd), linear(xd, wd, bd).relu()));
    const Tensor xh = randn({9, 40}).to(DType::F16), wh = randn({7, 40}).to(DType::F16), bh = randn({7}).to(DType::F16);
    CHECK(same_bytes(linear_relu(xh, wh, bh), linear(xh, wh, bh).relu()));
    const Tensor x0 = randn({4, 0}), w0 = randn({3, 0}), b0 = randn({3});
    CHECK(same_bytes(linear_relu(x0, w0, b0), b0.expand({4, 3}).relu()));
  }
  set_num_threads(1);
}

TEST_CASE("column blocks of the packed GEMM: every column once, bitwise the same on any number of threads") {
  // The blocks are spread evenly over the threads in whole panels (64 columns in the AVX-512
  // build): 784 columns (the MNIST weight gradient, A transposed with a 512-float stride: split
  // by rows), 1000 columns over k = 512 with such an A (two blocks of packed B: split by
  // columns), 1100 columns over k = 512 (more blocks than threads), and narrow products
  // whose blocks would be under a panel each (70 and 130 columns on 3 threads; k = 1024, so
  // that they are large enough to be threaded). C starts as NaN with beta 0, so a column that
  // no block writes is caught.
  manual_seed(17);
  struct Case {
    Tensor a, b;
  };
  const std::vector<Case> cases = {{randn({128, 512}).t(), randn({128, 784})},
                                   {randn({512, 512}).t(), randn({512, 1000})},
                                   {randn({24, 512}), randn({512, 1100})},
                                   {randn({40, 1024}), randn({1024, 70})},
                                   {randn({40, 1024}), randn({1024, 130})}};
  for (const Case& c : cases) {
    const int64_t m = c.a.size(0), n = c.b.size(1), k = c.a.size(1);
    const std::vector<double> want = reference(c.a, c.b, nullptr, 0, 1);
    std::vector<Tensor> got;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      got.push_back(full({m, n}, NAN).addmm(c.a, c.b, 0.0, 1.0));
    }
    set_num_threads(1);
    Executor wide;  // more threads than panels: the blocks stay non-empty
    wide.run = [](void*, void (*task)(void*, int64_t), void* task_ctx, int64_t count) {
      for (int64_t i = 0; i < count; ++i) task(task_ctx, i);
    };
    wide.concurrency = 64;
    set_executor(wide);
    got.push_back(full({m, n}, NAN).addmm(c.a, c.b, 0.0, 1.0));
    set_executor(Executor{});
    CAPTURE(n);
    CHECK(max_error(got[0], want, k) < 1e-5);
    for (size_t i = 1; i < got.size(); ++i) {
      CHECK(max_error(got[i], want, k) < 1e-5);
      CHECK(got[0].eq(got[i]).all().item<bool>());
    }
  }
}

}  // namespace test_gemm
