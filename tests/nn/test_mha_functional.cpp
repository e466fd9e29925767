// F::multi_head_attention_forward (nn/functional_attention.hpp): nn::MultiheadAttention's
// computation with the projections passed in. Checked against the module (which runs the
// same code through another door), against a hand-written per-head formula for static keys
// and values, and for its errors. The libtorch comparison is tests/libtorch_diff's "mha_f".

#include <doctest/doctest.h>
#include <ember/nn.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace test_mha_functional {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
namespace F = nn::F;

namespace {

double max_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().amax().item<double>(); }

/// The functional's options for `m`'s packed projections.
F::MultiheadAttentionForwardFuncOptions options_of(const nn::MultiheadAttention& m) {
  const auto& o = m->options;
  return F::MultiheadAttentionForwardFuncOptions(o.embed_dim(), o.num_heads(), m->in_proj_weight, m->in_proj_bias,
                                                 m->bias_k, m->bias_v, o.add_zero_attn(), o.dropout(),
                                                 m->out_proj->weight, m->out_proj->bias);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("multi_head_attention_forward equals MultiheadAttention with the same projections") {
  manual_seed(71);
  for (const bool bias_kv : {false, true}) {
    nn::MultiheadAttention m(nn::MultiheadAttentionOptions(6, 3).add_bias_kv(bias_kv).add_zero_attn(bias_kv));
    nn::init::normal_(m->in_proj_bias);
    m->eval();
    const Tensor q = randn({4, 2, 6}), kv = randn({5, 2, 6});
    const Tensor pad = tensor<int64_t>({{0, 0, 1, 0, 1}, {0, 0, 0, 0, 0}}).to(DType::Bool);
    const Tensor mask = randn({4, 5});
    auto [want, want_w] = m(q, kv, kv, pad, true, mask, false);
    auto [out, w] = F::multi_head_attention_forward(
        q, kv, kv, options_of(m).training(false).key_padding_mask(pad).attn_mask(mask).average_attn_weights(false));
    CHECK(max_diff(out, want) == 0.0);
    CHECK(max_diff(w, want_w) == 0.0);
    // Self-attention: one tensor as query, key and value takes the packed projection and the
    // fused op when no weights need a gradient (under NoGradGuard); copies of it take the
    // per-head composite. Masks too (a padding mask, an additive (L, L) mask).
    {
      NoGradGuard no_grad;
      const Tensor pad4 = tensor<int64_t>({{0, 0, 1, 0}, {0, 1, 0, 0}}).to(DType::Bool);
      const Tensor mask4 = randn({4, 4});
      for (const bool masked : {false, true}) {
        auto o = options_of(m).training(false);
        if (masked) o.key_padding_mask(pad4).attn_mask(mask4);
        auto [fused, fused_w] = F::multi_head_attention_forward(q, q, q, o);
        auto [composite, composite_w] = F::multi_head_attention_forward(q, q.clone(), q.clone(), o);
        CHECK(max_diff(fused, composite) < 1e-5);
        CHECK(max_diff(fused_w, composite_w) < 1e-6);
      }
    }
    const Tensor q1 = q.select(1, 0), kv1 = kv.select(1, 0);
    auto [o1, w1] = F::multi_head_attention_forward(q1, kv1, kv1, options_of(m).training(false));
    CHECK(o1.sizes() == Shape({4, 6}));
    CHECK(max_diff(o1, std::get<0>(F::multi_head_attention_forward(q, kv, kv, options_of(m).training(false))).select(1, 0)) <
          1e-6);
    CHECK(w1.sizes() == Shape({4, 5 + (bias_kv ? 2 : 0)}));
  }
  // Separate projections (keys and values of other widths).
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(5));
  const Tensor q = randn({2, 3, 4}), k = randn({6, 3, 3}), v = randn({6, 3, 5});
  auto o = F::MultiheadAttentionForwardFuncOptions(4, 2, Tensor(), m->in_proj_bias, {}, {}, false, 0.0,
                                                   m->out_proj->weight, m->out_proj->bias)
               .use_separate_proj_weight(true)
               .q_proj_weight(m->q_proj_weight)
               .k_proj_weight(m->k_proj_weight)
               .v_proj_weight(m->v_proj_weight);
  auto [out, w] = F::multi_head_attention_forward(q, k, v, o);
  CHECK(max_diff(out, m(q, k, v).first) == 0.0);
  // Gradients reach the weights passed in.
  out.sum().backward();
  CHECK(m->k_proj_weight.grad().abs().sum().item<double>() > 0);
  CHECK(m->out_proj->weight.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("multi_head_attention_forward: static keys and values replace the projected ones") {
  manual_seed(72);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(6, 2));
  nn::init::normal_(m->in_proj_bias);
  const Tensor q = randn({3, 2, 6}, TensorOptions().requires_grad(true));
  const Tensor key = randn({4, 2, 6}, TensorOptions().requires_grad(true)), value = randn({4, 2, 6});
  // Keys and values projected and split into heads by hand: (N * heads, S, hd).
  auto heads = [&](const Tensor& x, int64_t i) {
    Tensor y = F::linear(x, m->in_proj_weight.narrow(0, 6 * i, 6), m->in_proj_bias.narrow(0, 6 * i, 6));
    return y.reshape({x.size(0), 2 * 2, 3}).transpose(0, 1);  // (S, N, E) -> (S, N * heads, hd) -> (N * heads, S, hd)
  };
  const Tensor sk = heads(key, 1).detach(), sv = heads(value, 2).detach();
  auto base = options_of(m).training(false);
  auto [want, want_w] = F::multi_head_attention_forward(q, key, value, base);
  // Key and value given as anything of the right shape: they are not used.
  const Tensor junk = full({4, 2, 6}, 1e6);
  auto [out, w] = F::multi_head_attention_forward(q, junk, junk, options_of(m).training(false).static_k(sk).static_v(sv));
  CHECK(max_diff(out, want) < 1e-5);
  CHECK(max_diff(w, want_w) < 1e-6);
  // A longer static memory with a padding mask and a zero key: S = 7 keys, the mask (N, 7).
  const Tensor sk7 = randn({4, 7, 3}), sv7 = randn({4, 7, 3});
  const Tensor pad = arange(7).eq(6).unsqueeze(0).expand({2, 7}).contiguous();
  auto [o7, w7] = F::multi_head_attention_forward(
      q, key, value, options_of(m).training(false).static_k(sk7).static_v(sv7).key_padding_mask(pad).add_zero_attn(true));
  CHECK(w7.sizes() == Shape({2, 3, 8}));
  CHECK(w7.select(-1, 6).abs().amax().item<double>() == 0.0);  // the padded key
  // By hand: the query's heads against the static ones, and a zero key appended.
  Tensor qh = F::linear(q, m->in_proj_weight.narrow(0, 0, 6), m->in_proj_bias.narrow(0, 0, 6))
                  .reshape({3, 2, 2, 3})
                  .permute({1, 2, 0, 3});  // (N, heads, L, hd)
  Tensor kh = cat({sk7.reshape({2, 2, 7, 3}), zeros({2, 2, 1, 3})}, 2);
  Tensor vh = cat({sv7.reshape({2, 2, 7, 3}), zeros({2, 2, 1, 3})}, 2);
  Tensor s = qh.matmul(kh.mT()) / std::sqrt(3.0);
  s = s.masked_fill(cat({pad, zeros({2, 1}, DType::Bool)}, 1).reshape({2, 1, 1, 8}),
                    -std::numeric_limits<double>::infinity());
  Tensor p = s.softmax(-1);
  Tensor ctx = p.matmul(vh).permute({2, 0, 1, 3}).reshape({3, 2, 6});
  CHECK(max_diff(o7, F::linear(ctx, m->out_proj->weight, m->out_proj->bias)) < 1e-5);
  CHECK(max_diff(w7, p.mean({1})) < 1e-6);
  // The static keys take no gradient from key; the query still gets one.
  o7.sum().backward();
  CHECK(!key.grad().defined());
  CHECK(q.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("multi_head_attention_forward: dropout only in training; errors name the op") {
  manual_seed(73);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(4, 2));
  const Tensor x = randn({3, 2, 4}), k = randn({5, 2, 4});
  auto dropping = options_of(m).dropout_p(0.5);
  CHECK(max_diff(std::get<0>(F::multi_head_attention_forward(x, k, k, dropping.training(false))),
                 std::get<0>(F::multi_head_attention_forward(x, k, k, options_of(m)))) == 0.0);
  // libtorch's default is training: dropped weights (some exactly 0, the rest scaled by 2).
  const Tensor w = std::get<1>(F::multi_head_attention_forward(x, k, k, options_of(m).dropout_p(0.5).average_attn_weights(false)));
  CHECK(w.eq(0.0).any().item<bool>());
  auto err = [&](const F::MultiheadAttentionForwardFuncOptions& o, const Tensor& q, const Tensor& kv) {
    return error_of([&] { F::multi_head_attention_forward(q, kv, kv, o); });
  };
  CHECK(has(err(options_of(m).embed_dim_to_check(6), x, k),
            "[multi_head_attention_forward] query of shape [3, 2, 4] must end in embed_dim_to_check = 6"));
  CHECK(has(err(options_of(m).in_proj_weight(Tensor()), x, k), "[multi_head_attention_forward] in_proj_weight is undefined"));
  CHECK(has(err(options_of(m).use_separate_proj_weight(true), x, k),
            "[multi_head_attention_forward] use_separate_proj_weight needs q_proj_weight, k_proj_weight and v_proj_weight"));
  CHECK(has(err(options_of(m).static_k(randn({4, 5, 2}, kFloat64)).static_v(randn({4, 5, 2})), x, k),
            "[multi_head_attention_forward] static_k is f64 but the query is f32"));
  CHECK(has(err(options_of(m).bias_k(randn({1, 1, 4})).bias_v(randn({1, 1, 4}, kFloat64)), x, k),
            "bias_v is f64 but the query is f32"));
  CHECK(has(err(options_of(m).in_proj_weight(randn({12, 3})), x, k),
            "[multi_head_attention_forward] in_proj_weight of shape [12, 3] must have shape [12, 4]"));
  CHECK(has(err(options_of(m).out_proj_weight(Tensor()), x, k), "[multi_head_attention_forward] out_proj_weight is undefined"));
  CHECK(has(err(options_of(m).in_proj_bias(randn({4})), x, k), "in_proj_bias of shape [4] must have shape [12]"));
  CHECK(has(err(options_of(m).bias_k(randn({1, 1, 4})), x, k), "bias_k and bias_v come together"));
  CHECK(has(err(options_of(m).num_heads(3), x, k), "embed_dim 4 must be divisible by num_heads 3"));
  CHECK(has(err(options_of(m).dropout_p(1.5), x, k), "dropout probability must be in [0, 1], got 1.5"));
  CHECK(has(err(options_of(m).static_k(randn({4, 5, 3})).static_v(randn({4, 5, 2})), x, k),
            "static_k of shape [4, 5, 3] must be (N * heads, S, E / heads) = (4, S, 2)"));
  CHECK(has(err(options_of(m).static_k(randn({4, 5, 2})).static_v(randn({4, 6, 2})), x, k),
            "keys (5) and values (6) differ in length"));
  CHECK(has(err(options_of(m).static_k(randn({4, 5, 2})).bias_k(randn({1, 1, 4})).bias_v(randn({1, 1, 4})), x, k),
            "bias_k and bias_v cannot be appended to static_k / static_v"));
  CHECK(has(err(options_of(m).key_padding_mask(zeros({2, 4}, DType::Bool)), x, k),
            "[multi_head_attention_forward] key_padding_mask must be (2, 5), got [2, 4]"));
  CHECK(has(err(options_of(m), x, randn({5, 3, 4})), "[multi_head_attention_forward] expects query (L, N, 4)"));
  CHECK(has(err(options_of(m), x, Tensor()), "[multi_head_attention_forward] query, key and value must be defined"));
  // The module's errors keep its name, and show the shapes as given (batch first here).
  CHECK(has(error_of([&] { m(x, randn({5, 2, 3}), randn({5, 2, 3})); }), "[MultiheadAttention] expects query"));
  nn::MultiheadAttention bf(nn::MultiheadAttentionOptions(4, 2).batch_first(true));
  CHECK(has(error_of([&] { bf(randn({2, 3, 4}), randn({2, 5, 3}), randn({2, 5, 3})); }),
            "[MultiheadAttention] expects query (N, L, 4), key (N, S, 4) and value (N, S, 4), got [2, 3, 4], [2, 5, 3], "
            "[2, 5, 3]"));
  CHECK(has(error_of([&] { bf(randn({2, 3, 4}), Tensor(), Tensor()); }),
            "[MultiheadAttention] query, key and value must be defined"));
}

TEST_CASE("MultiheadAttention batch_first is the sequence-first computation on transposed inputs") {
  manual_seed(74);
  nn::MultiheadAttention seq(nn::MultiheadAttentionOptions(6, 2));
  nn::MultiheadAttention bf(nn::MultiheadAttentionOptions(6, 2).batch_first(true));
  {
    NoGradGuard no_grad;
    bf->in_proj_weight.copy_(seq->in_proj_weight);
    bf->out_proj->weight.copy_(seq->out_proj->weight);
  }
  const Tensor x = randn({2, 5, 6}), mem = randn({2, 3, 6});  // (N, L, E), (N, S, E)
  const Tensor pad = tensor<int64_t>({{0, 0, 1}, {0, 0, 0}}).to(DType::Bool);
  auto [cross, cross_w] = bf(x, mem, mem, pad);
  auto [want, want_w] = seq(x.transpose(0, 1), mem.transpose(0, 1), mem.transpose(0, 1), pad);
  CHECK(cross.sizes() == Shape({2, 5, 6}));
  CHECK(max_diff(cross, want.transpose(0, 1)) < 1e-6);
  CHECK(max_diff(cross_w, want_w) < 1e-6);
  // Self-attention, fused (no weights to differentiate) and not.
  auto self_bf = bf(x, x, x, Tensor(), false).first;
  CHECK(max_diff(self_bf, seq(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1), Tensor(), false).first.transpose(0, 1)) <
        1e-6);
  CHECK(max_diff(self_bf, bf(x, x.clone(), x.clone()).first) < 1e-6);
}

}  // namespace test_mha_functional
