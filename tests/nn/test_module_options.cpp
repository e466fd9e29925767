// libtorch code as written against torch::nn: OrderedDict from named_parameters() and
// friends, every layer's FooOptions, the inplace flag of activations and dropout, and the
// enum names (kSum, kSame, kBilinear). Each options form is checked to build the same module
// as the positional form, and each inplace form to write into its input what the plain form
// returns.

#include "../error_text.hpp"

#include <doctest/doctest.h>
#include <ember/nn.hpp>

#include <string>
#include <vector>

namespace test_module_options {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

bool same(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && a.eq(b).all().item<bool>(); }

/// Runs `inplace_module` on a copy of x and checks that it returned the copy itself,
/// overwritten with what `plain` gives for x.
template <class M, class Plain>
void check_inplace(M inplace_module, Plain plain, const Tensor& x) {
  Tensor y = x.clone();
  Tensor out = inplace_module(y);
  CHECK(out.data_ptr() == y.data_ptr());
  CHECK(same(y, plain(x)));
}

}  // namespace

TEST_CASE("OrderedDict: insertion order, lookup by key, libtorch's item interface") {
  OrderedDict<std::string, int> d("Thing");
  d.insert("b", 2);
  d.insert("a", 1);
  d.insert("c", 3);
  CHECK(d.keys() == std::vector<std::string>{"b", "a", "c"});
  CHECK(d.values() == std::vector<int>{2, 1, 3});
  CHECK(d["a"] == 1);
  CHECK(d[size_t{0}].key() == "b");
  CHECK(d[2].value() == 3);
  CHECK(*d[1] == 1);
  CHECK(d.front().key() == "b");
  CHECK(d.back().key() == "c");
  CHECK(d.contains("c"));
  CHECK(!d.contains("z"));
  CHECK(d.find("z") == nullptr);
  REQUIRE(d.find("a") != nullptr);
  *d.find("a") = 10;
  CHECK(d.at("a") == 10);
  CHECK_ERROR(d.insert("a", 5), "[OrderedDict]", "Thing 'a'", "already present");
  CHECK_ERROR(d["zz"], "[OrderedDict]", "Thing 'zz'", "3 entries");
  CHECK_ERROR(d[size_t{3}], "[OrderedDict]", "index 3", "3 entries");
  CHECK_ERROR(d.erase("zz"), "[OrderedDict]", "'zz'");
  d.erase("b");  // the rest keep their order and their lookups
  CHECK(d.keys() == std::vector<std::string>{"a", "c"});
  CHECK(d["c"] == 3);
  CHECK(d[size_t{1}].key() == "c");
  d.update(OrderedDict<std::string, int>{{"d", 4}, {"e", 5}});
  CHECK(d.keys() == std::vector<std::string>{"a", "c", "d", "e"});
  CHECK_ERROR(d.update(OrderedDict<std::string, int>{{"c", 30}}), "'c'", "already present");  // as libtorch's
  CHECK(d["c"] == 3);
  d.erase("e");
  // Items are std::pairs too.
  std::string joined;
  for (const auto& [k, v] : d) joined += k + std::to_string(v);
  CHECK(joined == "a10c3d4");
  CHECK(d.pairs()[2] == std::pair<std::string, int>("d", 4));
  d.clear();
  CHECK(d.is_empty());
  CHECK_ERROR(d.front(), "[OrderedDict]", "index 0");
  CHECK_ERROR((OrderedDict<std::string, int>{{"x", 1}, {"x", 2}}), "[OrderedDict]", "'x'", "already present");
}

TEST_CASE("nn: named_parameters(), named_buffers(), state_dict(), named_children() are OrderedDicts") {
  nn::Sequential net(nn::Linear(3, 4), nn::BatchNorm1d(4), nn::Linear(4, 2));
  auto params = net->named_parameters();
  std::vector<std::string> keys;
  for (auto& p : params) keys.push_back(p.key());
  CHECK(keys == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"});
  // Lookup by name gives the module's own tensor (same storage), as libtorch's.
  CHECK(params["2.weight"].data_ptr() == net->ptr<nn::LinearImpl>(2)->weight.data_ptr());
  CHECK(params.find("2.running_mean") == nullptr);
  CHECK_ERROR(params["3.weight"], "[OrderedDict]", "Parameter '3.weight'");
  CHECK(net->named_buffers().keys() ==
        std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"});
  CHECK(net->state_dict().contains("1.running_var"));
  CHECK(net->named_children().keys() == std::vector<std::string>{"0", "1", "2"});
  CHECK(net->named_children()["1"]->name() == "BatchNorm1d");
  CHECK(net->named_modules().keys() == std::vector<std::string>{"", "0", "1", "2"});
  // A state dict built by hand loads by name.
  nn::Linear a(2, 2), b(2, 2);
  nn::NamedTensors dict;
  for (auto& item : a->named_parameters()) dict.insert(item.key(), item.value() * 2);
  b->load_state_dict(dict);
  CHECK(same(b->weight, a->weight * 2));
}

TEST_CASE("nn: activations from their options; inplace writes into the input") {
  const Tensor x = tensor({-3.0f, -0.5f, 0.0f, 0.25f, 2.0f, 7.0f});
  check_inplace(nn::ReLU(nn::ReLUOptions().inplace(true)), [](const Tensor& t) { return t.relu(); }, x);
  check_inplace(nn::ReLU(true), [](const Tensor& t) { return t.relu(); }, x);
  check_inplace(nn::ReLU6(nn::ReLU6Options(true)), [](const Tensor& t) { return t.relu6(); }, x);
  check_inplace(nn::SELU(nn::SELUOptions(true)), [](const Tensor& t) { return t.selu(); }, x);
  check_inplace(nn::SiLU(true), [](const Tensor& t) { return t.silu(); }, x);
  check_inplace(nn::Mish(nn::MishOptions().inplace(true)), [](const Tensor& t) { return t.mish(); }, x);
  check_inplace(nn::Hardsigmoid(true), [](const Tensor& t) { return t.hardsigmoid(); }, x);
  check_inplace(nn::Hardswish(true), [](const Tensor& t) { return t.hardswish(); }, x);
  CHECK(nn::SiLU(true)->to_string().rfind("SiLU(inplace=True)", 0) == 0);
  CHECK(nn::SiLU()->to_string().rfind("SiLU()", 0) == 0);
  check_inplace(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2).inplace(true)),
                [](const Tensor& t) { return t.leaky_relu(0.2); }, x);
  check_inplace(nn::ELU(nn::ELUOptions().alpha(0.7).inplace(true)), [](const Tensor& t) { return t.elu(0.7); }, x);
  check_inplace(nn::CELU(nn::CELUOptions().alpha(1.5).inplace(true)), [](const Tensor& t) { return t.celu(1.5); }, x);
  check_inplace(nn::Hardtanh(nn::HardtanhOptions().min_val(-2).max_val(1.5).inplace(true)),
                [](const Tensor& t) { return t.hardtanh(-2, 1.5); }, x);
  check_inplace(nn::Threshold(nn::ThresholdOptions(0.1, 20).inplace(true)),
                [](const Tensor& t) { return nn::F::threshold(t, 0.1, 20); }, x);
  nn::RReLU rr(nn::RReLUOptions().lower(0.1).upper(0.3).inplace(true));
  rr->eval();
  check_inplace(rr, [](const Tensor& t) { return t.leaky_relu(0.2); }, x);
  rr->train();  // random slopes: the same draws as the plain form's after the same seed
  manual_seed(21);
  const Tensor rr_plain = nn::RReLU(nn::RReLUOptions().lower(0.1).upper(0.3))(x);
  manual_seed(21);
  check_inplace(rr, [&](const Tensor&) { return rr_plain; }, x);
  CHECK(!same(rr_plain, x.leaky_relu(0.2)));

  // Without inplace the input is left alone, and the option values are the module's.
  Tensor y = x.clone();
  nn::LeakyReLU lr(nn::LeakyReLUOptions().negative_slope(0.3));
  CHECK(same(lr(y), x.leaky_relu(0.3)));
  CHECK(same(y, x));
  CHECK(lr->negative_slope == 0.3);
  CHECK(nn::Hardshrink(nn::HardshrinkOptions(0.3))->lambd == 0.3);
  CHECK(nn::Softshrink(nn::SoftshrinkOptions().lambda(0.4))->lambd == 0.4);
  CHECK(nn::GLU(nn::GLUOptions(0))->dim == 0);
  CHECK(nn::GELU(nn::GELUOptions().approximate(kTanh))->approximate == "tanh");
  nn::Softplus sp(nn::SoftplusOptions().beta(2).threshold(10));
  CHECK(same(sp(x), x.softplus(2, 10)));
  nn::PReLU pr(nn::PReLUOptions().num_parameters(3).init(0.1));
  CHECK(pr->weight.sizes() == Shape{3});
  CHECK(same(pr->weight, full({3}, 0.1)));
  const Tensor m = tensor({{1.0f, 2.0f}, {0.5f, -1.0f}});
  CHECK(same(nn::Softmax(nn::SoftmaxOptions(0))(m), m.softmax(0)));
  CHECK(same(nn::LogSoftmax(nn::LogSoftmaxOptions(1))(m), m.log_softmax(1)));
  CHECK(same(nn::Softmin(nn::SoftminOptions(1))(m), (-m).softmax(1)));

  // Printing shows the flag, as PyTorch's repr.
  CHECK(nn::ReLU(true)->to_string().find("ReLU(inplace=True)") != std::string::npos);
  CHECK(nn::ReLU()->to_string().find("ReLU()") != std::string::npos);
  CHECK(nn::LeakyReLU(nn::LeakyReLUOptions().inplace(true))->extra_repr() == "negative_slope=0.01, inplace=True");
}

TEST_CASE("nn: an inplace activation inside autograd gives the plain form's gradient") {
  manual_seed(3);
  Tensor w = randn({2, 5}).requires_grad_();
  const Tensor v = randn({5, 3});
  auto run = [&](auto&& act) {
    w.zero_grad();
    Tensor h = w.matmul(v);  // not a leaf: may be overwritten
    Tensor out = act(h);
    (out * out).sum().backward();
    return w.grad().clone();
  };
  CHECK(same(run(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.1).inplace(true))),
             run(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.1)))));
  CHECK(same(run(nn::ReLU(true)), run(nn::ReLU())));
  CHECK(same(run(nn::ELU(nn::ELUOptions().inplace(true))), run(nn::ELU())));
  manual_seed(9);
  nn::Dropout d_in(nn::DropoutOptions(0.4).inplace(true));
  const Tensor g_in = run(d_in);
  manual_seed(9);
  nn::Dropout d_out(nn::DropoutOptions(0.4));
  CHECK(same(g_in, run(d_out)));
  // A leaf that requires grad cannot be overwritten.
  CHECK_ERROR(nn::ReLU(true)(w), "leaf", "in-place");
}

TEST_CASE("nn: Dropout and Dropout2d with inplace draw the same mask as without") {
  const Tensor x = arange(1, 49, kFloat32).reshape({2, 3, 2, 4});
  for (bool two_d : {false, true}) {
    CAPTURE(two_d);
    manual_seed(11);
    Tensor plain = two_d ? nn::Dropout2d(nn::Dropout2dOptions(0.5))(x) : nn::Dropout(nn::DropoutOptions(0.5))(x);
    manual_seed(11);
    Tensor y = x.clone();
    Tensor out = two_d ? nn::Dropout2d(nn::Dropout2dOptions(0.5).inplace(true))(y)
                       : nn::Dropout(nn::DropoutOptions(0.5).inplace(true))(y);
    CHECK(out.data_ptr() == y.data_ptr());
    CHECK(same(y, plain));
    CHECK(!same(y, x));  // some element was dropped (48 draws at p = 0.5)
  }
  // p = 1 zeroes in place; eval mode leaves the input alone.
  Tensor y = x.clone();
  nn::Dropout all(nn::DropoutOptions(1.0).inplace(true));
  all(y);
  CHECK(same(y, zeros_like(x)));
  y = x.clone();
  all->eval();
  all(y);
  CHECK(same(y, x));
  CHECK(nn::Dropout(nn::DropoutOptions(0.2).inplace(true))->extra_repr() == "p=0.2, inplace=True");
  // The functional form takes the flag too.
  manual_seed(5);
  Tensor f = nn::F::dropout(x, nn::F::DropoutFuncOptions().p(0.3));
  manual_seed(5);
  y = x.clone();
  nn::F::dropout(y, nn::F::DropoutFuncOptions().p(0.3).inplace(true));
  CHECK(same(y, f));
}

TEST_CASE("nn: normalisation, resampling and pooling layers from their options") {
  manual_seed(2);
  const Tensor x = randn({2, 4, 3, 3});
  nn::GroupNorm gn(nn::GroupNormOptions(2, 4).eps(1e-3).affine(false));
  CHECK(gn->parameters().empty());
  CHECK(same(gn(x), nn::GroupNorm(2, 4, 1e-3, false)(x)));
  nn::InstanceNorm2d in(nn::InstanceNorm2dOptions(4).affine(true).eps(1e-4));
  CHECK(in->weight.sizes() == Shape{4});
  CHECK(same(in(x), nn::InstanceNorm2d(4, 1e-4, true)(x)));
  CHECK(same(nn::PixelShuffle(nn::PixelShuffleOptions(2))(x), nn::F::pixel_shuffle(x, 2)));
  CHECK(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({2, 1}))(x).sizes() == Shape{2, 4, 2, 1});
  CHECK(nn::AdaptiveAvgPool1d(nn::AdaptiveAvgPool1dOptions(2))(x.flatten(2)).sizes() == Shape{2, 4, 2});
  CHECK(nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({1, 1}))(x).sizes() == Shape{2, 4, 1, 1});

  // Upsample: one scale for both dims, one per dim, or a size.
  nn::Upsample up2(nn::UpsampleOptions().scale_factor({2.0}).mode(kBilinear));
  CHECK(same(up2(x), nn::Upsample(nn::F::IntArgs{}, 2.0, "bilinear")(x)));
  nn::Upsample up23(nn::UpsampleOptions().scale_factor({2.0, 3.0}).mode(kNearest));
  const Tensor u = up23(x);
  CHECK(u.sizes() == Shape{2, 4, 6, 9});
  CHECK(same(u, nn::F::interpolate(x, {6, 9}, kNearest, false, {2.0, 3.0})));
  CHECK(same(u.index({Slice(), Slice(), 4, 7}), x.index({Slice(), Slice(), 2, 2})));
  CHECK(up23->extra_repr() == "scale_factor=(2, 3), mode='nearest'");
  CHECK(same(nn::Upsample(nn::UpsampleOptions().size({5, 4}).mode(kBilinear).align_corners(true))(x),
             nn::F::interpolate(x, {5, 4}, "bilinear", true)));
  CHECK_ERROR(nn::Upsample(nn::UpsampleOptions().scale_factor({2.0, 2.0, 2.0, 2.0})), "[Upsample]", "up to 3",
              "got 4");
  // Three factors suit a 5-D input only; the input's rank is known at forward.
  CHECK_ERROR(nn::Upsample(nn::UpsampleOptions().scale_factor({2.0, 2.0, 2.0}))(x), "[Upsample]", "1 or 2", "got 3");
  CHECK_ERROR(nn::Upsample(nn::UpsampleOptions().scale_factor({-2.0})), "[Upsample]", "positive", "-2");
  CHECK_ERROR(nn::Upsample(nn::UpsampleOptions().size({4, 4}).scale_factor({2.0})), "[Upsample]", "not both");
  CHECK_ERROR(nn::Upsample(nn::UpsampleOptions()), "[Upsample]", "not both");
  CHECK_ERROR(nn::Upsample(nn::F::IntArgs{}, -1.0), "[Upsample]", "positive", "-1");

  // Convolution padding by name.
  nn::Conv2d same_pad(nn::Conv2dOptions(4, 2, 3).padding(kSame).bias(false));
  CHECK(same_pad(x).sizes() == Shape{2, 2, 3, 3});
  nn::Conv2d valid(nn::Conv2dOptions(4, 2, 3).padding(kValid));
  CHECK(valid(x).sizes() == Shape{2, 2, 1, 1});
  nn::Conv2d zero_pad(nn::Conv2dOptions(4, 2, 3).padding({0}));  // a list of numbers still means numbers
  CHECK(zero_pad(x).sizes() == Shape{2, 2, 1, 1});
  CHECK(nn::Conv2dOptions(1, 1, 3).padding(kSame).padding_str() == "same");
  // The last padding call wins, as in libtorch.
  CHECK(nn::Conv2d(nn::Conv2dOptions(4, 2, 3).padding(kSame).padding(0))(x).sizes() == Shape{2, 2, 1, 1});
  CHECK(nn::Conv2d(nn::Conv2dOptions(4, 2, 3).padding(0).padding(kSame))(x).sizes() == Shape{2, 2, 3, 3});
}

TEST_CASE("nn: losses from their options, with the enum names for reductions") {
  manual_seed(4);
  const Tensor a = randn({4, 3}), b = randn({4, 3});
  CHECK(same(nn::MSELoss(nn::MSELossOptions(kSum))(a, b), nn::F::mse_loss(a, b, "sum")));
  CHECK(same(nn::MSELoss(nn::MSELossOptions().reduction(kNone))(a, b), nn::F::mse_loss(a, b, "none")));
  CHECK(same(nn::L1Loss(nn::L1LossOptions(kSum))(a, b), nn::F::l1_loss(a, b, "sum")));
  CHECK(same(nn::MSELoss(kMean)(a, b), nn::F::mse_loss(a, b, "mean")));
  CHECK(same(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.5).reduction(kSum))(a, b),
             nn::F::smooth_l1_loss(a, b, "sum", 0.5)));
  CHECK(same(nn::HuberLoss(nn::HuberLossOptions().delta(0.3))(a, b), nn::F::huber_loss(a, b, "mean", 0.3)));
  const Tensor p = a.sigmoid(), t = b.gt(0).to(kFloat32), w = rand({3});
  CHECK(same(nn::BCELoss(nn::BCELossOptions().weight(w).reduction(kSum))(p, t),
             nn::F::binary_cross_entropy(p, t, w, "sum")));
  const Tensor lp = a.log_softmax(1), lq = b.log_softmax(1);
  CHECK(same(nn::KLDivLoss(nn::KLDivLossOptions().reduction(kSum).log_target(true))(lp, lq),
             nn::F::kl_div(lp, lq, "sum", true)));
  const Tensor y = tensor({1.0f, -1.0f, 1.0f, -1.0f});
  CHECK(same(nn::CosineEmbeddingLoss(nn::CosineEmbeddingLossOptions().margin(0.2))(a, b, y),
             nn::F::cosine_embedding_loss(a, b, y, 0.2, "mean")));
  const Tensor s1 = a.select(1, 0), s2 = b.select(1, 0);
  CHECK(same(nn::MarginRankingLoss(nn::MarginRankingLossOptions().margin(0.1).reduction(kSum))(s1, s2, y),
             nn::F::margin_ranking_loss(s1, s2, y, 0.1, "sum")));
  const Tensor c = randn({4, 3});
  CHECK(same(nn::TripletMarginLoss(nn::TripletMarginLossOptions().margin(0.5).p(1).swap(true))(a, b, c),
             nn::F::triplet_margin_loss(a, b, c, 0.5, 1.0, 1e-6, true, "mean")));
  const Tensor logp = randn({6, 2, 4}).log_softmax(2);
  const Tensor targets = tensor({{1, 2}, {3, 3}});
  const std::vector<int64_t> in_len{6, 5}, tgt_len{2, 2};
  CHECK(same(nn::CTCLoss(nn::CTCLossOptions().blank(0).reduction(kSum))(logp, targets, in_len, tgt_len),
             nn::F::ctc_loss(logp, targets, in_len, tgt_len, 0, "sum", false)));
  // The enum names are the strings Ember's options hold.
  CHECK(std::string(kSum) == "sum");
  CHECK(nn::MSELossOptions(kNone).reduction() == kNone);
  CHECK_ERROR(nn::MSELoss(nn::MSELossOptions("total"))(a, b), "total");
}

TEST_CASE("nn: TransformerEncoder and TransformerDecoder from their options") {
  auto layer = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).activation(kGELU);
  nn::TransformerEncoder enc(nn::TransformerEncoderOptions(layer, 2).norm(nn::LayerNorm(nn::LayerNormOptions({8}))));
  const auto names = enc->named_parameters().keys();
  CHECK(std::find(names.begin(), names.end(), "layers.1.linear2.bias") != names.end());
  CHECK(std::find(names.begin(), names.end(), "norm.weight") != names.end());
  CHECK(enc->layers->size() == 2);
  manual_seed(6);
  const Tensor src = randn({5, 1, 8});
  // The same as the positional form with the same weights.
  nn::TransformerEncoder twin(nn::TransformerEncoderLayer(layer), 2, nn::LayerNorm(nn::LayerNormOptions({8})));
  twin->load_state_dict(enc->state_dict());
  CHECK(same(enc(src), twin(src)));
  nn::TransformerDecoder dec(nn::TransformerDecoderOptions(nn::TransformerDecoderLayer(layer), 3));
  CHECK(dec->layers->size() == 3);
  CHECK(dec(src, src).sizes() == Shape{5, 1, 8});
  CHECK(dec->named_parameters().find("norm.weight") == nullptr);
}

TEST_CASE("nn: Sequential with named children, ModuleList from a list, Module::as<T>()") {
  manual_seed(12);
  // As PyTorch's Sequential(OrderedDict(...)): the names are the state dict's.
  nn::Sequential net({{"fc1", nn::Linear(3, 4)}, {"act", nn::ReLU()}, {"fc2", nn::Linear(4, 2)}});
  CHECK(net->named_parameters().keys() == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(net->size() == 3);
  const Tensor x = randn({5, 3});
  auto fc1 = net->ptr<nn::LinearImpl>(0), fc2 = net->ptr<nn::LinearImpl>(2);
  CHECK(same(net(x), fc2->forward(fc1->forward(x).relu())));
  net->push_back("scale", [](const Tensor& t) { return t * 3.0; });
  net->push_back(nn::Tanh());  // positional names go on counting
  CHECK(net->named_children().keys() == std::vector<std::string>{"fc1", "act", "fc2", "scale", "4"});
  CHECK(same(net(x), (fc2->forward(fc1->forward(x).relu()) * 3.0).tanh()));
  // Clones keep the names; replacing by name reaches forward.
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(net->clone());
  CHECK(copy->named_children().keys() == net->named_children().keys());
  CHECK(same((*copy).forward(x), net(x)));
  net->replace_module("act", nn::Identity());
  CHECK(same(net(x), (fc2->forward(fc1->forward(x)) * 3.0).tanh()));
  CHECK_ERROR((nn::Sequential({{"a", nn::ReLU()}, {"a", nn::Tanh()}})), "'a'");
  // One list may build several Sequentials (callables are copied, modules shared).
  const std::initializer_list<nn::NamedModule> spec = {{"fc", nn::Linear(3, 3)},
                                                       {"double", [](const Tensor& t) { return t * 2.0; }}};
  nn::Sequential first(spec), second(spec);
  CHECK(same(first(x), second(x)));
  CHECK(first->ptr<nn::LinearImpl>(0) == second->ptr<nn::LinearImpl>(0));

  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  CHECK(list->size() == 3);
  CHECK(list->named_parameters().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});

  // as<T>() by handle type or Impl type; nullptr for another type.
  std::vector<int64_t> widths;
  for (const auto& m : net->modules(false))
    if (auto* fc = m->as<nn::Linear>()) widths.push_back(fc->options.out_features());
  CHECK(widths == std::vector<int64_t>{4, 2});
  CHECK(net->as<nn::SequentialImpl>() == net.get());
  CHECK(net->as<nn::Linear>() == nullptr);
  const nn::SequentialImpl& cnet = *net;
  CHECK(cnet.as<nn::Sequential>() == net.get());
}

TEST_CASE("nn: the 3-D layers and the other ranks of the adaptive pools and instance norm") {
  manual_seed(31);
  namespace F = nn::F;
  Tensor v = randn({2, 3, 4, 6, 5});
  // Each module is its functional form; each functional form takes libtorch's FuncOptions.
  nn::MaxPool3d mp(nn::MaxPool3dOptions(2).stride({2, 2, 1}));
  CHECK(same(mp(v), F::max_pool3d(v, {2}, {2, 2, 1})));
  CHECK(same(mp(v), F::max_pool3d(v, F::MaxPool3dFuncOptions(2).stride({2, 2, 1}))));
  CHECK(same(mp(v), ember::max_pool3d(v, 2, {2, 2, 1})));
  CHECK(same(mp->forward_with_indices(v).second, F::max_pool3d_with_indices(v, {2}, {2, 2, 1}).second));
  CHECK(same(mp(v.select(0, 1)), mp(v).select(0, 1)));  // unbatched (C, D, H, W)
  nn::AvgPool3d ap(nn::AvgPool3dOptions(3).padding(1).count_include_pad(false));
  CHECK(same(ap(v), F::avg_pool3d(v, F::AvgPool3dFuncOptions(3).padding(1).count_include_pad(false))));
  CHECK_ERROR(F::avg_pool3d(v, F::AvgPool3dFuncOptions(2).dilation(2)), "[avg_pool3d]", "no dilation");
  nn::ConvTranspose3d ct(nn::ConvTranspose3dOptions(3, 2, 2).stride(2));
  CHECK(ct->weight.sizes() == Shape{3, 2, 2, 2, 2});
  CHECK(same(ct(v), F::conv_transpose3d(v, ct->weight, F::ConvTranspose3dFuncOptions().bias(ct->bias).stride(2))));
  CHECK(ct(v).sizes() == Shape{2, 2, 8, 12, 10});
  CHECK(ct->name() == "ConvTranspose3d");

  nn::AdaptiveMaxPool3d amp(nn::AdaptiveMaxPool3dOptions{2, 3, 2});
  CHECK(amp(v).sizes() == Shape{2, 3, 2, 3, 2});
  CHECK(same(amp(v), F::adaptive_max_pool3d(v, {2, 3, 2})));
  // An uneven split, cell by cell, equals the window maxima by hand.
  Tensor line = randn({2, 3, 7});
  nn::AdaptiveMaxPool1d am1(3);
  Tensor want = stack({line.narrow(2, 0, 3).amax({2}), line.narrow(2, 2, 3).amax({2}), line.narrow(2, 4, 3).amax({2})}, 2);
  CHECK(same(am1(line), want));
  CHECK(am1->extra_repr() == "output_size=3");
  CHECK(nn::AdaptiveAvgPool3d(nn::IntArgs{1, 2, 3})->extra_repr() == "output_size=(1, 2, 3)");
  CHECK_ERROR(F::adaptive_max_pool3d(v, {2, 0, 1}), "[adaptive_max_pool3d]", "must be positive, got 0");
  CHECK_ERROR(F::adaptive_max_pool1d(v, 2), "[adaptive_max_pool1d]", "got shape [2, 3, 4, 6, 5]");
  CHECK_ERROR(nn::AdaptiveMaxPool2d(nn::IntArgs{1, 2, 3}), "[AdaptiveMaxPool2d]", "output_size needs 1 or 2 values");
  // std::nullopt keeps the input's size in that dim (libtorch's ExpandingArrayWithOptionalElem).
  Tensor img = randn({2, 3, 6, 10});
  nn::AdaptiveAvgPool2d keep_h(nn::AdaptiveAvgPool2dOptions{std::nullopt, 5});
  CHECK(same(keep_h(img), F::adaptive_avg_pool2d(img, {6, 5})));
  CHECK(keep_h->extra_repr() == "output_size=(None, 5)");
  nn::AdaptiveMaxPool2d keep_w(nn::AdaptiveMaxPool2dOptions{2, std::nullopt});
  CHECK(same(keep_w(img), F::adaptive_max_pool2d(img, {2, 10})));
  CHECK(same(keep_w->forward_with_indices(img).second, F::adaptive_max_pool2d_with_indices(img, {2, 10}).second));
  CHECK(same(F::adaptive_max_pool3d(v, {std::nullopt, 3, std::nullopt}), F::adaptive_max_pool3d(v, {4, 3, 5})));
  CHECK(same(F::adaptive_avg_pool3d(v, {1, std::nullopt, 1}), F::adaptive_avg_pool3d(v, {1, 6, 1})));
  CHECK(same(nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions{std::nullopt})(v), v));
  CHECK(same(ember::adaptive_avg_pool2d(img.select(0, 1), {std::nullopt, 2}),
             F::adaptive_avg_pool2d(img.select(0, 1), {6, 2})));
  CHECK_ERROR(nn::AdaptiveAvgPool1dImpl(nn::OptionalIntArgs{std::nullopt}), "[AdaptiveAvgPool1d]", "None only");
  CHECK_ERROR(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions{std::nullopt, -1}), "[AdaptiveAvgPool2d]",
              "must be positive, got -1");
  CHECK_ERROR(F::adaptive_avg_pool2d(img, {std::nullopt, 1, 1}), "[adaptive_avg_pool2d]", "1 or 2 values");

  nn::BatchNorm3d bn(3);
  CHECK(bn(v).sizes() == v.sizes());
  CHECK(bn->num_batches_tracked.item<int64_t>() == 1);
  CHECK_ERROR(bn(v.select(0, 0)), "[BatchNorm3d]", "(N, C, D, H, W)", "[3, 4, 6, 5]");
  nn::InstanceNorm1d in1(nn::InstanceNorm1dOptions(3).affine(true));
  CHECK(in1->weight.sizes() == Shape{3});
  CHECK(same(in1(line.select(0, 0)), in1(line).select(0, 0)));  // unbatched (C, L)
  CHECK_ERROR(nn::InstanceNorm3d(3)(line), "[InstanceNorm3d]", "got shape [2, 3, 7]");
  nn::InstanceNorm3d in3(3);
  Tensor z = in3(v);
  CHECK(z.mean({2, 3, 4}).abs().max().item<float>() < 1e-5f);
}

TEST_CASE("nn: InstanceNorm with running statistics, F::instance_norm's options, ember::instance_norm") {
  manual_seed(37);
  namespace F = nn::F;
  Tensor x = randn({4, 3, 5, 2});
  nn::InstanceNorm2d in(nn::InstanceNorm2dOptions(3).track_running_stats(true).momentum(0.5));
  CHECK(in->extra_repr() == "3, eps=1e-05, momentum=0.5, affine=False, track_running_stats=True");
  const Tensor y = in(x);  // training: the input's statistics, and the running ones move halfway
  CHECK(same(y, F::instance_norm(x)));
  Tensor per = x.reshape({4, 3, -1});
  CHECK((in->running_mean - per.mean({2}).mean({0}) * 0.5).abs().max().item<float>() < 1e-6f);
  CHECK((in->running_var - (per.var({2}, 1).mean({0}) * 0.5 + 0.5)).abs().max().item<float>() < 1e-6f);
  in->eval();  // eval: every sample by its channel's running statistics, as batch norm in eval mode
  CHECK(same(in(x), F::batch_norm(x, in->running_mean, in->running_var)));
  Tensor rm = in->running_mean.clone(), rv = in->running_var.clone();
  CHECK(same(F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).use_input_stats(false)),
             in(x)));
  CHECK(same(ember::instance_norm(x, {}, {}, rm, rv, false, 0.1, 1e-5, true), in(x)));
  CHECK(same(rm, in->running_mean));  // eval leaves them alone
  nn::InstanceNorm2d plain(3);  // without running statistics eval mode still uses the input's
  plain->eval();
  CHECK(same(plain(x), F::instance_norm(x)));
  CHECK(plain->named_buffers().size() == 0);
  CHECK(in->named_buffers().size() == 3);  // running_mean, running_var, num_batches_tracked
  CHECK_ERROR(F::instance_norm(x, F::InstanceNormFuncOptions().use_input_stats(false)), "[instance_norm]",
              "needs running statistics");
  CHECK_ERROR(F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(zeros({2})).running_var(ones({2}))),
              "[instance_norm]", "must have shape [3]");
}

}  // namespace test_module_options
