// Zero-copy views to and from Eigen and xtensor: layouts map through strides exactly.

#include <doctest/doctest.h>
#include <ember/interop/eigen.hpp>
#include <ember/interop/xtensor.hpp>

#include <xtensor/xarray.hpp>
#include <xtensor/xview.hpp>

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
