// The autograd engine and tensor API: leaves, grad_fn names, broadcasting, accumulation,
// retain_graph, create_graph (higher order), autograd::grad, hooks, retain_grad, guards,
// version counters, in-place rules (views included) and anomaly detection.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <cmath>
#include <vector>

namespace test_autograd {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  const double* p = h.data_ptr<double>();
  return std::vector<double>(p, p + h.numel());
}

void check_vals(const Tensor& t, std::vector<double> expect, double tol = 1e-12) {
  REQUIRE(t.defined());
  std::vector<double> v = vals(t);
  REQUIRE(v.size() == expect.size());
  for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == doctest::Approx(expect[i]).epsilon(tol));
}

Tensor leaf(std::initializer_list<double> v) { return tensor<double>(v).requires_grad_(); }

}  // namespace

TEST_CASE("autograd: leaves, grad_fn names and a simple backward") {
  Tensor x = leaf({1, 2, 3});
  CHECK(x.is_leaf());
  CHECK(x.requires_grad());
  CHECK(!x.grad_fn());
  Tensor y = x * x;
  CHECK(!y.is_leaf());
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name() == "MulBackward");
  Tensor s = y.sum();
  CHECK(s.grad_fn()->name() == "SumBackward");
  CHECK(x.log_softmax(0).grad_fn()->name() == "LogSoftmaxBackward");
  s.backward();
  check_vals(x.grad(), {2, 4, 6});
  // Non-differentiable outputs never require grad.
  CHECK(!x.gt(1.0).requires_grad());
  CHECK(!x.argmax().requires_grad());
  auto [v, i] = x.max(0);
  CHECK(v.requires_grad());
  CHECK(!i.requires_grad());
  CHECK_THROWS_WITH_AS(tensor<int64_t>({1, 2}).requires_grad_(), doctest::Contains("only floating-point"), Error);
}

TEST_CASE("autograd: broadcast gradients are summed back to each input's shape") {
  Tensor a = randn({3, 1}, DType::F64).requires_grad_();
  Tensor b = randn({4}, DType::F64).requires_grad_();
  (a * b).sum().backward();
  REQUIRE(a.grad().sizes() == Shape{3, 1});
  REQUIRE(b.grad().sizes() == Shape{4});
  double sb = b.sum().item<double>(), sa = a.sum().item<double>();
  for (double v : vals(a.grad())) CHECK(v == doctest::Approx(sb));
  for (double v : vals(b.grad())) CHECK(v == doctest::Approx(sa));
}

TEST_CASE("autograd: gradients accumulate across paths and across backward calls") {
  Tensor x = leaf({2.0});
  Tensor y = x * 3.0 + x * x;  // dy/dx = 3 + 2x = 7
  y.backward({}, true);
  check_vals(x.grad(), {7});
  y.backward();  // retained graph: accumulates
  check_vals(x.grad(), {14});
  x.zero_grad();
  CHECK(!x.grad().defined());
}

TEST_CASE("autograd: a second backward through a freed graph is a clear error") {
  Tensor x = leaf({1, 2});
  Tensor y = (x * x).sum();
  y.backward();
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("second time"), Error);
}

TEST_CASE("autograd: backward needs a gradient for outputs with more than one element") {
  Tensor x = leaf({1, 2});
  CHECK_THROWS_WITH_AS((x * 2.0).backward(), doctest::Contains("one-element"), Error);
  Tensor y = x * 2.0;
  y.backward(tensor<double>({1.0, 10.0}));
  check_vals(x.grad(), {2, 20});
  CHECK_THROWS_WITH_AS(tensor<double>({1.0}).backward(), doctest::Contains("does not require grad"), Error);
  Tensor z = x * 2.0;
  CHECK_THROWS_WITH_AS(z.backward(tensor<double>({1.0, 2.0, 3.0})), doctest::Contains("shape"), Error);
}

TEST_CASE("autograd: create_graph gives higher-order derivatives") {
  Tensor x = leaf({0.5, -1.5, 2.0});
  Tensor y = (x * x * x).sum();  // dy/dx = 3x^2, d2y/dx2 = 6x
  auto g = autograd::grad<DefaultPolicy>({y}, {x}, {}, true, true);
  check_vals(g[0], {0.75, 6.75, 12});
  REQUIRE(g[0].requires_grad());
  auto h = autograd::grad<DefaultPolicy>({g[0].sum()}, {x});
  check_vals(h[0], {3, -9, 12});
  // Hessian-vector product of f(x) = sum(sin(x) * x): H = diag(2 cos x - x sin x).
  Tensor z = leaf({0.3, 1.1});
  Tensor f = (z.sin() * z).sum();
  Tensor gz = autograd::grad<DefaultPolicy>({f}, {z}, {}, true, true)[0];
  Tensor v = tensor<double>({1.0, -2.0});
  Tensor hv = autograd::grad<DefaultPolicy>({(gz * v).sum()}, {z})[0];
  std::vector<double> zz = {0.3, 1.1}, vv = {1.0, -2.0};
  check_vals(hv, {(2 * std::cos(zz[0]) - zz[0] * std::sin(zz[0])) * vv[0],
                  (2 * std::cos(zz[1]) - zz[1] * std::sin(zz[1])) * vv[1]},
             1e-10);
}

TEST_CASE("autograd::grad: returns gradients without touching .grad(); allow_unused") {
  Tensor a = leaf({1, 2}), b = leaf({3, 4}), unused = leaf({5});
  Tensor y = (a * b).sum();
  auto g = autograd::grad<DefaultPolicy>({y}, {a, b}, {}, true);
  check_vals(g[0], {3, 4});
  check_vals(g[1], {1, 2});
  CHECK(!a.grad().defined());
  CHECK_THROWS_WITH_AS(autograd::grad<DefaultPolicy>({y}, {unused}, {}, true), doctest::Contains("allow_unused"),
                       Error);
  auto u = autograd::grad<DefaultPolicy>({y}, {a, unused}, {}, false, false, true);
  check_vals(u[0], {3, 4});
  CHECK(!u[1].defined());
}

TEST_CASE("autograd: gradients with respect to a non-leaf") {
  Tensor x = leaf({1, 2});
  Tensor h = x * 2.0;
  Tensor y = (h * h).sum();
  auto g = autograd::grad<DefaultPolicy>({y}, {h});
  check_vals(g[0], {4, 8});
}

TEST_CASE("autograd: NoGradGuard, EnableGradGuard, InferenceModeGuard and detach") {
  Tensor x = leaf({1, 2});
  {
    autograd::NoGradGuard ng;
    Tensor y = x * 2.0;
    CHECK(!y.requires_grad());
    {
      autograd::EnableGradGuard eg;
      CHECK((x * 2.0).requires_grad());
    }
  }
  {
    autograd::InferenceModeGuard im;
    Tensor y = x * 2.0;
    CHECK(!y.requires_grad());
    uint32_t v0 = y.version();
    y.add_(1.0);
    CHECK(y.version() == v0);  // inference tensors are not versioned
  }
  Tensor t;
  {
    autograd::InferenceModeGuard im;
    t = ones({2}, DType::F64);
  }
  CHECK_THROWS_WITH_AS((x * t).sum().backward(), doctest::Contains("InferenceModeGuard"), Error);
  Tensor d = (x * 3.0).detach();
  CHECK(!d.requires_grad());
  CHECK(d.is_leaf());
  check_vals(d, {3, 6});
}

TEST_CASE("autograd: tensor hooks see and may replace gradients; retain_grad keeps a non-leaf's") {
  Tensor x = leaf({1, 2});
  std::vector<double> seen;
  x.register_hook([&](const Tensor& g) { seen = vals(g); });
  Tensor h = x * 3.0;
  h.register_hook([](const Tensor& g) { return g * 10.0; });
  h.retain_grad();
  CHECK(h.retains_grad());
  (h * h).sum().backward();
  // dL/dh = 2h = [6, 12]; retain_grad runs after the hook registered before it
  check_vals(h.grad(), {60, 120});
  CHECK(seen == std::vector<double>{180, 360});
  check_vals(x.grad(), {180, 360});
}

TEST_CASE("autograd: index_put_ refuses a leaf that requires grad and bumps the version of saved tensors") {
  Tensor w = randn({4, 2}).requires_grad_();
  CHECK_THROWS_WITH_AS(w.index_put_({tensor<int64_t>({1})}, 0.0), doctest::Contains("[index_put_] a leaf tensor"),
                       Error);
  {
    autograd::NoGradGuard ng;  // as optimisers and replay buffers do
    w.index_put_({tensor<int64_t>({1})}, 0.0);
  }
  CHECK(w.index({1, 0}).item<float>() == 0.f);
  // Recorded calls (values that require grad) name index_put_ in their errors too.
  Tensor h = w.detach() * 2.0;
  CHECK_THROWS_WITH_AS(h.index_put_({tensor<int64_t>({9})}, w.index({0})), doctest::Contains("[index_put_]"), Error);
  Tensor e = zeros({2}).expand({4, 2});
  CHECK_THROWS_WITH_AS(e.index_put_({tensor<int64_t>({0})}, w.index({0})),
                       doctest::Contains("[index_put_] destination of shape [4, 2] has stride 0"), Error);
  Tensor y = w.exp();  // saves its output
  Tensor z = y.sum();
  y.index_put_({tensor<int64_t>({0})}, 1.0);
  CHECK_THROWS_WITH_AS(z.backward(), doctest::Contains("modified by an in-place operation"), Error);
}

TEST_CASE("autograd: modifying a saved tensor in place makes backward fail, naming versions") {
  Tensor x = leaf({1, 2});
  Tensor y = x.exp();  // saves its output
  Tensor z = y.sum();
  {
    autograd::NoGradGuard ng;
    y.mul_(2.0);
  }
  CHECK_THROWS_WITH_AS(z.backward(), doctest::Contains("modified by an in-place operation"), Error);
  Tensor a = leaf({1, 2});
  Tensor b = a * 1.0;
  Tensor c = b.sin();  // saves b
  b.add_(1.0);
  try {
    c.sum().backward();
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("SinBackward") != std::string::npos);
    CHECK(m.find("version") != std::string::npos);
  }
}

TEST_CASE("autograd: in-place ops on leaves that require grad are refused") {
  Tensor x = leaf({1, 2});
  CHECK_THROWS_WITH_AS(x.add_(1.0), doctest::Contains("leaf tensor that requires grad"), Error);
  CHECK_THROWS_WITH_AS(x.narrow(0, 0, 1).mul_(2.0), doctest::Contains("view"), Error);
  CHECK_THROWS_WITH_AS(x.fill_(0.0), doctest::Contains("leaf"), Error);
  {
    autograd::NoGradGuard ng;
    x.add_(1.0);  // optimiser-style update
  }
  check_vals(x, {2, 3});
}

TEST_CASE("autograd: in-place ops on non-leaves and through views keep gradients right") {
  Tensor x = leaf({1, 2, 3, 4});
  Tensor h = x * 1.0;
  h.mul_(3.0);
  h.exp_();
  h.sum().backward();
  std::vector<double> xs = {1, 2, 3, 4};
  std::vector<double> expect;
  for (double v : xs) expect.push_back(3 * std::exp(3 * v));
  check_vals(x.grad(), expect, 1e-10);

  Tensor w = leaf({1, 2, 3, 4});
  Tensor k = w * 1.0;
  k.narrow(0, 1, 2).mul_(2.0);
  check_vals(k, {1, 4, 6, 4});
  (k * k).sum().backward();  // k = [w0, 2w1, 2w2, w3] -> d/dw = 2k * [1, 2, 2, 1]
  check_vals(w.grad(), {2, 16, 24, 8});

  // copy_ into a slice of a tensor that does not require grad makes it require grad.
  Tensor src = leaf({5, 6});
  Tensor buf = zeros({2, 2}, DType::F64) * 1.0;
  Tensor q = leaf({0.0});
  Tensor base = buf + q;  // requires grad through q
  base.select(0, 1).copy_(src);
  (base * base).sum().backward();
  check_vals(src.grad(), {10, 12});
  check_vals(q.grad(), {0});  // q's contribution: row 0 (0 + q) twice -> 2*(0+0)*2 = 0

  // copy_ into a view of a plain buffer: the buffer takes the gradient path.
  Tensor xc = leaf({1, 2});
  Tensor buf2 = zeros({4}, DType::F64);
  buf2.narrow(0, 1, 2).copy_(xc * 3.0);
  CHECK(buf2.requires_grad());
  (buf2 * buf2).sum().backward();
  check_vals(xc.grad(), {18, 36});
  // A later write through an older view of the same buffer replaces that history again.
  Tensor xr = leaf({1, 2});
  Tensor buf3 = zeros({4}, DType::F64);
  Tensor old_view = buf3.narrow(0, 0, 2);
  buf3.narrow(0, 0, 2).copy_(xr);
  old_view.fill_(5.0);
  buf3.sum().backward();
  check_vals(xr.grad(), {0, 0});  // its values were overwritten: no gradient reaches xr

  // x.mul_(x): the operand aliases the target.
  Tensor s = leaf({3.0});
  Tensor t = s * 1.0;
  t.mul_(t);
  t.backward();
  check_vals(s.grad(), {6});
}

TEST_CASE("autograd: views made before an in-place write see the write (PyTorch's values)") {
  // The base written in place: v = y[1:3] was made before y.mul_(2), so v = 2 x[1:3].
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 1.0;
  Tensor v = y.narrow(0, 1, 2);
  y.mul_(2.0);
  check_vals(v, {4, 6});
  (v * 1.0).sum().backward();
  check_vals(x.grad(), {0, 2, 2});

  // A sibling view written in place: w = y[1:3] sees y[0:2] *= x[0:2] at y[1].
  Tensor x2 = leaf({1, 2, 3});
  Tensor y2 = x2 * 1.0;
  Tensor w = y2.narrow(0, 1, 2);
  y2.narrow(0, 0, 2).mul_(x2.narrow(0, 0, 2));
  check_vals(w, {4, 3});
  (w * 1.0).sum().backward();
  check_vals(x2.grad(), {0, 4, 1});

  // A view of a view written in place, then the outer view used.
  Tensor x3 = leaf({1, 2, 3, 4});
  Tensor y3 = x3 * 1.0;
  Tensor v3 = y3.narrow(0, 1, 3);
  v3.narrow(0, 0, 2).mul_(3.0);
  (v3 * 1.0).sum().backward();
  check_vals(x3.grad(), {0, 3, 3, 1});

  // The view's history is rebuilt once, then reused; and a write under no-grad (which does not
  // change the base's history) leaves it alone.
  Tensor x4 = leaf({1, 2, 3});
  Tensor y4 = x4 * 1.0;
  Tensor v4 = y4.narrow(0, 0, 2);
  y4.mul_(3.0);
  Tensor a = v4 * 1.0, b = v4 * 2.0;
  CHECK(a.grad_fn()->next[0].fn.get() == b.grad_fn()->next[0].fn.get());
  {
    autograd::NoGradGuard ng;
    y4.add_(1.0);
  }
  Tensor c = v4 * 1.0;
  CHECK(c.grad_fn()->next[0].fn.get() == a.grad_fn()->next[0].fn.get());
  (a + b + c).sum().backward();
  check_vals(x4.grad(), {12, 12, 0});

  // retain_grad and hooks on a view made before the write land on its rebuilt history.
  Tensor x6 = leaf({1, 2, 3});
  Tensor y6 = x6 * 1.0;
  Tensor v6 = y6.narrow(0, 1, 2);
  y6.mul_(2.0);
  int hook_calls = 0;
  v6.retain_grad();
  v6.register_hook([&](const Tensor&) { ++hook_calls; });
  CHECK(v6.grad_fn()->name() == "AsStridedBackward");
  (v6 * 3.0).sum().backward();
  check_vals(x6.grad(), {0, 6, 6});
  check_vals(v6.grad(), {3, 3});
  CHECK(hook_calls == 1);

  // The base filled with a constant: no gradient reaches x5 through the older view.
  Tensor x5 = leaf({1, 2});
  Tensor y5 = x5 * 1.0;
  Tensor v5 = y5.narrow(0, 0, 1);
  y5.fill_(7.0);
  ((v5 * 2.0).sum() + x5.sum()).backward();
  check_vals(x5.grad(), {1, 1});
}

TEST_CASE("autograd: DetectAnomalyGuard names the node that produced NaN or Inf") {
  Tensor x = leaf({0.0, 1.0});
  Tensor y = x.sqrt().sum();
  {
    autograd::DetectAnomalyGuard guard;
    CHECK_THROWS_WITH_AS(y.backward({}, true), doctest::Contains("SqrtBackward"), Error);
  }
  y.backward();  // without the guard: inf, silently, as in PyTorch
  CHECK(std::isinf(vals(x.grad())[0]));
}

TEST_CASE("autograd: gradients reach leaves through views, reductions and matmul") {
  Tensor a = randn({3, 4}, DType::F64).requires_grad_();
  Tensor b = randn({4, 2}, DType::F64).requires_grad_();
  Tensor y = a.t().t().matmul(b).relu().sum();
  y.backward();
  Tensor mask = a.detach().matmul(b.detach()).gt(0.0).to(DType::F64);
  Tensor ga = mask.matmul(b.detach().t()), gb = a.detach().t().matmul(mask);
  std::vector<double> e1 = vals(ga), e2 = vals(gb);
  check_vals(a.grad(), e1, 1e-10);
  check_vals(b.grad(), e2, 1e-10);
}

TEST_CASE("autograd: autograd::backward over several outputs, set_grad, detach_ and zero_grad(false)") {
  Tensor x = leaf({1, 2});
  Tensor a = (x * x).sum(), b = x * 3.0;
  autograd::backward<DefaultPolicy>({a, b}, {Tensor(), tensor<double>({1.0, 1.0})});
  check_vals(x.grad(), {5, 7});  // 2x + 3
  x.zero_grad(false);
  check_vals(x.grad(), {0, 0});
  x.set_grad(tensor<double>({1.0, 1.0}));
  check_vals(x.grad(), {1, 1});
  CHECK_THROWS_WITH_AS(x.set_grad(tensor<double>({1.0})), doctest::Contains("[set_grad]"), Error);
  Tensor h = x * 2.0;
  CHECK(h.requires_grad());
  h.detach_();
  CHECK(!h.requires_grad());
  CHECK(h.is_leaf());
}

}  // namespace test_autograd
