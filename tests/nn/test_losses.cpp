// Losses: values against direct formulas (plain loops over the elements), reductions,
// PyTorch's options (weight, ignore_index, label_smoothing, pos_weight, log_target), errors,
// and gradcheck of each.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace test_losses {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

void check_grad(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                const std::vector<Tensor>& in) {
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, in, {}, &why), what << ": " << why);
}

// Reference cross entropy with class indices, loops only.
double ref_cross_entropy(const std::vector<double>& logits, int64_t n, int64_t c, const std::vector<int64_t>& target,
                         const std::vector<double>& weight, int64_t ignore, double eps) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (target[i] == ignore) continue;
    double mx = -INFINITY;
    for (int64_t k = 0; k < c; ++k) mx = std::max(mx, logits[i * c + k]);
    double s = 0;
    for (int64_t k = 0; k < c; ++k) s += std::exp(logits[i * c + k] - mx);
    auto logp = [&](int64_t k) { return logits[i * c + k] - mx - std::log(s); };
    double wt = weight.empty() ? 1.0 : weight[target[i]];
    double smooth = 0;
    for (int64_t k = 0; k < c; ++k) smooth += -(weight.empty() ? 1.0 : weight[k]) * logp(k);
    num += (1 - eps) * -wt * logp(target[i]) + eps / c * smooth;
    den += wt;
  }
  return num / den;
}

}  // namespace

TEST_CASE("losses: regression losses against their formulas, every reduction") {
  Tensor a = tensor<double>({0.5, -1.0, 2.0, 3.5}), b = tensor<double>({0.0, 1.0, 2.5, 1.0});
  std::vector<double> av = vals(a), bv = vals(b);
  double mse = 0, l1 = 0, sl1 = 0, hub = 0;
  for (size_t i = 0; i < 4; ++i) {
    double d = std::abs(av[i] - bv[i]);
    mse += d * d, l1 += d;
    sl1 += d < 1.0 ? 0.5 * d * d : d - 0.5;
    hub += d < 1.5 ? 0.5 * d * d : 1.5 * (d - 0.75);
  }
  CHECK(nn::F::mse_loss(a, b).item<double>() == doctest::Approx(mse / 4));
  CHECK(nn::F::mse_loss(a, b, "sum").item<double>() == doctest::Approx(mse));
  CHECK(nn::F::mse_loss(a, b, "none").sizes() == Shape{4});
  CHECK(nn::F::l1_loss(a, b).item<double>() == doctest::Approx(l1 / 4));
  CHECK(nn::F::smooth_l1_loss(a, b).item<double>() == doctest::Approx(sl1 / 4));
  CHECK(nn::F::huber_loss(a, b, "sum", 1.5).item<double>() == doctest::Approx(hub));
  CHECK_THROWS_WITH_AS(nn::F::mse_loss(a, b, "avg"), doctest::Contains("reduction must be"), Error);
  CHECK_THROWS_WITH_AS(nn::F::l1_loss(a, b.narrow(0, 0, 3)), doctest::Contains("[l1_loss] input of shape [4]"), Error);
}

// ATen codes reductions as integers (0 = none); here a literal 0 would have become a null
// string_view. Each check is dependent on the policy so that a refused call reads false.
template <class P>
constexpr bool functional_takes_literal_zero = requires(const BasicTensor<P>& a) { nn::F::mse_loss(a, a, 0); };
template <class P>
constexpr bool aten_form_takes_literal_zero = requires(const BasicTensor<P>& a) { ember::nll_loss(a, a, a, 0); };
template <class P>
constexpr bool module_takes_literal_zero = requires { nn::BasicMSELossImpl<P>(0); };
// On the options type too: outside a template, a requires-expression whose call is ill-formed
// is a hard error for clang, not false.
template <class O>
constexpr bool options_take_literal_zero = requires(O o) { o.reduction(0); };
template <class P>
constexpr bool functional_takes_name = requires(const BasicTensor<P>& a) {
  nn::F::mse_loss(a, a, "sum");
  nn::F::mse_loss(a, a, std::string("sum"));
  nn::F::mse_loss(a, a, kSum);
  ember::nll_loss(a, a, a, Reduction::Sum);
};

TEST_CASE("losses: a reduction is a name, never an integer or a null string") {
  static_assert(functional_takes_name<DefaultPolicy>);
  static_assert(!functional_takes_literal_zero<DefaultPolicy>);
  static_assert(!aten_form_takes_literal_zero<DefaultPolicy>);
  static_assert(!module_takes_literal_zero<DefaultPolicy>);
  static_assert(!options_take_literal_zero<nn::CrossEntropyLossOptions>);
  static_assert(!std::is_convertible_v<std::nullptr_t, nn::LossReduction>);
  static_assert(!std::is_convertible_v<bool, nn::LossReduction>);

  Tensor a = tensor({1.0, 2.0, 4.0}), b = tensor({1.5, 2.0, 3.0});
  const char* null_name = nullptr;
  CHECK_THROWS_WITH_AS(nn::F::mse_loss(a, b, null_name), doctest::Contains("[reduction] got a null string"), Error);
  CHECK_THROWS_WITH_AS(nn::MSELoss(nn::MSELossOptions().reduction(null_name)), doctest::Contains("null string"), Error);
  // {} is the default, as an omitted argument is.
  CHECK(nn::F::mse_loss(a, b, {}).item<double>() == doctest::Approx((0.25 + 1.0) / 3));
  CHECK(nn::F::mse_loss(a, b, std::string("sum")).item<double>() == doctest::Approx(1.25));
  CHECK(nn::MSELossOptions(kSum).reduction() == "sum");
  CHECK_THROWS_WITH_AS(nn::F::kl_div(a.log(), b, std::string_view("avg")),
                       doctest::Contains("[kl_div] reduction must be"), Error);
}

Tensor probs_of_other_dtype(const Tensor& logits) { return logits.softmax(1).to(DType::F32); }

TEST_CASE("losses: cross_entropy and nll_loss with weight, ignore_index and label smoothing") {
  manual_seed(9);
  const int64_t n = 5, c = 4;
  Tensor logits = randn({n, c}, DType::F64);
  std::vector<int64_t> tv = {1, 0, 3, 3, 2};
  Tensor target = tensor<int64_t>({1, 0, 3, 3, 2});
  std::vector<double> w = {0.5, 1.0, 2.0, 1.5};
  Tensor weight = tensor<double>({0.5, 1.0, 2.0, 1.5});
  std::vector<double> lv = vals(logits);
  CHECK(nn::F::cross_entropy(logits, target).item<double>() ==
        doctest::Approx(ref_cross_entropy(lv, n, c, tv, {}, -100, 0.0)));
  CHECK(nn::F::cross_entropy(logits, target, weight).item<double>() ==
        doctest::Approx(ref_cross_entropy(lv, n, c, tv, w, -100, 0.0)));
  CHECK(nn::F::cross_entropy(logits, target, {}, 3).item<double>() ==
        doctest::Approx(ref_cross_entropy(lv, n, c, tv, {}, 3, 0.0)));
  CHECK(nn::F::cross_entropy(logits, target, {}, -100, "mean", 0.1).item<double>() ==
        doctest::Approx(ref_cross_entropy(lv, n, c, tv, {}, -100, 0.1)));
  CHECK(nn::F::cross_entropy(logits, target, weight, 0, "mean", 0.2).item<double>() ==
        doctest::Approx(ref_cross_entropy(lv, n, c, tv, w, 0, 0.2)));
  // Probabilities as targets: -sum p log softmax, mean over the batch.
  Tensor probs = randn({n, c}, DType::F64).softmax(1);
  double ref = -(probs * logits.log_softmax(1)).sum().item<double>() / n;
  CHECK(nn::F::cross_entropy(logits, probs).item<double>() == doctest::Approx(ref));
  // Spatial: (N, C, d) with targets (N, d) equals the flattened problem.
  Tensor img = randn({2, c, 3}, DType::F64);
  Tensor tt = tensor<int64_t>({{0, 1, 2}, {3, 3, 1}});
  Tensor flat = img.permute({0, 2, 1}).reshape({6, c});
  CHECK(nn::F::cross_entropy(img, tt).item<double>() ==
        doctest::Approx(nn::F::cross_entropy(flat, tt.reshape({6})).item<double>()));
  // nll on log-probs equals cross entropy on logits.
  CHECK(nn::F::nll_loss(logits.log_softmax(1), target, weight).item<double>() ==
        doctest::Approx(nn::F::cross_entropy(logits, target, weight).item<double>()));
  CHECK_THROWS_WITH_AS(nn::F::cross_entropy(logits, tensor<int64_t>({1, 0, 4, 3, 2})),
                       doctest::Contains("outside [0, 4)"), Error);
  CHECK_THROWS_WITH_AS(nn::F::cross_entropy(logits, tensor<int64_t>({1, 0})), doctest::Contains("does not match"),
                       Error);
  // cross_entropy's errors name cross_entropy (it computes through nll_loss), and the index.
  CHECK_THROWS_WITH_AS(nn::F::cross_entropy(logits, tensor<int64_t>({1, 0, 4, 3, 2})),
                       doctest::Contains("[cross_entropy] target index 4 is outside [0, 4)"), Error);
  CHECK_THROWS_WITH_AS(nn::F::nll_loss(logits, tensor<int64_t>({1, 0})), doctest::Contains("[nll_loss] target of shape"),
                       Error);
  // A weight of another dtype is refused (PyTorch too), as are integer inputs.
  CHECK_THROWS_WITH_AS(nn::F::cross_entropy(logits, target, weight.to(DType::F32)),
                       doctest::Contains("[cross_entropy] weight is f32 on cpu but the input is f64 on cpu"), Error);
  CHECK_THROWS_WITH_AS(nn::F::nll_loss(logits, target, weight.to(DType::F32)),
                       doctest::Contains("[nll_loss] weight is f32"), Error);
  CHECK_THROWS_WITH_AS(nn::F::cross_entropy(target, target), doctest::Contains("[cross_entropy] input must be floating"),
                       Error);
  // Probabilities of another dtype promote, as PyTorch's (f64 logits with f32 labels: f64).
  const Tensor soft = probs_of_other_dtype(logits);
  CHECK(nn::F::cross_entropy(logits, soft).item<double>() ==
        doctest::Approx(nn::F::cross_entropy(logits, soft.to(DType::F64)).item<double>()).epsilon(1e-6));
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(weight).label_smoothing(0.2).ignore_index(0));
  CHECK(ce(logits, target).item<double>() == doctest::Approx(ref_cross_entropy(lv, n, c, tv, w, 0, 0.2)));
}

// Without a weight or an ignored target, nll_loss is a gather and a mean/sum; with a weight of
// ones it takes the general path. Values and input gradients must agree.
TEST_CASE("losses: cross_entropy's gather path agrees with the general path") {
  manual_seed(3);
  for (const char* red : {"mean", "sum"}) {
    Tensor a = randn({6, 5}).requires_grad_(true), b = a.detach().clone().requires_grad_(true);
    Tensor target = tensor<int64_t>({4, 0, 2, 2, 1, 3});
    Tensor fast = nn::F::cross_entropy(a, target, {}, -100, red);
    Tensor general = nn::F::cross_entropy(b, target, ones({5}), -100, red);
    CHECK(fast.item<double>() == doctest::Approx(general.item<double>()).epsilon(1e-6));
    fast.backward();
    general.backward();
    CHECK((a.grad() - b.grad()).abs().max().item<double>() < 1e-6);
  }
  CHECK(std::isnan(nn::F::cross_entropy(zeros({0, 3}), zeros({0}, DType::I64)).item<float>()));  // mean of nothing
}

TEST_CASE("losses: binary cross entropy (probabilities and logits), KL divergence") {
  Tensor x = tensor<double>({-2.0, 0.5, 3.0}), y = tensor<double>({0.0, 1.0, 0.25});
  std::vector<double> xv = vals(x), yv = vals(y);
  double bce = 0, bcel = 0, bcep = 0;
  for (size_t i = 0; i < 3; ++i) {
    double p = 1 / (1 + std::exp(-xv[i]));
    bce += -(yv[i] * std::log(p) + (1 - yv[i]) * std::log(1 - p));
    bcep += -(3.0 * yv[i] * std::log(p) + (1 - yv[i]) * std::log(1 - p));
  }
  bcel = bce;
  CHECK(nn::F::binary_cross_entropy(x.sigmoid(), y).item<double>() == doctest::Approx(bce / 3));
  CHECK(nn::F::binary_cross_entropy_with_logits(x, y).item<double>() == doctest::Approx(bcel / 3));
  CHECK(nn::F::binary_cross_entropy_with_logits(x, y, {}, "sum", full({3}, 3.0, DType::F64)).item<double>() ==
        doctest::Approx(bcep));
  // Large logits stay finite (softplus form).
  CHECK(std::isfinite(nn::F::binary_cross_entropy_with_logits(x * 1000.0, y).item<double>()));
  CHECK_THROWS_WITH_AS(nn::F::binary_cross_entropy(x, y), doctest::Contains("probabilities in [0, 1]"), Error);
  Tensor lp = tensor<double>({0.2, 0.3, 0.5}).log(), q = tensor<double>({0.1, 0.6, 0.3});
  double kl = 0;
  std::vector<double> pv = {0.2, 0.3, 0.5}, qv = {0.1, 0.6, 0.3};
  for (size_t i = 0; i < 3; ++i) kl += qv[i] * (std::log(qv[i]) - std::log(pv[i]));
  CHECK(nn::F::kl_div(lp, q, "sum").item<double>() == doctest::Approx(kl));
  CHECK(nn::F::kl_div(lp, q.log(), "sum", true).item<double>() == doctest::Approx(kl));
}

TEST_CASE("losses: ranking and embedding losses") {
  Tensor a = tensor<double>({{1.0, 0.0}, {0.0, 2.0}}), b = tensor<double>({{1.0, 1.0}, {1.0, 0.0}});
  Tensor y = tensor<double>({1.0, -1.0});
  // cos(a0, b0) = 1/sqrt2; cos(a1, b1) = 0 -> losses [1 - 0.7071, max(0, 0 - 0.1)].
  CHECK(nn::F::cosine_embedding_loss(a, b, y, 0.1, "sum").item<double>() == doctest::Approx(1 - std::sqrt(0.5)));
  Tensor s1 = tensor<double>({1.0, 2.0}), s2 = tensor<double>({2.0, 0.5});
  CHECK(nn::F::margin_ranking_loss(s1, s2, tensor<double>({1.0, 1.0}), 0.5, "sum").item<double>() ==
        doctest::Approx(1.5));
  Tensor an = tensor<double>({{0.0, 0.0}}), po = tensor<double>({{3.0, 4.0}}), ne = tensor<double>({{1.0, 0.0}});
  CHECK(nn::F::triplet_margin_loss(an, po, ne, 1.0, 2.0, 0.0).item<double>() == doctest::Approx(5.0));
}

TEST_CASE("losses: gradcheck of every loss") {
  manual_seed(10);
  auto r = [](Shape s) { return randn(s, DType::F64).requires_grad_(); };
  Tensor t = randn({3, 4}, DType::F64);
  Tensor cls = tensor<int64_t>({0, 3, 2});
  Tensor w = tensor<double>({1.0, 0.5, 2.0, 1.5});
  Tensor prob = (rand({3, 4}, DType::F64) * 0.8 + 0.1);
  check_grad("mse", [&](const auto& x) { return nn::F::mse_loss(x[0], t); }, {r({3, 4})});
  check_grad("l1", [&](const auto& x) { return nn::F::l1_loss(x[0], t); }, {r({3, 4})});
  check_grad("smooth_l1", [&](const auto& x) { return nn::F::smooth_l1_loss(x[0], t, "mean", 0.5); }, {r({3, 4})});
  check_grad("huber", [&](const auto& x) { return nn::F::huber_loss(x[0], t, "sum", 0.7); }, {r({3, 4})});
  check_grad("cross_entropy", [&](const auto& x) { return nn::F::cross_entropy(x[0], cls, w, 3, "mean", 0.1); },
             {r({3, 4})});
  check_grad("cross_entropy probs", [&](const auto& x) { return nn::F::cross_entropy(x[0], x[1].softmax(1)); },
             {r({3, 4}), r({3, 4})});
  check_grad("bce", [&](const auto& x) { return nn::F::binary_cross_entropy(x[0].sigmoid(), prob); }, {r({3, 4})});
  check_grad("bce_with_logits",
             [&](const auto& x) { return nn::F::binary_cross_entropy_with_logits(x[0], prob, {}, "mean", x[1].exp()); },
             {r({3, 4}), r({4})});
  check_grad("kl_div", [&](const auto& x) { return nn::F::kl_div(x[0].log_softmax(1), prob, "batchmean"); },
             {r({3, 4})});
  check_grad("cosine_embedding",
             [&](const auto& x) { return nn::F::cosine_embedding_loss(x[0], x[1], tensor<double>({1.0, -1.0, 1.0})); },
             {r({3, 4}), r({3, 4})});
  check_grad("triplet", [&](const auto& x) { return nn::F::triplet_margin_loss(x[0], x[1], x[2], 5.0); },
             {r({3, 4}), r({3, 4}), r({3, 4})});
  check_grad("layer_norm", [&](const auto& x) { return nn::F::layer_norm(x[0], {4}, x[1], x[2]); },
             {r({3, 4}), r({4}), r({4})});
  check_grad("rms_norm", [&](const auto& x) { return nn::F::rms_norm(x[0], {4}, x[1]); }, {r({3, 4}), r({4})});
}

TEST_CASE("layer_norm's fused op equals the composite formula, forward, backward and double backward") {
  manual_seed(41);
  // The composite: what layer_norm computed before it was one op (and still computes for
  // other dtypes and devices).
  auto composite = [](const Tensor& x, int64_t k, const Tensor& w, const Tensor& b, double eps) {
    Shape dims;
    for (int64_t i = 0; i < k; ++i) dims.push_back(x.dim() - k + i);
    auto [var, mean] = x.var_mean(dims, 0, true);
    Tensor y = (x - mean) * (var + eps).rsqrt();
    if (w.defined()) y = y * w;
    if (b.defined()) y = y + b;
    return y;
  };
  struct Case {
    Shape x, norm;
    bool weight, bias;
  };
  // 37 columns: vector bodies and scalar tails; (5, 7) normalised over two dims; no params.
  for (const Case& c : {Case{{4, 37}, {37}, true, true}, Case{{2, 3, 5, 7}, {5, 7}, true, false},
                        Case{{6, 16}, {16}, false, true}, Case{{3, 8}, {8}, false, false}}) {
    for (DType dt : {DType::F32, DType::F64}) {
      const double tol = dt == DType::F32 ? 2e-5 : 1e-12;
      Tensor x = (randn(c.x, dt) * 3 + 1).requires_grad_();
      Tensor w = c.weight ? randn(c.norm, dt).requires_grad_() : Tensor();
      Tensor b = c.bias ? randn(c.norm, dt).requires_grad_() : Tensor();
      Tensor y = nn::F::layer_norm(x, c.norm, w, b, 1e-5);
      Tensor want = composite(x, static_cast<int64_t>(c.norm.size()), w, b, 1e-5);
      CHECK((y - want).abs().amax().item<double>() < tol);
      Tensor dy = randn(c.x, dt);
      std::vector<Tensor> ins{x};
      if (c.weight) ins.push_back(w);
      if (c.bias) ins.push_back(b);
      std::vector<Tensor> got = autograd::grad({y}, ins, {dy}), exp = autograd::grad({want}, ins, {dy});
      for (size_t i = 0; i < ins.size(); ++i) CHECK((got[i] - exp[i]).abs().amax().item<double>() < tol * 10);
    }
  }
  // Second order goes through the recorded formula (create_graph).
  auto r = [](Shape s) { return randn(s, DType::F64).requires_grad_(); };
  std::string why;
  auto ln = [](const std::vector<Tensor>& v) { return nn::F::layer_norm(v[0], {5}, v[1], v[2]); };
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(ln, {r({3, 5}), r({5}), r({5})}, {}, &why), why);
  auto ln_plain = [](const std::vector<Tensor>& v) { return nn::F::layer_norm(v[0], {2, 3}); };
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(ln_plain, {r({4, 2, 3})}, {}, &why), why);
  // Parameters must match the normalised shape, dtype and device.
  Tensor x = randn({2, 4});
  CHECK_THROWS_WITH_AS(nn::F::layer_norm(x, {4}, ones({1, 4})), doctest::Contains("[layer_norm] weight of shape [1, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::F::layer_norm(x, {4}, {}, ones({4}, DType::F64)), doctest::Contains("[layer_norm]"), Error);
  // Other dtypes take the composite path and agree with the f32 result.
  Tensor xh = randn({3, 8}).to(DType::BF16);
  CHECK((nn::F::layer_norm(xh, {8}).to(DType::F32) - nn::F::layer_norm(xh.to(DType::F32), {8})).abs().amax().item<double>() < 0.05);
}

TEST_CASE("ctc_loss equals the sum over all alignments (brute force), and is differentiable") {
  manual_seed(11);
  const int64_t t = 4, c = 3;
  Tensor lp = randn({t, 2, c}, DType::F64).log_softmax(2);
  std::vector<std::vector<int64_t>> targets = {{1, 2}, {1, 1}};
  auto brute = [&](int64_t b) {
    double total = 0;
    for (int64_t code = 0; code < 81; ++code) {  // every path of length 4 over 3 symbols
      std::vector<int64_t> path;
      int64_t k = code;
      double logp = 0;
      for (int64_t i = 0; i < t; ++i) {
        path.push_back(k % c);
        logp += lp.select(0, i).select(0, b).select(0, k % c).item<double>();
        k /= c;
      }
      std::vector<int64_t> collapsed;  // merge repeats, drop blanks
      for (size_t i = 0; i < path.size(); ++i)
        if (path[i] != 0 && (i == 0 || path[i] != path[i - 1])) collapsed.push_back(path[i]);
      if (collapsed == targets[b]) total += std::exp(logp);
    }
    return -std::log(total);
  };
  Tensor tg = tensor<int64_t>({{1, 2}, {1, 1}});
  Tensor l = nn::F::ctc_loss(lp, tg, {4, 4}, {2, 2}, 0, "none");
  CHECK(l.select(0, 0).item<double>() == doctest::Approx(brute(0)).epsilon(1e-10));
  CHECK(l.select(0, 1).item<double>() == doctest::Approx(brute(1)).epsilon(1e-10));
  CHECK(nn::F::ctc_loss(lp, tg, {4, 4}, {2, 2}).item<double>() == doctest::Approx((brute(0) + brute(1)) / 4));
  // Impossible alignment (repeated label needs a blank between: 3 steps minimum for "1 1").
  Tensor inf = nn::F::ctc_loss(lp, tg, {4, 2}, {2, 2}, 0, "none");
  CHECK(std::isinf(inf.select(0, 1).item<double>()));
  CHECK(nn::F::ctc_loss(lp, tg, {4, 2}, {2, 2}, 0, "none", true).select(0, 1).item<double>() == 0.0);
  check_grad("ctc_loss", [&](const auto& x) { return nn::F::ctc_loss(x[0].log_softmax(2), tg, {4, 3}, {2, 1}); },
             {randn({t, 2, c}, DType::F64).requires_grad_()});
  CHECK_THROWS_WITH_AS(nn::F::ctc_loss(lp, tensor<int64_t>({{0, 1}, {1, 1}}), {4, 4}, {2, 2}),
                       doctest::Contains("is not a valid label"), Error);
}

TEST_CASE("EmbeddingBag: sum, mean and max bags from 2-d input or offsets, per-sample weights") {
  manual_seed(12);
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(6, 3).mode("sum"));
  Tensor w = bag->weight.detach();
  Tensor in = tensor<int64_t>({1, 2, 4, 5, 4});
  Tensor off = tensor<int64_t>({0, 2});
  Tensor s = bag(in, off);
  CHECK((s.select(0, 0) - (w[1] + w[2])).abs().amax().item<double>() < 1e-6);
  CHECK((s.select(0, 1) - (w[4] + w[5] + w[4])).abs().amax().item<double>() < 1e-6);
  Tensor psw = tensor<float>({1.0f, 2.0f, 0.5f, 1.0f, 1.0f});
  CHECK((bag(in, off, psw).select(0, 0) - (w[1] + w[2] * 2.0)).abs().amax().item<double>() < 1e-6);
  nn::EmbeddingBag mean(nn::EmbeddingBagOptions(6, 3).mode("mean"));
  Tensor wm = mean->weight.detach();
  Tensor m = mean(tensor<int64_t>({{0, 3}, {5, 5}}));
  CHECK((m.select(0, 0) - (wm[0] + wm[3]) / 2.0).abs().amax().item<double>() < 1e-6);
  nn::EmbeddingBag mx(nn::EmbeddingBagOptions(6, 3).mode("max"));
  Tensor wx = mx->weight.detach();
  CHECK((mx(tensor<int64_t>({{0, 3}})).select(0, 0) - wx[0].maximum(wx[3])).abs().amax().item<double>() < 1e-6);
  CHECK_THROWS_WITH_AS(mean(in, off, psw), doctest::Contains("need mode 'sum'"), Error);
}

namespace {
void check_near(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(got[i] == doctest::Approx(want[i]), "element " << i);
}
}  // namespace

TEST_CASE("losses: PyTorch's behaviour at saturated, masked and unusual inputs") {
  const double inf = std::numeric_limits<double>::infinity();
  // An ignored target whose placeholder class has log-probability -inf counts 0, not NaN.
  Tensor lp = tensor<double>({{-inf, 0.0}, {std::log(0.5), std::log(0.5)}});
  Tensor tg = tensor<int64_t>({-100, 1});
  CHECK(nn::F::nll_loss(lp, tg).item<double>() == doctest::Approx(std::log(2.0)));
  check_near(vals(nn::F::nll_loss(lp, tg, {}, -100, "none")), {0.0, std::log(2.0)});
  Tensor logits = tensor<double>({{-inf, 0.0}, {1.0, 2.0}});
  const double ce1 = std::log1p(std::exp(-1.0));  // -log softmax([1, 2])[1]
  CHECK(nn::F::cross_entropy(logits, tg).item<double>() == doctest::Approx(ce1));
  CHECK(nn::F::cross_entropy(logits, tg, {}, -100, "mean", 0.1).item<double>() ==
        doctest::Approx(0.9 * ce1 + 0.05 * (ce1 + std::log1p(std::exp(1.0)))));
  {
    Tensor x = logits.clone().requires_grad_();
    nn::F::cross_entropy(x, tg, {}, -100, "mean", 0.1).backward();
    for (double g : vals(x.grad())) CHECK(std::isfinite(g));
  }
  CHECK_THROWS_WITH_AS(nn::F::cross_entropy(logits, tensor<double>({{0.5, 0.5}, {0.0, 1.0}}), {}, 0),
                       doctest::Contains("ignore_index (0) is not supported for probability targets"), Error);

  // binary_cross_entropy at exactly 0 and 1 (a saturated float sigmoid): the input's gradient
  // is PyTorch's (x - t) / max(x (1 - x), 1e-12), finite; the target's as before.
  Tensor x = tensor<double>({1.0, 0.0, 1.0, 0.0, 0.3}).requires_grad_();
  Tensor t = tensor<double>({1.0, 0.0, 0.0, 1.0, 1.0}).requires_grad_();
  Tensor l = nn::F::binary_cross_entropy(x, t, {}, "sum");
  CHECK(l.item<double>() == doctest::Approx(200 - std::log(0.3)));
  l.backward();
  check_near(vals(x.grad()), {0.0, 0.0, 1e12, -1e12, -0.7 / 0.21});
  check_near(vals(t.grad()), {-100.0, 100.0, -100.0, 100.0, std::log(0.7 / 0.3)});

  // cosine_embedding_loss: labels other than 1 and -1 count 0; PyTorch's 1e-12 in the norms.
  Tensor a = tensor<double>({{1.0, 0.0}, {1e-7, 1e-7}}), b = tensor<double>({{1.0, 0.1}, {1e-7, 1e-7}});
  check_near(vals(nn::F::cosine_embedding_loss(a, b, tensor<double>({0.0, 1.0}), 0.0, "none")),
             {0.0, 1 - 2e-14 / std::sqrt((2e-14 + 1e-12) * (2e-14 + 1e-12))});
  CHECK_THROWS_WITH_AS(nn::F::cosine_embedding_loss(randn({2, 3, 4}), randn({2, 3, 4}), ones({2})),
                       doctest::Contains("[cosine_embedding_loss]"), Error);
  CHECK_THROWS_WITH_AS(nn::F::margin_ranking_loss(randn({2}), randn({2}), ones({2, 1})),
                       doctest::Contains("same number of dims"), Error);
  CHECK_THROWS_WITH_AS(nn::F::triplet_margin_loss(randn({2, 3}), randn({3}), randn({2, 3})),
                       doctest::Contains("same number of dims"), Error);
}

TEST_CASE("ctc_loss: empty inputs, zero_infinity, target shapes, one unbatched sequence") {
  manual_seed(12);
  const double inf = std::numeric_limits<double>::infinity();
  Tensor lp = randn({3, 2, 3}, DType::F64).log_softmax(2);
  // No frames: 0 for an empty target, impossible (inf; 0 under zero_infinity) otherwise, and
  // the log-probabilities are not read (a -inf there gave NaN).
  Tensor lp_inf = lp.clone();
  lp_inf.select(1, 0).fill_(-inf);
  CHECK(vals(nn::F::ctc_loss(lp_inf, tensor<int64_t>({{1}, {2}}), {0, 3}, {0, 1}, 0, "none"))[0] == 0.0);
  std::vector<double> none = vals(nn::F::ctc_loss(lp, tensor<int64_t>({{1}, {2}}), {0, 3}, {1, 1}, 0, "none", true));
  CHECK(none[0] == 0.0);
  CHECK(std::isfinite(none[1]));
  CHECK(std::isinf(vals(nn::F::ctc_loss(lp, tensor<int64_t>({{1}, {2}}), {0, 3}, {1, 1}, 0, "none"))[0]));
  // With no frames at all the loss still hangs on log_probs: a zero gradient, as PyTorch.
  Tensor lp_leaf = lp.clone().requires_grad_();
  nn::F::ctc_loss(lp_leaf, tensor<int64_t>({{1}, {2}}), {0, 0}, {1, 1}, 0, "mean", true).backward();
  CHECK(lp_leaf.grad().abs().sum().item<double>() == 0.0);
  // Targets that do not fit the lengths are refused before a label is read.
  CHECK_THROWS_WITH_AS(nn::F::ctc_loss(lp, tensor<int64_t>({{1, 2}}), {3, 3}, {2, 2}),
                       doctest::Contains("fit neither"), Error);  // one row for two samples
  CHECK_THROWS_WITH_AS(nn::F::ctc_loss(lp, tensor<int64_t>({1, 2, 1}), {3, 3}, {1, 1}),
                       doctest::Contains("fit neither"), Error);  // 3 labels for lengths 1 + 1
  CHECK_THROWS_WITH_AS(nn::F::ctc_loss(lp, tensor<int64_t>({{1}, {2}}), {3, 3}, {2, 1}),
                       doctest::Contains("fit neither"), Error);  // a row shorter than its length
  CHECK_THROWS_WITH_AS(nn::F::ctc_loss(lp, tensor<double>({{1.0}, {2.0}}), {3, 3}, {1, 1}),
                       doctest::Contains("integer dtype"), Error);
  // (T, C): one sequence, as sample 1 of the batch.
  Tensor one = nn::F::ctc_loss(lp.select(1, 1), tensor<int64_t>({2}), {3}, {1}, 0, "none");
  CHECK(one.dim() == 0);
  CHECK(one.item<double>() == doctest::Approx(none[1]));
}

TEST_CASE("margin, multi-label and likelihood losses: reference values, option forms and refusals") {
  namespace F = nn::F;
  using doctest::Approx;
  // Hand-computed values (the golden fixture checks them against PyTorch too).
  Tensor x = tensor<double>({{0.2, 0.5, -0.3}, {0.9, 0.1, 0.4}});
  Tensor t = tensor<int64_t>({1, 2});
  // Sample 0: target 1 (0.5): max(0, 1 - 0.5 + 0.2) + max(0, 1 - 0.5 - 0.3) = 0.7 + 0.2; sample
  // 1: target 2 (0.4): (1 - 0.4 + 0.9) + (1 - 0.4 + 0.1) = 1.5 + 0.7; each over C = 3.
  CHECK(F::multi_margin_loss(x, t).item<double>() == Approx((0.9 + 2.2) / 3 / 2));
  CHECK(F::multi_margin_loss(x, t, 2, 1.0, {}, "sum").item<double>() ==
        Approx((0.49 + 0.04 + 2.25 + 0.49) / 3));
  // Labels {1} for sample 0 (then -1): unlisted 0 and 2 against listed 1, as above: 0.9 / 3.
  Tensor labels = tensor<int64_t>({{1, -1, 0}, {0, 2, 1}});
  CHECK(F::multilabel_margin_loss(x, labels, "none").select(0, 0).item<double>() == Approx(0.9 / 3));
  CHECK(F::multilabel_margin_loss(x, labels, "none").select(0, 1).item<double>() == 0.0);  // every class listed
  CHECK(F::soft_margin_loss(tensor<double>({100.0, -100.0}), tensor<double>({-1.0, -1.0}), "none")
            .select(0, 0)
            .item<double>() == Approx(100.0));  // log(1 + e^100), finite
  CHECK(F::hinge_embedding_loss(tensor<double>({0.3, 0.3}), tensor<double>({1.0, -1.0}), 1.0, "sum").item<double>() ==
        Approx(0.3 + 0.7));
  // Poisson with log input: exp(x) - t x; Gaussian: (log var + (x - t)^2 / var) / 2.
  CHECK(F::poisson_nll_loss(tensor<double>({0.5}), tensor<double>({2.0})).item<double>() == Approx(std::exp(0.5) - 1.0));
  CHECK(F::gaussian_nll_loss(tensor<double>({1.0}), tensor<double>({3.0}), tensor<double>({2.0})).item<double>() ==
        Approx(0.5 * (std::log(2.0) + 2.0)));

  // Gradients against finite differences in f64.
  manual_seed(17);
  Tensor s = randn({3, 4}, DType::F64).requires_grad_(), v = (rand({3, 4}, DType::F64) + 0.2).requires_grad_();
  Tensor y = randn({3, 4}, DType::F64), ls = tensor<int64_t>({{3, 0, -1, 2}, {1, -1, 2, 2}, {0, 1, 2, 3}});
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck([&](const std::vector<Tensor>& in) { return F::multilabel_margin_loss(in[0], ls); },
                                    {s}, {}, &why),
                why);
  CHECK_MESSAGE(autograd::gradcheck([&](const std::vector<Tensor>& in) {
                  return F::multi_margin_loss(in[0], tensor<int64_t>({0, 3, 1}), 2, 0.5);
                }, {s}, {}, &why),
                why);
  CHECK_MESSAGE(autograd::gradcheck([&](const std::vector<Tensor>& in) {
                  return F::gaussian_nll_loss(in[0], y, in[1], true);
                }, {s, v}, {}, &why),
                why);

  // Modules and option forms pass their options on.
  Tensor w = tensor<double>({0.5, 2.0, 1.0});
  nn::MultiMarginLoss mm(nn::MultiMarginLossOptions().p(2).margin(0.5).weight(w).reduction(ember::kSum));
  CHECK(mm(x, t).item<double>() == Approx(F::multi_margin_loss(x, t, 2, 0.5, w, "sum").item<double>()));
  CHECK(mm->named_buffers().size() == 1);
  CHECK(F::multi_margin_loss(x, t, F::MultiMarginLossFuncOptions().p(2).margin(0.5).weight(w)).item<double>() ==
        Approx(F::multi_margin_loss(x, t, 2, 0.5, w).item<double>()));
  CHECK(F::soft_margin_loss(x, x.sign(), F::SoftMarginLossFuncOptions(ember::kSum)).item<double>() ==
        Approx(F::soft_margin_loss(x, x.sign(), "sum").item<double>()));
  auto manhattan = [](const Tensor& a, const Tensor& b) { return (a - b).abs().sum({-1}); };
  nn::TripletMarginWithDistanceLoss tl(
      nn::TripletMarginWithDistanceLossOptions().distance_function(manhattan).margin(0.5).swap(true));
  Tensor a = randn({4, 3}), p = randn({4, 3}), n = randn({4, 3});
  Tensor dn = manhattan(a, n).minimum(manhattan(p, n));
  CHECK(tl(a, p, n).item<float>() == Approx((manhattan(a, p) - dn + 0.5).clamp_min(0.0).mean().item<float>()));
  CHECK(F::triplet_margin_with_distance_loss(a, p, n).item<float>() ==
        Approx(F::triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6).item<float>()));

  // Refusals name the loss and what is wrong.
  CHECK_THROWS_WITH_AS(F::multi_margin_loss(x, tensor<int64_t>({1, 3})), doctest::Contains("[multi_margin_loss] target 3 is out of range for 3 classes"), Error);
  CHECK_THROWS_WITH_AS(F::multi_margin_loss(x, t, 3), doctest::Contains("p must be 1 or 2, got 3"), Error);
  CHECK_THROWS_WITH_AS(F::multi_margin_loss(x, tensor<int64_t>({1})), doctest::Contains("needs [2] targets"), Error);
  CHECK_THROWS_WITH_AS(F::multi_margin_loss(x, t, 1, 1.0, tensor<double>({1.0, 2.0})),
                       doctest::Contains("weight must have shape [3]"), Error);
  CHECK_THROWS_WITH_AS(F::multi_margin_loss(x, t.to(DType::F32)), doctest::Contains("class indices"), Error);
  CHECK_THROWS_WITH_AS(F::multilabel_margin_loss(x, tensor<int64_t>({{1, -2, 0}, {0, 1, 2}})),
                       doctest::Contains("target -2 is out of range"), Error);
  CHECK_THROWS_WITH_AS(F::multilabel_margin_loss(x, t), doctest::Contains("target must have the input's shape"), Error);
  CHECK_THROWS_WITH_AS(F::multilabel_soft_margin_loss(x, x, tensor<double>({1.0})),
                       doctest::Contains("[multilabel_soft_margin_loss] weight must have shape [3]"), Error);
  CHECK_THROWS_WITH_AS(F::soft_margin_loss(x, x.t()), doctest::Contains("[soft_margin_loss]"), Error);
  CHECK_THROWS_WITH_AS(F::gaussian_nll_loss(x, x, -x.abs()), doctest::Contains("var has a negative entry"), Error);
  CHECK_THROWS_WITH_AS(F::gaussian_nll_loss(x, x, x.narrow(1, 0, 2).abs()),
                       doctest::Contains("var of shape [2, 2] must have the input's shape [2, 3]"), Error);
  CHECK_THROWS_WITH_AS(F::triplet_margin_with_distance_loss(a, p, n, {}, 0.0), doctest::Contains("margin must be positive"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::TripletMarginWithDistanceLoss(nn::TripletMarginWithDistanceLossOptions().margin(-1)),
                       doctest::Contains("margin must be positive"), Error);
  CHECK_THROWS_WITH_AS(F::poisson_nll_loss(x, x, true, false, 1e-8, "batchmean"), doctest::Contains("reduction"), Error);
}

TEST_CASE("AdaptiveLogSoftmaxWithLoss: forward agrees with log_prob, predict, clone and refusals") {
  manual_seed(23);
  nn::AdaptiveLogSoftmaxWithLoss m(nn::AdaptiveLogSoftmaxWithLossOptions(8, 20, {4, 9, 15}).div_value(2.0));
  CHECK(m->tail->size() == 3);
  CHECK(m->named_parameters().size() == 7);  // head and two per cluster, no biases
  Tensor x = randn({6, 8});
  Tensor t = tensor<int64_t>({0, 3, 4, 12, 19, 15});
  auto r = m(x, t);
  // forward's output is log_prob's entry at each target; the loss its negated mean.
  Tensor full = m->log_prob(x);
  CHECK(full.sizes() == Shape{6, 20});
  CHECK((full.exp().sum({1}) - 1.0).abs().amax().item<float>() < 1e-5f);  // each row a distribution
  Tensor picked = full.gather(1, t.unsqueeze(1)).squeeze(1);
  CHECK((r.output - picked).abs().amax().item<float>() < 1e-5f);
  CHECK(r.loss.item<float>() == doctest::Approx(-picked.mean().item<float>()));
  CHECK((m->predict(x) - full.argmax(1)).abs().sum().item<int64_t>() == 0);
  // Gradients reach the head and only the clusters that some target falls in.
  nn::AdaptiveLogSoftmaxWithLoss m2(nn::AdaptiveLogSoftmaxWithLossOptions(8, 20, {4, 9, 15}));
  m2(x.narrow(0, 0, 3), tensor<int64_t>({1, 2, 16})).loss.backward();
  CHECK(m2->head->weight.grad().defined());
  CHECK(!m2->named_parameters()["tail.0.0.weight"].grad().defined());
  CHECK(m2->named_parameters()["tail.2.1.weight"].grad().defined());
  // A deep clone predicts alike and owns its parameters.
  auto copy = std::dynamic_pointer_cast<nn::AdaptiveLogSoftmaxWithLossImpl>(m->clone());
  REQUIRE(copy);
  CHECK((copy->log_prob(x) - full).abs().amax().item<float>() == 0.0f);
  CHECK(copy->head->weight.data_ptr<float>() != m->head->weight.data_ptr<float>());
  // Zero-width projections (in_features / div_value^k < 1) build, as PyTorch's.
  nn::AdaptiveLogSoftmaxWithLoss narrow(nn::AdaptiveLogSoftmaxWithLossOptions(4, 10, {2, 5, 8}));
  CHECK(narrow->log_prob(randn({2, 4})).sizes() == Shape{2, 10});
  CHECK(nn::Linear(0, 3)(zeros({2, 0})).sizes() == Shape{2, 3});

  using AO = nn::AdaptiveLogSoftmaxWithLossOptions;
  CHECK_THROWS_WITH_AS(nn::AdaptiveLogSoftmaxWithLoss(AO(8, 10, {5, 3})), doctest::Contains("got [5, 3]"), Error);
  CHECK_THROWS_WITH_AS(nn::AdaptiveLogSoftmaxWithLoss(AO(8, 10, {3, 10})), doctest::Contains("[1, n_classes - 1 = 9]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::AdaptiveLogSoftmaxWithLoss(AO(8, 10, {})), doctest::Contains("cutoffs must be"), Error);
  CHECK_THROWS_WITH_AS(m(x, tensor<int64_t>({0, 1, 2, 3, 4, 20})), doctest::Contains("target 20 is out of range for 20"),
                       Error);
  CHECK_THROWS_WITH_AS(m(x, t.narrow(0, 0, 5)), doctest::Contains("expects input (N, 8) with target (N)"), Error);
  CHECK_THROWS_WITH_AS(m(x, t.to(DType::F32)), doctest::Contains("class indices"), Error);
  CHECK_THROWS_WITH_AS(m(x.select(0, 0), t), doctest::Contains("got input [8] and target [6]"), Error);
  CHECK_THROWS_WITH_AS(m->log_prob(x.select(0, 0)), doctest::Contains("log_prob expects input (N, 8)"), Error);
}

TEST_CASE("second derivatives of the losses libtorch cannot differentiate twice, and of BCE at p = 0 and 1") {
  // libtorch has no double backward for ctc_loss, multi_margin_loss and multilabel_margin_loss
  // (ember-vs-libtorch cannot compare them): finite differences judge Ember's.
  manual_seed(23);
  std::string why;
  Tensor s = randn({3, 4}, DType::F64).requires_grad_();
  CHECK_MESSAGE(autograd::gradgradcheck([&](const std::vector<Tensor>& in) {
                  return nn::F::multi_margin_loss(in[0], tensor<int64_t>({0, 3, 1}), 2, 0.5);
                }, {s}, {}, &why),
                why);
  Tensor ls = tensor<int64_t>({{3, 0, -1, 2}, {1, -1, 2, 2}, {0, 1, 2, 3}});
  CHECK_MESSAGE(autograd::gradgradcheck([&](const std::vector<Tensor>& in) { return nn::F::multilabel_margin_loss(in[0], ls); },
                                        {s}, {}, &why),
                why);
  Tensor logits = randn({5, 2, 4}, DType::F64).requires_grad_();
  Tensor tg = tensor<int64_t>({{1, 2}, {3, 3}});
  CHECK_MESSAGE(autograd::gradgradcheck([&](const std::vector<Tensor>& in) {
                  return nn::F::ctc_loss(in[0].log_softmax(2), tg, {5, 4}, {2, 2});
                }, {logits}, {}, &why),
                why);
  // BCE's first derivatives are finite at p = 0 and 1 (its logs are clamped at -100); so are
  // the second ones: the clamped logs must not divide a zero gradient by p = 0 (0 / 0).
  Tensor p = tensor<double>({0, 1, 0.3}).requires_grad_(), y = tensor<double>({0.25, 0.5, 0.7}).requires_grad_();
  std::vector<Tensor> g = autograd::grad({nn::F::binary_cross_entropy(p, y, {}, "sum")}, {p, y}, {}, true, true);
  std::vector<Tensor> h = autograd::grad({(g[0] * tensor<double>({1, 2, 3})).sum() + (g[1] * tensor<double>({-1, 1, 2})).sum()},
                                         {p, y});
  CHECK(h[0].isfinite().all().item<bool>());
  CHECK(h[1].isfinite().all().item<bool>());
  // Inside (0, 1): d/dp (p - y) / (p (1 - p)) = (p^2 - 2py + y) / (p (1 - p))^2 and
  // d/dy (log(1 - p) - log(p)) = 0, d/dp of it -1 / (p (1 - p)), d/dy of g_p -1 / (p (1 - p)).
  const double pv = 0.3, yv = 0.7, q = pv * (1 - pv);
  CHECK(vals(h[0])[2] == doctest::Approx(3 * (pv * pv - 2 * pv * yv + yv) / (q * q) + 2 * (-1 / q)).epsilon(1e-12));
  CHECK(vals(h[1])[2] == doctest::Approx(3 * (-1 / q)).epsilon(1e-12));
}

}  // namespace test_losses
