// Custom differentiable functions (autograd::Function), concurrent backward on several
// threads, a long training-style loop whose memory must stay flat, and the engine's errors.

#include <doctest/doctest.h>
#include <ember/autograd/function.hpp>
#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace test_autograd_function {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using autograd::AutogradContext;

namespace {

struct ScaledTanh : autograd::Function<ScaledTanh> {
  static constexpr const char* name = "ScaledTanh";
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double k) {
    Tensor y = (x * k).tanh();
    ctx->save_for_backward({y});
    ctx->saved_data["k"] = k;
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    Tensor y = ctx->get_saved_variables()[0];
    double k = std::any_cast<double>(ctx->saved_data["k"]);
    return {g[0] * (1.0 - y * y) * k, Tensor()};
  }
};

/// Two outputs, one of them non-differentiable; checks needs_input_grad.
struct MulAndSign : autograd::Function<MulAndSign> {
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    Tensor s = a.sign();
    ctx->mark_non_differentiable({s});
    return {a * b, s};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    auto v = ctx->get_saved_variables();
    Tensor ga = ctx->needs_input_grad(0) ? g[0] * v[1] : Tensor();
    Tensor gb = ctx->needs_input_grad(1) ? g[0] * v[0] : Tensor();
    return {ga, gb};
  }
};

/// Returns a gradient of the wrong shape or dtype (the engine must catch it).
struct BadShape : autograd::Function<BadShape> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {ones({5}, DType::F64)}; }
};
struct BadDType : autograd::Function<BadDType> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0].to(DType::I64)}; }
};

struct WrongCount : autograd::Function<WrongCount> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0], g[0]}; }
};

/// x *= k in place: marks x dirty and returns it.
struct MulInPlace : autograd::Function<MulInPlace> {
  static constexpr const char* name = "MulInPlace";
  static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
    x.mul_(k);
    ctx->mark_dirty({x});
    ctx->saved_data["k"] = k;
    return x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    return {g[0] * std::any_cast<double>(ctx->saved_data["k"]), Tensor()};
  }
};
/// x = exp(x) in place, saving the modified x (an output) for backward.
struct ExpInPlace : autograd::Function<ExpInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.exp_();
    ctx->mark_dirty({x});
    ctx->save_for_backward({x});
    return x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};
/// Modifies x in place and marks it dirty and non-differentiable: returned without history.
struct DoubleNonDiff : autograd::Function<DoubleNonDiff> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x, const Tensor& y) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    ctx->mark_non_differentiable({x});
    return {x, y * 2.0};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {Tensor(), g[1] * 2.0}; }
};
/// x *= 2 in place and marked dirty, returned with a second, new output x * x (4 x0^2 in the
/// original x0), computed from the saved modified x.
struct DoubleAndSquare : autograd::Function<DoubleAndSquare> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    ctx->save_for_backward({x});
    return {x, x * x};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    // d(2 x0)/dx0 = 2; d(4 x0^2)/dx0 = 8 x0 = 4 x (x the saved, doubled values).
    return {g[0] * 2.0 + g[1] * ctx->get_saved_variables()[0] * 4.0};
  }
};
/// Marks x dirty but returns another tensor (PyTorch refuses this).
struct DirtyNotReturned : autograd::Function<DirtyNotReturned> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x * 1.0;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0] * 2.0}; }
};

std::vector<double> vals(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

}  // namespace

TEST_CASE("autograd::Function: custom forward/backward, saved tensors and saved data") {
  Tensor x = tensor<double>({-0.5, 0.25, 1.0}).requires_grad_();
  Tensor y = ScaledTanh::apply(x, 2.0);
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name() == "ScaledTanhBackward");
  y.sum().backward();
  std::vector<double> g = vals(x.grad());
  std::vector<double> xs = {-0.5, 0.25, 1.0};
  for (size_t i = 0; i < 3; ++i) CHECK(g[i] == doctest::Approx(2.0 / std::pow(std::cosh(2.0 * xs[i]), 2)));
  // Its backward is made of differentiable ops: second derivatives work too.
  auto f = [](const std::vector<Tensor>& in) { return ScaledTanh::apply(in[0], 1.5); };
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, {x.detach().requires_grad_()}, {}, &why), why);
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, {x.detach().requires_grad_()}, {}, &why), why);
}

TEST_CASE("autograd::Function: several outputs, mark_non_differentiable, needs_input_grad") {
  Tensor a = tensor<double>({1.0, -2.0}).requires_grad_();
  Tensor b = tensor<double>({3.0, 4.0});
  auto out = MulAndSign::apply(a, b);
  CHECK(out[0].requires_grad());
  CHECK(!out[1].requires_grad());
  out[0].sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{3.0, 4.0});
  // Without any input requiring grad nothing is recorded.
  auto plain = MulAndSign::apply(b, b);
  CHECK(!plain[0].requires_grad());
}

TEST_CASE("autograd::Function: mark_dirty gives the modified input the function's history (PyTorch 1.13's results)") {
  Tensor a = tensor<double>({1.0, 2.0, 3.0}).requires_grad_();
  Tensor x = a * 1.0;
  Tensor y = MulInPlace::apply(x, 2.0);
  CHECK(&y.impl() == &x.impl());  // x itself, not an alias
  REQUIRE(x.grad_fn());
  CHECK(x.grad_fn()->name() == "MulInPlaceBackward");
  CHECK(vals(x) == std::vector<double>{2.0, 4.0, 6.0});
  (y * y).sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{8.0, 16.0, 24.0});
  // A view: its root's history passes the unwritten part through and the written part to
  // the function.
  a.zero_grad();
  Tensor b = a * 1.0;
  MulInPlace::apply(b.narrow(0, 0, 2), 3.0);
  CHECK(vals(b) == std::vector<double>{3.0, 6.0, 3.0});
  b.sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{3.0, 3.0, 1.0});
  // A node that saved the old value sees the modification.
  Tensor c = a * 1.0;
  Tensor s = c.sin();
  MulInPlace::apply(c, 2.0);
  CHECK_THROWS_WITH_AS(s.sum().backward(), doctest::Contains("modified by an in-place operation"), Error);
  // A saved output that was modified in place: first and second derivatives of exp.
  auto f = [](const std::vector<Tensor>& in) { return ExpInPlace::apply(in[0] * 1.0); };
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck(f, {tensor<double>({-0.5, 0.3}).requires_grad_()}, {}, &why), why);
  CHECK_MESSAGE(autograd::gradgradcheck(f, {tensor<double>({-0.5, 0.3}).requires_grad_()}, {}, &why), why);
  // Marked but not returned.
  CHECK_THROWS_WITH_AS(DirtyNotReturned::apply(a * 1.0), doctest::Contains("was not returned"), Error);
  // A leaf that requires grad must not be modified while recording (as for built-in in-place
  // ops; its values are already changed, as in PyTorch). Under NoGradGuard it may, and, as
  // when nothing is recorded at all, the result is an alias without history (PyTorch's too).
  Tensor leaf = tensor<double>({1.0}).requires_grad_();
  CHECK_THROWS_WITH_AS(MulInPlace::apply(leaf, 2.0),
                       doctest::Contains("[MulInPlace] a leaf tensor that requires grad (shape [1])"), Error);
  {
    autograd::NoGradGuard ng;
    Tensor r = MulInPlace::apply(leaf, 2.0);
    CHECK(&r.impl() != &leaf.impl());
    CHECK(!r.requires_grad());
  }
  CHECK(vals(leaf) == std::vector<double>{4.0});
  CHECK(leaf.is_leaf());
  Tensor plain = tensor<double>({1.0});
  Tensor r = MulInPlace::apply(plain, 3.0);
  CHECK(&r.impl() != &plain.impl());
  CHECK(vals(plain) == std::vector<double>{3.0});
  // Dirty and non-differentiable: returned without history; the input keeps its own.
  Tensor d = a * 1.0, other = tensor<double>({1.0}).requires_grad_();
  const std::string before = d.grad_fn()->name();
  auto outs = DoubleNonDiff::apply(d, other);
  CHECK(!outs[0].requires_grad());
  CHECK(&outs[0].impl() != &d.impl());
  CHECK(d.grad_fn()->name() == before);
  CHECK(outs[1].requires_grad());
}

TEST_CASE("autograd::Function: a dirty view among several outputs rebases its root") {
  // PyTorch 1.13 refuses a modified view in a Function with more than one output; Ember
  // accepts it, as the view's root gets a CopySlices node as for one output.
  Tensor a = tensor<double>({0.5, -1.0, 2.0, 3.0}).requires_grad_();
  Tensor base = a * 1.0;
  auto outs = DoubleAndSquare::apply(base.narrow(0, 1, 2));
  CHECK(vals(base) == std::vector<double>{0.5, -2.0, 4.0, 3.0});
  CHECK(vals(outs[1]) == std::vector<double>{4.0, 16.0});
  const Tensor w = tensor<double>({1.0, 2.0, 3.0, 4.0});
  ((base * w).sum() + outs[0].sum() * 5.0 + outs[1].sum()).backward();
  // a1, a2: 2 w (through base) + 2 * 5 (outs[0]) + 8 a (outs[1]).
  CHECK(vals(a.grad()) == std::vector<double>{1.0, 4.0 + 10.0 - 8.0, 6.0 + 10.0 + 16.0, 4.0});
  auto f = [](const std::vector<Tensor>& in) {
    Tensor b = in[0] * 1.0;
    auto o = DoubleAndSquare::apply(b.narrow(0, 1, 2));
    return cat({b, o[0] * 3.0, o[1]}, 0);
  };
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck(f, {a.detach().requires_grad_()}, {}, &why), why);
  CHECK_MESSAGE(autograd::gradgradcheck(f, {a.detach().requires_grad_()}, {}, &why), why);
}

TEST_CASE("autograd::Function: a wrong number of gradients is a clear error") {
  Tensor x = tensor<double>({1.0}).requires_grad_();
  Tensor y = WrongCount::apply(x);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("returned 2 gradients; expected 1"), Error);
}

TEST_CASE("autograd: the engine checks every gradient against the tensor it is for") {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  CHECK_THROWS_WITH_AS(BadShape::apply(x).sum().backward(),
                       doctest::Contains("CustomFunctionBackward returned an invalid gradient at index 0: got shape [5]"),
                       Error);
  CHECK_THROWS_WITH_AS(BadDType::apply(x).sum().backward(), doctest::Contains("of dtype i64"), Error);
  // A broadcastable gradient is reduced with sum_to: [3, 2] for a [2] input.
  struct Wide : autograd::Function<Wide> {
    static Tensor forward(AutogradContext*, const Tensor& t) { return t * 1.0; }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
      return {g[0].expand({3, 2}).contiguous()};
    }
  };
  Wide::apply(x).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{3.0, 3.0});
}

TEST_CASE("autograd: factories honour TensorOptions::requires_grad") {
  CHECK(zeros({2}, TensorOptions(DType::F64).requires_grad(true)).requires_grad());
  CHECK(randn({2}, TensorOptions().requires_grad(true)).is_leaf());
  CHECK(tensor<double>({1.0, 2.0}, TensorOptions().requires_grad(true)).requires_grad());
  CHECK(!ones({2}).requires_grad());
  CHECK_THROWS_WITH_AS(arange(3, TensorOptions().requires_grad(true)), doctest::Contains("floating-point"), Error);
}

TEST_CASE("autograd: independent graphs run backward concurrently on several threads") {
  constexpr int kThreads = 4, kIters = 200;
  Tensor shared = tensor<double>({1.0, 2.0}).requires_grad_();
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        double k = t + 1 + i % 3;
        Tensor x = full({3}, k, DType::F64).requires_grad_();
        Tensor y = (x * x * x).sum() + (shared * k).sum();  // dy/dx = 3x^2
        y.backward();
        for (double v : vals(x.grad()))
          if (v != 3 * k * k) ++bad;
      }
    });
  }
  for (auto& th : pool) th.join();
  CHECK(bad.load() == 0);
  // The shared leaf accumulated every thread's contribution exactly once.
  double expect = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kIters; ++i) expect += t + 1 + i % 3;
  CHECK(vals(shared.grad()) == std::vector<double>{expect, expect});
}

TEST_CASE("autograd: 10,000 training steps keep the allocator's bytes in use flat") {
  manual_seed(3);
  Tensor w = (randn({8, 8}) * 0.1).requires_grad_();
  Tensor b = zeros({8}).requires_grad_();
  Tensor x = randn({4, 8}), target = randn({4, 8});
  auto step = [&] {
    Tensor h = x.matmul(w) + b;
    h.register_hook([](const Tensor& g) { return g * 1.0; });  // hooks must not leak graphs
    h.retain_grad();
    Tensor loss = (h.tanh() - target).square().mean();
    loss.backward();
    {
      autograd::NoGradGuard ng;
      w.sub_(w.grad() * 0.01);
      b.sub_(b.grad() * 0.01);
    }
    w.zero_grad();
    b.zero_grad();
  };
  for (int i = 0; i < 100; ++i) step();
  int64_t after_warmup = allocator_stats(kCPU).bytes_in_use;
  for (int i = 0; i < 9900; ++i) step();
  CHECK(allocator_stats(kCPU).bytes_in_use == after_warmup);
}

TEST_CASE("autograd: error messages name the op, shapes and versions") {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  CHECK_THROWS_WITH_AS(x.mul_(2.0), doctest::Contains("[mul_] a leaf tensor that requires grad (shape [2])"), Error);
  CHECK_THROWS_WITH_AS((x * 2.0).requires_grad_(false), doctest::Contains("non-leaf"), Error);
  Tensor y = x.exp();
  {
    autograd::NoGradGuard ng;
    y.add_(1.0);
  }
  CHECK_THROWS_WITH_AS(y.sum().backward(), doctest::Contains("ExpBackward"), Error);
  CHECK_THROWS_WITH_AS(y.sum().backward(), doctest::Contains("is at version 1, expected version 0"), Error);
  CHECK_THROWS_WITH_AS(autograd::grad<DefaultPolicy>({(x * 2.0).sum()}, {tensor<double>({1.0})}),
                       doctest::Contains("does not require grad"), Error);
  CHECK_THROWS_WITH_AS((x * 2.0).backward(tensor<int64_t>({1, 1})), doctest::Contains("dtype"), Error);
  Tensor c = tensor<double>({1.0});
  CHECK_THROWS_WITH_AS(c.retain_grad(), doctest::Contains("[retain_grad]"), Error);
  CHECK_THROWS_WITH_AS(c.register_hook([](const Tensor&) {}), doctest::Contains("[register_hook]"), Error);
  CHECK_THROWS_WITH_AS(c.sum().backward(), doctest::Contains("does not require grad"), Error);
}

}  // namespace test_autograd_function
