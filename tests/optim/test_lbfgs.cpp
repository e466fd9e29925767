// LBFGS against PyTorch's trajectories (tests/data/optim/lbfgs.txt, written by
// tools/gen_lbfgs_golden.py), its state dict, and its refusals.
#include <doctest/doctest.h>
#include <ember/ember.hpp>
#include <ember/optim.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#ifndef EMBER_TEST_DATA_DIR
#define EMBER_TEST_DATA_DIR "tests/data"
#endif

namespace test_lbfgs {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

struct Step {
  double loss = 0;
  int64_t func_evals = 0, n_iter = 0;
  std::vector<std::vector<double>> values;
};
struct Case {
  std::string name, problem;
  std::map<std::string, std::string> options;
  std::map<std::string, Tensor> tensors;
  std::vector<Tensor> params;
  std::vector<Step> steps;
};

Tensor read_tensor(std::istringstream& ls) {
  int64_t nd = 0;
  ls >> nd;
  Shape shape;
  for (int64_t i = 0; i < nd; ++i) {
    int64_t s = 0;
    ls >> s;
    shape.push_back(s);
  }
  std::string colon;
  ls >> colon;
  REQUIRE(colon == ":");
  std::vector<double> v;
  for (double x; ls >> x;) v.push_back(x);
  Tensor t = empty(shape, TensorOptions(DType::F64));
  REQUIRE(static_cast<int64_t>(v.size()) == t.numel());
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

std::vector<Case> read_cases() {
  std::ifstream in(std::string(EMBER_TEST_DATA_DIR) + "/optim/lbfgs.txt");
  REQUIRE_MESSAGE(in.good(), "cannot open tests/data/optim/lbfgs.txt");
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "ember-lbfgs-golden 1");
  std::vector<Case> cases;
  int64_t total = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "case") {
      cases.emplace_back();
      ls >> cases.back().name;
    } else if (kind == "total") {
      ls >> total;
    } else if (kind == "end") {
      continue;
    } else {
      REQUIRE(!cases.empty());
      Case& c = cases.back();
      if (kind == "problem") {
        ls >> c.problem;
      } else if (kind == "options") {
        for (std::string kv; ls >> kv;) c.options[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
      } else if (kind == "tensor") {
        std::string name;
        ls >> name;
        c.tensors[name] = read_tensor(ls);
      } else if (kind == "param") {
        int64_t i = 0;
        ls >> i;
        c.params.push_back(read_tensor(ls));
      } else if (kind == "step") {
        Step s;
        int64_t k = 0;
        ls >> k >> s.loss >> s.func_evals >> s.n_iter;
        c.steps.push_back(s);
      } else if (kind == "value") {
        int64_t k = 0, i = 0;
        std::string colon;
        ls >> k >> i >> colon;
        std::vector<double> v;
        for (double x; ls >> x;) v.push_back(x);
        c.steps.back().values.push_back(v);
      } else {
        FAIL("unknown record " << kind);
      }
    }
  }
  REQUIRE(total == static_cast<int64_t>(cases.size()));
  return cases;
}

/// The case's loss of the parameters, with Ember's ops (the fixture's problem).
Tensor problem_loss(const Case& c, const std::vector<Tensor>& ps) {
  if (c.problem == "quartic") {
    Tensor x = cat({ps[0], ps[1].flatten()});
    Tensor r = c.tensors.at("A").matmul(x) - c.tensors.at("b");
    return 0.5 * (r * r).sum() + 0.1 * x.pow(4.0).sum();
  }
  REQUIRE(c.problem == "rosenbrock");
  Tensor x = cat({ps[0], ps[1]});
  const int64_t n = x.size(0);
  Tensor lo = x.narrow(0, 0, n - 1), hi = x.narrow(0, 1, n - 1);
  return (100.0 * (hi - lo * lo).square() + (1.0 - lo).square()).sum();
}

optim::LBFGSOptions options_of(const Case& c) {
  auto num = [&](const char* k) { return std::stod(c.options.at(k)); };
  optim::LBFGSOptions o(num("lr"));
  o.max_iter(num("max_iter"))
      .max_eval(num("max_eval"))
      .history_size(num("history_size"))
      .tolerance_grad(num("tolerance_grad"))
      .tolerance_change(num("tolerance_change"));
  if (c.options.at("line_search") == "strong_wolfe") o.line_search_fn("strong_wolfe");
  return o;
}

}  // namespace

TEST_CASE("LBFGS: PyTorch's trajectories, with and without the strong Wolfe line search") {
  std::vector<Case> cases = read_cases();
  CHECK(cases.size() == 6);
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::vector<Tensor> ps;
    for (const Tensor& p : c.params) ps.push_back(p.clone().requires_grad_());
    optim::LBFGS opt(ps, options_of(c));
    auto closure = [&] {
      opt.zero_grad();
      Tensor loss = problem_loss(c, ps);
      loss.backward();
      return loss;
    };
    for (size_t k = 0; k < c.steps.size(); ++k) {
      CAPTURE(k + 1);
      const Step& want = c.steps[k];
      Tensor loss = opt.step(closure);
      CHECK(loss.item<double>() == doctest::Approx(want.loss).epsilon(1e-9));
      CHECK(opt.search_state().func_evals == want.func_evals);
      CHECK(opt.search_state().n_iter == want.n_iter);
      for (size_t i = 0; i < ps.size(); ++i) {
        Tensor got = ps[i].detach().flatten();
        REQUIRE(got.numel() == static_cast<int64_t>(want.values[i].size()));
        for (int64_t j = 0; j < got.numel(); ++j)
          CHECK(got.data_ptr<double>()[j] == doctest::Approx(want.values[i][static_cast<size_t>(j)]).epsilon(1e-8));
      }
    }
  }
}

TEST_CASE("LBFGS: the state dict resumes a search exactly; f32 parameters; refusals") {
  auto problem = [](const std::vector<Tensor>& ps) {
    Tensor x = cat({ps[0], ps[1]});
    return ((x - 0.5).pow(4.0) + (x * x)).sum();
  };
  auto make = [] { return std::vector<Tensor>{tensor<double>({1.0, -2.0}).requires_grad_(), tensor<double>({3.0}).requires_grad_()}; };
  const auto opts = optim::LBFGSOptions(1).max_iter(3).history_size(2).line_search_fn("strong_wolfe");

  // Two steps in one optimiser equal a step, a state dict, and a step in a fresh one.
  std::vector<Tensor> a = make(), b = make();
  optim::LBFGS oa(a, opts), ob(b, opts);
  auto closure_for = [&](optim::LBFGS& o, std::vector<Tensor>& ps) {
    return [&o, &ps, &problem] {
      o.zero_grad();
      Tensor l = problem(ps);
      l.backward();
      return l;
    };
  };
  oa.step(closure_for(oa, a));
  oa.step(closure_for(oa, a));
  ob.step(closure_for(ob, b));
  optim::StateDict saved = ob.state_dict();
  CHECK(saved.state.size() == 1);
  const Tensor& dirs = saved.state.at(0).tensors.at("old_dirs");
  CHECK(dirs.size(1) == 3);  // one row per kept pair, over the 3 parameter elements
  CHECK(dirs.size(0) >= 1);
  CHECK(dirs.size(0) == saved.state.at(0).tensors.at("ro").numel());
  CHECK(saved.param_groups[0].options.at("strong_wolfe") == 1.0);
  std::vector<Tensor> c = make();
  {
    autograd::NoGradGuard ng;
    c[0].copy_(b[0]);
    c[1].copy_(b[1]);
  }
  optim::LBFGS oc(c, optim::LBFGSOptions(1));
  oc.load_state_dict(saved);
  CHECK(static_cast<const optim::LBFGSOptions&>(oc.param_groups()[0].options()).line_search_fn().has_value());
  oc.step(closure_for(oc, c));
  CHECK((a[0] - c[0]).abs().amax().item<double>() == 0.0);
  CHECK((a[1] - c[1]).abs().amax().item<double>() == 0.0);

  // f32 parameters converge too (the search runs in double).
  Tensor w = tensor<float>({3.0f, -1.0f}).requires_grad_();
  optim::LBFGS of({w}, optim::LBFGSOptions(1).line_search_fn("strong_wolfe"));
  for (int i = 0; i < 3; ++i)
    of.step([&] {
      of.zero_grad();
      Tensor l = ((w - tensor<float>({1.0f, 2.0f})).square() * tensor<float>({1.0f, 10.0f})).sum();
      l.backward();
      return l;
    });
  CHECK(w.detach().data_ptr<float>()[0] == doctest::Approx(1.0).epsilon(1e-4));
  CHECK(w.detach().data_ptr<float>()[1] == doctest::Approx(2.0).epsilon(1e-4));

  // max_eval's default is fixed at construction (max_iter * 5 / 4) and saved, as PyTorch's.
  CHECK(saved.param_groups[0].options.at("max_eval") == 3.0);
  // A NaN gradient is not convergence: the search goes on until max_eval (3 here), as
  // PyTorch's (which reports n_iter 2, func_evals 3 for this call).
  Tensor nan_w = tensor<double>({1.0}).requires_grad_();
  optim::LBFGS on({nan_w}, optim::LBFGSOptions(1).max_iter(3));
  on.step([&] {
    on.zero_grad();
    Tensor l = (nan_w * std::nan("")).sum();
    l.backward();
    return l;
  });
  CHECK(on.search_state().n_iter == 2);
  CHECK(on.search_state().func_evals == 3);
  // Lowering history_size mid-run trims the history at the next pair.
  std::vector<Tensor> h = make();
  optim::LBFGS oh(h, optim::LBFGSOptions(1).history_size(5).line_search_fn("strong_wolfe"));
  oh.step(closure_for(oh, h));
  oh.param_groups()[0].options().set("history_size", 1);
  {
    autograd::NoGradGuard ng;
    h[0].add_(1.0);  // move away from the optimum so that the search takes pairs again
  }
  oh.step(closure_for(oh, h));
  CHECK(oh.search_state().old_dirs.size() <= 1);

  CHECK_THROWS_WITH_AS(oa.step(), doctest::Contains("[LBFGS] step needs a closure"), Error);
  CHECK_THROWS_WITH_AS(oa.step([] { return Tensor(); }), doctest::Contains("must return the loss"), Error);
  CHECK_THROWS_WITH_AS(optim::LBFGSOptions().line_search_fn("backtracking"),
                       doctest::Contains("line_search_fn must be \"strong_wolfe\" or none, got \"backtracking\""), Error);
  CHECK_THROWS_WITH_AS(optim::LBFGS(make(), optim::LBFGSOptions().max_iter(2.5)),
                       doctest::Contains("max_iter must be a positive integer, got 2.5"), Error);
  CHECK_THROWS_WITH_AS(optim::LBFGS(make(), optim::LBFGSOptions().history_size(0)),
                       doctest::Contains("history_size must be a positive integer"), Error);
  std::vector<Tensor> two = make();
  CHECK_THROWS_WITH_AS(optim::LBFGS(std::vector<optim::ParamGroup>{optim::ParamGroup({two[0]}), optim::ParamGroup({two[1]})},
                                    optim::LBFGSOptions()),
                       doctest::Contains("one parameter group"), Error);
  optim::StateDict wrong = saved;
  wrong.state.at(0).tensors["d"] = zeros({5}, DType::F64);
  std::vector<Tensor> e = make();
  optim::LBFGS oe(e, opts);
  CHECK_THROWS_WITH_AS(oe.load_state_dict(wrong), doctest::Contains("the parameters hold 3"), Error);
  CHECK(oe.search_state().func_evals == 0);  // a refused load changes nothing
}

}  // namespace test_lbfgs
