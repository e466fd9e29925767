// Zero-copy views to and from Eigen and xtensor: layouts map through strides exactly.

#include <doctest/doctest.h>
#include <ember/interop/eigen.hpp>
#include <ember/interop/xtensor.hpp>

#include <xtensor/xarray.hpp>
#include <xtensor/xview.hpp>

namespace test_interop {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

TEST_CASE("Eigen column-major matrix becomes a strided view, and back") {
  Eigen::MatrixXf m(2, 3);
  m << 1, 2, 3, 4, 5, 6;
  Tensor t = from_eigen(m);
  CHECK(t.sizes() == Shape{2, 3});
  CHECK(t.strides() == Shape{1, 2});  // column-major, not transposed
  CHECK(t.index({1, 2}).item<float>() == 6.0f);
  t.index({0, 1}).fill_(20.0f);  // zero-copy: writes reach Eigen
  CHECK(m(0, 1) == 20.0f);
  auto back = to_eigen<float>(t);
  CHECK(back(1, 0) == 4.0f);
  CHECK(back.data() == m.data());
  Tensor tt = t.t();  // a transposed view maps with its strides
  auto tm = to_eigen<float>(tt);
  CHECK(tm(2, 1) == 6.0f);
  CHECK_THROWS_AS(to_eigen<double>(t), Error);
  const Tensor t3 = zeros({2, 2, 2});
  CHECK_THROWS_AS(to_eigen<float>(t3), Error);
  // (to_eigen of a temporary does not compile: the map would outlive its memory.)
}

TEST_CASE("Eigen row-major map") {
  std::vector<double> buf{1, 2, 3, 4};
  Eigen::Map<Eigen::Matrix<double, 2, 2, Eigen::RowMajor>> m(buf.data());
  Tensor t = from_eigen(m);
  CHECK(t.strides() == Shape{2, 1});
  CHECK(t.index({1, 0}).item<double>() == 3.0);
}

TEST_CASE("xtensor round trip") {
  xt::xarray<float> a = {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}};
  Tensor t = from_xtensor(a);
  CHECK(t.sizes() == Shape{2, 3});
  CHECK(t.sum().item<float>() == 21.0f);
  Tensor tr = t.transpose(0, 1);
  auto x = to_xtensor<float>(tr);
  CHECK(x.shape()[0] == 3);
  CHECK(x(2, 1) == 6.0f);
  x(0, 0) = 10.0f;  // writes through to the original
  CHECK(a(0, 0) == 10.0f);
}

TEST_CASE("to_xtensor of views with gaps or repeats (a column, an expanded dim)") {
  Tensor m = arange(12).to(DType::F32).reshape({3, 4});
  Tensor col = m.select(1, 2);  // stride 4: elements 2, 6, 10
  auto x = to_xtensor<float>(col);
  REQUIRE(x.size() == 3);
  CHECK(x(0) == 2.f);
  CHECK(x(1) == 6.f);
  CHECK(x(2) == 10.f);
  x(1) = -1.f;  // still a view
  CHECK(m.index({1, 2}).item<float>() == -1.f);
  Tensor row = arange(3).to(DType::F32);
  Tensor e = row.unsqueeze(0).expand({4, 3});  // stride 0
  auto y = to_xtensor<float>(e);
  CHECK(y.size() == 12);
  CHECK(y(3, 2) == 2.f);
  Tensor narrowed = m.narrow(1, 1, 2);  // rows with a gap between them
  auto z = to_xtensor<float>(narrowed);
  CHECK(z(2, 1) == 10.f);
}

namespace {
int g_deleted = 0;
void count_delete(void*, void*) { ++g_deleted; }
}  // namespace

TEST_CASE("from_blob runs the deleter once, and never when it fails") {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  g_deleted = 0;
  {
    Tensor t = from_blob(buf, {2, 3}, {}, &count_delete);
    Tensor v = t.t();
    t = Tensor();
    CHECK(g_deleted == 0);  // the view keeps the memory
  }
  CHECK(g_deleted == 1);
  // Each failure leaves the memory with the caller: the deleter does not run.
  g_deleted = 0;
  CHECK_THROWS_AS(from_blob(buf, {2, 3}, {3, -1}, {}, &count_delete), Error);
  CHECK_THROWS_AS(from_blob(buf, {2, 3}, {1}, {}, &count_delete), Error);
  CHECK_THROWS_AS(from_blob(nullptr, {2, 3}, {}, &count_delete), Error);
  CHECK_THROWS_WITH_AS(from_blob(buf, {2, 3}, TensorOptions(DType::I32).requires_grad(true), &count_delete),
                       doctest::Contains("[from_blob] only floating-point tensors can require gradients"), Error);
  CHECK(g_deleted == 0);
}

TEST_CASE("tensor() from lists keeps every value of its C++ type") {
  Tensor u = tensor({3000000000u, 1u});  // unsigned 32-bit values beyond int32
  CHECK(u.dtype() == DType::I64);
  CHECK(u[0].item<int64_t>() == 3000000000LL);
  Tensor big = tensor<uint64_t>({uint64_t(1) << 62});
  CHECK(big[0].item<int64_t>() == (int64_t(1) << 62));
  CHECK_THROWS_WITH_AS(tensor<uint64_t>({uint64_t(1) << 63}), doctest::Contains("does not fit int64"), Error);
  Tensor ld = tensor({0.1L}, TensorOptions(DType::F64));  // through double, not float
  CHECK(ld[0].item<double>() == 0.1);
  CHECK(tensor({1.0L}).dtype() == DType::F64);
  // Nested lists of every element type, bool included.
  Tensor b = tensor({{true, false}, {false, true}});
  CHECK(b.dtype() == DType::Bool);
  CHECK(b.sizes() == Shape{2, 2});
  CHECK(b.index({1, 1}).item<bool>());
  Tensor uu = tensor({{1u, 2u}, {3u, 4000000000u}});
  CHECK(uu.index({1, 1}).item<int64_t>() == 4000000000LL);
  CHECK(tensor({{1LL, 2LL}}).sizes() == Shape{1, 2});
  // Empty lists: {} is [0] (torch.tensor([])), {{}} is [1, 0].
  Tensor empty = tensor<float>({});
  CHECK(empty.sizes() == Shape{0});
  CHECK(empty.dtype() == DType::F32);
  CHECK(tensor<float>({{}}).sizes() == Shape{1, 0});
}

TEST_CASE("negative strides are refused by the function the user called") {
  float buf[4] = {1, 2, 3, 4};
  // Column-major 2x2 whose columns run backwards through memory.
  Eigen::Map<Eigen::MatrixXf, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>> m(
      buf + 2, 2, 2, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(-2, 1));
  CHECK_THROWS_WITH_AS(from_eigen(m), doctest::Contains("[from_eigen] negative stride -2"), Error);
  xt::xarray<float> a = {1.f, 2.f, 3.f, 4.f};
  auto reversed = xt::view(a, xt::range(3, xt::placeholders::_, -1));
  CHECK_THROWS_WITH_AS(from_xtensor(reversed), doctest::Contains("[from_xtensor] negative stride"), Error);
  CHECK_THROWS_WITH_AS(from_blob(buf, {2}, {-1}), doctest::Contains("[from_blob] negative stride -1"), Error);
}

}  // namespace test_interop
