// gradcheck and gradgradcheck (central differences in f64, non-uniform cotangent) over every
// differentiable op: the .def ops from tests/support/grad_table.hpp on contiguous,
// transposed and broadcast inputs, and the other op families (softmax, scans, matrix
// products, views, indexing, composites) on hand-picked shapes.

#include <doctest/doctest.h>
#include <ember/autograd/function.hpp>
#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>

#include "support/grad_table.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace test_gradcheck {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
using Inputs = std::vector<Tensor>;

Tensor uniform(const Shape& s, Domain d) {
  return (rand(s, DType::F64) * (d.hi - d.lo) + d.lo).detach().requires_grad_();
}

void check_grads(const std::string& what, const Fn& f, const Inputs& in, bool gradgrad = true) {
  CAPTURE(what);
  std::string why;
  bool ok = autograd::gradcheck<DefaultPolicy>(f, in, {}, &why);
  CHECK_MESSAGE(ok, what << ": " << why);
  if (ok && gradgrad) {
    why.clear();
    bool ok2 = autograd::gradgradcheck<DefaultPolicy>(f, in, {}, &why);
    CHECK_MESSAGE(ok2, what << " (second order): " << why);
  }
}

/// x * x with a wrong first derivative (3x instead of 2x).
struct WrongSquare : autograd::Function<WrongSquare> {
  static constexpr const char* name = "WrongSquare";
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> g) {
    return {g[0] * ctx->get_saved_variables()[0] * 3.0};
  }
};
/// x * x with the right first derivative, computed from a detached x: its second derivative
/// is lost (zero instead of 2).
struct DetachedSquare : autograd::Function<DetachedSquare> {
  static constexpr const char* name = "DetachedSquare";
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> g) {
    return {g[0] * ctx->get_saved_variables()[0].detach() * 2.0};
  }
};

Tensor binary(ops::BinaryOp op, const Tensor& a, const Tensor& b) {
  return Tensor::wrap(dispatch<DefaultPolicy>(ops::Binary{op}, a.impl(), b.impl()));
}

}  // namespace

TEST_CASE("gradcheck: a wrong first or second derivative fails the check; braced lists of inputs") {
  Tensor a = uniform({2, 3}, {-1.0, 1.0}), b = uniform({3}, {0.5, 2.0});
  std::string why;
  auto f = [](const std::vector<Tensor>& v) { return v[0].tanh() * v[1]; };
  CHECK_MESSAGE(autograd::gradcheck(f, {a, b}, {}, &why), why);
  CHECK_MESSAGE(autograd::gradgradcheck(f, {a, b}, {}, &why), why);

  auto wrong = [](const std::vector<Tensor>& v) { return WrongSquare::apply(v[0]) + v[1]; };
  why.clear();
  CHECK_FALSE(autograd::gradcheck(wrong, {a, b}, {}, &why));
  CHECK_MESSAGE(why.find("input 0") != std::string::npos, why);
  auto detached = [](const std::vector<Tensor>& v) { return DetachedSquare::apply(v[0]) * v[1]; };
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(detached, Inputs{a, b}, {}, &why), why);
  why.clear();
  CHECK_FALSE(autograd::gradgradcheck<DefaultPolicy>(detached, Inputs{a, b}, {}, &why));
  CHECK(!why.empty());
}

TEST_CASE("gradcheck: unary ops on contiguous, transposed and broadcast inputs") {
  manual_seed(11);
  for (const UnaryGradRow& r : kUnaryGradRows) {
    ops::Unary u{r.op, r.params};
    std::string name = ops::name(r.op);
    check_grads(name + " contiguous", [u](const Inputs& x) { return x[0].apply(u); }, {uniform({3, 4}, r.dom)},
                r.gradgrad);
    check_grads(name + " transposed", [u](const Inputs& x) { return x[0].t().apply(u); }, {uniform({4, 3}, r.dom)},
                r.gradgrad);
    check_grads(name + " broadcast", [u](const Inputs& x) { return x[0].expand({3, 4}).apply(u); },
                {uniform({1, 4}, r.dom)}, r.gradgrad);
  }
}

TEST_CASE("gradcheck: binary ops on contiguous, transposed, broadcast and scalar operands") {
  manual_seed(12);
  for (const BinaryGradRow& r : kBinaryGradRows) {
    auto op = r.op;
    std::string name = ops::name(op);
    check_grads(name + " contiguous", [op](const Inputs& x) { return binary(op, x[0], x[1]); },
                {uniform({3, 4}, r.a), uniform({3, 4}, r.b)}, r.gradgrad);
    check_grads(name + " transposed", [op](const Inputs& x) { return binary(op, x[0].t(), x[1]); },
                {uniform({4, 3}, r.a), uniform({3, 4}, r.b)}, r.gradgrad);
    check_grads(name + " broadcast", [op](const Inputs& x) { return binary(op, x[0], x[1]); },
                {uniform({3, 1}, r.a), uniform({1, 4}, r.b)}, r.gradgrad);
    double s = (r.b.lo + r.b.hi) / 2 + 0.25;
    check_grads(name + " with a scalar", [op, s](const Inputs& x) { return binary(op, x[0], x[0].scalar_like(s)); },
                {uniform({2, 3}, r.a)}, r.gradgrad);
  }
}

TEST_CASE("gradcheck: reductions over all dims, one dim and with keepdim") {
  manual_seed(13);
  for (const ReduceGradRow& r : kReduceGradRows) {
    auto op = r.op;
    std::string name = ops::name(op);
    check_grads(name + " all", [op](const Inputs& x) { return x[0].apply(ops::Reduce{op, {}, false, std::nullopt}); },
                {uniform({3, 4}, r.dom)}, r.gradgrad);
    check_grads(name + " dim 1", [op](const Inputs& x) { return x[0].apply(ops::Reduce{op, {1}, false, std::nullopt}); },
                {uniform({3, 4}, r.dom)}, r.gradgrad);
    check_grads(name + " dim 0 keepdim transposed",
                [op](const Inputs& x) { return x[0].t().apply(ops::Reduce{op, {0}, true, std::nullopt}); },
                {uniform({4, 3}, r.dom)}, r.gradgrad);
  }
  // prod with one and with two zeros in a slice (derivative: the product of the others).
  Tensor z = tensor<double>({{2.0, 0.0, 3.0}, {0.0, 0.0, 5.0}}).requires_grad_();
  check_grads("prod with zeros", [](const Inputs& x) { return x[0].prod({1}); }, {z});
  check_grads("prod with zeros, dim 0 keepdim", [](const Inputs& x) { return x[0].prod({0}, true); }, {z});
  check_grads("prod with zeros, all", [](const Inputs& x) { return x[0].prod(); },
              {tensor<double>({2.0, 0.0, 3.0}).requires_grad_()});
}

TEST_CASE("gradcheck: max/min ties share the gradient evenly (PyTorch's convention)") {
  Tensor x = tensor<double>({1.0, 3.0, 3.0, 2.0}).requires_grad_();
  x.amax().backward();
  std::vector<double> g(x.grad().data_ptr<double>(), x.grad().data_ptr<double>() + 4);
  CHECK(g == std::vector<double>{0, 0.5, 0.5, 0});
  Tensor y = tensor<double>({1.0, 3.0, 3.0}).requires_grad_();
  Tensor a = tensor<double>({3.0, 3.0, 0.0}).requires_grad_();
  y.maximum(a).sum().backward();
  std::vector<double> gy(y.grad().data_ptr<double>(), y.grad().data_ptr<double>() + 3);
  CHECK(gy == std::vector<double>{0, 0.5, 1});
  Tensor r = tensor<double>({-1.0, 0.0, 2.0}).requires_grad_();
  r.relu().sum().backward();
  std::vector<double> gr(r.grad().data_ptr<double>(), r.grad().data_ptr<double>() + 3);
  CHECK(gr == std::vector<double>{0, 0, 1});  // relu'(0) = 0
  Tensor s = tensor<double>({-1.0, 0.0, 2.0}).requires_grad_();
  s.abs().sum().backward();
  std::vector<double> gs(s.grad().data_ptr<double>(), s.grad().data_ptr<double>() + 3);
  CHECK(gs == std::vector<double>{-1, 0, 1});  // abs'(0) = 0
  Tensor c = tensor<double>({1.0, 2.0, 3.0}).requires_grad_();
  c.clamp(1.0, 2.5).sum().backward();
  std::vector<double> gc(c.grad().data_ptr<double>(), c.grad().data_ptr<double>() + 3);
  CHECK(gc == std::vector<double>{0, 1, 0});  // strictly inside the bounds, as PyTorch 2 (1.13: 1 at a bound)
}

TEST_CASE("gradcheck: softmax, scans, arg-reductions and matrix products") {
  manual_seed(14);
  Domain d{-2, 2};
  struct Case {
    std::string name;
    Fn f;
    Inputs in;
  };
  std::vector<Case> cases = {
      {"softmax", [](const Inputs& x) { return x[0].softmax(1); }, {uniform({3, 4}, d)}},
      {"softmax dim 0 transposed", [](const Inputs& x) { return x[0].t().softmax(0); }, {uniform({4, 3}, d)}},
      {"log_softmax", [](const Inputs& x) { return x[0].log_softmax(-1); }, {uniform({3, 4}, d)}},
      {"cumsum", [](const Inputs& x) { return x[0].cumsum(1); }, {uniform({3, 4}, d)}},
      {"cumprod", [](const Inputs& x) { return x[0].cumprod(1); }, {uniform({3, 4}, {0.5, 1.5})}},
      {"cumprod with zeros", [](const Inputs& x) { return x[0].cumprod(1); },
       {tensor<double>({{2.0, 0.0, 3.0, 0.5}, {0.0, 1.5, 0.0, 2.0}, {1.0, 2.0, 3.0, 0.0}}).requires_grad_()}},
      {"cumprod with zeros, dim 0", [](const Inputs& x) { return x[0].cumprod(0); },
       {tensor<double>({{2.0, 0.0}, {0.0, 1.5}, {3.0, 2.0}}).requires_grad_()}},
      {"cummax", [](const Inputs& x) { return x[0].cummax(1).first; }, {uniform({3, 4}, d)}},
      {"cummin", [](const Inputs& x) { return x[0].cummin(0).first; }, {uniform({3, 4}, d)}},
      {"logcumsumexp", [](const Inputs& x) { return x[0].logcumsumexp(1); }, {uniform({3, 4}, d)}},
      {"max dim", [](const Inputs& x) { return x[0].max(1).first; }, {uniform({3, 4}, d)}},
      {"min dim keepdim", [](const Inputs& x) { return x[0].min(0, true).first; }, {uniform({3, 4}, d)}},
      {"mm", [](const Inputs& x) { return x[0].mm(x[1]); }, {uniform({3, 4}, d), uniform({4, 2}, d)}},
      {"mm transposed", [](const Inputs& x) { return x[0].t().mm(x[1].t()); }, {uniform({4, 3}, d), uniform({2, 4}, d)}},
      {"bmm", [](const Inputs& x) { return x[0].bmm(x[1]); }, {uniform({2, 3, 4}, d), uniform({2, 4, 2}, d)}},
      {"matmul broadcast batch", [](const Inputs& x) { return x[0].matmul(x[1]); },
       {uniform({2, 3, 4}, d), uniform({4, 2}, d)}},
      {"matmul 1-d @ 2-d", [](const Inputs& x) { return x[0].matmul(x[1]); }, {uniform({4}, d), uniform({4, 2}, d)}},
      {"matmul 2-d @ 1-d", [](const Inputs& x) { return x[0].matmul(x[1]); }, {uniform({3, 4}, d), uniform({4}, d)}},
      {"matmul 1-d @ 3-d", [](const Inputs& x) { return x[0].matmul(x[1]); },
       {uniform({4}, d), uniform({2, 4, 3}, d)}},
      {"dot", [](const Inputs& x) { return x[0].dot(x[1]); }, {uniform({5}, d), uniform({5}, d)}},
      {"outer", [](const Inputs& x) { return x[0].outer(x[1]); }, {uniform({3}, d), uniform({4}, d)}},
      {"addmm", [](const Inputs& x) { return addmm(x[0], x[1], x[2], 0.5, 2.0); },
       {uniform({2}, d), uniform({3, 4}, d), uniform({4, 2}, d)}},
      {"baddbmm", [](const Inputs& x) { return baddbmm(x[0], x[1], x[2], 1.0, 0.5); },
       {uniform({2, 3, 2}, d), uniform({2, 3, 4}, d), uniform({2, 4, 2}, d)}},
      {"linear", [](const Inputs& x) { return linear(x[0], x[1], x[2]); },
       {uniform({3, 4}, d), uniform({2, 4}, d), uniform({2}, d)}},
      {"linear without bias", [](const Inputs& x) { return linear(x[0], x[1]); },
       {uniform({3, 4}, d), uniform({2, 4}, d)}},
      {"linear 3-d input, (1, n) bias", [](const Inputs& x) { return linear(x[0], x[1], x[2]); },
       {uniform({2, 3, 4}, d), uniform({5, 4}, d), uniform({1, 5}, d)}},
      {"linear transposed weight and input", [](const Inputs& x) { return linear(x[0].t(), x[1].t(), x[2]); },
       {uniform({4, 3}, d), uniform({4, 2}, d), uniform({2}, d)}},
      {"linear 1-d input", [](const Inputs& x) { return linear(x[0], x[1], x[2]); },
       {uniform({4}, d), uniform({2, 4}, d), uniform({2}, d)}},
  };
  for (auto& c : cases) check_grads(c.name, c.f, c.in);
}

TEST_CASE("gradcheck: views") {
  manual_seed(15);
  Domain d{-2, 2};
  struct Case {
    std::string name;
    Fn f;
    Shape shape;
  };
  std::vector<Case> cases = {
      {"view", [](const Inputs& x) { return x[0].view({4, 3}); }, {3, 4}},
      {"reshape of transposed", [](const Inputs& x) { return x[0].t().reshape({12}); }, {3, 4}},
      {"permute", [](const Inputs& x) { return x[0].permute({2, 0, 1}); }, {2, 3, 4}},
      {"expand", [](const Inputs& x) { return x[0].expand({2, 3, 4}); }, {3, 1}},
      {"as_strided", [](const Inputs& x) { return x[0].as_strided({2, 2}, {3, 1}, 1); }, {3, 4}},
      {"narrow", [](const Inputs& x) { return x[0].narrow(1, 1, 2); }, {3, 4}},
      {"select", [](const Inputs& x) { return x[0].select(0, -1); }, {3, 4}},
      {"slice with step", [](const Inputs& x) { return x[0].slice(1, 0, 4, 2); }, {3, 4}},
      {"squeeze/unsqueeze", [](const Inputs& x) { return x[0].unsqueeze(1).squeeze(); }, {3, 4}},
      {"diagonal", [](const Inputs& x) { return x[0].diagonal(1); }, {3, 4}},
      {"transpose", [](const Inputs& x) { return x[0].transpose(0, 2); }, {2, 3, 4}},
      {"flatten/unflatten", [](const Inputs& x) { return x[0].flatten().unflatten(0, {4, 3}); }, {3, 4}},
      {"basic index", [](const Inputs& x) { return x[0].index({Slice(), 1, None}); }, {3, 4}},
      {"view of a view", [](const Inputs& x) { return x[0].t().narrow(0, 1, 2).select(1, 2); }, {3, 4}},
  };
  for (auto& c : cases) check_grads(c.name, c.f, {uniform(c.shape, d)});
}

TEST_CASE("gradcheck: indexing, data movement and composites") {
  manual_seed(16);
  Domain d{-2, 2};
  Tensor idx = tensor<int64_t>({2, 0, 2});
  Tensor gidx = tensor<int64_t>({{0, 2}, {1, 1}, {3, 0}});
  Tensor perm = tensor<int64_t>({{1, 0, 2, 3}, {3, 2, 1, 0}, {0, 1, 3, 2}});
  Tensor mask = tensor<int64_t>({{1, 0, 1, 0}, {0, 0, 1, 1}, {1, 1, 0, 0}}).ne(0);
  struct Case {
    std::string name;
    Fn f;
    Inputs in;
  };
  std::vector<Case> cases = {
      {"cat", [](const Inputs& x) { return cat(std::vector<Tensor>{x[0], x[1]}, 1); },
       {uniform({3, 2}, d), uniform({3, 4}, d)}},
      {"stack", [](const Inputs& x) { return stack(std::vector<Tensor>{x[0], x[1]}, 0); },
       {uniform({3, 2}, d), uniform({3, 2}, d)}},
      {"split", [](const Inputs& x) { return split(x[0], 2, 1)[1] * 2.0; }, {uniform({3, 4}, d)}},
      {"index_select", [idx](const Inputs& x) { return index_select(x[0], 0, idx); }, {uniform({3, 4}, d)}},
      {"gather", [gidx](const Inputs& x) { return gather(x[0], 1, gidx); }, {uniform({3, 4}, d)}},
      {"scatter", [perm](const Inputs& x) { return scatter(x[0], 1, perm.narrow(1, 0, 2), x[1]); },
       {uniform({3, 4}, d), uniform({3, 2}, d)}},
      {"scatter_add", [gidx](const Inputs& x) { return scatter_add(x[0], 1, gidx, x[1]); },
       {uniform({3, 4}, d), uniform({3, 2}, d)}},
      {"scatter_reduce mean", [gidx](const Inputs& x) { return scatter_reduce(x[0], 1, gidx, x[1], "mean"); },
       {uniform({3, 4}, d), uniform({3, 2}, d)}},
      {"scatter_reduce mean exclude self",
       [gidx](const Inputs& x) { return scatter_reduce(x[0], 1, gidx, x[1], "mean", false); },
       {uniform({3, 4}, d), uniform({3, 2}, d)}},
      {"scatter_reduce amax", [gidx](const Inputs& x) { return scatter_reduce(x[0], 1, gidx, x[1], "amax"); },
       {uniform({3, 4}, d), uniform({3, 2}, d)}},
      {"scatter_reduce amin", [gidx](const Inputs& x) { return scatter_reduce(x[0], 1, gidx, x[1], "amin", false); },
       {uniform({3, 4}, d), uniform({3, 2}, d)}},
      {"scatter_reduce prod", [gidx](const Inputs& x) { return scatter_reduce(x[0], 1, gidx, x[1], "prod"); },
       {uniform({3, 4}, {0.5, 1.5}), uniform({3, 2}, {0.5, 1.5})}},
      // Without the input's values, the scattered-to elements are replaced (zero gradient).
      {"scatter_reduce sum exclude self",
       [gidx](const Inputs& x) { return scatter_reduce(x[0], 1, gidx, x[1], "sum", false); },
       {uniform({3, 4}, d), uniform({3, 2}, d)}},
      {"index_add", [idx](const Inputs& x) { return index_add(x[0], 0, idx, x[1], 0.5); },
       {uniform({3, 4}, d), uniform({3, 4}, d)}},
      {"index_copy", [](const Inputs& x) { return index_copy(x[0], 0, tensor<int64_t>({2, 0}), x[1]); },
       {uniform({3, 4}, d), uniform({2, 4}, d)}},
      {"masked_select", [mask](const Inputs& x) { return masked_select(x[0], mask); }, {uniform({3, 4}, d)}},
      {"masked_select broadcast", [mask](const Inputs& x) { return masked_select(x[0], mask); }, {uniform({1, 4}, d)}},
      {"sort", [](const Inputs& x) { return sort(x[0], 1).first; }, {uniform({3, 4}, d)}},
      {"topk", [](const Inputs& x) { return topk(x[0], 2, 1).first; }, {uniform({3, 4}, d)}},
      {"advanced index", [idx](const Inputs& x) { return index(x[0], {idx}); }, {uniform({3, 4}, d)}},
      {"index_put", [](const Inputs& x) { return index_put(x[0], {tensor<int64_t>({0, 2})}, x[1]); },
       {uniform({3, 4}, d), uniform({2, 4}, d)}},
      {"index_put accumulate", [](const Inputs& x) { return index_put(x[0], {tensor<int64_t>({0, 0})}, x[1], true); },
       {uniform({3, 4}, d), uniform({4}, d)}},
      {"where", [mask](const Inputs& x) { return where(mask, x[0], x[1]); }, {uniform({3, 4}, d), uniform({1, 4}, d)}},
      {"clone", [](const Inputs& x) { return x[0].t().clone(); }, {uniform({3, 4}, d)}},
      {"flip", [](const Inputs& x) { return flip(x[0], {0, 1}); }, {uniform({3, 4}, d)}},
      {"roll", [](const Inputs& x) { return roll(x[0], 1, 1); }, {uniform({3, 4}, d)}},
      {"repeat", [](const Inputs& x) { return repeat(x[0], {2, 1}); }, {uniform({3, 4}, d)}},
      {"pad reflect", [](const Inputs& x) { return pad(x[0], {1, 2}, "reflect"); }, {uniform({3, 4}, d)}},
      {"tril", [](const Inputs& x) { return tril(x[0]); }, {uniform({3, 4}, d)}},
      {"var", [](const Inputs& x) { return x[0].var({1}); }, {uniform({3, 4}, d)}},
      {"std", [](const Inputs& x) { return x[0].std(); }, {uniform({3, 4}, d)}},
      {"logsumexp", [](const Inputs& x) { return x[0].logsumexp({1}); }, {uniform({3, 4}, d)}},
      {"norm p=3", [](const Inputs& x) { return x[0].norm(3.0, {1}); }, {uniform({3, 4}, d)}},
      {"norm p=0 (a count: zero gradient)", [](const Inputs& x) { return x[0].norm(0.0, {1}); }, {uniform({3, 4}, d)}},
      {"einsum", [](const Inputs& x) { return einsum("ij,jk->ik", std::vector<Tensor>{x[0], x[1]}); },
       {uniform({3, 4}, d), uniform({4, 2}, d)}},
      {"einsum diagonal", [](const Inputs& x) { return einsum("bii,bi->b", std::vector<Tensor>{x[0], x[1]}); },
       {uniform({2, 3, 3}, d), uniform({2, 3}, d)}},
      {"einsum ellipsis", [](const Inputs& x) { return einsum("...ij,...jk->ik", std::vector<Tensor>{x[0], x[1]}); },
       {uniform({2, 2, 3}, d), uniform({3, 1, 3, 2}, d)}},
      {"einsum three operands, one broadcast",
       [](const Inputs& x) { return einsum("ij,jk,kl->li", std::vector<Tensor>{x[0], x[1], x[2]}); },
       {uniform({3, 4}, d), uniform({4, 1}, d), uniform({2, 2}, d)}},
      {"lerp", [](const Inputs& x) { return x[0].lerp(x[1], x[2]); },
       {uniform({3, 4}, d), uniform({3, 4}, d), uniform({3, 4}, d)}},
  };
  for (auto& c : cases) check_grads(c.name, c.f, c.in);
  // Exact zeros in a product's groups (the product is linear in each element, so central
  // differences are exact there): one zero, two zeros in one group (row 1), a zero input.
  // First derivatives only: the gradient of a zero in a group with another zero is the
  // product of the others, 0, and its derivative (nonzero, through the other zero) is not
  // recorded; PyTorch's formula has the same limit.
  for (bool self : {true, false}) {
    CAPTURE(self);
    check_grads("scatter_reduce prod with zeros",
                [gidx, self](const Inputs& x) { return scatter_reduce(x[0], 1, gidx, x[1], "prod", self); },
                {tensor<double>({{0, 1.5, -0.5, 2}, {1.25, 0.75, 3, -1}, {0.5, 2, 1, 0}}).requires_grad_(),
                 tensor<double>({{0.5, 0}, {0, 0}, {1.5, -2}}).requires_grad_()},
                false);
  }
}

TEST_CASE("gradcheck: in-place ops, also through views") {
  manual_seed(17);
  Domain d{-2, 2};
  check_grads("mul_ then exp_",
              [](const Inputs& x) {
                Tensor h = x[0] * 1.0;
                h.mul_(x[1]);
                h.exp_();
                return h;
              },
              {uniform({3, 4}, d), uniform({4}, d)});
  check_grads("narrow(...).mul_",
              [](const Inputs& x) {
                Tensor h = x[0] * 1.0;
                h.narrow(1, 1, 2).mul_(x[1]);
                return h.sin();
              },
              {uniform({3, 4}, d), uniform({3, 1}, d)});
  check_grads("copy_ into a strided slice",
              [](const Inputs& x) {
                Tensor h = x[0] * 2.0;  // (tanh would save h, and the copy_ would rightly be refused)
                h.slice(1, 0, 4, 2).copy_(x[1]);
                return h * h;
              },
              {uniform({3, 4}, d), uniform({3, 2}, d)});
  check_grads("index_put_ with a basic index",
              [](const Inputs& x) {
                Tensor h = x[0] * 2.0;
                h.index_put_({1}, x[1]);
                return h;
              },
              {uniform({3, 4}, d), uniform({4}, d)});
  check_grads("index_put_ with an index tensor",
              [](const Inputs& x) {
                Tensor h = x[0] * 2.0;
                h.index_put_({tensor<int64_t>({2, 0})}, x[1]);
                return h * h;
              },
              {uniform({3, 4}, d), uniform({2, 4}, d)});
  check_grads("index_put_ accumulating repeated indices",
              [](const Inputs& x) {
                Tensor h = x[0] * 2.0;
                h.index_put_({tensor<int64_t>({1, 1, 0}), tensor<int64_t>({3, 3, 2})}, x[1], true);
                return h * h;
              },
              {uniform({3, 4}, d), uniform({3}, d)});
  check_grads("index_put_ into a view",
              [](const Inputs& x) {
                Tensor h = x[0] * 2.0;
                h.narrow(1, 1, 2).index_put_({tensor<int64_t>({2})}, x[1]);
                return h * h;
              },
              {uniform({3, 4}, d), uniform({2}, d)});
}

// Recorded backwards (create_graph) that select a branch must not let the discarded branch's
// infinities into the second derivative: where sends it a zero gradient, and 0 * inf is NaN.
TEST_CASE("second derivatives stay finite where the discarded branch overflows") {
  auto second = [](const Tensor& x, const std::function<Tensor(const Tensor&)>& f) {
    Tensor g = autograd::grad({f(x).sum()}, {x}, {}, true, true)[0];
    return autograd::grad({(g * tensor<double>({1, 2, 3, 4, 5})).sum()}, {x})[0];
  };
  auto near = [](const Tensor& t, const std::vector<double>& want) {
    Tensor h = t.contiguous();
    REQUIRE(h.numel() == static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(h.data_ptr<double>()[i] == doctest::Approx(want[i]).epsilon(1e-14));
    }
  };
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor<double>({1e300, inf, 710, -1, 0}).requires_grad_();
  // elu''(x) = alpha exp(x) for x <= 0 (the branch its first derivative takes at 0), 0 above.
  Tensor e = second(x, [](const Tensor& t) { return t.elu(1.5); });
  near(e, {0, 0, 0, 4 * 1.5 * std::exp(-1.0), 5 * 1.5});
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  Tensor s = second(x, [](const Tensor& t) { return t.selu(); });
  near(s, {0, 0, 0, 4 * alpha * scale * std::exp(-1.0), 5 * alpha * scale});
  Tensor c = second(x, [](const Tensor& t) { return t.celu(0.5); });
  near(c, {0, 0, 0, 4 * 2 * std::exp(-2.0), 5 * 2});
  // d^2/da^2 a^b = b (b - 1) a^(b-2): 0 where a^(b-2) underflows, even for a huge b.
  Tensor a = tensor<double>({0.9999, 2.5, 1.0001, 0.5, 3}).requires_grad_();
  Tensor b = tensor<double>({1e300, -1e300, -1e300, 3, 2});
  Tensor p = second(a, [&](const Tensor& t) { return t.pow(b); });
  near(p, {0, 0, 0, 4 * 3 * 2 * 0.5, 5 * 2});
}

TEST_CASE("pow's exponent gradient takes log(a) in the result's dtype (an f32 base, an f64 exponent)") {
  // As PyTorch: the f64 gradient must not carry an f32 logarithm's ~6e-8 relative error.
  Tensor a = tensor<float>({1.57799542f, 2.5f, 0.3f}).requires_grad_();
  Tensor b = tensor<double>({-1.20477708, 0.7, 1.9}).requires_grad_();
  a.pow(b).sum().backward();
  REQUIRE(b.grad().dtype() == DType::F64);
  REQUIRE(a.grad().dtype() == DType::F32);
  Tensor a64 = a.detach().to(DType::F64);
  Tensor want = a64.pow(b.detach()) * a64.log();
  for (int64_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(b.grad().select(0, i).item<double>() == doctest::Approx(want.select(0, i).item<double>()).epsilon(1e-14));
  }
}

}  // namespace test_gradcheck
