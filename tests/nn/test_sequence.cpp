// RNN/LSTM/GRU against their cells and hand-written gate equations; attention and the
// Transformer layers against direct computations; PyTorch's parameter names; causality.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace test_sequence {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.detach().to(DType::F64) - b.detach().to(DType::F64)).abs().amax().item<double>();
}

std::vector<std::string> names(const nn::NamedTensors& v) {
  std::vector<std::string> n;
  for (auto& [k, t] : v) n.push_back(k);
  return n;
}

}  // namespace

TEST_CASE("LSTM: PyTorch's parameter names and shapes; output equals the cell unrolled by hand") {
  manual_seed(30);
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true));
  CHECK(names(lstm->named_parameters()) ==
        std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
                                 "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1",
                                 "weight_hh_l1", "bias_ih_l1", "bias_hh_l1", "weight_ih_l1_reverse",
                                 "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"});
  CHECK(lstm->named_parameters()[8].second.sizes() == Shape{20, 10});
  Tensor x = randn({4, 2, 3});
  auto [out, state] = lstm(x);
  CHECK(out.sizes() == Shape{4, 2, 10});
  CHECK(state.first.sizes() == Shape{4, 2, 5});
  // Single layer, one direction: the cell by hand, with the gate order i, f, g, o.
  nn::LSTM one(3, 4);
  Tensor h = zeros({2, 4}), c = zeros({2, 4});
  auto& w = one->weights[0];
  std::vector<Tensor> hs;
  for (int64_t t = 0; t < 4; ++t) {
    Tensor g = x.select(0, t).matmul(w.w_ih.t()) + w.b_ih + h.matmul(w.w_hh.t()) + w.b_hh;
    Tensor i = g.narrow(1, 0, 4).sigmoid(), f = g.narrow(1, 4, 4).sigmoid(), gg = g.narrow(1, 8, 4).tanh(),
           o = g.narrow(1, 12, 4).sigmoid();
    c = f * c + i * gg;
    h = o * c.tanh();
    hs.push_back(h);
  }
  auto [o1, s1] = one(x);
  CHECK(max_diff(o1, stack(hs, 0)) < 1e-6);
  CHECK(max_diff(s1.second.squeeze(0), c) < 1e-6);
  // An initial state as a braced pair or, as libtorch's callers pass it, a std::tuple.
  const Tensor h0 = randn({1, 2, 4}), c0 = randn({1, 2, 4});
  auto [o2, s2] = one->forward(x, {h0, c0});
  auto [o3, s3] = one->forward(x, std::make_tuple(h0, c0));
  CHECK(o2.eq(o3).all().item<bool>());
  CHECK(s2.second.eq(s3.second).all().item<bool>());
  CHECK(max_diff(o2, o1) > 1e-3);  // the state was used
  // batch_first and unbatched inputs agree with the default layout.
  nn::LSTM bf(nn::LSTMOptions(3, 4).batch_first(true));
  bf->load_state_dict(one->state_dict());
  CHECK(max_diff(bf(x.transpose(0, 1)).first.transpose(0, 1), o1) < 1e-6);
  CHECK(max_diff(one(x.select(1, 0)).first, o1.select(1, 0)) < 1e-6);
  CHECK_THROWS_WITH_AS(one(randn({4, 2, 5})), doctest::Contains("[LSTM] expects 3 input features"), Error);
  CHECK_THROWS_WITH_AS(one->forward(x, {zeros({2, 2, 4}), zeros({2, 2, 4})}), doctest::Contains("h0 must have shape"),
                       Error);
}

TEST_CASE("LSTM with proj_size: weight_hr, projected h and output, c at hidden_size, checked options") {
  manual_seed(33);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).proj_size(2));
  CHECK(names(lstm->named_parameters()) ==
        std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0",
                                 "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                                 "bias_hh_l0_reverse", "weight_hr_l0_reverse", "weight_ih_l1", "weight_hh_l1",
                                 "bias_ih_l1", "bias_hh_l1", "weight_hr_l1", "weight_ih_l1_reverse",
                                 "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse",
                                 "weight_hr_l1_reverse"});
  auto params = lstm->named_parameters();
  CHECK(params["weight_hh_l0"].sizes() == Shape{16, 2});
  CHECK(params["weight_hr_l0"].sizes() == Shape{2, 4});
  CHECK(params["weight_ih_l1"].sizes() == Shape{16, 4});  // both directions' projected outputs
  Tensor x = randn({5, 2, 3});
  auto [out, state] = lstm(x);
  CHECK(out.sizes() == Shape{5, 2, 4});
  CHECK(state.first.sizes() == Shape{4, 2, 2});
  CHECK(state.second.sizes() == Shape{4, 2, 4});
  CHECK(lstm->extra_repr() == "3, 4, proj_size=2, num_layers=2, bidirectional=True");  // PyTorch's order
  // One layer by hand: h = W_hr (o * tanh(c)) feeds the next step's recurrent product.
  nn::LSTM one(nn::LSTMOptions(3, 4).proj_size(3));
  const auto& w = one->weights[0];
  Tensor h = randn({2, 3}), c = randn({2, 4});
  auto [o1, s1] = one->forward(x, {h.unsqueeze(0), c.unsqueeze(0)});
  std::vector<Tensor> hs;
  for (int64_t t = 0; t < 5; ++t) {
    Tensor g = x.select(0, t).matmul(w.w_ih.t()) + w.b_ih + h.matmul(w.w_hh.t()) + w.b_hh;
    c = g.narrow(1, 4, 4).sigmoid() * c + g.narrow(1, 0, 4).sigmoid() * g.narrow(1, 8, 4).tanh();
    h = (g.narrow(1, 12, 4).sigmoid() * c.tanh()).matmul(w.w_hr.t());
    hs.push_back(h);
  }
  CHECK(max_diff(o1, stack(hs, 0)) < 1e-6);
  CHECK(max_diff(s1.first.squeeze(0), h) < 1e-6);
  CHECK(max_diff(s1.second.squeeze(0), c) < 1e-6);
  // h0 has proj_size features, c0 hidden_size.
  CHECK_THROWS_WITH_AS(one->forward(x, {zeros({1, 2, 4}), zeros({1, 2, 4})}),
                       doctest::Contains("h0 must have shape (1, 2, 3)"), Error);
  CHECK_THROWS_WITH_AS(one->forward(x, {zeros({1, 2, 3}), zeros({1, 2, 3})}),
                       doctest::Contains("c0 must have shape (1, 2, 4)"), Error);
  CHECK_THROWS_WITH_AS(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)), doctest::Contains("proj_size must be in [0, hidden_size 4), got 4"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(-1)), doctest::Contains("got -1"), Error);
  CHECK_THROWS_WITH_AS(nn::GRU(nn::GRUOptions(3, 4).proj_size(2)), doctest::Contains("[GRU] proj_size is only supported for LSTM"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::RNN(nn::RNNOptions(3, 4).proj_size(2)), doctest::Contains("[RNN] proj_size is only supported"),
                       Error);
  // Gradients of the input, the initial states and every weight, projection included (f64).
  nn::LSTM small(nn::LSTMOptions(2, 3).proj_size(2).bidirectional(true));
  small->to(DType::F64);
  std::string why;
  auto f = [&](const std::vector<Tensor>& in) {
    auto [y, hc] = small->forward(in[0], {in[1], in[2]});
    return cat({y.reshape({-1}), hc.first.reshape({-1}), hc.second.reshape({-1})}, 0);
  };
  const std::vector<Tensor> inputs = {randn({3, 2, 2}, DType::F64).requires_grad_(),
                                      randn({2, 2, 2}, DType::F64).requires_grad_(),
                                      randn({2, 2, 3}, DType::F64).requires_grad_()};
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, inputs, {}, &why), why);
  Tensor loss = f(inputs).square().sum();
  loss.backward();
  for (auto& item : small->named_parameters()) {
    // Not a structured binding: clang before 16 cannot capture one in the macros' lambdas.
    const std::string& name = item.first;
    const Tensor& p = item.second;
    REQUIRE_MESSAGE(p.grad().defined(), name);
    CHECK_MESSAGE(p.grad().abs().sum().item<double>() > 0, name);
  }
}

TEST_CASE("GRU and RNN: gate equations, cells, bidirectional reverse direction") {
  manual_seed(31);
  nn::GRU gru(3, 2);
  Tensor x = randn({3, 1, 3});
  auto& w = gru->weights[0];
  Tensor h = zeros({1, 2});
  for (int64_t t = 0; t < 3; ++t) {
    Tensor gi = x.select(0, t).matmul(w.w_ih.t()) + w.b_ih, gh = h.matmul(w.w_hh.t()) + w.b_hh;
    Tensor r = (gi.narrow(1, 0, 2) + gh.narrow(1, 0, 2)).sigmoid(), z = (gi.narrow(1, 2, 2) + gh.narrow(1, 2, 2)).sigmoid();
    Tensor n = (gi.narrow(1, 4, 2) + r * gh.narrow(1, 4, 2)).tanh();
    h = (1.0 - z) * n + z * h;
  }
  CHECK(max_diff(gru(x).second.squeeze(0), h) < 1e-6);
  nn::GRUCell cell(3, 2);
  cell->weight_ih = w.w_ih, cell->weight_hh = w.w_hh, cell->bias_ih = w.b_ih, cell->bias_hh = w.b_hh;
  Tensor hc = zeros({1, 2});
  for (int64_t t = 0; t < 3; ++t) hc = cell(x.select(0, t), hc);
  CHECK(max_diff(hc, h) < 1e-6);
  // The reverse direction of a bidirectional RNN reads the sequence backwards.
  nn::RNN bi(nn::RNNOptions(3, 2).bidirectional(true).nonlinearity("relu"));
  auto [out, hn] = bi(x);
  nn::RNN fwd(nn::RNNOptions(3, 2).nonlinearity("relu"));
  fwd->weights[0].w_ih = bi->weights[1].w_ih, fwd->weights[0].w_hh = bi->weights[1].w_hh;
  fwd->weights[0].b_ih = bi->weights[1].b_ih, fwd->weights[0].b_hh = bi->weights[1].b_hh;
  Tensor rev = fwd(flip(x, {0})).first;
  CHECK(max_diff(out.narrow(2, 2, 2), flip(rev, {0})) < 1e-6);
  CHECK_THROWS_WITH_AS(nn::RNN(nn::RNNOptions(3, 2).nonlinearity("gelu")), doctest::Contains("'tanh' or 'relu'"), Error);
}

TEST_CASE("gradcheck: LSTM and GRU (f64)") {
  manual_seed(32);
  nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2));
  lstm->to(DType::F64);
  nn::GRU gru(nn::GRUOptions(2, 2).bidirectional(true));
  gru->to(DType::F64);
  std::string why;
  auto lf = [&](const std::vector<Tensor>& in) { return lstm(in[0]).first; };
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(lf, {randn({3, 2, 2}, DType::F64).requires_grad_()}, {}, &why), why);
  auto gf = [&](const std::vector<Tensor>& in) { return gru(in[0], in[1]).first; };
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(
                    gf, {randn({3, 1, 2}, DType::F64).requires_grad_(), randn({2, 1, 2}, DType::F64).requires_grad_()},
                    {}, &why),
                why);
  // Twice differentiable through the pieces the steps and gates are cut into.
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(lf, {randn({3, 2, 2}, DType::F64).requires_grad_()}, {}, &why),
                why);
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(
                    gf, {randn({3, 1, 2}, DType::F64).requires_grad_(), randn({2, 1, 2}, DType::F64).requires_grad_()},
                    {}, &why),
                why);
}

// The recurrences cut sequences into steps and steps into gates with one node each (Pieces):
// its backward concatenates or stacks the pieces' gradients, zeros for unused pieces.
TEST_CASE("RNN pieces: cuts along a dim, one backward for all pieces, zeros for unused ones") {
  manual_seed(33);
  Tensor x = randn({4, 6}, DType::F64).requires_grad_();
  std::vector<Tensor> cols = nn::detail::pieces(x, 1, 2, false);
  REQUIRE(cols.size() == 3);
  CHECK(cols[1].sizes() == Shape{4, 2});
  CHECK((cols[1] - x.narrow(1, 2, 2)).abs().sum().item<double>() == 0);
  ((cols[0] * 2.0).sum() + cols[2].sum()).backward();  // cols[1] unused
  Tensor want = cat(std::vector<Tensor>{full({4, 2}, 2.0, DType::F64), zeros({4, 2}, DType::F64), ones({4, 2}, DType::F64)}, 1);
  CHECK((x.grad() - want).abs().sum().item<double>() == 0);
  Tensor r = randn({3, 5}, DType::F64).requires_grad_();
  std::vector<Tensor> rows = nn::detail::pieces(r, 0, 1, true);
  REQUIRE(rows.size() == 3);
  CHECK(rows[2].sizes() == Shape{5});
  (rows[2] * 3.0).sum().backward();
  CHECK((r.grad() - cat(std::vector<Tensor>{zeros({2, 5}, DType::F64), full({1, 5}, 3.0, DType::F64)}, 0)).abs().sum().item<double>() == 0);
  std::string why;
  auto f = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> p = nn::detail::pieces(in[0], 1, 2, false);
    return p[0] * p[2].sin() + p[1];
  };
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, {randn({3, 6}, DType::F64).requires_grad_()}, {}, &why), why);
}

TEST_CASE("scaled_dot_product_attention and MultiheadAttention against direct computation") {
  manual_seed(33);
  Tensor q = randn({2, 4, 3}), k = randn({2, 5, 3}), v = randn({2, 5, 6});
  Tensor ref = (q.matmul(k.mT()) / std::sqrt(3.0)).softmax(-1).matmul(v);
  CHECK(max_diff(nn::F::scaled_dot_product_attention(q, k, v), ref) < 1e-6);
  // Causal: output i depends only on v[:i+1] (square case).
  Tensor kq = randn({1, 4, 3}), vv = randn({1, 4, 2});
  Tensor a = nn::F::scaled_dot_product_attention(kq, kq, vv, {}, 0.0, true);
  Tensor vv2 = vv.clone();
  vv2.select(1, 3).fill_(100.0);
  Tensor b = nn::F::scaled_dot_product_attention(kq, kq, vv2, {}, 0.0, true);
  CHECK(max_diff(a.narrow(1, 0, 3), b.narrow(1, 0, 3)) < 1e-6);
  CHECK(max_diff(a.select(1, 0), vv.select(1, 0)) < 1e-6);

  nn::MultiheadAttention mha(8, 2);
  CHECK(names(mha->named_parameters()) ==
        std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
  Tensor x = randn({5, 3, 8});  // (L, N, E)
  auto [out, w] = mha(x, x, x);
  CHECK(out.sizes() == Shape{5, 3, 8});
  CHECK(w.sizes() == Shape{3, 5, 5});
  // By hand for batch element 0.
  Tensor xb = x.select(1, 0);
  Tensor qkv = linear(xb, mha->in_proj_weight, mha->in_proj_bias);
  std::vector<Tensor> heads;
  for (int64_t h = 0; h < 2; ++h) {
    Tensor qh = qkv.narrow(1, h * 4, 4), kh = qkv.narrow(1, 8 + h * 4, 4), vh = qkv.narrow(1, 16 + h * 4, 4);
    heads.push_back((qh.matmul(kh.t()) / 2.0).softmax(-1).matmul(vh));
  }
  Tensor manual = mha->out_proj(cat(heads, 1));
  CHECK(max_diff(out.select(1, 0), manual) < 1e-5);
  // Padded keys get no weight.
  Tensor kpm = zeros({3, 5}, DType::Bool);
  kpm.select(1, 4).fill_(true);
  auto [o2, w2] = mha(x, x, x, kpm);
  CHECK(w2.select(2, 4).abs().amax().item<double>() == 0.0);
  CHECK_THROWS_WITH_AS(nn::MultiheadAttention(10, 3), doctest::Contains("divisible by num_heads"), Error);
}

TEST_CASE("Transformer layers: PyTorch's names, cloned layers, causality, shapes") {
  manual_seed(34);
  auto opts = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).batch_first(true);
  nn::TransformerEncoderLayer layer(opts);
  CHECK(names(layer->named_parameters()) ==
        std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                                 "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                                 "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"});
  nn::TransformerEncoder enc(layer, 2, nn::LayerNorm(nn::LayerNormOptions({8})));
  auto n = names(enc->named_parameters());
  CHECK(n.front() == "layers.0.self_attn.in_proj_weight");
  CHECK(n.back() == "norm.bias");
  CHECK(n.size() == 26);
  auto p = enc->named_parameters();
  CHECK(p[0].second.raw_data() != p[12].second.raw_data());  // deep copies, not shared
  Tensor x = randn({2, 6, 8});
  Tensor y = enc->forward(x, {}, {}, true);
  Tensor x2 = x.clone();
  x2.narrow(1, 4, 2).fill_(3.0);
  Tensor y2 = enc->forward(x2, {}, {}, true);
  CHECK(max_diff(y.narrow(1, 0, 4), y2.narrow(1, 0, 4)) < 1e-5);  // future tokens do not leak back
  // norm_first and gelu run and differ from post-norm.
  nn::TransformerEncoderLayer pre(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0)
                                      .batch_first(true).norm_first(true).activation("gelu"));
  CHECK(pre(x).sizes() == Shape{2, 6, 8});
  nn::Transformer tr(nn::TransformerOptions().d_model(8).nhead(2).num_encoder_layers(1).num_decoder_layers(1)
                         .dim_feedforward(16).dropout(0.0));
  Tensor src = randn({7, 2, 8}), tgt = randn({5, 2, 8});
  Tensor mask = nn::TransformerImpl::generate_square_subsequent_mask(5);
  CHECK(mask.select(0, 0).select(0, 1).item<float>() == -INFINITY);
  CHECK(mask.select(0, 1).select(0, 0).item<float>() == 0.0f);
  CHECK(tr->forward(src, tgt, {}, mask).sizes() == Shape{5, 2, 8});
  CHECK(names(tr->named_parameters()).back() == "decoder.norm.bias");
  // The *_is_causal flags stand for the square masks: the same outputs.
  Tensor src_mask = nn::TransformerImpl::generate_square_subsequent_mask(7);
  Tensor memory_mask = triu(full({5, 7}, -INFINITY), 1);
  Tensor with_masks = tr->forward(src, tgt, src_mask, mask, memory_mask);
  Tensor with_flags = tr->forward(src, tgt, {}, {}, {}, {}, {}, {}, true, true, true);
  CHECK(max_diff(with_flags, with_masks) < 1e-6);
  CHECK(max_diff(tr->forward(src, tgt, {}, mask), with_masks) > 1e-3);  // the src/memory masks matter here
  nn::TransformerDecoderLayer dec(nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  Tensor memory = randn({7, 2, 8});
  // The activation as a function, as libtorch's activation_t: equal to the named one when it
  // computes the same, different otherwise; clones keep it; Transformer passes it on.
  auto with_activation = [&](nn::TransformerLayerOptions o) {
    nn::TransformerDecoderLayer m(o.dim_feedforward(16).dropout(0.0));
    m->load_state_dict(dec->state_dict());
    return m;
  };
  nn::TransformerDecoderLayer by_fn = with_activation(
      nn::TransformerDecoderLayerOptions(8, 2).activation([](const Tensor& t) { return t.gelu(); }));
  nn::TransformerDecoderLayer by_name = with_activation(nn::TransformerDecoderLayerOptions(8, 2).activation(kGELU));
  nn::TransformerDecoderLayer by_tanh =
      with_activation(nn::TransformerDecoderLayerOptions(8, 2).activation([](const Tensor& t) { return t.tanh(); }));
  CHECK(max_diff(by_fn(tgt, memory), by_name(tgt, memory)) == 0.0);
  CHECK(max_diff(by_tanh(tgt, memory), by_name(tgt, memory)) > 1e-4);
  auto cloned = std::dynamic_pointer_cast<nn::TransformerDecoderLayerImpl>(by_tanh->clone());
  REQUIRE(cloned);
  CHECK(max_diff(cloned->forward(tgt, memory), by_tanh(tgt, memory)) == 0.0);
  CHECK(by_tanh->options.activation() == "<function>");
  auto transformer_with = [&](nn::TransformerLayerOptions::Function f) {
    nn::Transformer t(nn::TransformerOptions().d_model(8).nhead(2).num_encoder_layers(1).num_decoder_layers(1)
                          .dim_feedforward(16).dropout(0.0).activation(std::move(f)));
    t->load_state_dict(tr->state_dict());
    return t;
  };
  nn::Transformer tr_relu = transformer_with([](const Tensor& t) { return t.relu(); });
  nn::Transformer tr_tanh = transformer_with([](const Tensor& t) { return t.tanh(); });
  CHECK(max_diff(tr_relu->forward(src, tgt), tr->forward(src, tgt)) < 1e-6);
  CHECK(max_diff(tr_tanh->forward(src, tgt), tr->forward(src, tgt)) > 1e-4);  // Transformer passed it on
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).activation("tanh")),
                       doctest::Contains("'relu', 'gelu' or a function, got 'tanh'"), Error);
  CHECK(max_diff(dec->forward(tgt, memory, {}, {}, {}, {}, false, true), dec->forward(tgt, memory, {}, memory_mask)) < 1e-6);
}

TEST_CASE("pad_sequence padding_side, unpad_sequence and unpack_sequence invert padding and packing") {
  namespace R = nn::utils::rnn;
  const std::vector<Tensor> seqs = {tensor<double>({1, 2, 3}), tensor<double>({4}), tensor<double>({5, 6})};
  Tensor right = R::pad_sequence(seqs, true, -1.0);
  CHECK(right.eq(tensor<double>({{1, 2, 3}, {4, -1, -1}, {5, 6, -1}})).all().item<bool>());
  Tensor left = R::pad_sequence(seqs, true, -1.0, "left");
  CHECK(left.eq(tensor<double>({{1, 2, 3}, {-1, -1, 4}, {-1, 5, 6}})).all().item<bool>());
  CHECK(R::pad_sequence(seqs, false, 0.0, "left").eq(left.t().clamp_min(0.0)).all().item<bool>());
  CHECK_THROWS_WITH_AS(R::pad_sequence(seqs, true, 0.0, "middle"), doctest::Contains("padding_side must be"), Error);
  // unpad_sequence: lengths as a vector or a tensor, either layout.
  for (bool batch_first : {true, false}) {
    CAPTURE(batch_first);
    Tensor padded = R::pad_sequence(seqs, batch_first);
    const std::vector<Tensor> back = R::unpad_sequence(padded, std::vector<int64_t>{3, 1, 2}, batch_first);
    REQUIRE(back.size() == 3);
    for (size_t i = 0; i < 3; ++i) CHECK(back[i].eq(seqs[i]).all().item<bool>());
    CHECK(R::unpad_sequence(padded, tensor<int64_t>({3, 1, 2}), batch_first)[2].eq(seqs[2]).all().item<bool>());
  }
  CHECK_THROWS_WITH_AS(R::unpad_sequence(right, std::vector<int64_t>{3, 1}, true), doctest::Contains("2 lengths for a batch of 3"),
                       Error);
  CHECK_THROWS_WITH_AS(R::unpad_sequence(right, std::vector<int64_t>{3, 4, 1}, true),
                       doctest::Contains("length 4 of sequence 1 is outside [0, 3]"), Error);
  // unpack_sequence gives the sequences back in their original order (unsorted packing), and
  // their gradients flow.
  Tensor a = randn({2, 3}).requires_grad_(), b = randn({4, 3}), c = randn({1, 3});
  const std::vector<Tensor> unpacked = R::unpack_sequence(R::pack_sequence(std::vector<Tensor>{a, b, c}, false));
  REQUIRE(unpacked.size() == 3);
  CHECK(unpacked[0].eq(a).all().item<bool>());
  CHECK(unpacked[1].eq(b).all().item<bool>());
  CHECK(unpacked[2].eq(c).all().item<bool>());
  unpacked[0].sum().backward();
  CHECK(a.grad().eq(1.0).all().item<bool>());
  CHECK_THROWS_WITH_AS(R::unpack_sequence(R::PackedSequence()), doctest::Contains("[unpack_sequence]"), Error);
}

TEST_CASE("packed sequences: pack/pad round trips, and a packed LSTM equals one run per sequence") {
  namespace R = nn::utils::rnn;
  manual_seed(41);
  // pad_sequence and pack_sequence.
  std::vector<Tensor> seqs{randn({2, 3}), randn({4, 3}), randn({1, 3})};
  Tensor padded = R::pad_sequence(seqs, /*batch_first=*/true, -1.0);
  CHECK(padded.sizes() == Shape{3, 4, 3});
  CHECK(max_diff(padded.select(0, 0).narrow(0, 0, 2), seqs[0]) == 0.0);
  CHECK(padded.select(0, 2).narrow(0, 1, 3).eq(-1.0).all().item<bool>());
  R::PackedSequence packed = R::pack_sequence(seqs, /*enforce_sorted=*/false);
  CHECK(packed.batch_size_list() == std::vector<int64_t>{3, 2, 1, 1});
  CHECK(packed.data().sizes() == Shape{7, 3});
  CHECK(!packed.is_sorted());
  CHECK(std::vector<int64_t>(packed.sorted_indices().data_ptr<int64_t>(),
                             packed.sorted_indices().data_ptr<int64_t>() + 3) == std::vector<int64_t>{1, 0, 2});
  // Step 0 holds every sequence's first row, longest first.
  CHECK(max_diff(packed.data().narrow(0, 0, 1), seqs[1].narrow(0, 0, 1)) == 0.0);
  auto [back, lengths] = R::pad_packed_sequence(packed, /*batch_first=*/true, -1.0);
  CHECK(max_diff(back, padded) == 0.0);
  CHECK(std::vector<int64_t>(lengths.data_ptr<int64_t>(), lengths.data_ptr<int64_t>() + 3) ==
        std::vector<int64_t>{2, 4, 1});
  CHECK(R::pad_packed_sequence(packed, false, 0.0, 6).first.sizes() == Shape{6, 3, 3});

  // A packed bidirectional LSTM: each sequence's output and final state as if it ran alone.
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true));
  Tensor h0 = randn({4, 3, 5}), c0 = randn({4, 3, 5});
  auto [out, state] = lstm->forward_with_packed_input(packed, {h0, c0});
  Tensor y = R::pad_packed_sequence(out, true).first;
  for (int64_t b = 0; b < 3; ++b) {
    auto [yb, hcb] = lstm->forward(seqs[static_cast<size_t>(b)].unsqueeze(1),
                                   {h0.narrow(1, b, 1).contiguous(), c0.narrow(1, b, 1).contiguous()});
    const int64_t len = seqs[static_cast<size_t>(b)].size(0);
    CHECK(max_diff(y.select(0, b).narrow(0, 0, len), yb.squeeze(1)) < 1e-5);
    CHECK(y.select(0, b).narrow(0, len, 4 - len).abs().sum().item<float>() == 0.0f);
    CHECK(max_diff(state.first.narrow(1, b, 1), hcb.first) < 1e-5);
    CHECK(max_diff(state.second.narrow(1, b, 1), hcb.second) < 1e-5);
  }
  // Gradients reach the inputs of every sequence, and only their real steps.
  Tensor x = padded.detach().clone().requires_grad_();
  auto [gout, gh] = nn::GRU(nn::GRUOptions(3, 2).batch_first(true))
                        ->forward_with_packed_input(R::pack_padded_sequence(x, {2, 4, 1}, true, false));
  (R::pad_packed_sequence(gout, true).first.sum() + gh.sum()).backward();
  CHECK(x.grad().select(0, 1).abs().sum({1}).gt(0.0).all().item<bool>());
  CHECK(x.grad().select(0, 2).narrow(0, 1, 3).abs().sum().item<float>() == 0.0f);

  // A PackedSequence made from its parts: unsorted_indices is sorted_indices' inverse.
  R::PackedSequence rebuilt(packed.data(), packed.batch_sizes(), packed.sorted_indices());
  CHECK((rebuilt.unsorted_indices() - packed.unsorted_indices()).abs().sum().item<int64_t>() == 0);
  CHECK(max_diff(R::pad_packed_sequence(rebuilt, true, -1.0).first, padded) == 0.0);
  CHECK_THROWS_WITH_AS(R::PackedSequence(packed.data(), packed.batch_sizes(), tensor<int64_t>({1, 1, 0})),
                       doctest::Contains("not a permutation"), Error);
  CHECK_THROWS_WITH_AS(R::PackedSequence(packed.data(), packed.batch_sizes(), tensor<int64_t>({1, 0})),
                       doctest::Contains("permutations of the 3 sequences"), Error);
  CHECK_THROWS_WITH_AS(R::PackedSequence(packed.data(), packed.batch_sizes().to(DType::F32)),
                       doctest::Contains("batch_sizes must be a 1-d integer tensor on the CPU"), Error);
  CHECK_THROWS_WITH_AS(R::pad_packed_sequence(packed, false, 0.0, int64_t{1} << 62), doctest::Contains("overflows"),
                       Error);

  // Refusals.
  CHECK_THROWS_WITH_AS(R::pack_padded_sequence(padded, {2, 4, 1}, true), doctest::Contains("must not increase"), Error);
  CHECK_THROWS_WITH_AS(R::pack_padded_sequence(padded, {2, 5, 1}, true, false),
                       doctest::Contains("each length must be in [1, 4]"), Error);
  CHECK_THROWS_WITH_AS(R::pack_padded_sequence(padded, {2, 0, 1}, true, false), doctest::Contains("got 0"), Error);
  CHECK_THROWS_WITH_AS(R::pack_padded_sequence(padded, {2, 1}, true, false), doctest::Contains("2 lengths for a batch of 3"),
                       Error);
  CHECK_THROWS_WITH_AS(R::pack_padded_sequence(padded, padded, true, false), doctest::Contains("1-d integer tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(R::pad_packed_sequence(packed, false, 0.0, 3), doctest::Contains("total_length 3 is shorter"),
                       Error);
  CHECK_THROWS_WITH_AS(R::pad_sequence(std::vector<Tensor>{randn({2, 3}), randn({2, 4})}),
                       doctest::Contains("share their trailing shape"), Error);
  CHECK_THROWS_WITH_AS(lstm->forward_with_packed_input(R::pack_sequence(std::vector<Tensor>{randn({2, 4})})),
                       doctest::Contains("[LSTM] expects packed data of shape (steps, 3)"), Error);
  CHECK_THROWS_WITH_AS(lstm->forward_with_packed_input(packed, {randn({4, 2, 5}), c0}),
                       doctest::Contains("h0 must have shape (4, 3, 5)"), Error);
}

TEST_CASE("functional cells (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell): the gate equations, errors") {
  manual_seed(91);
  const Tensor x = randn({2, 3}, kFloat64), h = randn({2, 4}, kFloat64), c = randn({2, 4}, kFloat64);
  const Tensor wi = randn({16, 3}, kFloat64), wh = randn({16, 4}, kFloat64), bi = randn({16}, kFloat64),
               bh = randn({16}, kFloat64);
  auto part = [](const Tensor& t, int64_t k) { return t.narrow(-1, 4 * k, 4); };
  // LSTM: gates i, f, g, o in PyTorch's order.
  const Tensor gates = x.matmul(wi.t()) + bi + h.matmul(wh.t()) + bh;
  const Tensor c_want = part(gates, 1).sigmoid() * c + part(gates, 0).sigmoid() * part(gates, 2).tanh();
  const Tensor h_want = part(gates, 3).sigmoid() * c_want.tanh();
  auto [h1, c1] = lstm_cell(x, {h, c}, wi, wh, bi, bh);
  CHECK(max_diff(h1, h_want) < 1e-14);
  CHECK(max_diff(c1, c_want) < 1e-14);
  // Unbatched, and without biases.
  auto [h1u, c1u] = lstm_cell(x[0], {h[0], c[0]}, wi, wh);
  CHECK(h1u.sizes() == Shape({4}));
  CHECK(max_diff(h1u, std::get<0>(lstm_cell(x.narrow(0, 0, 1), {h.narrow(0, 0, 1), c.narrow(0, 0, 1)}, wi, wh))[0]) <
        1e-15);
  // GRU: r, z, n; n = tanh(W_in x + b_in + r (W_hn h + b_hn)).
  const Tensor wi3 = wi.narrow(0, 0, 12), wh3 = wh.narrow(0, 0, 12), bi3 = bi.narrow(0, 0, 12), bh3 = bh.narrow(0, 0, 12);
  const Tensor xg = x.matmul(wi3.t()) + bi3, hg = h.matmul(wh3.t()) + bh3;
  const Tensor r = (part(xg, 0) + part(hg, 0)).sigmoid(), z = (part(xg, 1) + part(hg, 1)).sigmoid();
  const Tensor n = (part(xg, 2) + r * part(hg, 2)).tanh();
  CHECK(max_diff(gru_cell(x, h, wi3, wh3, bi3, bh3), (1 - z) * n + z * h) < 1e-14);
  // Plain RNN cells.
  const Tensor w1 = wi.narrow(0, 0, 4), v1 = wh.narrow(0, 0, 4);
  CHECK(max_diff(rnn_tanh_cell(x, h, w1, v1), (x.matmul(w1.t()) + h.matmul(v1.t())).tanh()) < 1e-14);
  CHECK(max_diff(rnn_relu_cell(x, h, w1, v1, bi.narrow(0, 0, 4)),
                 (x.matmul(w1.t()) + bi.narrow(0, 0, 4) + h.matmul(v1.t())).relu()) < 1e-14);
  // The same as the modules with these weights.
  nn::GRUCell cell(3, 4);
  cell->to(DType::F64);
  {
    NoGradGuard no_grad;
    cell->weight_ih.copy_(wi3), cell->weight_hh.copy_(wh3), cell->bias_ih.copy_(bi3), cell->bias_hh.copy_(bh3);
  }
  CHECK(max_diff(cell(x, h), gru_cell(x, h, wi3, wh3, bi3, bh3)) == 0.0);
  // Gradients, to second order.
  std::string why;
  CHECK_MESSAGE(autograd::gradcheck([&](const std::vector<Tensor>& in) { return std::get<1>(lstm_cell(in[0], {in[1], c}, in[2], wh, bi, bh)); },
                                    {x.detach().requires_grad_(), h.detach().requires_grad_(), wi.detach().requires_grad_()}, {}, &why),
                why);
  CHECK_MESSAGE(autograd::gradgradcheck([&](const std::vector<Tensor>& in) { return gru_cell(in[0], in[1], wi3, wh3); },
                                        {x.detach().requires_grad_(), h.detach().requires_grad_()}, {}, &why),
                why);
  // Hidden size 0: empty states, as PyTorch's (the gates were once cut by dividing by it);
  // the cell modules too.
  auto [h0, c0] = lstm_cell(x, {zeros({2, 0}, kFloat64), zeros({2, 0}, kFloat64)}, zeros({0, 3}, kFloat64),
                            zeros({0, 0}, kFloat64));
  CHECK(h0.sizes() == Shape({2, 0}));
  CHECK(c0.sizes() == Shape({2, 0}));
  CHECK(gru_cell(x, zeros({2, 0}, kFloat64), zeros({0, 3}, kFloat64), zeros({0, 0}, kFloat64)).sizes() == Shape({2, 0}));
  nn::LSTMCell empty_cell(3, 0);
  CHECK(empty_cell(randn({2, 3})).first.sizes() == Shape({2, 0}));
  // Both outputs of lstm_cell against finite differences in every argument.
  CHECK_MESSAGE(autograd::gradcheck(
                    [&](const std::vector<Tensor>& in) {
                      auto [ho, co] = lstm_cell(in[0], {in[1], in[2]}, in[3], in[4], in[5], in[6]);
                      return ho + co * 0.5;
                    },
                    {x.detach().requires_grad_(), h.detach().requires_grad_(), c.detach().requires_grad_(),
                     wi.detach().requires_grad_(), wh.detach().requires_grad_(), bi.detach().requires_grad_(),
                     bh.detach().requires_grad_()},
                    {}, &why),
                why);
  // Errors name the function.
  CHECK_THROWS_WITH_AS(lstm_cell(x, {h}, wi, wh), doctest::Contains("[lstm_cell] expects two states (h, c), got 1"), Error);
  CHECK_THROWS_WITH_AS(rnn_tanh_cell(x, h.narrow(1, 0, 2), w1, v1),
                       doctest::Contains("[rnn_tanh_cell] a state of shape [2, 2] does not fit input [2, 3] (expected [2, 4])"),
                       Error);
  CHECK_THROWS_WITH_AS(rnn_tanh_cell(x, h, w1, v1, bi.narrow(0, 0, 3)),
                       doctest::Contains("[rnn_tanh_cell] a bias of shape [3] must be (4)"), Error);
  CHECK_THROWS_WITH_AS(gru_cell(x.narrow(1, 0, 2), h, wi3, wh3),
                       doctest::Contains("[gru_cell] w_ih of shape [12, 3] must be (12, 2)"), Error);
  CHECK_THROWS_WITH_AS(gru_cell(x, h, wi3, wh), doctest::Contains("[gru_cell] w_hh of shape [16, 4] must be (3 * hidden, hidden)"),
                       Error);
  CHECK_THROWS_WITH_AS(rnn_relu_cell(randn({2, 2, 3}), h, w1, v1), doctest::Contains("[rnn_relu_cell] expects an (N, input)"),
                       Error);
  CHECK_THROWS_WITH_AS(gru_cell(x, Tensor(), wi3, wh3), doctest::Contains("[gru_cell] needs a defined input"), Error);
  CHECK_THROWS_WITH_AS(gru_cell(x, h, wi3.to(DType::F32), wh3),
                       doctest::Contains("[gru_cell] states, weights and biases must be f64 on cpu as the input, got one f32 on cpu"),
                       Error);
}

}  // namespace test_sequence
