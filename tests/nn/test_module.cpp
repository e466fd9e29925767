// nn::Module: registration, dotted names, traversal, train/eval, dtype moves, state dicts
// (strict errors list every problem), deep clone, printing, containers and user modules.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>
#include <ember/nn/serialize.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace test_module {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

struct BlockImpl : nn::Cloneable<BlockImpl> {
  explicit BlockImpl(int64_t width = 4) : nn::Cloneable<BlockImpl>("Block"), width(width) { reset(); }
  void reset() override {
    fc = register_module("fc", nn::Linear(width, width));
    norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({width})));
    scale = register_parameter("scale", ones({1}));
    register_buffer("steps", zeros({}, DType::I64));
  }
  Tensor forward(const Tensor& x) { return norm(fc(x)).relu() * scale; }
  int64_t width;
  nn::Linear fc{nullptr};
  nn::LayerNorm norm{nullptr};
  Tensor scale;
};
EMBER_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl() : nn::Module("Net") {
    layers = register_module("layers", nn::Sequential(nn::Linear(3, 4), nn::ReLU(), Block(4)));
    head = register_module("head", nn::Linear(nn::LinearOptions(4, 2).bias(false)));
  }
  Tensor forward(const Tensor& x) { return head(layers(x)); }
  nn::Sequential layers{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(Net);

std::vector<std::string> names(const nn::NamedTensors& v) {
  std::vector<std::string> n;
  for (auto& [k, t] : v) n.push_back(k);
  return n;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.detach().to(DType::F64) - b.detach().to(DType::F64)).abs().amax().item<double>();
}

}  // namespace

TEST_CASE("nn::Module: dotted parameter names as PyTorch forms them, buffers, children") {
  // PyTorch's order: a module's own parameters, then each child's, depth first.
  Net net;
  CHECK(names(net->named_parameters()) ==
        std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.2.scale", "layers.2.fc.weight",
                                 "layers.2.fc.bias", "layers.2.norm.weight", "layers.2.norm.bias", "head.weight"});
  CHECK(names(net->named_buffers()) == std::vector<std::string>{"layers.2.steps"});
  CHECK(net->parameters().size() == 8);
  CHECK(net->num_parameters() == 3 * 4 + 4 + 16 + 4 + 4 + 4 + 1 + 8);
  CHECK(net->children().size() == 2);
  std::vector<std::string> mods;
  for (auto& [n, m] : net->named_modules()) mods.push_back(n);
  CHECK(mods == std::vector<std::string>{"", "layers", "layers.0", "layers.1", "layers.2", "layers.2.fc",
                                         "layers.2.norm", "head"});
  for (const Tensor& p : net->parameters()) CHECK(p.requires_grad());
  CHECK_THROWS_WITH_AS(net->register_parameter("head.x", ones({1})), doctest::Contains("contain no '.'"), Error);
  CHECK_THROWS_WITH_AS(net->register_module("head", nn::Linear(1, 1)), doctest::Contains("already has a submodule"),
                       Error);
}

TEST_CASE("nn::Module: forward, train/eval, to(dtype) keeps handles, zero_grad, apply") {
  manual_seed(0);
  Net net;
  Tensor x = randn({5, 3});
  Tensor y = net(x);
  CHECK(y.sizes() == Shape{5, 2});
  y.sum().backward();
  for (const Tensor& p : net->parameters()) CHECK(p.grad().defined());
  net->zero_grad();
  for (const Tensor& p : net->parameters()) CHECK(!p.grad().defined());
  net->eval();
  CHECK(!net->is_training());
  CHECK(!net->layers[2]->is_training());
  net->train();
  CHECK(net->layers[2]->is_training());
  Tensor w = net->head->weight;  // a handle taken before the move
  net->to(DType::F64);
  CHECK(w.dtype() == DType::F64);
  CHECK(net->head->weight.dtype() == DType::F64);
  CHECK(net(x.to(DType::F64)).dtype() == DType::F64);
  int count = 0;
  net->apply([&](nn::Module&) { ++count; });
  CHECK(count == 8);
}

TEST_CASE("nn::Module: state_dict round trip; strict errors list every problem at once") {
  manual_seed(1);
  Net a, b;
  auto sd = a->state_dict();
  CHECK(names(sd).size() == 9);  // 8 parameters + 1 buffer
  b->load_state_dict(sd);
  Tensor x = randn({2, 3});
  CHECK(max_abs_diff(a(x), b(x)) == 0.0);

  nn::NamedTensors bad = sd;
  bad.erase("layers.0.weight");                               // missing
  bad.insert("extra.weight", ones({1}));                      // unexpected
  for (auto& [k, t] : bad)
    if (k == "head.weight") t = ones({3, 4});                 // shape mismatch
    else if (k == "layers.0.bias") t = t.to(DType::F64);      // dtype mismatch
  try {
    b->load_state_dict(bad);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("missing key 'layers.0.weight'") != std::string::npos);
    CHECK(m.find("unexpected key 'extra.weight'") != std::string::npos);
    CHECK(m.find("'head.weight': shape [3, 4] in the state dict, [2, 4] in the module") != std::string::npos);
    CHECK(m.find("'layers.0.bias': dtype f64 in the state dict, f32 in the module") != std::string::npos);
  }
  nn::NamedTensors partial = sd;
  partial.erase("layers.0.weight");
  partial.insert("extra", ones({1}));
  nn::LoadResult r = b->load_state_dict(partial, false);
  CHECK(r.missing_keys == std::vector<std::string>{"layers.0.weight"});
  CHECK(r.unexpected_keys == std::vector<std::string>{"extra"});
}

TEST_CASE("nn::Module: clone is deep; modules without Cloneable say how to get it") {
  manual_seed(2);
  Block blk(4);
  auto copy = std::dynamic_pointer_cast<BlockImpl>(blk->clone());
  REQUIRE(copy);
  Tensor x = randn({3, 4});
  CHECK(max_abs_diff(blk(x), copy->forward(x)) == 0.0);
  CHECK(copy->fc->weight.raw_data() != blk->fc->weight.raw_data());
  {
    autograd::NoGradGuard ng;
    copy->fc->weight.add_(1.0);
  }
  CHECK(max_abs_diff(blk(x), copy->forward(x)) > 0.0);
  nn::Sequential seq(nn::Linear(4, 4), nn::Tanh());
  auto seq2 = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  REQUIRE(seq2);
  CHECK(max_abs_diff(seq(x), seq2->forward(x)) == 0.0);
  Net net;
  CHECK_THROWS_WITH_AS(net->clone(), doctest::Contains("nn::Cloneable"), Error);
}

TEST_CASE("nn::Module: printing follows PyTorch's repr, then the parameter count") {
  nn::Sequential seq(nn::Linear(3, 4), nn::ReLU(), nn::Dropout(0.25), nn::LeakyReLU(0.2));
  std::string s = seq->to_string();
  CHECK(s ==
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Dropout(p=0.25, inplace=False)\n"
        "  (3): LeakyReLU(negative_slope=0.2)\n"
        ")\n"
        "parameters: 16 (16 trainable)");
}

TEST_CASE("nn containers: Sequential with callables, ModuleList, ModuleDict, ParameterList") {
  manual_seed(3);
  nn::Sequential seq(nn::Linear(2, 2), [](const Tensor& t) { return t * 2.0; });
  Tensor x = randn({1, 2});
  auto lin = seq->ptr<nn::LinearImpl>(0);
  CHECK(max_abs_diff(seq(x), lin->forward(x) * 2.0) == 0.0);
  CHECK(seq->size() == 2);
  CHECK_THROWS_WITH_AS(seq->ptr<nn::ReLUImpl>(0), doctest::Contains("not the requested type"), Error);

  nn::ModuleList list;
  list->push_back(nn::Linear(2, 3));
  list->push_back(nn::Linear(3, 1));
  CHECK(names(list->named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(2, 2));
  CHECK(dict->contains("enc"));
  CHECK(dict->keys() == std::vector<std::string>{"enc"});
  CHECK_THROWS_WITH_AS((*dict)["dec"], doctest::Contains("no module with key 'dec'"), Error);
  nn::ParameterList plist;
  plist->append(ones({2}));
  plist->append(zeros({3}), false);
  CHECK(names(plist->named_parameters()) == std::vector<std::string>{"0", "1"});
  CHECK(plist->parameters()[0].requires_grad());
  CHECK(!(*plist)[1].requires_grad());
}

TEST_CASE("nn containers as libtorch's: at<T>, extend, ModuleDict items/update, ParameterDict") {
  nn::Sequential seq(nn::Linear(2, 3), nn::ReLU());
  nn::LinearImpl& first = seq->at<nn::LinearImpl>(0);
  CHECK(first.weight.sizes() == Shape{3, 2});
  CHECK_THROWS_WITH_AS(seq->at<nn::ReLUImpl>(0), doctest::Contains("not the requested type"), Error);
  nn::Sequential tail(nn::Linear(3, 1));
  seq->extend(tail);
  CHECK(seq->size() == 3);
  CHECK(names(seq->named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(seq->ptr<nn::LinearImpl>(2) == tail->ptr<nn::LinearImpl>(0));  // shared, not copied
  Tensor x = randn({4, 2});
  CHECK(max_abs_diff(seq(x), tail(first.forward(x).relu())) == 0.0);
  CHECK_THROWS_AS(seq->extend(*seq), Error);
  CHECK_THROWS_AS(seq->extend(nn::Sequential(nullptr)), Error);  // an empty handle, not a crash
  // A positional name already taken by a named child: refused before anything is added.
  nn::Sequential named({{"a", nn::Linear(2, 2)}, {"2", nn::ReLU()}});
  CHECK_THROWS_WITH_AS(named->extend(nn::Sequential(nn::ReLU(), nn::ReLU())), doctest::Contains("already the name"),
                       Error);
  CHECK(named->size() == 2);

  nn::ModuleList list(nn::Linear(2, 2));
  nn::ModuleList more(nn::Linear(2, 4), nn::Tanh());
  list->extend(more);
  CHECK(list->size() == 3);
  CHECK(list->at<nn::LinearImpl>(1).weight.sizes() == Shape{4, 2});
  CHECK(!list->is_empty());
  CHECK_THROWS_AS(list->extend(*list), Error);
  list->extend(nn::Sequential(nn::ReLU(), nn::Linear(4, 1)));  // from another kind of container
  CHECK(list->size() == 5);
  CHECK(list->at<nn::LinearImpl>(4).weight.sizes() == Shape{1, 4});
  CHECK_THROWS_AS(list->extend(nn::ModuleList(nullptr)), Error);

  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(2, 2));
  dict->insert("act", nn::ReLU());
  CHECK(dict->at<nn::LinearImpl>("enc").weight.sizes() == Shape{2, 2});
  std::vector<std::string> seen;
  for (const auto& [key, module] : *dict) seen.push_back(key + ":" + module->name());
  CHECK(seen == std::vector<std::string>{"enc:Linear", "act:ReLU"});
  CHECK(dict->values().size() == 2);
  nn::ModuleDict other;
  other->insert("enc", nn::Linear(2, 5));
  other->insert("dec", nn::Linear(5, 2));
  dict->update(other);
  CHECK(dict->keys() == std::vector<std::string>{"enc", "act", "dec"});  // replaced in place, then appended
  CHECK(dict->at<nn::LinearImpl>("enc").weight.sizes() == Shape{5, 2});
  CHECK_THROWS_WITH_AS(dict->at<nn::LinearImpl>("act"), doctest::Contains("not the requested type"), Error);
  CHECK_THROWS_AS(dict->update(nn::ModuleDict(nullptr)), Error);
  CHECK(!dict->empty());
  CHECK(nn::ModuleDict()->empty());

  nn::ParameterDict params;
  params->insert("a", ones({2, 3}));
  params->insert("b", zeros({4}), false);
  CHECK(params->size() == 2);
  CHECK(!params->empty());
  CHECK(params->contains("a"));
  CHECK(!params->contains("c"));
  CHECK((*params)["a"].requires_grad());
  CHECK(!params->get("b").requires_grad());
  CHECK(names(params->named_parameters()) == std::vector<std::string>{"a", "b"});
  CHECK(params->keys() == std::vector<std::string>{"a", "b"});
  CHECK(params->values()[1].sizes() == Shape{4});
  CHECK_THROWS_WITH_AS((*params)["c"], doctest::Contains("no parameter with key 'c'"), Error);
  CHECK_THROWS_AS(params->insert("a", ones({1})), Error);    // a taken key
  CHECK_THROWS_AS(params->insert("x.y", ones({1})), Error);  // no '.' in names
  CHECK(params->size() == 2);
  // One line per parameter as PyTorch's repr lays them out (its own text there is
  // "(a): Parameter containing: [torch.FloatTensor of size 2x3]", indented two more spaces).
  CHECK(params->to_string() ==
        "ParameterDict(\n  (a): Parameter containing: [f32 of size [2, 3]]\n  (b): Parameter containing: [f32 of size [4]]\n)"
        "\nparameters: 10 (6 trainable)");
  // Nested, the lines take the nesting's indent; one parameter stays on the module's line.
  nn::ModuleList holder;
  holder->push_back(params);
  CHECK(holder->to_string().find("  (0): ParameterDict(\n    (a): Parameter containing: [f32 of size [2, 3]]\n    (b): "
                                 "Parameter containing: [f32 of size [4]]\n  )") != std::string::npos);
  nn::ParameterList single;
  single->append(ones({2}));
  CHECK(single->to_string().rfind("ParameterList((0): Parameter containing: [f32 of size [2]])", 0) == 0);
  auto copy = std::dynamic_pointer_cast<nn::ParameterDictImpl>(params->clone());
  REQUIRE(copy != nullptr);
  CHECK(copy->get("a").data_ptr() != params->get("a").data_ptr());
  CHECK(copy->get("a").eq(params->get("a")).all().item<bool>());
  CHECK(!copy->get("b").requires_grad());
  params->to(DType::F64);
  CHECK(params->get("a").dtype() == DType::F64);  // the dict's handles see the conversion
}

TEST_CASE("nn::Sequential runs ReLU then max pooling as pooling then ReLU: same values and gradients") {
  manual_seed(31);
  // Ties at zero (windows of negatives, exact zeros), NaN, padding with ceil_mode, MaxPool1d.
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(2, 3, {3}).padding({1})), nn::ReLU(),
                     nn::MaxPool2d(nn::PoolOptions({2})), nn::ReLU(),
                     nn::MaxPool2d(nn::PoolOptions({3}).stride({2}).padding({1}).ceil_mode(true)), nn::Flatten(),
                     nn::Unflatten(1, Shape{3, 9}), nn::ReLU(), nn::MaxPool1d(nn::PoolOptions({2})));
  Tensor x = randn({2, 2, 9, 9}, DType::F64);
  x.index_put_({0, 1, 3, 3}, std::numeric_limits<double>::quiet_NaN());
  net->to(DType::F64);
  auto conv = net->ptr<nn::Conv2dImpl>(0);
  conv->weight.detach().index_put_({0}, 0.0);  // channel 0 all bias: exact ties in every window
  auto run_in_order = [&](const Tensor& in) {  // the modules one by one, as written
    Tensor y = in;
    for (size_t i = 0; i < net->size(); ++i) {
      const auto m = (*net)[i];
      if (auto c = std::dynamic_pointer_cast<nn::Conv2dImpl>(m)) y = c->forward(y);
      else if (auto r = std::dynamic_pointer_cast<nn::ReLUImpl>(m)) y = r->forward(y);
      else if (auto p2 = std::dynamic_pointer_cast<nn::MaxPool2dImpl>(m)) y = p2->forward(y);
      else if (auto p1 = std::dynamic_pointer_cast<nn::MaxPool1dImpl>(m)) y = p1->forward(y);
      else if (auto f = std::dynamic_pointer_cast<nn::FlattenImpl>(m)) y = f->forward(y);
      else y = std::dynamic_pointer_cast<nn::UnflattenImpl>(m)->forward(y);
    }
    return y;
  };
  auto grads = [&](bool in_order) {
    net->zero_grad();
    Tensor xg = x.clone().requires_grad_();
    Tensor y = in_order ? run_in_order(xg) : net(xg);
    y.nan_to_num(0, 0, 0).pow(2).sum().backward();
    return std::vector<Tensor>{y.detach(), xg.grad(), conv->weight.grad(), conv->bias.grad()};
  };
  const auto fused = grads(false), plain = grads(true);
  for (size_t i = 0; i < fused.size(); ++i) {
    CAPTURE(i);
    CHECK(fused[i].isnan().eq(plain[i].isnan()).all().item<bool>());
    CHECK(fused[i].nan_to_num(0, 0, 0).eq(plain[i].nan_to_num(0, 0, 0)).all().item<bool>());
  }
  CHECK(fused[0].isnan().any().item<bool>());
  // The swap happens: the pooling runs before the ReLU.
  profiler::Profile profile;
  net(x);
  std::vector<std::string> order;
  for (const auto& e : profile.events())
    if (std::string(e.name) == "relu" || std::string(e.name) == "max_pool") order.push_back(e.name);
  CHECK(order == std::vector<std::string>{"max_pool", "relu", "max_pool", "relu", "max_pool", "relu"});
}

TEST_CASE("nn::Sequential runs Linear then ReLU as linear_relu: same values and gradients") {
  manual_seed(32);
  // The batch benchmark's MLP shape in miniature, a NaN input, a 3-d input, and f64 for
  // gradcheck; then the fused op's first and second derivatives.
  nn::Sequential net(nn::Linear(12, 16), nn::ReLU(), nn::Linear(16, 16), nn::ReLU(), nn::Linear(16, 3));
  auto run_in_order = [&](const Tensor& in) {  // the modules one by one, as written
    Tensor y = in;
    for (size_t i = 0; i < net->size(); ++i) {
      const auto m = (*net)[i];
      if (auto l = std::dynamic_pointer_cast<nn::LinearImpl>(m)) y = l->forward(y);
      else y = std::dynamic_pointer_cast<nn::ReLUImpl>(m)->forward(y);
    }
    return y;
  };
  for (const Shape& shape : {Shape{5, 12}, Shape{2, 3, 12}}) {
    Tensor x = randn(shape);
    x.view({-1, 12}).index_put_({1, 2}, std::numeric_limits<double>::quiet_NaN());
    auto grads = [&](bool in_order) {
      net->zero_grad();
      Tensor xg = x.clone().requires_grad_();
      Tensor y = in_order ? run_in_order(xg) : net(xg);
      y.nan_to_num(0, 0, 0).pow(2).sum().backward();
      std::vector<Tensor> r{y.detach(), xg.grad()};
      for (const Tensor& p : net->parameters()) r.push_back(p.grad());
      return r;
    };
    const auto fused = grads(false), plain = grads(true);
    for (size_t i = 0; i < fused.size(); ++i) {
      CAPTURE(i);
      CHECK(fused[i].isnan().eq(plain[i].isnan()).all().item<bool>());
      CHECK(fused[i].nan_to_num(0, 0, 0).eq(plain[i].nan_to_num(0, 0, 0)).all().item<bool>());
    }
  }
  // The rewrite happens: two linear_relu ops and one linear, no relu.
  {
    profiler::Profile profile;
    net(randn({4, 12}));
    std::vector<std::string> ops;
    for (const auto& e : profile.events())
      if (std::string(e.name).rfind("linear", 0) == 0 || std::string(e.name) == "relu") ops.push_back(e.name);
    CHECK(ops == std::vector<std::string>{"linear_relu", "linear_relu", "linear"});
  }
  // f64: finite differences, and second derivatives through the fused op.
  Tensor x = randn({4, 5}, DType::F64), w = randn({3, 5}, DType::F64), b = randn({3}, DType::F64);
  auto f = [](const std::vector<Tensor>& in) { return nn::F::linear_relu(in[0], in[1], in[2]); };
  const std::vector<Tensor> in{x.requires_grad_(), w.requires_grad_(), b.requires_grad_()};
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, in, {}, &why), why);
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, in, {}, &why), why);
}

TEST_CASE("nn::Linear and friends match their definitions; bad inputs name the layer") {
  manual_seed(4);
  nn::Linear fc(3, 2);
  Tensor x = randn({4, 3});
  CHECK(max_abs_diff(fc(x), x.matmul(fc->weight.t()) + fc->bias) < 1e-6);
  CHECK_THROWS_WITH_AS(fc(randn({4, 5})), doctest::Contains("[Linear] expects inputs with 3 features"), Error);
  // PyTorch's default init: |W| <= 1/sqrt(in) (kaiming_uniform with a = sqrt 5), |b| <= 1/sqrt(in).
  nn::Linear big(100, 50);
  CHECK(big->weight.abs().amax().item<double>() <= 0.1 + 1e-7);
  CHECK(big->bias.abs().amax().item<double>() <= 0.1 + 1e-7);
  CHECK(big->weight.abs().amax().item<double>() > 0.09);

  nn::Bilinear bl(3, 2, 4);
  Tensor a = randn({5, 3}), b = randn({5, 2});
  Tensor ref = einsum("bi,kij->bkj", std::vector<Tensor>{a, bl->weight});
  ref = (ref * b.unsqueeze(1)).sum({-1}) + bl->bias;
  CHECK(max_abs_diff(bl(a, b), ref) < 1e-5);

  nn::Flatten flat;
  CHECK(flat(zeros({2, 3, 4})).sizes() == Shape{2, 12});
  nn::Unflatten unf(1, Shape{3, 4});
  CHECK(unf(zeros({2, 12})).sizes() == Shape{2, 3, 4});
  nn::Identity id;
  CHECK(id(x).is_same(x));
}

TEST_CASE("nn layers: Dropout, Embedding (padding), LayerNorm, RMSNorm") {
  manual_seed(5);
  nn::Dropout drop(0.5);
  Tensor x = ones({1000});
  Tensor y = drop(x);
  double kept = y.gt(0.0).to(DType::F64).mean().item<double>();
  CHECK(kept == doctest::Approx(0.5).epsilon(0.1));
  CHECK(y.amax().item<double>() == doctest::Approx(2.0));
  drop->eval();
  CHECK(drop(x).is_same(x));

  nn::Embedding emb(nn::EmbeddingOptions(5, 3).padding_idx(0));
  CHECK(emb->weight.select(0, 0).abs().sum().item<double>() == 0.0);
  Tensor idx = tensor<int64_t>({{0, 2}, {4, 0}});
  Tensor e = emb(idx);
  CHECK(e.sizes() == Shape{2, 2, 3});
  e.sum().backward();
  Tensor g = emb->weight.grad();
  CHECK(g.select(0, 0).abs().sum().item<double>() == 0.0);  // padding row never updated
  CHECK(g.select(0, 2).sum().item<double>() == doctest::Approx(3.0));
  CHECK_THROWS_WITH_AS(emb(tensor<int64_t>({7})), doctest::Contains("out of range"), Error);

  nn::LayerNorm ln(nn::LayerNormOptions({4}));
  Tensor z = randn({3, 4});
  Tensor m = z.mean({-1}, true), v = z.var({-1}, 0, true);
  CHECK(max_abs_diff(ln(z), (z - m) / (v + 1e-5).sqrt()) < 1e-5);
  CHECK_THROWS_WITH_AS(ln(randn({3, 5})), doctest::Contains("[layer_norm]"), Error);
  nn::RMSNorm rms(nn::RMSNormOptions({4}).eps(1e-6));
  CHECK(max_abs_diff(rms(z), z / (z.square().mean({-1}, true) + 1e-6).sqrt()) < 1e-5);
}

TEST_CASE("nn::init: PyTorch's bounds, gains and shapes") {
  manual_seed(6);
  Tensor w = empty({64, 32});
  nn::init::xavier_uniform_(w);
  CHECK(w.abs().amax().item<double>() <= std::sqrt(6.0 / 96) + 1e-6);
  nn::init::kaiming_normal_(w, 0.0, "fan_out", "relu");
  CHECK(w.std().item<double>() == doctest::Approx(std::sqrt(2.0 / 64)).epsilon(0.1));
  nn::init::trunc_normal_(w, 0.0, 1.0, -0.5, 0.5);
  CHECK(w.abs().amax().item<double>() <= 0.5);
  Tensor q = empty({6, 4});
  nn::init::orthogonal_(q);
  CHECK(max_abs_diff(q.t().matmul(q), eye(4)) < 1e-5);
  Tensor q2 = empty({3, 5});
  nn::init::orthogonal_(q2, 2.0);
  CHECK(max_abs_diff(q2.matmul(q2.t()), eye(3) * 4.0) < 1e-4);
  nn::init::eye_(q);
  CHECK(q.sum().item<double>() == 4.0);
  CHECK(nn::init::calculate_gain("leaky_relu", 0.2) == doctest::Approx(std::sqrt(2.0 / 1.04)));
  CHECK_THROWS_WITH_AS(nn::init::calculate_gain("swish"), doctest::Contains("unsupported nonlinearity"), Error);
  // libtorch's enum spellings: the same draws as the strings.
  CHECK(nn::init::calculate_gain(kLeakyReLU, 0.2) == nn::init::calculate_gain("leaky_relu", 0.2));
  CHECK(nn::init::calculate_gain(kConvTranspose2D) == 1.0);
  CHECK(nn::init::calculate_gain(kSELU) == 0.75);
  CHECK(nn::init::calculate_gain(kSigmoid) == 1.0);
  Tensor k1 = empty({8, 3, 3, 3}), k2 = empty({8, 3, 3, 3});
  manual_seed(3);
  nn::init::kaiming_normal_(k1, 0, kFanOut, kReLU);
  manual_seed(3);
  nn::init::kaiming_normal_(k2, 0, "fan_out", "relu");
  CHECK(max_abs_diff(k1, k2) == 0);
  manual_seed(3);
  nn::init::kaiming_uniform_(k1, 0.1, kFanIn, kLeakyReLU);
  manual_seed(3);
  nn::init::kaiming_uniform_(k2, 0.1);
  CHECK(max_abs_diff(k1, k2) == 0);
  Tensor p = ones({2}).requires_grad_();
  nn::init::zeros_(p);  // under no-grad: allowed on a leaf that requires grad
  CHECK(p.sum().item<double>() == 0.0);
}

TEST_CASE("nn::init::dirac_ makes a convolution the identity; sparse_ clears a fraction per column") {
  manual_seed(7);
  // dirac_: a padded 3x3 convolution with it returns its input, per group too.
  Tensor x = randn({2, 4, 5, 6});
  Tensor w = empty({4, 4, 3, 3});
  nn::init::dirac_(w);
  CHECK(max_abs_diff(nn::F::conv2d(x, w, {}, 1, 1), x) < 1e-6);
  Tensor wg = empty({4, 2, 3, 3});
  nn::init::dirac_(wg, 2);  // two groups of 2 channels: each passes its own inputs through
  CHECK(max_abs_diff(nn::F::conv2d(x, wg, {}, 1, 1, 1, 2), x) < 1e-6);
  Tensor w1 = empty({3, 5, 4});  // 1-d kernel of even size: centre at 2, as PyTorch
  nn::init::dirac_(w1);
  CHECK(w1.sum().item<double>() == 3.0);
  CHECK(w1.index({2, 2, 2}).item<double>() == 1.0);
  CHECK_THROWS_WITH_AS(nn::init::dirac_(w, 3), doctest::Contains("[dirac_] groups 3 must be positive and divide"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::init::dirac_(empty({4, 4})), doctest::Contains("3-, 4- or 5-d"), Error);
  // sparse_: ceil(0.3 * 10) = 3 zeros in every column, the rest Normal(0, std).
  Tensor s = empty({10, 400});
  nn::init::sparse_(s, 0.3, 0.5);
  CHECK(s.eq(0.0).to(DType::I64).sum({0}).eq(3).all().item<bool>());
  CHECK((s.square().sum() / (7.0 * 400)).sqrt().item<double>() == doctest::Approx(0.5).epsilon(0.05));
  CHECK_THROWS_WITH_AS(nn::init::sparse_(s, 1.5), doctest::Contains("sparsity must be in [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(nn::init::sparse_(w, 0.1), doctest::Contains("needs a 2-d tensor"), Error);
}

TEST_CASE("nn::utils: clip_grad_norm_, clip_grad_value_, parameters_to_vector") {
  Tensor a = tensor<double>({3.0, 4.0}).requires_grad_();
  Tensor b = tensor<double>({0.0}).requires_grad_();
  (a * a / 2.0).sum().backward();  // grad = a = [3, 4], norm 5
  (b * 0.0).sum().backward();
  Tensor total = nn::utils::clip_grad_norm_({a, b}, 1.0);
  CHECK(total.item<double>() == doctest::Approx(5.0));
  CHECK(a.grad().norm().item<double>() == doctest::Approx(1.0).epsilon(1e-5));
  nn::utils::clip_grad_value_({a}, 0.7);
  CHECK(a.grad().amax().item<double>() <= 0.7);
  Tensor v = nn::utils::parameters_to_vector({a, b});
  CHECK(v.sizes() == Shape{3});
  nn::utils::vector_to_parameters(tensor<double>({7.0, 8.0, 9.0}), {a, b});
  CHECK(b.item<double>() == 9.0);
}

TEST_CASE("nn: activations, init and clipping at their edges, as PyTorch (libtorch 1.13)") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto at = [](const Tensor& t, int64_t i) { return t.to(DType::F64).contiguous().data_ptr<double>()[i]; };
  // NaN stays NaN through Hardshrink and Threshold (only the inside / x <= threshold is replaced).
  CHECK(std::isnan(at(nn::Hardshrink(0.5)(tensor<double>({nan})), 0)));
  CHECK(at(nn::Hardshrink(0.5)(tensor<double>({0.5, -0.7})), 0) == 0.0);
  CHECK(at(nn::Hardshrink(0.5)(tensor<double>({0.5, -0.7})), 1) == -0.7);
  CHECK(std::isnan(at(nn::Threshold(0.5, -7)(tensor<double>({nan})), 0)));
  Tensor ti = nn::Threshold(1.0, -7)(tensor<int64_t>({0, 2}));
  CHECK(ti.dtype() == DType::I64);
  CHECK(ti.to(DType::F64).data_ptr<double>()[0] == -7.0);
  CHECK_THROWS_WITH_AS(nn::Softshrink(-1), doctest::Contains("[Softshrink]"), Error);
  CHECK_THROWS_WITH_AS(nn::CELU(0.0), doctest::Contains("[CELU]"), Error);
  CHECK_THROWS_WITH_AS(tensor<float>({1}).celu(0.0), doctest::Contains("[celu]"), Error);
  // PReLU's input gradient at 0 is the slope.
  nn::PReLU prelu;
  Tensor x0 = tensor<float>({0.0f}).requires_grad_();
  prelu(x0).sum().backward();
  CHECK(x0.grad().item<float>() == doctest::Approx(0.25));
  // Bilinear: batch dims must match one by one, not just in count.
  nn::Bilinear bil(3, 4, 5);
  CHECK_THROWS_WITH_AS(bil(randn({2, 7, 3}), randn({7, 2, 4})), doctest::Contains("[bilinear]"), Error);
  CHECK(bil(randn({2, 7, 3}), randn({2, 7, 4})).sizes() == Shape{2, 7, 5});
  // clip_grad_norm_ with a NaN gradient makes every gradient NaN (left the finite ones before).
  Tensor a = tensor<double>({1.0, 2.0}).requires_grad_(), b = tensor<double>({2.0}).requires_grad_();
  (a * tensor<double>({nan, 1.0})).sum().backward();
  (b * 2.0).sum().backward();
  nn::utils::clip_grad_norm_({a, b}, 1.0);
  CHECK(std::isnan(b.grad().item<double>()));
  // init refuses what PyTorch refuses.
  Tensor w = empty({3, 3});
  CHECK_THROWS_WITH_AS(nn::init::normal_(w, 0.0, -1.0), doctest::Contains("[normal_]"), Error);
  CHECK_THROWS_WITH_AS(nn::init::uniform_(w, 2.0, 1.0), doctest::Contains("[uniform_]"), Error);
  Tensor wi = empty({3}, DType::I64);
  CHECK_THROWS_WITH_AS(nn::init::uniform_(wi), doctest::Contains("[uniform_]"), Error);
}

TEST_CASE("nn: a small MLP learns a regression problem with plain SGD (loss down 20x)") {
  manual_seed(7);
  nn::Sequential net(nn::Linear(2, 32), nn::Tanh(), nn::Linear(32, 1));
  Tensor x = rand({256, 2}) * 2.0 - 1.0;
  Tensor t = (x.select(1, 0) * 3.0).sin().unsqueeze(1) * x.select(1, 1).unsqueeze(1);
  nn::MSELoss mse;
  double first = 0, last = 0;
  for (int step = 0; step < 600; ++step) {
    Tensor loss = mse(net(x), t);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    net->zero_grad();
    loss.backward();
    autograd::NoGradGuard ng;
    for (Tensor p : net->parameters()) p.sub_(p.grad() * 0.2);
  }
  CHECK(last < first / 20);
}

namespace {
/// A Linear with an extra member, derived without a Cloneable of its own.
struct ScaledLinearImpl : nn::LinearImpl {
  ScaledLinearImpl() : nn::LinearImpl(2, 2), scales(4, 2.0) {}
  Tensor forward(const Tensor& x) { return nn::LinearImpl::forward(x) * scales[3]; }
  std::vector<double> scales;
};
/// A module with a clone() of its own (noexcept, which changes its member pointer's type).
struct DoublerImpl : nn::Module {
  DoublerImpl() : nn::Module("Doubler") {}
  Tensor forward(const Tensor& x) { return x * 2.0; }
  ModulePtr clone() const noexcept override { return std::make_shared<DoublerImpl>(); }
};
/// A module with a cache that is not part of its state.
struct CachedImpl : nn::Cloneable<CachedImpl> {
  CachedImpl() : nn::Cloneable<CachedImpl>("Cached") { reset(); }
  void reset() override {
    weight = register_parameter("weight", ones({2}));
    register_buffer("mask", ones({2}), /*persistent=*/false);
    register_buffer("count", zeros({}, DType::I64));
  }
  Tensor weight;
};
}  // namespace

TEST_CASE("nn::Module: shared modules and parameters listed once; one namespace for names") {
  nn::Linear shared(2, 2);
  nn::BatchNorm1d bn(2);
  nn::Sequential seq(shared, shared, bn, bn);
  CHECK(names(seq->named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(seq->buffers().size() == 3);  // running_mean, running_var, num_batches_tracked once
  std::vector<std::string> mods;
  for (auto& [n, m] : seq->named_modules()) mods.push_back(n);
  CHECK(mods == std::vector<std::string>{"", "0", "2"});
  // state_dict keeps every name, as PyTorch's.
  CHECK(seq->state_dict().size() == 14);  // 2 x (weight, bias) + 2 x BatchNorm1d's 5
  // A parameter, a buffer and a submodule cannot share a name.
  nn::Module m("M");
  m.register_parameter("x", ones({1}));
  CHECK_THROWS_WITH_AS(m.register_buffer("x", ones({1})), doctest::Contains("already has a parameter named 'x'"),
                       Error);
  CHECK_THROWS_WITH_AS(m.register_module("x", nn::Linear(1, 1)), doctest::Contains("already has a parameter named 'x'"),
                       Error);
}

TEST_CASE("nn::Module: non-persistent buffers, to(dtype) keeps gradients, clone keeps each child's mode") {
  auto c = std::make_shared<CachedImpl>();
  CHECK(names(c->state_dict()) == std::vector<std::string>{"weight", "count"});
  CHECK(names(c->named_buffers()) == std::vector<std::string>{"mask", "count"});
  auto copy = std::dynamic_pointer_cast<CachedImpl>(c->clone());
  CHECK(copy->named_buffers().size() == 2);
  CHECK(c->load_state_dict(c->state_dict()).missing_keys.empty());

  nn::Linear l(3, 2);
  l(ones({1, 3})).sum().backward();
  const Tensor g = l->weight.grad().clone();
  l->to(DType::F64);
  REQUIRE(l->weight.grad().defined());
  CHECK(l->weight.grad().dtype() == DType::F64);
  CHECK(max_abs_diff(l->weight.grad(), g) == 0.0);

  nn::Sequential seq(nn::Linear(2, 2), nn::Dropout(0.5));
  seq->train();
  seq[1]->eval();
  auto cl = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  CHECK(cl->is_training());
  CHECK(!(*cl)[1]->is_training());
  CHECK((*cl)[0]->is_training());
}

TEST_CASE("nn containers: ModuleList::insert renames by position, unregister_module, ModuleDict pop and clear") {
  nn::ModuleList list(nn::Linear(2, 3), nn::Linear(3, 4));
  list->insert(1, nn::Tanh());
  list->insert(0, nn::Linear(1, 2));
  list->insert(4, nn::ReLU());  // at the end
  CHECK(list->size() == 5);
  CHECK(list->at<nn::LinearImpl>(0).weight.sizes() == Shape{2, 1});
  CHECK(list->at<nn::LinearImpl>(1).weight.sizes() == Shape{3, 2});
  CHECK(list->ptr<nn::TanhImpl>(2) != nullptr);
  CHECK(names(list->named_parameters()) ==
        std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"});
  CHECK_THROWS_WITH_AS(list->insert(6, nn::ReLU()), doctest::Contains("insert at 6 is out of range for 5 modules"),
                       Error);
  CHECK_THROWS_WITH_AS(list->insert(0, std::shared_ptr<nn::ReLUImpl>()), doctest::Contains("is empty"), Error);
  CHECK(list->size() == 5);  // a refused insert leaves the list as it was
  CHECK(list->named_children().size() == 5);
  CHECK_THROWS_WITH_AS(list->unregister_module("1"), doctest::Contains("named by position"), Error);
  nn::Sequential seq(nn::Linear(2, 2), nn::ReLU());
  CHECK_THROWS_WITH_AS(seq->unregister_module("1"), doctest::Contains("one of a Sequential's layers"), Error);
  CHECK(seq->named_children().size() == 2);

  struct Net : nn::Module {
    Net() {
      register_module("enc", nn::Linear(2, 2));
      register_module("head", nn::Linear(2, 1));
    }
  } net;
  net.unregister_module("enc");
  CHECK(names(net.named_parameters()) == std::vector<std::string>{"head.weight", "head.bias"});
  CHECK(net.state_dict().size() == 2);
  CHECK_THROWS_WITH_AS(net.unregister_module("enc"), doctest::Contains("[unregister_module] Module has no submodule named 'enc'"),
                       Error);

  nn::ModuleDict dict;
  dict->insert("a", nn::Linear(2, 2));
  dict->insert("b", nn::ReLU());
  auto popped = dict->pop("a");
  CHECK(popped->name() == "Linear");
  CHECK(dict->keys() == std::vector<std::string>{"b"});
  CHECK(dict->parameters().empty());
  CHECK_THROWS_WITH_AS(dict->pop("a"), doctest::Contains("no module with key 'a'"), Error);
  dict->clear();
  CHECK(dict->empty());
  dict->insert("a", nn::ReLU());  // the key is free again
  CHECK(dict->size() == 1);
  CHECK_THROWS_WITH_AS(list->insert(0, nn::ModuleList(nullptr)), doctest::Contains("[ModuleList] insert at 0: the module is empty"),
                       Error);
  // Ember's modules whose forward() calls member submodules refuse: it would still run them.
  nn::MultiheadAttention mha(4, 2);
  CHECK_THROWS_WITH_AS(mha->unregister_module("out_proj"),
                       doctest::Contains("[unregister_module] MultiheadAttention's forward() uses its submodule 'out_proj'"),
                       Error);
  CHECK(names(mha->named_parameters()).size() == 4);
}

TEST_CASE("module.to with a graph from before still alive: new graphs accumulate in the new dtype") {
  nn::Linear lin(2, 1);
  const Tensor kept = lin(randn({3, 2})).sum();  // holds the f32 weight's accumulator
  lin->to(DType::F64);
  lin(randn({3, 2}, DType::F64)).sum().backward();
  CHECK(lin->weight.grad().dtype() == DType::F64);
  CHECK(lin->weight.grad().sizes() == Shape{1, 2});
}

TEST_CASE("nn containers: replace_module updates what forward runs; clone refuses a type it would slice") {
  nn::Sequential seq(nn::Linear(2, 2), nn::ReLU());
  nn::Linear zero(2, 2);
  nn::init::zeros_(zero->weight);
  nn::init::zeros_(zero->bias);
  seq->replace_module("0", zero);
  CHECK(seq[0] == zero.ptr());
  CHECK(seq(ones({1, 2})).abs().sum().item<double>() == 0.0);
  CHECK(&seq->parameters()[0].impl() == &zero->weight.impl());
  nn::ModuleList list;
  list->push_back(nn::Linear(2, 2));
  list->replace_module("0", zero);
  CHECK(list[0] == zero.ptr());

  // A subclass of Linear clones as a Linear: Sequential refuses instead of calling the
  // subclass's forward on it.
  nn::Sequential sub(std::make_shared<ScaledLinearImpl>());
  CHECK(sub(ones({1, 2})).sizes() == Shape({1, 2}));
  CHECK_THROWS_WITH_AS(sub->clone(), doctest::Contains("cannot be cloned as its own type"), Error);
  // Containers clone as themselves (their own clone()), also nested, and after a replacement.
  nn::Sequential outer(nn::Sequential(nn::Linear(2, 2)), nn::ReLU());
  CHECK(outer->clone()->named_parameters().size() == 2);
  seq->replace_module("0", nn::Linear(2, 2));
  CHECK(seq->clone()->named_parameters().size() == 2);
  nn::Sequential doubled(std::make_shared<DoublerImpl>());
  auto dc = std::dynamic_pointer_cast<nn::SequentialImpl>(doubled->clone());
  REQUIRE(dc != nullptr);
  CHECK(dc->forward(ones({1})).item<float>() == 2.0f);
}

TEST_CASE("nn: libtorch spellings: streaming a module, init on a view, per-layer option names, save by handle") {
  nn::Linear fc(3, 2);
  std::ostringstream a, b;
  a << *fc;
  b << fc;
  CHECK(a.str() == fc->to_string());
  CHECK(b.str() == fc->to_string());
  // nn::init takes the tensor by value, as libtorch's: a view of a weight works.
  {
    NoGradGuard ng;
    nn::init::constant_(fc->weight.narrow(0, 0, 1), 2.0);
  }
  CHECK(fc->weight.select(0, 0).eq(2.0).all().item<bool>());
  CHECK(!fc->weight.select(0, 1).eq(2.0).all().item<bool>());
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(4).momentum(0.2));
  CHECK(bn->options.momentum() == 0.2);
  nn::MaxPool2d mp(nn::MaxPool2dOptions(2).stride(1));
  CHECK(mp(zeros({1, 1, 4, 4})).sizes() == Shape{1, 1, 3, 3});
  nn::ConvTranspose2d ct(nn::ConvTranspose2dOptions(1, 2, 3).stride(2));
  CHECK(ct(zeros({1, 1, 4, 4})).sizes() == Shape{1, 2, 9, 9});
  // nn::save / nn::load through the handle.
  const std::string path = std::filesystem::temp_directory_path() / "ember_test_save_by_handle.safetensors";
  nn::save(fc, path);
  nn::Linear other(3, 2);
  nn::load(other, path);
  std::filesystem::remove(path);
  CHECK(other->weight.eq(fc->weight).all().item<bool>());
  // ... and through streams, as libtorch's torch::save(model, stream).
  std::stringstream buffer;
  nn::save(fc, buffer);
  nn::Linear third(3, 2);
  nn::load(third, buffer);
  CHECK(third->weight.eq(fc->weight).all().item<bool>());
  CHECK(third->bias.eq(fc->bias).all().item<bool>());
  std::stringstream wrong_shape;
  nn::save(nn::Linear(4, 2), wrong_shape);
  CHECK_THROWS_WITH_AS(nn::load(third, wrong_shape), doctest::Contains("[nn::load] <stream>"), Error);
}

TEST_CASE("EMBER_MODULE declares a holder inside a function too") {
  // A local class cannot have member templates: EMBER_MODULE must not give the holder one.
  struct LocalImpl : nn::Cloneable<LocalImpl> {
    LocalImpl() : nn::Cloneable<LocalImpl>("Local") { reset(); }
    void reset() override { fc = register_module("fc", nn::Linear(2, 3)); }
    Tensor forward(const Tensor& x) { return fc(x); }
    nn::Linear fc{nullptr};
  };
  EMBER_MODULE(Local);
  Local local;
  CHECK(local(ones({4, 2})).sizes() == Shape{4, 3});
  CHECK(local->parameters().size() == 2);
  // Holders of Impls without a default constructor have none either.
  static_assert(!std::is_default_constructible_v<nn::Threshold>);
  static_assert(std::is_default_constructible_v<nn::ReLU>);
  Local empty{nullptr};
  CHECK(empty.is_empty());
}

}  // namespace test_module
