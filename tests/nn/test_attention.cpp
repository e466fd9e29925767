// The fused scaled dot-product attention (ops::Attention, on the CPU) against the composite
// formula written with separate ops: outputs and gradients for every mask kind and layout,
// finite differences in f64, second derivatives, multi-head self-attention's packed path,
// thread-count independence and errors.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include "../helping_queue.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace test_attention {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

double max_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().amax().item<double>(); }

/// softmax(q k^T * scale + mask) v with separate ops; mask additive, or causal.
Tensor composite(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal) {
  Tensor s = q.matmul(k.mT()) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (mask.defined()) s = s + mask;
  if (causal) {
    Tensor allowed = tril(ones({s.size(-2), s.size(-1)}, DType::Bool));
    s = where(allowed, s, -std::numeric_limits<double>::infinity());
  }
  return s.softmax(-1).matmul(v);
}

struct Grads {
  Tensor out, dq, dk, dv;
};

/// Output and input gradients for upstream gradient g, through `f`.
template <class F>
Grads run(F f, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g) {
  Tensor q1 = q.detach().requires_grad_(), k1 = k.detach().requires_grad_(), v1 = v.detach().requires_grad_();
  Tensor out = f(q1, k1, v1);
  out.backward(g);
  return {out.detach(), q1.grad(), k1.grad(), v1.grad()};
}

void check_close(const Grads& a, const Grads& b, double tol) {
  CHECK(max_diff(a.out, b.out) < tol);
  CHECK(max_diff(a.dq, b.dq) < tol);
  CHECK(max_diff(a.dk, b.dk) < tol);
  CHECK(max_diff(a.dv, b.dv) < tol);
}

}  // namespace

TEST_CASE("fused attention equals the composite formula: masks, layouts, dtypes") {
  manual_seed(41);
  const double inf = std::numeric_limits<double>::infinity();
  for (DType t : {DType::F64, DType::F32}) {
    const double tol = t == DType::F64 ? 1e-12 : 2e-5;
    // (B, H, L, E) with L != S and Dv != E; q a permuted view (strided rows and heads).
    Tensor q = randn({2, 5, 3, 4}).to(t).permute({0, 2, 1, 3}), k = randn({2, 3, 7, 4}).to(t),
           v = randn({2, 3, 7, 6}).to(t);
    Tensor g = randn({2, 3, 5, 6}).to(t);
    INFO("dtype ", t);
    auto plain = [&](const Tensor& mask, bool causal) {
      return [=](const Tensor& a, const Tensor& b, const Tensor& c) {
        return nn::F::scaled_dot_product_attention(a, b, c, mask, 0.0, causal);
      };
    };
    auto ref = [&](const Tensor& mask, bool causal) {
      return [=](const Tensor& a, const Tensor& b, const Tensor& c) { return composite(a, b, c, mask, causal); };
    };
    SUBCASE("no mask") { check_close(run(plain({}, false), q, k, v, g), run(ref({}, false), q, k, v, g), tol); }
    SUBCASE("causal, more keys than queries") {
      check_close(run(plain({}, true), q, k, v, g), run(ref({}, true), q, k, v, g), tol);
    }
    SUBCASE("additive mask broadcast from (L, S)") {
      Tensor mask = randn({5, 7}).to(t);
      check_close(run(plain(mask, false), q, k, v, g), run(ref(mask, false), q, k, v, g), tol);
    }
    SUBCASE("boolean mask (true = may attend), per batch entry") {
      Tensor allowed = rand({2, 1, 5, 7}) > 0.3;
      allowed.select(3, 0).fill_(true);  // every query keeps a key
      Tensor additive = where(allowed, 0.0, full({}, -inf, t));
      check_close(run(plain(allowed, false), q, k, v, g), run(ref(additive, false), q, k, v, g), tol);
    }
    SUBCASE("3-d inputs fold their batch") {
      Tensor q3 = randn({4, 5, 8}).to(t), k3 = randn({4, 6, 8}).to(t), v3 = randn({4, 6, 2}).to(t);
      Tensor g3 = randn({4, 5, 2}).to(t);
      check_close(run(plain({}, false), q3, k3, v3, g3), run(ref({}, false), q3, k3, v3, g3), tol);
    }
  }
}

TEST_CASE("fused attention: finite differences in f64 and second derivatives") {
  manual_seed(42);
  std::string why;
  Tensor mask = randn({3, 4}, DType::F64);
  for (bool causal : {false, true}) {
    INFO("causal ", causal);
    auto f = [&](const std::vector<Tensor>& in) {
      return nn::F::scaled_dot_product_attention(in[0], in[1], in[2], causal ? Tensor() : mask, 0.0, causal);
    };
    std::vector<Tensor> in = {randn({2, 2, 3, 4}, DType::F64).requires_grad_(),
                              randn({2, 2, 4, 4}, DType::F64).requires_grad_(),
                              randn({2, 2, 4, 3}, DType::F64).requires_grad_()};
    CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, in, {}, &why), why);
    CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, in, {}, &why), why);
  }
}

TEST_CASE("multi-head self-attention's packed path equals the per-head composite path") {
  manual_seed(43);
  for (DType t : {DType::F64, DType::F32}) {
    const double tol = t == DType::F64 ? 1e-12 : 2e-5;
    INFO("dtype ", t);
    nn::MultiheadAttention mha(8, 2);
    mha->to(t);
    const int64_t l = 5, n = 3;
    Tensor kpm = zeros({n, l}, DType::Bool);
    kpm.select(1, 4).fill_(true);
    Tensor attn = randn({l, l}).to(t);
    struct Case {
      Tensor kpm, attn;
      bool causal;
    };
    for (const Case& c : {Case{{}, {}, false}, Case{{}, {}, true}, Case{kpm, {}, true}, Case{{}, attn, false}}) {
      INFO("padding ", c.kpm.defined(), " attn_mask ", c.attn.defined(), " causal ", c.causal);
      Tensor x = randn({l, n, 8}).to(t);
      Tensor g = randn({l, n, 8}).to(t);
      // need_weights with grad recording takes the composite path; without, the fused one.
      auto pass = [&](bool need_weights) {
        mha->zero_grad();
        Tensor x1 = x.detach().requires_grad_();
        Tensor out = mha(x1, x1, x1, c.kpm, need_weights, c.attn, true, c.causal).first;
        out.backward(g);
        return std::vector<Tensor>{out.detach(), x1.grad(), mha->in_proj_weight.grad().clone(),
                                   mha->in_proj_bias.grad().clone(), mha->out_proj->weight.grad().clone()};
      };
      std::vector<Tensor> fused = pass(false), comp = pass(true);
      for (size_t i = 0; i < fused.size(); ++i) CHECK(max_diff(fused[i], comp[i]) < tol);
      // Weights from the fused path (no grad) equal the composite path's.
      autograd::NoGradGuard ng;
      Tensor w_fused = mha(x, x, x, c.kpm, true, c.attn, true, c.causal).second;
      autograd::GradMode::set_enabled(true);
      Tensor xg = x.detach().requires_grad_();
      Tensor w_comp = mha(xg, xg, xg, c.kpm, true, c.attn, true, c.causal).second;
      autograd::GradMode::set_enabled(false);
      CHECK(max_diff(w_fused, w_comp.detach()) < tol);
    }
  }
}

TEST_CASE("fused attention: results do not depend on the thread count; errors name the op") {
  manual_seed(44);
  Tensor q = randn({8, 4, 16, 8}), k = randn({8, 4, 16, 8}), v = randn({8, 4, 16, 8});
  set_num_threads(1);
  Tensor one = nn::F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  set_num_threads(2);
  Tensor two = nn::F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  set_num_threads(1);
  CHECK(max_diff(one, two) == 0.0);

  // The op itself checks what reaches it.
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::Attention{1.0, false, 0}, q.impl(), &k.impl(),
                                               &randn({8, 4, 15, 8}).impl(), nullptr),
                       doctest::Contains("scaled_dot_product_attention"), Error);
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::Attention{1.0, false, 3}, randn({4, 2, 12}).impl(), nullptr,
                                               nullptr, nullptr),
                       doctest::Contains("not (L, N, 3 * E)"), Error);
  Tensor bad_mask = randn({8, 4, 16, 15});
  CHECK_THROWS_WITH_AS(
      dispatch<DefaultPolicy>(ops::Attention{1.0, false, 0}, q.impl(), &k.impl(), &v.impl(), &bad_mask.impl()),
      doctest::Contains("additive mask"), Error);
  Tensor qi = randint(0, 3, {2, 1, 3, 4});
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::Attention{1.0, false, 0}, qi.impl(), &qi.impl(), &qi.impl(),
                                               nullptr),
                       doctest::Contains("float32 or float64"), Error);
  // A mask with more dims than q broadcasts the result (composite path), as in PyTorch.
  Tensor q3 = randn({4, 16, 8}), wide_mask = randn({2, 4, 16, 16});
  CHECK(nn::F::scaled_dot_product_attention(q3, q3, q3, wide_mask).sizes() == Shape{2, 4, 16, 8});
  // A mask that requires grad takes the composite path, and gets its gradient.
  Tensor m = randn({16, 16}).requires_grad_();
  nn::F::scaled_dot_product_attention(q, k, v, m).sum().backward();
  CHECK(m.grad().defined());
}

TEST_CASE("fused attention: expanded gradients, broadcast and dtype-promoting masks, empty inputs") {
  manual_seed(45);
  auto comp = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
    return composite(q, k, v, mask, false);
  };
  // An upstream gradient with stride 0 along L (a sum's backward) in f64, where the GEMM reads
  // matrices as rows a stride apart: it is made contiguous first.
  Tensor q = randn({2, 3, 5, 4}, DType::F64), k = randn({2, 3, 6, 4}, DType::F64), v = randn({2, 3, 6, 2}, DType::F64);
  auto summed = [](const Tensor& o) { return o.sum(Shape{2}).sum(); };
  Tensor q1 = q.detach().requires_grad_(), k1 = k.detach().requires_grad_(), v1 = v.detach().requires_grad_();
  summed(nn::F::scaled_dot_product_attention(q1, k1, v1)).backward();
  Tensor q2 = q.detach().requires_grad_(), k2 = k.detach().requires_grad_(), v2 = v.detach().requires_grad_();
  summed(comp(q2, k2, v2, {})).backward();
  CHECK(max_diff(q1.grad(), q2.grad()) < 1e-12);
  CHECK(max_diff(k1.grad(), k2.grad()) < 1e-12);
  CHECK(max_diff(v1.grad(), v2.grad()) < 1e-12);
  // The backward op itself, handed a stride-0 gradient, equals it handed a contiguous copy.
  {
    autograd::NoGradGuard ng;
    auto fwd = dispatch<DefaultPolicy>(ops::Attention{0.5, false, 0}, q.impl(), &k.impl(), &v.impl(), nullptr);
    Tensor g_exp = randn({2, 3, 1, 2}, DType::F64).expand({2, 3, 5, 2}), g_cont = g_exp.contiguous();
    auto ge = dispatch<DefaultPolicy>(ops::AttentionBackward{0.5, 0, true, true, true}, g_exp.impl(), q.impl(),
                                      &k.impl(), &v.impl(), *fwd.probs);
    auto gc = dispatch<DefaultPolicy>(ops::AttentionBackward{0.5, 0, true, true, true}, g_cont.impl(), q.impl(),
                                      &k.impl(), &v.impl(), *fwd.probs);
    CHECK(max_diff(Tensor::wrap(std::move(ge.dq)), Tensor::wrap(std::move(gc.dq))) == 0.0);
    CHECK(max_diff(Tensor::wrap(std::move(ge.dv)), Tensor::wrap(std::move(gc.dv))) == 0.0);
    // And a key broadcast along S in the forward.
    Tensor k_exp = randn({2, 3, 1, 4}, DType::F64).expand({2, 3, 6, 4});
    auto fe = dispatch<DefaultPolicy>(ops::Attention{0.5, false, 0}, q.impl(), &k_exp.impl(), &v.impl(), nullptr);
    Tensor k_cont = k_exp.contiguous();
    auto fc = dispatch<DefaultPolicy>(ops::Attention{0.5, false, 0}, q.impl(), &k_cont.impl(), &v.impl(), nullptr);
    CHECK(max_diff(Tensor::wrap(std::move(fe.out)), Tensor::wrap(std::move(fc.out))) == 0.0);
  }
  // A mask that enlarges the result's batch: the composite form's shape. A float mask of
  // another dtype is refused (as PyTorch does).
  Tensor q3 = randn({1, 3, 5, 4}), kv = randn({1, 3, 6, 4});
  Tensor wide = randn({2, 1, 5, 6});
  Tensor a = nn::F::scaled_dot_product_attention(q3, kv, kv, wide);
  CHECK(a.sizes() == Shape{2, 3, 5, 4});
  CHECK(max_diff(a, comp(q3, kv, kv, wide)) < 1e-5);
  Tensor m64 = randn({5, 6}, DType::F64);
  CHECK_THROWS_WITH_AS(nn::F::scaled_dot_product_attention(q3, kv, kv, m64),
                       doctest::Contains("attn_mask must be bool or the query's dtype"), Error);
  // Empty query, key and feature dims.
  CHECK(nn::F::scaled_dot_product_attention(randn({2, 0, 4}), randn({2, 3, 4}), randn({2, 3, 5})).sizes() ==
        Shape{2, 0, 5});
  Tensor no_keys = nn::F::scaled_dot_product_attention(randn({2, 3, 4}), randn({2, 0, 4}), randn({2, 0, 5}));
  CHECK(no_keys.sizes() == Shape{2, 3, 5});
  CHECK(nn::F::scaled_dot_product_attention(randn({0, 3, 4}), randn({0, 3, 4}), randn({0, 3, 5})).sizes() ==
        Shape{0, 3, 5});
}

TEST_CASE("multi-head attention's weights stay differentiable and private") {
  manual_seed(46);
  nn::MultiheadAttention mha(8, 2);
  Tensor x = randn({5, 3, 8});
  // Only the bias trains: the weights depend on it, so they must carry its gradient.
  mha->in_proj_weight.requires_grad_(false);
  mha->out_proj->weight.requires_grad_(false);
  mha->out_proj->bias.requires_grad_(false);
  auto [out, w] = mha(x, x, x, Tensor(), true);
  CHECK(w.requires_grad());
  w.sum().backward();
  CHECK(mha->in_proj_bias.grad().defined());
  // Unaveraged weights without grad are a copy: changing them leaves a later backward intact.
  mha->in_proj_weight.requires_grad_(true);
  autograd::NoGradGuard ng;
  auto [o2, w2] = mha(x, x, x, Tensor(), true, Tensor(), false);
  CHECK(w2.sizes() == Shape{3, 2, 5, 5});
}

TEST_CASE("attention: a query with every key masked gets zeros, and no NaN reaches a gradient") {
  manual_seed(30);
  // Row 1 of the mask lets nothing through (bool: true = may attend).
  Tensor allowed = tensor<int64_t>({{1, 1, 0, 1}, {0, 0, 0, 0}, {1, 0, 1, 1}}).to(DType::Bool);
  for (DType dt : {DType::F32, DType::F64}) {
    for (bool broadcast_k : {false, true}) {  // k, v over fewer batch entries: the composite path
      CAPTURE(dt);
      CAPTURE(broadcast_k);
      Tensor q = randn({2, 1, 3, 4}, dt).requires_grad_();
      Tensor k = randn({broadcast_k ? 1 : 2, 1, 4, 4}, dt).requires_grad_();
      Tensor v = randn({broadcast_k ? 1 : 2, 1, 4, 4}, dt).requires_grad_();
      Tensor out = nn::F::scaled_dot_product_attention(q, k, v, allowed);
      CHECK(out.select(2, 1).abs().amax().item<double>() == 0.0);
      // The live rows are as without the dead one.
      Tensor live = nn::F::scaled_dot_product_attention(q.index({Slice(), Slice(), Slice(0, 1)}), k, v,
                                                        allowed.narrow(0, 0, 1));
      CHECK(max_diff(out.select(2, 0), live.select(2, 0)) < 1e-6);
      out.select(2, 0).sum().backward();
      for (const Tensor& g : {q.grad(), k.grad(), v.grad()}) CHECK(g.isfinite().all().item<bool>());
    }
  }
  // Second derivatives through the fused op (the recorded formula) stay finite too.
  Tensor q = randn({1, 1, 3, 4}, DType::F64).requires_grad_(), k = randn({1, 1, 4, 4}, DType::F64).requires_grad_();
  Tensor v = randn({1, 1, 4, 4}, DType::F64);
  Tensor out = nn::F::scaled_dot_product_attention(q, k, v, allowed);
  Tensor gq = autograd::grad<DefaultPolicy>({out.square().sum()}, {q}, {}, true, true)[0];
  gq.sum().backward();
  CHECK(k.grad().isfinite().all().item<bool>());

  // MultiheadAttention with a padding mask that hides every key of batch entry 1: its output
  // is the output projection's bias, the weights 0, and entry 0's loss has finite gradients.
  nn::MultiheadAttention mha(4, 2);
  Tensor x = randn({3, 2, 4});  // (L, N, E)
  Tensor pad = tensor<int64_t>({{0, 0, 1}, {1, 1, 1}}).to(DType::Bool);
  for (bool need_weights : {false, true}) {
    CAPTURE(need_weights);
    mha->zero_grad();
    auto [o, w] = mha(x, x, x, pad, need_weights);
    CHECK(max_diff(o.select(1, 1), mha->out_proj->bias.expand({3, 4})) < 1e-6);
    if (need_weights) CHECK(w.select(0, 1).abs().amax().item<double>() == 0.0);
    o.select(1, 0).sum().backward();
    CHECK(mha->in_proj_weight.grad().isfinite().all().item<bool>());
  }
}

TEST_CASE("MultiheadAttention: PyTorch's mask shapes and dtypes; weights after dropout") {
  manual_seed(31);
  nn::MultiheadAttention mha(4, 2);
  Tensor x = randn({3, 2, 4});  // L = S = 3, N = 2
  auto fails = [&](const Tensor& attn_mask, const Tensor& kpm, const char* what) {
    CHECK_THROWS_WITH_AS(mha(x, x, x, kpm, false, attn_mask), doctest::Contains(what), Error);
  };
  const Tensor none;
  fails(zeros({1, 3}), none, "neither (3, 3) nor (4, 3, 3)");
  fails(zeros({3, 1}), none, "neither (3, 3) nor (4, 3, 3)");
  fails(zeros({2, 2, 3, 3}), none, "neither (3, 3) nor (4, 3, 3)");
  fails(zeros({3, 3}, DType::I32), none, "attn_mask must be bool or floating");
  fails(none, zeros({2, 3}, DType::I64), "key_padding_mask must be bool or floating");
  CHECK(mha(x, x, x, none, false, zeros({4, 3, 3})).first.sizes() == Shape({3, 2, 4}));

  // Training with dropout: the weights returned are the ones the output used (PyTorch
  // returns them after dropout), so some are exactly 0.
  nn::MultiheadAttention drop(nn::MultiheadAttentionOptions(4, 1).dropout(0.5));
  drop->train();
  Tensor y = randn({8, 1, 4});
  auto [o, w] = drop(y, y, y, Tensor(), true, Tensor(), false);
  CHECK(w.eq(0.0).any().item<bool>());
  // out = out_proj((w @ v_proj)), with v_proj the value third of the packed projection.
  Tensor vp = nn::F::linear(y, drop->in_proj_weight.narrow(0, 8, 4), drop->in_proj_bias.narrow(0, 8, 4));
  Tensor ctx = w.squeeze(0).squeeze(0).matmul(vp.squeeze(1)).unsqueeze(1);
  CHECK(max_diff(o, drop->out_proj(ctx)) < 1e-5);
}

TEST_CASE("RNN cells: unknown nonlinearity and states of another batch are errors") {
  CHECK_THROWS_WITH_AS(nn::RNNCell(3, 4, true, "sigmoid"), doctest::Contains("unknown nonlinearity 'sigmoid'"), Error);
  nn::RNNCell rnn(3, 4);
  CHECK_THROWS_WITH_AS(rnn(randn({2, 3}), zeros({1, 4})), doctest::Contains("[RNNCell] a state of shape [1, 4]"), Error);
  nn::LSTMCell lstm(3, 4);
  CHECK_THROWS_WITH_AS(lstm(randn({2, 3}), std::make_pair(zeros({2, 4}), zeros({2, 5}))),
                       doctest::Contains("[LSTMCell]"), Error);
  nn::GRUCell gru(3, 4);
  CHECK(gru(randn({3}), zeros({4})).sizes() == Shape({4}));  // unbatched
}

TEST_CASE("MultiheadAttention with kdim and vdim: PyTorch's parameters and the per-head formula") {
  manual_seed(32);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(6, 2).kdim(5).vdim(3));
  std::vector<std::string> names;
  for (const auto& [name, p] : mha->named_parameters()) names.push_back(name + std::string(" ") + fmt::format("{}", p.sizes()));
  CHECK(names == std::vector<std::string>{"q_proj_weight [6, 6]", "k_proj_weight [6, 5]", "v_proj_weight [6, 3]",
                                          "in_proj_bias [18]", "out_proj.weight [6, 6]", "out_proj.bias [6]"});
  nn::init::normal_(mha->in_proj_bias);
  Tensor q = randn({4, 2, 6}), k = randn({7, 2, 5}), v = randn({7, 2, 3});
  Tensor pad = tensor<int64_t>({{0, 0, 0, 0, 0, 1, 1}, {0, 0, 0, 0, 0, 0, 0}}).to(DType::Bool);
  auto [out, w] = mha(q, k, v, pad, true, Tensor(), false);
  // By hand: project, split into 2 heads of 3, attend, merge, out_proj.
  auto heads = [&](const Tensor& x, const Tensor& wt, int64_t i) {
    Tensor y = nn::F::linear(x, wt, mha->in_proj_bias.narrow(0, i * 6, 6));  // (T, N, 6)
    return y.reshape({x.size(0), 2, 2, 3}).permute({1, 2, 0, 3});          // (N, heads, T, 3)
  };
  Tensor qh = heads(q, mha->q_proj_weight, 0), kh = heads(k, mha->k_proj_weight, 1), vh = heads(v, mha->v_proj_weight, 2);
  Tensor s = qh.matmul(kh.mT()) / std::sqrt(3.0);
  s = s + zeros({2, 7}).masked_fill(pad, -std::numeric_limits<double>::infinity()).reshape({2, 1, 1, 7});
  Tensor p = s.softmax(-1);
  Tensor ctx = p.matmul(vh).permute({2, 0, 1, 3}).reshape({4, 2, 6});
  CHECK(max_diff(out, mha->out_proj(ctx)) < 1e-5);
  CHECK(max_diff(w, p) < 1e-6);
  out.sum().backward();
  CHECK(mha->k_proj_weight.grad().sizes() == Shape({6, 5}));
  // Keys of the wrong width name both dims.
  CHECK_THROWS_WITH_AS(mha(q, randn({7, 2, 6}), v), doctest::Contains("key (S, N, 5)"), Error);
}

TEST_CASE("MultiheadAttention add_bias_kv and add_zero_attn: appended keys, masks padded, clones") {
  manual_seed(34);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(4, 2).add_bias_kv(true).add_zero_attn(true));
  std::vector<std::string> names;
  for (const auto& [name, p] : mha->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                          "out_proj.bias"});
  CHECK(mha->bias_k.sizes() == Shape({1, 1, 4}));
  Tensor x = randn({3, 2, 4});
  // Every real key of batch entry 1 masked: the appended keys still take its weight.
  Tensor pad = tensor<int64_t>({{0, 0, 1}, {1, 1, 1}}).to(DType::Bool);
  auto [out, w] = mha(x, x, x, pad, true, Tensor(), false);
  CHECK(w.sizes() == Shape({2, 2, 3, 5}));  // 3 keys, bias_k, the zero key
  CHECK(!out.isnan().any().item<bool>());
  CHECK(max_diff(w.sum(-1), ones({2, 2, 3})) < 1e-6);
  CHECK(w.select(0, 1).narrow(-1, 0, 3).abs().amax().item<double>() == 0.0);
  CHECK(w.select(0, 0).select(-1, 2).abs().amax().item<double>() == 0.0);
  // By hand for batch entry 1: only bias_k (score q . bias_k) and the zero key (score 0); the
  // output is out_proj of (p_bias * bias_v) per head.
  Tensor q1 = nn::F::linear(x.select(1, 1), mha->in_proj_weight.narrow(0, 0, 4), mha->in_proj_bias.narrow(0, 0, 4));
  Tensor qh = q1.reshape({3, 2, 2}).permute({1, 0, 2});                        // (heads, L, 2)
  Tensor kb = mha->bias_k.reshape({2, 1, 2});  // per head; appended after the projections
  Tensor sb = qh.matmul(kb.mT()).squeeze(-1) / std::sqrt(2.0);                 // (heads, L)
  Tensor pb = sb.sigmoid();  // softmax over {sb, 0}
  CHECK(max_diff(w.select(0, 1).select(-1, 3), pb) < 1e-6);
  Tensor ctx = (pb.unsqueeze(-1) * mha->bias_v.reshape({2, 1, 2})).permute({1, 0, 2}).reshape({3, 4});
  CHECK(max_diff(out.select(1, 1), mha->out_proj(ctx)) < 1e-5);
  // A deep clone has its own bias_k with the same values, and the same outputs.
  auto copy = std::dynamic_pointer_cast<nn::MultiheadAttentionImpl>(mha->clone());
  REQUIRE(copy);
  CHECK(copy->bias_k.data_ptr() != mha->bias_k.data_ptr());
  CHECK(max_diff(copy->forward(x, x, x, pad).first, mha(x, x, x, pad).first) == 0.0);
  // The gradients reach bias_k and bias_v.
  out.square().sum().backward();
  CHECK(mha->bias_k.grad().abs().sum().item<double>() > 0);
  CHECK(mha->bias_v.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("scaled_dot_product_attention enable_gqa: grouped key/value heads equal repeated ones") {
  manual_seed(35);
  // 6 query heads over 2 key/value heads: query heads 0-2 read head 0, 3-5 head 1.
  Tensor q = randn({2, 6, 4, 3}, DType::F64), k = randn({2, 2, 5, 3}, DType::F64), v = randn({2, 2, 5, 4}, DType::F64);
  Tensor kr = k.repeat_interleave(3, 1), vr = v.repeat_interleave(3, 1);
  Tensor bool_mask = randn({4, 5}).gt(-0.5);
  bool_mask.select(1, 0).fill_(1.0);  // no fully masked row
  for (int kind = 0; kind < 3; ++kind) {
    CAPTURE(kind);
    const Tensor mask = kind == 1 ? bool_mask : Tensor();
    const bool causal = kind == 2;
    Tensor got = nn::F::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, {}, true, true);
    CHECK(got.sizes() == Shape({2, 6, 4, 4}));
    CHECK(max_diff(got, nn::F::scaled_dot_product_attention(q, kr, vr, mask, 0.0, causal)) < 1e-12);
    // Head by head, with the key/value head each reads.
    for (int64_t h = 0; h < 6; ++h)
      CHECK(max_diff(got.select(1, h), nn::F::scaled_dot_product_attention(q.select(1, h), k.select(1, h / 3),
                                                                           v.select(1, h / 3), mask, 0.0, causal)) <
            1e-12);
  }
  // Key and value head counts may differ (each dividing the query's), and the leading dims
  // broadcast as without enable_gqa.
  Tensor v3 = randn({2, 3, 5, 4}, DType::F64);
  Tensor mixed = nn::F::scaled_dot_product_attention(q, k, v3, {}, 0.0, false, {}, true, true);
  CHECK(max_diff(mixed, nn::F::scaled_dot_product_attention(q, kr, v3.repeat_interleave(2, 1))) < 1e-12);
  Tensor q1 = q.narrow(0, 0, 1);
  CHECK(max_diff(nn::F::scaled_dot_product_attention(q1, k, v, {}, 0.0, false, {}, true, true),
                 nn::F::scaled_dot_product_attention(q1, kr, vr)) < 1e-12);
  // Head 4 by hand: it reads key/value head 1.
  Tensor p = (q.select(1, 4).matmul(k.select(1, 1).mT()) / std::sqrt(3.0)).softmax(-1);
  CHECK(max_diff(nn::F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, {}, true, true).select(1, 4),
                 p.matmul(v.select(1, 1))) < 1e-12);
  // Gradients through both paths (the grouped reshape and the repeated heads).
  std::string why;
  for (bool causal : {false, true}) {
    auto f = [&](const std::vector<Tensor>& in) {
      return nn::F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, causal, {}, true, true);
    };
    CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, {randn({1, 4, 3, 2}, DType::F64).requires_grad_(),
                                                         randn({1, 2, 3, 2}, DType::F64).requires_grad_(),
                                                         randn({1, 2, 3, 2}, DType::F64).requires_grad_()},
                                                     {}, &why),
                  why);
  }
  CHECK_THROWS_WITH_AS(nn::F::scaled_dot_product_attention(q, randn({2, 4, 5, 3}, DType::F64), randn({2, 4, 5, 4}, DType::F64),
                                                           {}, 0.0, false, {}, true, true),
                       doctest::Contains("must divide the query's 6"), Error);
  CHECK_THROWS_WITH_AS(nn::F::scaled_dot_product_attention(q, k, randn({2, 4, 5, 4}, DType::F64), {}, 0.0, false, {}, true, true),
                       doctest::Contains("must divide the query's 6"), Error);
}

TEST_CASE("fused attention: fully masked rows stay zero under an executor that interleaves tasks") {
  autograd::NoGradGuard ng;
  manual_seed(33);
  // Long rows, so that the softmax inside one batch entry's task hands work to the executor.
  Tensor q = randn({2, 1, 8192, 4}), k = randn({2, 1, 4, 4}), v = randn({2, 1, 4, 4});
  Tensor allowed = ones({2, 1, 8192, 4}).to(DType::Bool);
  allowed.select(0, 0).select(0, 0).select(0, 5).fill_(0.0);
  Tensor expected = nn::F::scaled_dot_product_attention(q, k, v, allowed);
  test::HelpingQueue helper;
  set_executor(Executor{&helper, &test::HelpingQueue::run, 2});
  Tensor got = nn::F::scaled_dot_product_attention(q, k, v, allowed);
  set_executor(Executor{});
  CHECK(!got.isnan().any().item<bool>());
  CHECK(max_diff(got, expected) == 0.0);
}

TEST_CASE("fused attention: the per-head f32 kernel equals the general path bit for bit") {
  // kernels_cpu/attention_heads.cpp (AVX2 and AVX-512 builds; head dims a multiple of the
  // vector width, every dim <= 512) runs the same fma chains and softmax kernels as the
  // general path (Attention::fused = false), so outputs, probabilities and gradients are equal,
  // at any thread count. Shapes: odd L and S (partial row panels, partial vectors of keys),
  // narrow and wide head dims, causal, packed, and strided q/k/v.
  manual_seed(46);
  auto same = [](const ops::TensorRef& a, const ops::TensorRef& b) {
    if (!a || !b) return !a && !b;
    return Tensor::wrap(a).sizes() == Tensor::wrap(b).sizes() && max_diff(Tensor::wrap(a), Tensor::wrap(b)) == 0.0;
  };
  struct Case {
    int64_t b, h, l, s, d, dv;
    bool causal, packed;
  };
  const Case cases[] = {{3, 4, 64, 64, 32, 32, false, true}, {2, 3, 13, 37, 16, 32, false, false},
                        {1, 1, 7, 5, 32, 16, true, false},   {2, 2, 64, 64, 32, 32, true, true},
                        {2, 2, 100, 70, 48, 64, false, false}, {2, 2, 9, 9, 8, 8, false, true},
                        {1, 2, 19, 130, 80, 16, true, false}, {2, 2, 1, 33, 32, 32, false, false},
                        {2, 2, 5, 1, 32, 32, false, false}};  // one query, one key: the general path
  for (const Case& c : cases) {
    CAPTURE(c.l);
    CAPTURE(c.s);
    CAPTURE(c.d);
    const double scale = 0.3;
    // Separate inputs as strided views: q is a slice of a wider tensor, k and v transposed.
    Tensor q = randn({c.b, c.h, c.l, c.d + 3}).narrow(3, 1, c.d);
    Tensor k = randn({c.b, c.s, c.h, c.d}).transpose(1, 2), v = randn({c.b, c.s, c.h, c.dv}).transpose(1, 2);
    Tensor qkv = randn({c.l, c.b, 3 * c.h * c.d});
    Tensor g = c.packed ? randn({c.l, c.b, c.h * c.d}) : randn({c.b, c.h, c.l, c.dv});
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (int need = 0; need < (c.packed ? 1 : 4); ++need) {  // all, then each one alone
        ops::AttentionResult f[2];
        ops::AttentionGrads dg[2];
        for (int fused = 0; fused < 2; ++fused) {
          ops::Attention op{scale, c.causal, c.packed ? c.h : 0};
          op.fused = fused == 1;
          ops::AttentionBackward bop{scale, c.packed ? c.h : 0, need == 0 || need == 1, need == 0 || need == 2,
                                     need == 0 || need == 3};
          bop.fused = fused == 1;
          if (c.packed) {
            f[fused] = dispatch<DefaultPolicy>(op, qkv.impl(), nullptr, nullptr, nullptr);
            dg[fused] = dispatch<DefaultPolicy>(bop, g.impl(), qkv.impl(), nullptr, nullptr, *f[fused].probs);
          } else {
            f[fused] = dispatch<DefaultPolicy>(op, q.impl(), &k.impl(), &v.impl(), nullptr);
            dg[fused] = dispatch<DefaultPolicy>(bop, g.impl(), q.impl(), &k.impl(), &v.impl(), *f[fused].probs);
          }
        }
        CHECK(same(f[0].out, f[1].out));
        CHECK(same(f[0].probs, f[1].probs));
        CHECK(same(dg[0].dq, dg[1].dq));
        CHECK(same(dg[0].dk, dg[1].dk));
        CHECK(same(dg[0].dv, dg[1].dv));
      }
    }
    set_num_threads(1);
    // And against the composite formula (scale 0.3 there as q * 0.3 * sqrt(d) at 1 / sqrt(d)).
    if (!c.packed) {
      Tensor out = nn::F::scaled_dot_product_attention(q, k, v, {}, 0.0, c.causal, scale);
      CHECK(max_diff(out, composite(q * (scale * std::sqrt(static_cast<double>(c.d))), k, v, {}, c.causal)) < 1e-5);
    }
  }
}

}  // namespace test_attention
