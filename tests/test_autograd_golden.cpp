// Golden tests against PyTorch: tests/data/autograd_golden.txt holds, for each case, float64
// inputs, PyTorch's output, the gradient of sum(w * out) for a recorded cotangent w, and a
// Hessian-vector product (the gradient of sum_i sum(v_i * grad_i), through create_graph).
// The file is written by tools/gen_golden.py (run by hand with python3-torch; never by the
// build). Here each case's expression is recomputed with Ember and compared.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "support/golden_reader.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef EMBER_TEST_DATA_DIR
#define EMBER_TEST_DATA_DIR "tests/data"
#endif

namespace test_autograd_golden {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

constexpr double kRtol = 1e-10, kAtol = 1e-10;

// ---- the fixture --------------------------------------------------------------------------

struct GoldenTensor {
  std::string dtype;  // "f64" or "i64"
  std::vector<int64_t> dims;
  std::vector<double> values;
};

struct GoldenCase {
  std::string name, expr;
  int line = 0;
  std::vector<GoldenTensor> input, constant, output, cotangent, grad, v, hvp;
};

struct Fixture {
  std::vector<GoldenCase> cases;
  std::string error;  // empty when the file was read completely
};

Fixture load_fixture(const std::string& path) {
  Fixture fx;
  bool have_total = false;
  GoldenCase* cur = nullptr;
  auto record = [&](const std::string& key, std::istringstream& ls, int line) -> std::string {
    if (have_total) {
      return "text after the 'total' line";
    } else if (key == "case") {
      if (cur) return "'case' inside case " + cur->name;
      fx.cases.emplace_back();
      cur = &fx.cases.back();
      cur->line = line;
      if (!(ls >> cur->name)) return "case without a name";
    } else if (key == "expr") {
      if (!cur || !(ls >> cur->expr)) return "bad 'expr' line";
    } else if (key == "tensor") {
      if (!cur) return "'tensor' outside a case";
      std::string role, colon;
      GoldenTensor t;
      int64_t ndim = -1;
      if (!(ls >> role >> t.dtype >> ndim) || ndim < 0) return "bad tensor header";
      if (t.dtype != "f64" && t.dtype != "i64") return "unknown dtype " + t.dtype;
      int64_t n = 1;
      for (int64_t i = 0; i < ndim; ++i) {
        int64_t d = -1;
        if (!(ls >> d) || d < 0) return "bad tensor dims";
        t.dims.push_back(d);
        n *= d;
      }
      if (!(ls >> colon) || colon != ":") return "expected ':' after the dims";
      std::string tok;
      while (ls >> tok) {
        char* end = nullptr;
        double x = std::strtod(tok.c_str(), &end);
        if (end != tok.c_str() + tok.size()) return "bad number '" + tok + "'";
        t.values.push_back(x);
      }
      if (static_cast<int64_t>(t.values.size()) != n)
        return "expected " + std::to_string(n) + " values, got " + std::to_string(t.values.size());
      std::vector<GoldenTensor>* dst = role == "input"       ? &cur->input
                                       : role == "const"     ? &cur->constant
                                       : role == "output"    ? &cur->output
                                       : role == "cotangent" ? &cur->cotangent
                                       : role == "grad"      ? &cur->grad
                                       : role == "v"         ? &cur->v
                                       : role == "hvp"       ? &cur->hvp
                                                             : nullptr;
      if (!dst) return "unknown role " + role;
      dst->push_back(std::move(t));
    } else if (key == "end") {
      if (!cur) return "'end' outside a case";
      const size_t k = cur->input.size();
      if (cur->expr.empty() || k == 0 || cur->output.size() != 1 || cur->cotangent.size() != 1 ||
          cur->grad.size() != k || cur->v.size() != k || cur->hvp.size() != k)
        return "case " + cur->name + " is incomplete";
      cur = nullptr;
    } else if (key == "total") {
      size_t total = 0;
      if (cur || !(ls >> total)) return "bad 'total' line";
      if (total != fx.cases.size())
        return "total says " + std::to_string(total) + " cases, read " + std::to_string(fx.cases.size());
      have_total = true;
    } else {
      return "unknown record '" + key + "'";
    }
    return "";
  };
  fx.error = test::read_golden(path, "ember-autograd-golden", 1, record, [&]() -> std::string {
    return have_total ? "" : "no 'total' line: the file is truncated";
  });
  return fx;
}

const Fixture& fixture() {
  static const Fixture fx = load_fixture(std::string(EMBER_TEST_DATA_DIR) + "/autograd_golden.txt");
  return fx;
}

Tensor make_tensor(const GoldenTensor& g) {
  Shape s;
  for (int64_t d : g.dims) s.push_back(d);
  if (g.dtype == "i64") {
    Tensor t = empty(s, TensorOptions(DType::I64));
    int64_t* p = t.data_ptr<int64_t>();
    for (size_t i = 0; i < g.values.size(); ++i) p[i] = static_cast<int64_t>(g.values[i]);
    return t;
  }
  Tensor t = empty(s, TensorOptions(DType::F64));
  double* p = t.data_ptr<double>();
  for (size_t i = 0; i < g.values.size(); ++i) p[i] = g.values[i];
  return t;
}

/// "" when t matches the golden tensor (shape, and every value within kAtol + kRtol*|ref|);
/// otherwise what differs. An undefined t stands for zeros (an unused input in autograd::grad).
std::string compare(const Tensor& t, const GoldenTensor& ref) {
  Shape want;
  for (int64_t d : ref.dims) want.push_back(d);
  Tensor h = t.defined() ? t.detach().to(DType::F64).contiguous() : zeros(want, TensorOptions(DType::F64));
  if (h.sizes() != want) return fmt::format("shape {} (expected {})", h.sizes(), want);
  const double* p = h.data_ptr<double>();
  int bad = 0;
  std::string first;
  double worst = 0;
  for (size_t i = 0; i < ref.values.size(); ++i) {
    double a = p[i], e = ref.values[i], err = std::abs(a - e);
    if (!(err <= kAtol + kRtol * std::abs(e))) {  // NaN fails
      if (bad++ == 0) first = fmt::format("element {}: ember {:.17g}, torch {:.17g}", i, a, e);
      if (!(err <= worst)) worst = err;
    }
  }
  if (!bad) return {};
  return fmt::format("{} of {} elements differ (largest error {:.3g}); first: {}", bad, ref.values.size(), worst,
                     first);
}

// ---- the expressions, as in tools/gen_golden.py ---------------------------------------------

using Expr = std::function<Tensor(const std::vector<Tensor>&)>;

const std::map<std::string, Expr>& expressions() {
  using V = const std::vector<Tensor>&;
  static const std::map<std::string, Expr> m = {
      // elementwise unary
      {"exp", [](V a) { return a[0].exp(); }},
      {"log", [](V a) { return a[0].log(); }},
      {"sqrt", [](V a) { return a[0].sqrt(); }},
      {"tanh", [](V a) { return a[0].tanh(); }},
      {"sigmoid", [](V a) { return a[0].sigmoid(); }},
      {"sin", [](V a) { return a[0].sin(); }},
      {"gelu", [](V a) { return a[0].gelu(false); }},
      {"gelu_tanh", [](V a) { return a[0].gelu(true); }},
      {"silu", [](V a) { return a[0].silu(); }},
      {"softplus_b2", [](V a) { return a[0].softplus(2.0, 20.0); }},
      {"elu_a07", [](V a) { return a[0].elu(0.7); }},
      {"leaky_relu_01", [](V a) { return a[0].leaky_relu(0.1); }},
      {"abs", [](V a) { return a[0].abs(); }},
      {"relu", [](V a) { return a[0].relu(); }},
      {"clamp_m05_05", [](V a) { return a[0].clamp(-0.5, 0.5); }},
      {"erf", [](V a) { return a[0].erf(); }},
      {"atan", [](V a) { return a[0].atan(); }},
      {"reciprocal", [](V a) { return a[0].reciprocal(); }},
      {"rsqrt", [](V a) { return a[0].rsqrt(); }},
      {"pow_scalar_2_5", [](V a) { return a[0].pow(2.5); }},
      // binary, broadcasting
      {"add", [](V a) { return a[0] + a[1]; }},
      {"sub", [](V a) { return a[0] - a[1]; }},
      {"mul", [](V a) { return a[0] * a[1]; }},
      {"div", [](V a) { return a[0] / a[1]; }},
      {"pow", [](V a) { return a[0].pow(a[1]); }},
      {"atan2", [](V a) { return a[0].atan2(a[1]); }},
      {"maximum", [](V a) { return a[0].maximum(a[1]); }},
      {"minimum", [](V a) { return a[0].minimum(a[1]); }},
      {"hypot", [](V a) { return a[0].hypot(a[1]); }},
      // reductions
      {"sum_dims02", [](V a) { return a[0].sum({0, 2}); }},
      {"sum_all", [](V a) { return (a[0] * a[0]).sum(); }},
      {"mean_dim1_keep", [](V a) { return a[0].mean({1}, true); }},
      {"prod_dim1", [](V a) { return a[0].prod({1}); }},
      {"amax_dim0", [](V a) { return a[0].amax({0}); }},
      {"norm2_dim1", [](V a) { return a[0].norm(2.0, {1}); }},
      {"norm3_dim1", [](V a) { return a[0].norm(3.0, {1}); }},
      {"var_dim1", [](V a) { return a[0].var({1}); }},
      {"std_dim0", [](V a) { return a[0].std({0}); }},
      {"logsumexp_dim1", [](V a) { return a[0].logsumexp({1}); }},
      {"softmax_dim1", [](V a) { return a[0].softmax(1); }},
      {"log_softmax_dim0", [](V a) { return a[0].log_softmax(0); }},
      {"cumsum_dim1", [](V a) { return a[0].cumsum(1); }},
      {"cumprod_dim0", [](V a) { return a[0].cumprod(0); }},
      // matrix products
      {"matmul", [](V a) { return a[0].matmul(a[1]); }},
      // composites
      {"mlp_tanh_sum", [](V a) { return (a[0].matmul(a[1]) + a[2]).tanh().sum(); }},
      {"mlp2_gelu", [](V a) { return (a[0].matmul(a[1]) + a[2]).gelu(false).matmul(a[3]); }},
      {"cross_entropy", [](V a) { return -gather(a[0].log_softmax(1), 1, a[1]).mean(); }},
      {"layer_norm",
       [](V a) {
         const Tensor& x = a[0];
         return (x - x.mean({1}, true)) / (x.var({1}, 0.0, true) + 1e-5).sqrt() * a[1] + a[2];
       }},
      {"attention", [](V a) { return (a[0].matmul(a[1].mT()) / 2.0).softmax(-1).matmul(a[2]); }},
      {"where_exp_sin", [](V a) { return a[0].exp().where(a[0].gt(0.0), a[0].sin()); }},
      {"views_cat",
       [](V a) {
         Tensor at = a[0].t();
         return cat(std::vector<Tensor>{at.narrow(1, 0, 2) * a[1], at.narrow(1, 1, 2).exp()}, 0)
             .reshape({4, 4})
             .sin();
       }},
  };
  return m;
}

void run_case(const GoldenCase& c, const Expr& f) {
  std::vector<Tensor> xs, args;
  for (const auto& t : c.input) xs.push_back(make_tensor(t).requires_grad_());
  args = xs;
  for (const auto& t : c.constant) args.push_back(make_tensor(t));

  Tensor out = f(args);
  std::string d = compare(out, c.output[0]);
  CHECK_MESSAGE(d.empty(), "output: " << d);
  if (!out.requires_grad()) {
    FAIL_CHECK("the output does not require grad");
    return;
  }

  // First order: the gradient of sum(w * out), kept differentiable for the second.
  Tensor w = make_tensor(c.cotangent[0]);
  std::vector<Tensor> g = autograd::grad<DefaultPolicy>({out}, xs, {w}, true, true, true);
  if (g.size() != xs.size()) {
    FAIL_CHECK("autograd::grad returned " << g.size() << " gradients for " << xs.size() << " inputs");
    return;
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    d = compare(g[i], c.grad[i]);
    CHECK_MESSAGE(d.empty(), "grad of input " << i << ": " << d);
  }

  // Second order: the gradient of sum_i sum(v_i * g_i), a Hessian-vector product. Gradients
  // that do not depend on the inputs contribute zeros (as in the generator).
  Tensor s;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!g[i].defined() || !g[i].requires_grad()) continue;
    Tensor term = (make_tensor(c.v[i]) * g[i]).sum();
    s = s.defined() ? s + term : term;
  }
  std::vector<Tensor> h(xs.size());
  if (s.defined()) h = autograd::grad<DefaultPolicy>({s}, xs, {}, false, false, true);
  if (h.size() != xs.size()) {
    FAIL_CHECK("autograd::grad returned " << h.size() << " second-order gradients for " << xs.size() << " inputs");
    return;
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    d = compare(h[i], c.hvp[i]);
    CHECK_MESSAGE(d.empty(), "hvp for input " << i << ": " << d);
  }
}

}  // namespace

TEST_CASE("autograd golden: the PyTorch fixture reads completely") {
  const Fixture& fx = fixture();
  INFO("data dir: " EMBER_TEST_DATA_DIR " (regenerate with tools/gen_golden.py)");
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  CHECK(fx.cases.size() >= 30);
  std::set<std::string> names;
  for (const auto& c : fx.cases) CHECK_MESSAGE(names.insert(c.name).second, "duplicate case " << c.name);
}

TEST_CASE("autograd golden: every fixture expression has an Ember lambda") {
  const Fixture& fx = fixture();
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  for (const auto& c : fx.cases)
    CHECK_MESSAGE(expressions().count(c.expr) == 1,
                  "case " << c.name << " (line " << c.line << "): no Ember lambda for expression '" << c.expr << "'");
}

TEST_CASE("autograd golden: outputs, gradients and Hessian-vector products match PyTorch") {
  const Fixture& fx = fixture();
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  REQUIRE(!fx.cases.empty());
  for (const auto& c : fx.cases) {
    auto it = expressions().find(c.expr);
    if (it == expressions().end()) {
      FAIL_CHECK("case " << c.name << ": no Ember lambda for expression '" << c.expr << "'");
      continue;
    }
    INFO("case " << c.name << " (expr " << c.expr << ", " EMBER_TEST_DATA_DIR "/autograd_golden.txt line " << c.line
                 << ")");
    try {
      run_case(c, it->second);
    } catch (const std::exception& e) {
      FAIL_CHECK("threw: " << e.what());
    }
  }
}

}  // namespace test_autograd_golden
