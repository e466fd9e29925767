// nn::AnyValue, nn::AnyModule and Sequential over modules that take or return something other
// than one Tensor (libtorch's AnyModule and Sequential::forward<R>(inputs...)).

#include <doctest/doctest.h>
#include <ember/nn.hpp>
#include <ember/optim/swa_utils.hpp>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace test_any_module {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using LstmOut = std::pair<Tensor, std::pair<Tensor, Tensor>>;

namespace {

/// Two inputs: x * scale + y, with an optional integer shift.
struct AffineSumImpl : nn::Cloneable<AffineSumImpl> {
  AffineSumImpl() : nn::Cloneable<AffineSumImpl>("AffineSum") { reset(); }
  void reset() override { scale = register_parameter("scale", full({1}, 2.0)); }
  Tensor forward(const Tensor& x, const Tensor& y, int64_t shift = 0) { return x * scale + y + double(shift); }
  Tensor scale;
};
EMBER_MODULE(AffineSum);

/// Takes LSTM's result, keeps the output.
struct TakeOutputImpl : nn::Cloneable<TakeOutputImpl> {
  TakeOutputImpl() : nn::Cloneable<TakeOutputImpl>("TakeOutput") {}
  void reset() override {}
  Tensor forward(const LstmOut& r) const { return r.first; }
};
EMBER_MODULE(TakeOutput);

/// Non-tensor arguments and result.
struct LabelImpl : nn::Cloneable<LabelImpl> {
  LabelImpl() : nn::Cloneable<LabelImpl>("Label") {}
  void reset() override {}
  std::string forward(std::string prefix, double value, bool loud) {
    return prefix + std::to_string(static_cast<int>(value)) + (loud ? "!" : "");
  }
};

/// Overloaded forward: only all-Tensor calls are reachable.
struct OverloadedImpl : nn::Cloneable<OverloadedImpl> {
  OverloadedImpl() : nn::Cloneable<OverloadedImpl>("Overloaded") {}
  void reset() override {}
  Tensor forward(const Tensor& x) { return x + 1.0; }
  Tensor forward(const Tensor& x, const Tensor& y) { return x * y; }
  Tensor forward(const Tensor& x, double s) { return x * s; }
};

struct StaticImpl : nn::Cloneable<StaticImpl> {
  StaticImpl() : nn::Cloneable<StaticImpl>("Static") {}
  void reset() override {}
  static double forward(std::string_view text, int64_t extra) { return static_cast<double>(text.size()) + static_cast<double>(extra); }
};

/// The libtorch pattern: a subclass of Sequential with a forward of its own, which must be
/// what runs (not Sequential's chain).
struct DoubledChainImpl : nn::SequentialImpl {
  DoubledChainImpl() { push_back(nn::Linear(3, 3)); }
  Tensor forward(const Tensor& x) { return nn::SequentialImpl::forward(x) * 2.0; }
};

/// Derived from a module without a clone() of its own: clones as its base.
struct ScaledLinearImpl : nn::LinearImpl {
  ScaledLinearImpl() : nn::LinearImpl(2, 2) {}
};

struct VoidForwardImpl : nn::Module {
  void forward(const Tensor&) {}
};
struct MutatingForwardImpl : nn::Module {
  Tensor forward(Tensor& x) { return x; }
};
struct NoForwardImpl : nn::Module {};

Tensor seq_input() {
  manual_seed(3);
  return randn({2, 5, 4});
}

}  // namespace

static_assert(std::is_constructible_v<nn::AnyModule, nn::Linear>);
static_assert(std::is_constructible_v<nn::AnyModule, std::shared_ptr<LabelImpl>>);
// Refused at compile time: no value to pass on, writes into a temporary, nothing to call.
static_assert(!std::is_constructible_v<nn::AnyModule, std::shared_ptr<VoidForwardImpl>>);
static_assert(!std::is_constructible_v<nn::AnyModule, std::shared_ptr<MutatingForwardImpl>>);
static_assert(!std::is_constructible_v<nn::AnyModule, std::shared_ptr<NoForwardImpl>>);
// A forwarding template (one-Tensor call only), and no copy of an lvalue Impl (it would share
// the original's parameters and children).
static_assert(std::is_constructible_v<nn::AnyModule, optim::AveragedModel<nn::LinearImpl>>);
static_assert(!std::is_constructible_v<nn::AnyModule, nn::LinearImpl&>);
static_assert(std::is_constructible_v<nn::AnyModule, nn::LinearImpl&&>);

TEST_CASE("nn::AnyValue holds one value, gives it back as its own type only") {
  nn::AnyValue v(std::make_pair(1, std::string("a")));
  CHECK(v.holds<std::pair<int, std::string>>());
  CHECK(v.try_get<int>() == nullptr);
  CHECK(v.get<std::pair<int, std::string>>().second == "a");
  CHECK_THROWS_WITH_AS(v.get<int>(), doctest::Contains("get<int>() of a value of type std::pair<int"), Error);
  nn::AnyValue copy = v;
  v.try_get<std::pair<int, std::string>>()->first = 7;
  CHECK(copy.get<std::pair<int, std::string>>().first == 1);  // a copy, not shared
  nn::AnyValue t(ones({2}));
  Tensor back = std::move(t).get<Tensor>();
  CHECK(back.sum().item<float>() == 2.0f);
}

TEST_CASE("nn::AnyModule calls any module's forward with its own arguments and result") {
  nn::Linear fc(4, 3);
  nn::AnyModule any(fc);
  const Tensor x = randn({2, 4});
  CHECK(any.forward(x).equal(fc(x)));
  CHECK(any.any_forward(x).get<Tensor>().equal(fc(x)));
  CHECK(any.ptr() == fc.ptr());
  CHECK(&any.get<nn::LinearImpl>() == fc.get());
  CHECK(any.get<nn::Linear>().ptr() == fc.ptr());
  CHECK(any.ptr<nn::LinearImpl>() == fc.ptr());
  CHECK_THROWS_WITH_AS(any.ptr<nn::ReLUImpl>(), doctest::Contains("the module is a Linear, not a"), Error);

  // Several arguments, a default one, numbers converted when exact.
  AffineSum sum;
  nn::AnyModule two(sum);
  const Tensor y = randn({2, 4});
  CHECK(two.forward(x, y).equal(x * 2.0 + y));
  CHECK(two.forward(x, y, 3).allclose(x * 2.0 + y + 3.0));  // int -> int64_t
  CHECK_THROWS_WITH_AS(two.forward(x, y, 2.5), doctest::Contains("AffineSum's forward() takes argument 2 as long"),
                       Error);
  CHECK_THROWS_WITH_AS(two.forward(x), doctest::Contains("[AnyModule] AffineSum's forward() takes 2 or 3 argument(s), got 1"),
                       Error);
  CHECK_THROWS_WITH_AS(two.forward(x, 1.0), doctest::Contains("takes argument 1 as "), Error);
  // The result as another type is an error naming both.
  CHECK_THROWS_WITH_AS(two.forward<int>(x, y),
                       doctest::Contains("[AnyModule] AffineSum's forward() returned a Tensor, not the int asked for"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::AnyValue(std::make_pair(x, x)).get<Tensor>(),
                       doctest::Contains("get<Tensor>() of a value of type std::pair<Tensor, Tensor>"), Error);

  // Anything in, anything out; a C string becomes std::string, an int a double.
  nn::AnyModule label(std::make_shared<LabelImpl>());
  CHECK(label.forward<std::string>("n=", 3, true) == "n=3!");
  CHECK(label.any_forward(std::string("m="), 4.0f, false).get<std::string>() == "m=4");
  CHECK_THROWS_WITH_AS(label.forward<std::string>("n=", 3, 1), doctest::Contains("takes argument 2 as bool"), Error);
  // A number that does not convert exactly is refused, not rounded.
  CHECK_THROWS_AS(label.forward<std::string>("n=", (int64_t{1} << 60) + 1, true), Error);
  // AnyValue arguments pass on as they are.
  CHECK(label.forward<std::string>(nn::AnyValue(std::string("k=")), 1, false) == "k=1");

  // An overloaded forward: the one-Tensor call only.
  nn::AnyModule over(std::make_shared<OverloadedImpl>());
  CHECK(over.forward(x).equal(x + 1.0));
  CHECK_THROWS_WITH_AS(over.forward(x, y), doctest::Contains("Overloaded's forward() takes 1 argument(s), got 2"),
                       Error);
  // A static forward, a string_view from a C string, the result as an AnyValue.
  nn::AnyModule stat(std::make_shared<StaticImpl>());
  CHECK(stat.forward<double>("abc", 2) == 5.0);
  CHECK(stat.forward<nn::AnyValue>("abcd", 1).get<double>() == 5.0);
  CHECK_THROWS_WITH_AS(stat.forward<double>(static_cast<const char*>(nullptr), 1),
                       doctest::Contains("takes argument 0 as std::basic_string_view"), Error);
  // A result of another type than asked: both named, with the module.
  CHECK_THROWS_WITH_AS(stat.forward<int>("a", 1),
                       doctest::Contains("[AnyModule] Static's forward() returned a double, not the int asked for"),
                       Error);

  // Ember's modules with several arguments, defaults and non-Tensor results.
  nn::AnyModule lstm(nn::LSTM(nn::LSTMOptions(4, 6).batch_first(true)));
  const Tensor s = seq_input();
  const auto [out, state] = lstm.forward<LstmOut>(s);
  CHECK(out.sizes() == Shape({2, 5, 6}));
  CHECK(state.first.sizes() == Shape({1, 2, 6}));
  nn::AnyModule layer(nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(4, 2).dropout(0.0).batch_first(true)));
  const Tensor causal = nn::TransformerImpl::generate_square_subsequent_mask(5);
  CHECK(layer.forward(s).sizes() == Shape({2, 5, 4}));
  CHECK(layer.forward(s, causal).equal(layer.get<nn::TransformerEncoderLayer>()(s, causal)));
  nn::AnyModule mha(nn::MultiheadAttention(4, 2));
  const auto [attn, weights] = mha.forward<std::pair<Tensor, Tensor>>(s, s, s);
  CHECK(attn.sizes() == Shape({2, 5, 4}));

  nn::AnyModule empty;
  CHECK(empty.is_empty());
  CHECK_THROWS_WITH_AS(empty.forward(x), doctest::Contains("forward() of an empty AnyModule"), Error);
  CHECK_THROWS_AS(nn::AnyModule(std::shared_ptr<nn::LinearImpl>()), Error);
}

TEST_CASE("nn::AnyModule: gradients flow, clone() is deep and callable the same way") {
  AffineSum sum;
  nn::AnyModule any(sum);
  const Tensor x = randn({3});
  const Tensor y = randn({3}).requires_grad_(true);
  any.forward(x, y).sum().backward();
  REQUIRE(sum->scale.grad().defined());
  CHECK(sum->scale.grad().item<float>() == doctest::Approx(x.sum().item<float>()).epsilon(1e-5));
  CHECK(y.grad().equal(ones({3})));

  CHECK_THROWS_WITH_AS(nn::AnyModule(std::make_shared<ScaledLinearImpl>()).clone(),
                       doctest::Contains("whose clone() is inherited from a base class"), Error);
  nn::AnyModule copy = any.clone();
  CHECK(copy.ptr() != any.ptr());
  auto& cloned = copy.get<AffineSumImpl>();
  CHECK(cloned.scale.data_ptr() != sum->scale.data_ptr());
  CHECK(copy.forward(x, y).equal(any.forward(x, y)));
  {
    NoGradGuard ng;
    cloned.scale.fill_(5.0);
  }
  CHECK(sum->scale.item<float>() == 2.0f);  // the original is untouched
}

TEST_CASE("nn::Sequential over modules of other signatures: forward<R>(inputs...)") {
  const Tensor s = seq_input();
  // LSTM's pair reaches the next module; the chain ends in a Tensor.
  nn::Sequential net(nn::LSTM(nn::LSTMOptions(4, 6).batch_first(true)), TakeOutput(), nn::Linear(6, 2));
  const Tensor y = net->forward(s);
  auto lstm = net->ptr<nn::LSTMImpl>(0);
  auto fc = net->ptr<nn::LinearImpl>(2);
  CHECK(y.equal(fc->forward(lstm->forward(s).first)));
  CHECK(net(s).equal(y));  // through the handle
  Tensor mutable_s = s.clone();
  CHECK(net->forward(mutable_s).equal(y));  // a non-const lvalue and an rvalue: the template forward
  CHECK(net->forward(s.clone()).equal(y));
  nn::Sequential fast(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  CHECK(fast->forward(mutable_s).equal(fast->forward(s)));
  CHECK(fast->forward(s.clone()).equal(fast->forward(s)));
  CHECK(fast->forward<nn::AnyValue>(s).get<Tensor>().equal(fast->forward(s)));
  // Gradients flow through the values passed as AnyValues.
  y.sum().backward();
  CHECK(lstm->named_parameters()[0].second.grad().defined());

  // A first module of several arguments; the rest take one.
  nn::Sequential pair_net{AffineSum(), nn::ReLU()};
  const Tensor a = randn({3, 2});
  const Tensor b = randn({3, 2});
  CHECK(pair_net->forward(a, b).equal((a * 2.0 + b).relu()));
  CHECK(pair_net(a, b, 1).allclose((a * 2.0 + b + 1.0).relu()));
  CHECK_THROWS_WITH_AS(pair_net->forward(a),
                       doctest::Contains("[Sequential] module 0 (AffineSum): its forward() takes 2 or 3 argument(s), got 1"),
                       Error);

  // The last result as another type.
  nn::Sequential to_state(nn::Linear(4, 4), nn::LSTM(4, 3));
  const auto r = to_state->forward<LstmOut>(s);
  CHECK(r.first.sizes() == Shape({2, 5, 3}));
  CHECK_THROWS_WITH_AS(to_state->forward(s), doctest::Contains("[Sequential] the last module (LSTM) returned a std::pair<"),
                       Error);  // not a Tensor
  // A module that does not take what the one before returns is named with its position.
  nn::Sequential wrong(nn::Linear(4, 4), TakeOutput());
  CHECK_THROWS_WITH_AS(wrong->forward(s), doctest::Contains("[Sequential] module 1 (TakeOutput): its forward() takes "
                                                            "argument 0 as std::pair<"),
                       Error);

  // AnyModules, nested Sequentials (which pass the values on as they come), names, clone().
  nn::Sequential outer;
  outer->push_back("lstm", nn::AnyModule(nn::LSTM(nn::LSTMOptions(4, 6).batch_first(true))));
  outer->push_back("inner", nn::Sequential(TakeOutput(), nn::Tanh()));
  outer->push_back("head", nn::Linear(6, 1));
  const Tensor o = outer->forward(s);
  CHECK(o.sizes() == Shape({2, 5, 1}));
  std::vector<std::string> names;
  for (const auto& [n, p] : outer->named_parameters()) names.push_back(n);
  CHECK(names.front() == "lstm.weight_ih_l0");
  CHECK(names.back() == "head.bias");
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(outer->clone());
  REQUIRE(copy != nullptr);
  CHECK(copy->forward(s).equal(o));
  CHECK(copy->named_parameters()[0].second.data_ptr() != outer->named_parameters()[0].second.data_ptr());

  // replace_module: a replacement of another signature changes which path forward() takes.
  nn::Sequential chain(nn::Linear(4, 4), nn::ReLU());
  const Tensor before = chain->forward(s);
  chain->replace_module("1", TakeOutput());
  CHECK_THROWS_WITH_AS(chain->forward(s), doctest::Contains("module 1 (TakeOutput)"), Error);
  chain->replace_module("1", nn::ReLU());
  CHECK(chain->forward(s).equal(before));
  CHECK_THROWS_WITH_AS(chain->replace_module("1", std::make_shared<NoForwardImpl>()),
                       doctest::Contains("has no forward() a Sequential can call"), Error);
  CHECK(chain->forward(s).equal(before));  // refused before anything changed

  // replace_module with an AnyModule: its calls are those of the module it holds.
  chain->replace_module("1", nn::AnyModule(TakeOutput()));
  CHECK_THROWS_WITH_AS(chain->forward(s), doctest::Contains("module 1 (TakeOutput)"), Error);
  chain->replace_module("1", nn::AnyModule(nn::ReLU()));
  CHECK(chain->forward(s).equal(before));

  // extend: a Tensor chain extended with modules of other signatures leaves the fast path.
  nn::Sequential head(nn::Linear(4, 4), nn::LSTM(nn::LSTMOptions(4, 6).batch_first(true)));
  nn::Sequential tail{TakeOutput()};
  head->extend(tail);
  CHECK(head->forward(s).sizes() == Shape({2, 5, 6}));

  // A subclass of Sequential with its own forward: that forward runs, through AnyModule and
  // inside another Sequential, on either path.
  auto doubled = std::make_shared<DoubledChainImpl>();
  const Tensor in3 = randn({2, 3});
  const Tensor want = doubled->forward(in3);
  nn::AnyModule any_doubled(doubled);
  CHECK(any_doubled.forward(in3).equal(want));
  CHECK(any_doubled.any_forward(in3).get<Tensor>().equal(want));
  nn::Sequential around(nn::Identity(), doubled);
  CHECK(around->forward(in3).equal(want));
  nn::Sequential around_general(nn::AnyModule(std::make_shared<StaticImpl>()), nn::Identity());
  CHECK_THROWS_AS(around_general->forward(in3), Error);  // Static takes no Tensor

  // Iteration yields AnyModules, as libtorch's, callable and kept up to date by replace_module.
  std::vector<std::string> kinds;
  for (const nn::AnyModule& m : *chain) kinds.push_back(m.ptr()->name());
  CHECK(kinds == std::vector<std::string>{"Linear", "ReLU"});
  nn::AnyModule last = *std::prev(chain->end());
  CHECK(last.forward(-ones({2})).equal(zeros({2})));
  chain->replace_module("1", nn::Tanh());
  CHECK(std::prev(chain->end())->ptr()->name() == "Tanh");

  // An empty Sequential passes its one argument on.
  nn::Sequential none;
  CHECK(none->forward(s).equal(s));
  CHECK_THROWS_WITH_AS(none->forward(s, s), doctest::Contains("passes on one argument, got 2"), Error);
}

}  // namespace test_any_module
