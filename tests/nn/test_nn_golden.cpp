// Golden tests of every nn module and loss against PyTorch: tests/data/nn_golden/modules.txt
// holds, per case, a module configuration, its parameters and buffers by PyTorch's names,
// inputs, outputs, a cotangent per output, and the gradients of the inputs and parameters
// (and the buffers after forward). tools/gen_nn_golden.py writes it (by hand, with Debian's
// python3-torch; never the build). Here each case's module is built with Ember
// (golden_builders.cpp), and
//   * named_parameters(), named_buffers() and state_dict() keys must equal PyTorch's, in order;
//   * PyTorch's values load with load_state_dict (strict);
//   * outputs, input and parameter gradients and updated buffers must agree within
//     1e-10 (f64) or 1e-5 (f32), absolute plus relative: |ember - torch| <= tol (1 + |torch|);
//     integer outputs (max-pool indices) exactly; shapes and dtypes exactly.
// A case whose module type has no builder fails, as does an option or input the builder did not
// read, and a builder no case uses: the fixture and the builders cannot drift apart silently.

#include <doctest/doctest.h>

#include "golden.hpp"
#include "../support/golden_reader.hpp"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#ifndef EMBER_TEST_DATA_DIR
#define EMBER_TEST_DATA_DIR "tests/data"
#endif

namespace test_nn_golden {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::nn_golden;

namespace {

const char* const kFixture = EMBER_TEST_DATA_DIR "/nn_golden/modules.txt";

struct Fixture {
  std::vector<Case> cases;
  std::string error;
};

bool parse_dtype(const std::string& s, DType& out) {
  if (s == "f64") out = DType::F64;
  else if (s == "f32") out = DType::F32;
  else if (s == "i64") out = DType::I64;
  else if (s == "bool") out = DType::Bool;
  else return false;
  return true;
}

/// "<name> <dtype> <ndim> <dims...> : <values...>"; false (with `why`) when malformed.
bool parse_named(std::istringstream& ls, Named& n, std::string& why) {
  std::string dt, colon, tok;
  int ndim = -1;
  if (!(ls >> n.name >> dt >> ndim) || !parse_dtype(dt, n.dtype) || ndim < 0 || ndim > 8)
    return why = "bad tensor header", false;
  int64_t count = 1;
  for (int i = 0; i < ndim; ++i) {
    int64_t d = -1;
    if (!(ls >> d) || d < 0) return why = "bad dims", false;
    n.shape.push_back(d);
    count *= d;
  }
  if (!(ls >> colon) || colon != ":") return why = "expected ':'", false;
  while (ls >> tok) {
    char* end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    if (end != tok.c_str() + tok.size()) return why = "bad number '" + tok + "'", false;
    n.values.push_back(v);
  }
  if (static_cast<int64_t>(n.values.size()) != count)
    return why = n.name + ": " + std::to_string(n.values.size()) + " values for " + std::to_string(count) +
                 " elements",
           false;
  return true;
}

Fixture load(const std::string& path) {
  Fixture fx;
  std::string why;
  bool total = false;
  Case* cur = nullptr;
  auto record = [&](const std::string& key, std::istringstream& ls, int line) -> std::string {
    if (total) {
      return "text after the 'total' line";
    } else if (key == "total") {
      size_t n = 0;
      if (cur || !(ls >> n) || n != fx.cases.size()) return "'total' does not match the cases read";
      total = true;
    } else if (key == "case") {
      if (cur) return "'case' inside a case";
      cur = &fx.cases.emplace_back();
      cur->line = line;
      if (!(ls >> cur->name)) return "case without a name";
    } else if (!cur) {
      return "'" + key + "' outside a case";
    } else if (key == "end") {
      if (cur->type.empty() || cur->dtype.empty()) return "case " + cur->name + " lacks module or dtype";
      cur = nullptr;
    } else if (key == "module") {
      std::string tok;
      if (!(ls >> cur->type)) return "module without a type";
      while (ls >> tok) {
        size_t eq = tok.find('=');
        if (eq == std::string::npos || !cur->options.emplace(tok.substr(0, eq), tok.substr(eq + 1)).second)
          return "bad or repeated option '" + tok + "'";
      }
    } else if (key == "dtype") {
      if (!(ls >> cur->dtype) || (cur->dtype != "f64" && cur->dtype != "f32")) return "bad dtype";
    } else if (key == "mode") {
      std::string m;
      if (!(ls >> m) || (m != "train" && m != "eval")) return "bad mode";
      cur->train = m == "train";
    } else if (key == "state_keys") {
      std::string colon, k;
      if (!(ls >> colon) || colon != ":") return "expected ':'";
      while (ls >> k) cur->state_keys.push_back(k);
    } else {
      std::vector<Named>* dst = key == "param"          ? &cur->params
                                : key == "buffer"       ? &cur->buffers
                                : key == "input"        ? &cur->inputs
                                : key == "output"       ? &cur->outputs
                                : key == "cotangent"    ? &cur->cotangents
                                : key == "grad_input"   ? &cur->grad_inputs
                                : key == "grad_param"   ? &cur->grad_params
                                : key == "buffer_after" ? &cur->buffers_after
                                                        : nullptr;
      if (!dst) return "unknown record '" + key + "'";
      if (!parse_named(ls, dst->emplace_back(), why)) return why;
    }
    return "";
  };
  fx.error = test::read_golden(path, "ember-nn-golden", 1, record, [&]() -> std::string {
    return !total || cur ? "the file ends early (no 'total' line)" : "";
  });
  return fx;
}

const Fixture& fixture() {
  static const Fixture fx = load(kFixture);
  return fx;
}

std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  const double* p = h.data_ptr<double>();
  return std::vector<double>(p, p + h.numel());
}

/// "" when `got` matches `want` (shape, dtype, values within tol (1 + |want|); integers
/// exactly); else what differs. `worst` collects the largest error relative to that bound's scale.
std::string compare(const Tensor& got, const Named& want, double tol, double& worst) {
  if (!got.defined()) return "Ember gave no tensor";
  if (got.sizes() != Shape(want.shape))
    return fmt::format("shape {} in Ember, {} in PyTorch", got.sizes(), Shape(want.shape));
  if (got.dtype() != want.dtype) return fmt::format("dtype {} in Ember, {} in PyTorch", got.dtype(), want.dtype);
  const bool exact = !is_floating(want.dtype);
  std::vector<double> g = values_of(got);
  std::string first;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = want.values[i], err = std::abs(g[i] - w);
    const bool same_inf = std::isinf(w) && g[i] == w;
    const bool both_nan = std::isnan(w) && std::isnan(g[i]);  // a NaN's sign bit means nothing
    if (!same_inf && !both_nan) worst = std::max(worst, err / (1 + std::abs(w)));
    const bool ok = same_inf || both_nan || (exact ? err == 0 : err <= tol * (1 + std::abs(w)));
    if (!ok && first.empty()) first = fmt::format("element {}: Ember {:.17g}, PyTorch {:.17g}", i, g[i], w);
  }
  return first;
}

std::vector<std::string> names_of(const nn::NamedTensors& l) {
  std::vector<std::string> out;
  for (const auto& [n, t] : l) out.push_back(n);
  return out;
}
std::vector<std::string> names_of(const std::vector<Named>& l) {
  std::vector<std::string> out;
  for (const Named& n : l) out.push_back(n.name);
  return out;
}
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return "[" + s + "]";
}

/// Runs one case; every difference is a failed check. Returns the worst error seen.
double run_case(const Case& c, const Builder& make) {
  const DType dt = c.dtype == "f32" ? DType::F32 : DType::F64;
  const double tol = dt == DType::F64 ? 1e-10 : 1e-5;
  double worst = 0;
  Opts opts(c);
  Built built = make(opts);
  CHECK_MESSAGE(opts.unused().empty(), "options the builder did not read: " << joined(opts.unused()));
  nn::Module& m = *built.module;
  m.to(dt);

  // Names, in PyTorch's order.
  CHECK_MESSAGE(names_of(m.named_parameters()) == names_of(c.params),
                "named_parameters: Ember " << joined(names_of(m.named_parameters())) << ", PyTorch "
                                           << joined(names_of(c.params)));
  CHECK_MESSAGE(names_of(m.named_buffers()) == names_of(c.buffers),
                "named_buffers: Ember " << joined(names_of(m.named_buffers())) << ", PyTorch "
                                        << joined(names_of(c.buffers)));
  CHECK_MESSAGE(names_of(m.state_dict()) == c.state_keys,
                "state_dict keys: Ember " << joined(names_of(m.state_dict())) << ", PyTorch " << joined(c.state_keys));

  nn::NamedTensors dict;
  for (const auto* group : {&c.params, &c.buffers})
    for (const Named& n : *group) dict.insert(n.name, n.tensor());
  m.load_state_dict(dict, true);
  m.train(c.train);
  if (c.inputs.empty()) return worst;  // a names-only case

  std::map<std::string, Tensor> xs;
  std::set<std::string> needs_grad;
  for (const Named& g : c.grad_inputs) needs_grad.insert(g.name);
  for (const Named& n : c.inputs) {
    Tensor t = n.tensor();
    if (needs_grad.count(n.name)) t.requires_grad_();
    xs.emplace(n.name, t);
  }
  Inputs in(xs);
  std::vector<Tensor> outs = built.forward(in);
  CHECK_MESSAGE(in.unused().empty(), "inputs the builder did not pass: " << joined(in.unused()));
  REQUIRE_MESSAGE(outs.size() == c.outputs.size(),
                  "Ember gave " << outs.size() << " outputs, PyTorch " << c.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string d = compare(outs[i], c.outputs[i], tol, worst);
    CHECK_MESSAGE(d.empty(), "output " << i << ": " << d);
  }
  auto bufs = m.named_buffers();
  for (const Named& want : c.buffers_after) {
    Tensor got;
    for (const auto& [n, t] : bufs)
      if (n == want.name) got = t;
    std::string d = compare(got, want, tol, worst);
    CHECK_MESSAGE(d.empty(), "buffer " << want.name << " after forward: " << d);
  }

  // Backward with the recorded cotangents: d sum_i <cotangent_i, output_i>.
  if (c.cotangents.empty()) return worst;
  Tensor total;
  for (const Named& cot : c.cotangents) {
    size_t i = std::stoul(cot.name);
    REQUIRE(i < outs.size());
    Tensor term = (outs[i] * cot.tensor()).sum();
    total = total.defined() ? total + term : term;
  }
  total.backward();
  for (const Named& want : c.grad_inputs) {
    Tensor g = xs.at(want.name).grad();
    std::string d = compare(g.defined() ? g : zeros_like(xs.at(want.name)), want, tol, worst);
    CHECK_MESSAGE(d.empty(), "gradient of input " << want.name << ": " << d);
  }
  auto params = m.named_parameters();
  REQUIRE(params.size() == c.grad_params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = params[i].second.grad();  // none = zero, as PyTorch's None
    std::string d = compare(g.defined() ? g : zeros_like(params[i].second), c.grad_params[i], tol, worst);
    CHECK_MESSAGE(d.empty(), "gradient of parameter " << c.grad_params[i].name << ": " << d);
  }
  return worst;
}

}  // namespace

TEST_CASE("nn golden: the PyTorch fixture reads completely and names every case once") {
  const Fixture& fx = fixture();
  INFO("fixture: " << std::string(kFixture) << " (regenerate with tools/gen_nn_golden.py)");
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  CHECK(fx.cases.size() >= 150);
  std::set<std::string> names;
  for (const Case& c : fx.cases) CHECK_MESSAGE(names.insert(c.name).second, "duplicate case " << c.name);
}

TEST_CASE("nn golden: every fixture module has a builder and every builder a case") {
  const Fixture& fx = fixture();
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  std::set<std::string> used;
  for (const Case& c : fx.cases) {
    CHECK_MESSAGE(builders().count(c.type) == 1, "case " << c.name << ": no Ember builder for module " << c.type);
    used.insert(c.type);
  }
  for (const auto& builder : builders()) {
    const std::string& type = builder.first;
    CHECK_MESSAGE(used.count(type) == 1, "no golden case for " << type);
  }
}

TEST_CASE("nn golden: names, outputs, gradients and buffers of every module and loss match PyTorch") {
  const Fixture& fx = fixture();
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  double worst64 = 0, worst32 = 0;
  for (const Case& c : fx.cases) {
    INFO("case " << c.name << " (" << c.type << ", " << std::string(kFixture) << " line " << c.line << ")");
    auto it = builders().find(c.type);
    if (it == builders().end()) continue;  // reported by the test above
    try {
      double w = run_case(c, it->second);
      (c.dtype == "f64" ? worst64 : worst32) = std::max(c.dtype == "f64" ? worst64 : worst32, w);
    } catch (const std::exception& e) {
      FAIL_CHECK("threw: " << e.what());
    }
  }
  MESSAGE("worst error / (1 + |torch|): f64 " << worst64 << ", f32 " << worst32);
}

}  // namespace test_nn_golden
