// The autograd engine against libtorch 1.13 where a review found them apart: .grad after
// create_graph must not alias the gradients flowing in, concurrent backward through a shared
// graph, detach_ of a view's base, hooks that run a backward or change the gradient's shape,
// leaves whose only gradient is undefined, mark_non_differentiable on a returned input,
// retain_grad followed by an in-place op, root gradients of another floating dtype.

#include <doctest/doctest.h>
#include <ember/autograd/function.hpp>
#include <ember/autograd/function_node.hpp>
#include <ember/ember.hpp>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

namespace test_autograd_engine_edges {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using autograd::AutogradContext;

namespace {
std::vector<double> vals(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}
Tensor leaf(std::initializer_list<double> v) { return tensor<double>(v).requires_grad_(); }

/// Returns (x * 2, y * 2); backward gives no gradient to x.
struct HalfGrad : autograd::Function<HalfGrad> {
  static constexpr const char* name = "HalfGrad";
  static std::vector<Tensor> forward(AutogradContext*, const Tensor& x, const Tensor& y) { return {x * 2.0, y * 2.0}; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {Tensor(), g[1] * 2.0}; }
};
/// Returns (x * 2, x), the second marked non-differentiable.
struct PassThrough : autograd::Function<PassThrough> {
  static constexpr const char* name = "PassThrough";
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x) {
    ctx->mark_non_differentiable({x});
    return {x * 2.0, x};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0] * 2.0}; }
};
}  // namespace

TEST_CASE("autograd edges: .grad after create_graph is its own tensor") {
  // The incoming gradient was stored as .grad itself: an expanded (stride-0) tensor that the
  // next backward could not add into, or the caller's grad_output, written in place later.
  Tensor x = leaf({1, 2, 3});
  x.sum().backward({}, {}, true);
  x.sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{2, 2, 2});

  Tensor a = leaf({1, 2, 3}), gy = tensor<double>({1, 1, 1});
  (a + 0.0).backward(gy, {}, true);
  (a * 5.0).sum().backward();
  CHECK(vals(gy) == std::vector<double>{1, 1, 1});  // the caller's gradient is untouched
  CHECK(vals(a.grad()) == std::vector<double>{6, 6, 6});

  Tensor p = leaf({1, 2, 3}), q = leaf({4, 5, 6});
  (p + q).backward(tensor<double>({1, 1, 1}), {}, true);
  (p * 5.0).sum().backward();
  CHECK(vals(q.grad()) == std::vector<double>{1, 1, 1});  // p's and q's .grad were one tensor
}

TEST_CASE("autograd edges: concurrent backward through one freed graph errors cleanly") {
  for (int rep = 0; rep < 50; ++rep) {
    Tensor x = randn({64}, DType::F64).requires_grad_();
    Tensor h = (x.exp() * x).tanh().sin().cos();
    std::atomic<int> ok{0}, errs{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        try {
          (h * static_cast<double>(t + 1)).sum().backward();
          ++ok;
        } catch (const Error&) {
          ++errs;
        }
      });
    for (auto& th : threads) th.join();
    CHECK(ok + errs == 4);
    CHECK(ok >= 1);
  }
}

TEST_CASE("autograd edges: a node's lock lets one thread at a time in, and wakes the ones asleep on it") {
  // FnNode's NodeLock (autograd/function_node.hpp) guards its closure against a concurrent
  // backward freeing it. Each thread reads the counter, sometimes yields while holding the
  // lock (so that others find it held and sleep), and writes it back: an increment lost to
  // another thread, or a thread never woken, fails here (and under CI's TSan).
  autograd::detail::NodeLock lock;
  int counter = 0;
  constexpr int kThreads = 4, kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        autograd::detail::NodeLockGuard hold(lock);
        const int seen = counter;
        if (i % 256 == 0) std::this_thread::yield();
        counter = seen + 1;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(counter == kThreads * kEach);
}

TEST_CASE("autograd edges: a view keeps its history when its base is detach_()ed") {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  Tensor v = y.narrow(0, 0, 2);
  y.detach_();
  v.backward(ones({2}, DType::F64));
  CHECK(vals(x.grad()) == std::vector<double>{2, 2, 0});  // libtorch: [2, 2, 0]; Ember segfaulted

  Tensor w = x * 1.0;
  CHECK_THROWS_WITH_AS(w.narrow(0, 0, 1).detach_(), doctest::Contains("[detach_]"), Error);
}

TEST_CASE("autograd edges: hooks may run a backward, and may not change the gradient's shape") {
  Tensor x = leaf({1, 2});
  bool once = false;
  x.register_hook([&](const Tensor&) {
    if (once) return;
    once = true;
    autograd::EnableGradGuard eg;
    (x * 3.0).sum().backward();  // deadlocked on the leaf's lock
  });
  (x * x).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{5, 7});

  Tensor a = leaf({1, 2, 3});
  a.register_hook([](const Tensor& g) { return g.sum(); });
  CHECK_THROWS_WITH_AS((a * 2.0).sum().backward(), doctest::Contains("[register_hook]"), Error);
  Tensor b = leaf({1, 2, 3});
  b.register_hook([](const Tensor& g) { return g.to(DType::F32); });
  CHECK_THROWS_WITH_AS((b * 2.0).sum().backward(), doctest::Contains("dtype"), Error);
  Tensor c = leaf({1, 2, 3});
  Tensor d = c * 1.0;
  d.register_hook([](const Tensor& g) { return g.to(DType::F32); });
  CHECK_THROWS_WITH_AS((d * 2.0).sum().backward(), doctest::Contains("[register_hook]"), Error);
}

TEST_CASE("autograd edges: a leaf whose only gradient is undefined keeps no .grad") {
  Tensor a = leaf({1, 2}), b = leaf({3, 4});
  std::vector<Tensor> o = HalfGrad::apply(a, b);
  (o[0] + o[1]).sum().backward();
  CHECK_FALSE(a.grad().defined());  // was zeros: an optimiser would then decay it
  CHECK(vals(b.grad()) == std::vector<double>{2, 2});
}

TEST_CASE("autograd edges: mark_non_differentiable on an input returned as an output") {
  Tensor x = leaf({1, 2});
  std::vector<Tensor> o = PassThrough::apply(x);
  CHECK(o[0].requires_grad());
  CHECK_FALSE(o[1].requires_grad());
}

TEST_CASE("autograd edges: retain_grad follows an in-place op; root gradients convert") {
  Tensor x = leaf({1, 2});
  Tensor y = x * 1.0;
  y.retain_grad();
  y.mul_(2.0);
  (y * y).sum().backward();
  CHECK(vals(y.grad()) == std::vector<double>{4, 8});  // of the current y = [2, 4]; was [8, 16]
  CHECK(vals(x.grad()) == std::vector<double>{8, 16});

  Tensor z = leaf({1, 2});
  (z * 3.0).backward(tensor<float>({1, 1}));  // an f32 gradient for an f64 output, as PyTorch
  CHECK(vals(z.grad()) == std::vector<double>{3, 3});
  CHECK_THROWS_AS((z * 3.0).backward(tensor<int64_t>({1, 1})), Error);
}

TEST_CASE("autograd edges: fill_ of a tensor with a history keeps it requiring grad") {
  // PyTorch: y.fill_(7) leaves y with a history (FillBackward) that passes no gradient on.
  Tensor x = leaf({1, 2});
  Tensor y = x * 1.0;
  y.fill_(7.0);
  CHECK(y.requires_grad());
  (y * 2.0 + x).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 1});
  Tensor z = (x * 1.0).detach();
  z.fill_(1.0);
  CHECK_FALSE(z.requires_grad());
}

TEST_CASE("autograd edges: hooks are removed by the handle register_hook returns") {
  Tensor x = leaf({1, 2});
  int leaf_calls = 0, inner_calls = 0;
  unsigned h0 = x.register_hook([&](const Tensor& g) {
    ++leaf_calls;
    return g * 10.0;
  });
  unsigned h1 = x.register_hook([&](const Tensor&) { ++leaf_calls; });
  CHECK(h0 == 0);
  CHECK(h1 == 1);
  Tensor y = x * 1.0;
  unsigned hy = y.register_hook([&](const Tensor& g) {
    ++inner_calls;
    return g * 2.0;
  });
  (y * 1.0).sum().backward({}, true);
  CHECK(vals(x.grad()) == std::vector<double>{20, 20});
  CHECK(leaf_calls == 2);
  CHECK(inner_calls == 1);
  x.remove_hook(h0);
  y.remove_hook(hy);
  x.set_grad(Tensor());
  (y * 1.0).sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 1});
  CHECK(leaf_calls == 3);  // only the hook still registered
  CHECK(inner_calls == 1);
  CHECK_THROWS_WITH_AS(x.remove_hook(7), doctest::Contains("[remove_hook]"), Error);
}

TEST_CASE("autograd edges (diff review): detach_ after an in-place write, self-removing hooks, retained views") {
  // The base written in place before detach_(): the view's value depends on the lost history.
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2.0;
  Tensor v = y.narrow(0, 0, 2);
  y.mul_(3.0);
  y.detach_();
  v.sum().backward();
  CHECK_FALSE(x.grad().defined());  // libtorch: undefined; was [2, 2, 0] (v is 6x)

  // A hook that removes itself while it runs.
  Tensor a = leaf({1, 2});
  int calls = 0;
  unsigned h = 0;
  h = a.register_hook([&](const Tensor& g) {
    a.remove_hook(h);
    ++calls;
    return g * 2.0;
  });
  (a * 1.0).sum().backward();
  (a * 1.0).sum().backward();
  CHECK(calls == 1);
  CHECK(vals(a.grad()) == std::vector<double>{3, 3});

  // retain_grad on a view follows the view's rebuilt history.
  Tensor b = leaf({1, 2, 3});
  Tensor c = b * 1.0;
  Tensor w = c.narrow(0, 0, 2);
  w.retain_grad();
  c.mul_(2.0);
  (w * 3.0).sum().backward();
  REQUIRE(w.grad().defined());
  CHECK(vals(w.grad()) == std::vector<double>{3, 3});  // libtorch: [3, 3]

  // fill_ passes a zero gradient to the previous history.
  Tensor p = leaf({1, 2});
  Tensor q = p * 2.0;
  q.fill_(1.0);
  q.sum().backward({}, true);
  CHECK(vals(p.grad()) == std::vector<double>{0, 0});  // libtorch: [0, 0]
  q.sum().backward();
  CHECK(vals(p.grad()) == std::vector<double>{0, 0});
}

namespace {
int g_counted_calls = 0;
struct NoGrad : autograd::Function<NoGrad> {
  static constexpr const char* name = "NoGrad";
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 1.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor>) { return {Tensor()}; }
};
struct Counted : autograd::Function<Counted> {
  static constexpr const char* name = "Counted";
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 1.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    ++g_counted_calls;
    return {g[0]};
  }
};
}  // namespace

TEST_CASE("autograd edges (diff review): custom Functions run on zero-filled gradients") {
  Tensor x = leaf({1, 2});
  NoGrad::apply(Counted::apply(x)).sum().backward();
  CHECK(g_counted_calls == 1);  // libtorch calls it once, with zeros
  CHECK(vals(x.grad()) == std::vector<double>{0, 0});
}

TEST_CASE("autograd edges (review): long graphs are freed and differentiated without deep recursion") {
  // 200K nodes in a chain: freeing it from its output's destructor, backward through it and
  // autograd::grad over it each recursed once per node (a segfault on an 8 MiB stack).
  constexpr int kLength = 200000;
  Tensor x = ones({1}, DType::F64).requires_grad_();
  {
    Tensor y = x;
    for (int i = 0; i < kLength; ++i) y = y * 1.0;
  }  // dropped without a backward
  {
    Tensor y = x;
    for (int i = 0; i < kLength; ++i) y = y + y;  // two edges to the same child
  }
  Tensor y = x;
  for (int i = 0; i < kLength; ++i) y = y + 0.0;
  CHECK(vals(autograd::grad<DefaultPolicy>({y.sum()}, {x}, {}, true)[0]) == std::vector<double>{1.0});
  y.sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{1.0});
}

TEST_CASE("autograd edges (review): autograd::grad frees only the nodes it ran") {
  // z = exp(x) + b with b = exp(y): a grad for x does not run b's node, which keeps what it
  // saved, so a later grad through b works (as PyTorch).
  Tensor x = leaf({1.0}), y = leaf({2.0});
  Tensor b = y.exp(), z = x.exp() + b;
  CHECK(vals(autograd::grad<DefaultPolicy>({z}, {x})[0])[0] == doctest::Approx(std::exp(1.0)));
  CHECK(vals(autograd::grad<DefaultPolicy>({b}, {y})[0])[0] == doctest::Approx(std::exp(2.0)));
  // The nodes that ran did give up theirs.
  CHECK_THROWS_AS(autograd::grad<DefaultPolicy>({z}, {x}), Error);
}

TEST_CASE("autograd edges (review): erfinv's derivative does not need its output") {
  // PyTorch saves erfinv's input, so writing the output in place is allowed.
  Tensor x = leaf({0.1, 0.2});
  Tensor y = x.erfinv();
  y.mul_(2.0);
  y.sum().backward();
  const std::vector<double> g = vals(x.grad());
  const double pi = std::acos(-1.0);
  for (size_t i = 0; i < 2; ++i) {
    const double xi = i == 0 ? 0.1 : 0.2;
    double v = 0;  // erfinv(xi) by Newton's method
    for (int it = 0; it < 50; ++it) v -= (std::erf(v) - xi) / (2.0 / std::sqrt(pi) * std::exp(-v * v));
    CHECK(g[i] == doctest::Approx(2.0 * std::sqrt(pi) / 2.0 * std::exp(v * v)).epsilon(1e-9));
  }
}

/// Returns x * 3 and saves nothing for backward.
struct Triple : autograd::Function<Triple> {
  static constexpr const char* name = "Triple";
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 3.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0] * 3.0}; }
};
/// Returns x * x and saves x.
struct SquareSaved : autograd::Function<SquareSaved> {
  static constexpr const char* name = "SquareSaved";
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    return {g[0] * ctx->get_saved_variables()[0] * 2.0};
  }
};

TEST_CASE("autograd edges: nodes that saved no tensor run again after a backward without retain_graph") {
  // As in PyTorch 1.13: only saved tensors are freed, so grad for a, then grad for b, through
  // one AddBackward works; so does a second backward through negation, views and sums.
  Tensor a = leaf({1.0, 2.0}), b = leaf({3.0, 4.0});
  Tensor l = (a + b).sum();
  CHECK(vals(autograd::grad<DefaultPolicy>({l}, {a})[0]) == std::vector<double>{1.0, 1.0});
  CHECK(vals(autograd::grad<DefaultPolicy>({l}, {b})[0]) == std::vector<double>{1.0, 1.0});
  Tensor n = (-a).reshape({2, 1}).t().expand({3, 2}).sum();
  n.backward();
  n.backward();
  CHECK(vals(a.grad()) == std::vector<double>{-6.0, -6.0});
  // A node that saved a tensor still refuses, wherever it is in the graph.
  Tensor s = (a.sin() + b).sum();
  s.backward();
  CHECK_THROWS_WITH_AS(s.backward(), doctest::Contains("second time"), Error);
  // Custom Functions: with nothing saved they run again; with saved tensors they refuse.
  Tensor c = leaf({1.0, -2.0});
  Tensor t = Triple::apply(c).sum();
  t.backward();
  t.backward();
  CHECK(vals(c.grad()) == std::vector<double>{6.0, 6.0});
  Tensor q = SquareSaved::apply(c).sum();
  q.backward();
  CHECK_THROWS_WITH_AS(q.backward(), doctest::Contains("second time"), Error);
}

TEST_CASE("autograd edges: a backward without retain_graph frees what the nodes saved") {
  // exp saves its 8 MiB output, which only its node holds: freed by a plain backward, kept
  // by one that retains the graph.
  auto in_use_after = [](bool retain) {
    Tensor x = randn({1 << 20}, DType::F64).requires_grad_();
    Tensor l = (x * 2.0).exp().sum();
    l.backward({}, retain);
    return allocator_stats(Device::cpu()).bytes_in_use;
  };
  const int64_t kept = in_use_after(true), freed = in_use_after(false);
  CHECK(kept - freed >= int64_t{8} << 20);
  // as_strided's node holds the view's positions (8 MiB of i64), not a saved tensor: freed too.
  auto strided_in_use_after = [](bool retain) {
    Tensor x = randn({1 << 20}, DType::F64).requires_grad_();
    Tensor l = (x * 2.0).as_strided({1 << 20}, {1}).sum();
    l.backward({}, retain);
    return allocator_stats(Device::cpu()).bytes_in_use;
  };
  CHECK(strided_in_use_after(true) - strided_in_use_after(false) >= int64_t{8} << 20);
  // A custom Function run without recording saves for no node: the count it leaves must not
  // make the next node (here the AddBackward) refuse a second run.
  (void)SquareSaved::apply(tensor<double>({1.0}));
  Tensor a = leaf({1.0}), b = leaf({2.0});
  Tensor l = (a + b).sum();
  CHECK(vals(autograd::grad<DefaultPolicy>({l}, {a})[0]) == std::vector<double>{1.0});
  CHECK(vals(autograd::grad<DefaultPolicy>({l}, {b})[0]) == std::vector<double>{1.0});
}

TEST_CASE("autograd edges: backward with inputs accumulates into those tensors only (libtorch's inputs=)") {
  // Values from PyTorch 1.13: h = a * b, l = sum(h * h).
  Tensor a = leaf({1.0, 2.0}), b = leaf({3.0, 4.0}), c = leaf({1.0});
  Tensor h = a * b;
  Tensor l = (h * h).sum();
  l.backward({}, true, false, {a});
  CHECK(vals(a.grad()) == std::vector<double>{18.0, 64.0});
  CHECK(!b.grad().defined());
  // A non-leaf input retains its gradient; the leaves keep theirs.
  l.backward({}, true, false, {h});
  CHECK(h.retains_grad());
  CHECK(vals(h.grad()) == std::vector<double>{6.0, 16.0});
  CHECK(vals(a.grad()) == std::vector<double>{18.0, 64.0});
  l.backward({}, true, false, {h});
  CHECK(vals(h.grad()) == std::vector<double>{12.0, 32.0});
  // An input the graph does not reach keeps no .grad; one that does not require grad is refused.
  l.backward({}, true, false, {c});
  CHECK(!c.grad().defined());
  CHECK_THROWS_WITH_AS(l.backward({}, true, false, {tensor<double>({1.0})}), doctest::Contains("does not require grad"),
                       Error);
  // A leaf input's hooks run, as its accumulator does.
  a.zero_grad();
  a.register_hook([](Tensor g) { return g * 10.0; });
  autograd::backward<DefaultPolicy>({l}, {}, true, false, {a});
  CHECK(vals(a.grad()) == std::vector<double>{180.0, 640.0});
  // Only the nodes leading to an input run and give up their saved tensors: b's exp still
  // holds its output for a second pass without retain_graph.
  Tensor x = leaf({0.5}), y = leaf({1.5});
  Tensor s = (x.exp() + y.exp()).sum();
  s.backward({}, false, false, {x});
  s.backward({}, false, false, {y});
  CHECK(vals(x.grad())[0] == doctest::Approx(std::exp(0.5)));
  CHECK(vals(y.grad())[0] == doctest::Approx(std::exp(1.5)));
  CHECK_THROWS_WITH_AS(s.backward({}, false, false, {x}), doctest::Contains("second time"), Error);
  // A branch that leads to no input sees no gradient: its hooks and retain_grad stay quiet.
  Tensor p = leaf({1.0, 2.0}), side = leaf({3.0, 4.0});
  Tensor q = side * 2.0;
  q.retain_grad();
  int calls = 0;
  q.register_hook([&calls](Tensor) { ++calls; });
  (p * q).sum().backward({}, false, false, {p});
  CHECK(vals(p.grad()) == std::vector<double>{6.0, 8.0});
  CHECK(!q.grad().defined());
  CHECK(calls == 0);
  CHECK(!side.grad().defined());
  // A non-leaf input's own node runs, as in PyTorch 1.13: it frees its saved tensors (a second
  // pass through it fails), but what it computes reaches no leaf below it.
  Tensor u = leaf({0.5});
  Tensor e = u.exp();
  (e * 2.0).sum().backward({}, false, false, {e});
  CHECK(vals(e.grad()) == std::vector<double>{2.0});
  CHECK(!u.grad().defined());
  CHECK_THROWS_WITH_AS(e.sum().backward(), doctest::Contains("second time"), Error);
}

namespace {
/// Returns (x * 2, x * 3); backward records whether the second gradient came undefined.
struct TwoOutputs : autograd::Function<TwoOutputs> {
  static constexpr const char* name = "TwoOutputs";
  static inline bool materialize = true, second_undefined = false;
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(materialize);
    return {x * 2.0, x * 3.0};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    second_undefined = !g[1].defined();
    return {g[1].defined() ? g[0] * 2.0 + g[1] * 3.0 : g[0] * 2.0};
  }
};
}  // namespace

TEST_CASE("autograd edges: set_materialize_grads(false) passes unused outputs' gradients as undefined") {
  for (bool materialize : {true, false}) {
    TwoOutputs::materialize = materialize;
    Tensor x = leaf({1.0, 2.0});
    TwoOutputs::apply(x)[0].sum().backward();
    CHECK(TwoOutputs::second_undefined == !materialize);
    CHECK(vals(x.grad()) == std::vector<double>{2.0, 2.0});
  }
}

TEST_CASE("autograd edges: backward and grad take braced lists, as libtorch's callers write them") {
  Tensor x = leaf({1.0, 2.0}), w = leaf({3.0, 4.0});
  Tensor y = (x * w).sum();
  auto g = autograd::grad({y}, {x, w}, {}, true);
  REQUIRE(g.size() == 2);
  CHECK(vals(g[0]) == std::vector<double>{3.0, 4.0});
  CHECK(vals(g[1]) == std::vector<double>{1.0, 2.0});
  // A std::vector among the braced lists: the std::vector form, with the list converted.
  std::vector<Tensor> ins{x};
  CHECK(vals(autograd::grad({y}, ins, {tensor<double>({2.0}).view({})}, true)[0]) == std::vector<double>{6.0, 8.0});
  // As in PyTorch 1.13, a leaf's hooks run where its gradient accumulates, not for grad().
  int calls = 0;
  x.register_hook([&calls](Tensor t) {
    ++calls;
    return t * 10.0;
  });
  CHECK(vals(autograd::grad({y}, {x}, {}, true)[0]) == std::vector<double>{3.0, 4.0});
  CHECK(calls == 0);
  autograd::backward({y}, {tensor<double>({0.5}).view({})});
  CHECK(calls == 1);
  CHECK(vals(x.grad()) == std::vector<double>{15.0, 20.0});
  CHECK(vals(w.grad()) == std::vector<double>{0.5, 1.0});
  CHECK_THROWS_WITH_AS(autograd::backward({y}), doctest::Contains("second time"), Error);
}

}  // namespace test_autograd_engine_edges
