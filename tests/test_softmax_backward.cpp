// The fused softmax / log_softmax derivative (ops::SoftmaxBackward, taken by a plain backward
// on the CPU) against the composite formula written with elementwise ops.

#include <ember/ember.hpp>

#include <doctest/doctest.h>

namespace test_softmax_backward {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// dx of softmax / log_softmax along `dim` for upstream gradient g, written with plain ops.
Tensor composite(const Tensor& g, const Tensor& y, int64_t dim, bool log) {
  if (log) return g - y.exp() * g.sum(Shape{dim}, true);
  Tensor gy = g * y;
  return gy - y * gy.sum(Shape{dim}, true);
}

}  // namespace

TEST_CASE("softmax and log_softmax backward match the composite formula") {
  manual_seed(5);
  struct Case {
    Shape shape;
    int64_t dim;
  };
  // Rows with vector tails (13, 37), a middle dim (strips of the inner dim with a tail), the
  // first dim, and a long row.
  const Case cases[] = {{{7, 13}, 1}, {{3, 37}, -1}, {{3, 5, 19}, 1}, {{4, 6, 5}, 0}, {{2, 3, 4, 5}, 2}, {{2, 1000}, 1}};
  for (DType t : {DType::F32, DType::F64})
    for (bool log : {false, true})
      for (const Case& c : cases) {
        INFO("dtype ", t, " log ", log, " shape ", c.shape, " dim ", c.dim);
        Tensor x = (randn(c.shape) * 3).to(t).requires_grad_();
        Tensor y = log ? x.log_softmax(c.dim) : x.softmax(c.dim);
        // A strided upstream gradient (a transposed view's contiguous copy, transposed back).
        Tensor g = randn(c.shape).to(t);
        Tensor gt = g.transpose(0, -1).contiguous().transpose(0, -1);
        y.backward(gt);
        const int64_t d = c.dim < 0 ? c.dim + static_cast<int64_t>(c.shape.size()) : c.dim;
        Tensor want = composite(g, y.detach(), d, log);
        const double tol = t == DType::F32 ? 1e-5 : 1e-12;
        CHECK((x.grad() - want).abs().amax().item<double>() < tol * (1 + want.abs().amax().item<double>()));
      }
}

TEST_CASE("softmax backward under create_graph stays differentiable") {
  manual_seed(6);
  const TensorOptions f64(DType::F64);
  Tensor x = randn({4, 9}, f64).requires_grad_();
  Tensor g = randn({4, 9}, f64), h = randn({4, 9}, f64);
  // Recorded backward (composite path), differentiated again.
  Tensor dx = autograd::grad<DefaultPolicy>({(x.softmax(1) * g).sum()}, {x}, {}, true, true)[0];
  REQUIRE(dx.requires_grad());
  Tensor second = autograd::grad<DefaultPolicy>({(dx * h).sum()}, {x})[0];
  // The same second derivative from the composite formula written out by hand.
  Tensor x2 = x.detach().requires_grad_();
  Tensor want = autograd::grad<DefaultPolicy>({(composite(g, x2.softmax(1), 1, false) * h).sum()}, {x2})[0];
  CHECK((second - want).abs().amax().item<double>() < 1e-12);
}

TEST_CASE("softmax_backward refuses mismatched inputs and is not itself differentiable") {
  Tensor y = randn({3, 4}).softmax(1), g = randn({3, 5});
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::SoftmaxBackward{1, false}, g.impl(), y.impl()),
                       doctest::Contains("[softmax_backward] gradient of shape [3, 5]"), Error);
  Tensor gi = randn({3, 4}).to(DType::F64);
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::SoftmaxBackward{1, true}, gi.impl(), y.impl()),
                       doctest::Contains("[log_softmax_backward] supports f32 and f64"), Error);
  Tensor yg = randn({3, 4}).requires_grad_();
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::SoftmaxBackward{1, false}, randn({3, 4}).impl(), yg.impl()),
                       doctest::Contains("not differentiable"), Error);
}

}  // namespace test_softmax_backward
