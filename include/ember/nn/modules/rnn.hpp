#pragma once
/// RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, initial states, dropout between
/// layers) and their cells, with PyTorch's parameter names (weight_ih_l0, bias_hh_l1_reverse,
/// ...), gate order (LSTM i f g o; GRU r z n) and init U(+-1/sqrt(hidden_size)).
/// The input projection of a whole sequence is one matrix product; the recurrence runs step
/// by step.

#include <ember/nn/functional.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace ember::nn {

enum class RnnKind { RnnTanh, RnnRelu, Lstm, Gru };

namespace detail {
inline int64_t gate_count(RnnKind k) { return k == RnnKind::Lstm ? 4 : k == RnnKind::Gru ? 3 : 1; }
inline const char* rnn_name(RnnKind k) { return k == RnnKind::Lstm ? "LSTM" : k == RnnKind::Gru ? "GRU" : "RNN"; }

/// One step: returns the new h (and c for LSTM). `xg` = x W_ih^T + b_ih already computed.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> rnn_step(RnnKind kind, const BasicTensor<P>& xg, const BasicTensor<P>& h,
                                                   const BasicTensor<P>& c, const BasicTensor<P>& w_hh,
                                                   const BasicTensor<P>& b_hh) {
  BasicTensor<P> hg = h.matmul(w_hh.t());
  if (b_hh.defined()) hg = hg + b_hh;
  int64_t hs = h.size(-1);
  switch (kind) {
    case RnnKind::RnnTanh: return {(xg + hg).tanh(), {}};
    case RnnKind::RnnRelu: return {(xg + hg).relu(), {}};
    case RnnKind::Lstm: {
      BasicTensor<P> g = xg + hg;
      BasicTensor<P> i = g.narrow(-1, 0, hs).sigmoid(), f = g.narrow(-1, hs, hs).sigmoid();
      BasicTensor<P> cand = g.narrow(-1, 2 * hs, hs).tanh(), o = g.narrow(-1, 3 * hs, hs).sigmoid();
      BasicTensor<P> c2 = f * c + i * cand;
      return {o * c2.tanh(), c2};
    }
    case RnnKind::Gru: {
      BasicTensor<P> r = (xg.narrow(-1, 0, hs) + hg.narrow(-1, 0, hs)).sigmoid();
      BasicTensor<P> z = (xg.narrow(-1, hs, hs) + hg.narrow(-1, hs, hs)).sigmoid();
      BasicTensor<P> n = (xg.narrow(-1, 2 * hs, hs) + r * hg.narrow(-1, 2 * hs, hs)).tanh();
      return {(1.0 - z) * n + z * h, {}};
    }
  }
  return {};
}
}  // namespace detail

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  EMBER_ARG(int64_t, input_size);
  EMBER_ARG(int64_t, hidden_size);
  EMBER_ARG(int64_t, num_layers) = 1;
  EMBER_ARG(std::string, nonlinearity) = "tanh";  ///< RNN only: tanh or relu
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(bool, batch_first) = false;
  EMBER_ARG(double, dropout) = 0.0;
  EMBER_ARG(bool, bidirectional) = false;
};
using LSTMOptions = RNNOptions;
using GRUOptions = RNNOptions;

/// The shared implementation of RNN, LSTM and GRU.
template <class Derived, RnnKind K, class P>
class BasicRNNImplBase : public Cloneable<Derived, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicRNNImplBase(int64_t input, int64_t hidden) : BasicRNNImplBase(RNNOptions(input, hidden)) {}
  explicit BasicRNNImplBase(const RNNOptions& o) : Cloneable<Derived, P>(detail::rnn_name(K)), options(o) {
    reset();
  }
  void reset() override {
    const char* op = this->name().c_str();
    EMBER_CHECK(options.num_layers() >= 1 && options.hidden_size() >= 1 && options.input_size() >= 1,
                "[{}] input_size, hidden_size and num_layers must be positive, got {}, {} and {}", op,
                options.input_size(), options.hidden_size(), options.num_layers());
    EMBER_CHECK(options.dropout() >= 0 && options.dropout() <= 1, "[{}] dropout must be in [0, 1], got {}", op,
                options.dropout());
    if (K != RnnKind::Lstm && K != RnnKind::Gru)
      EMBER_CHECK(options.nonlinearity() == "tanh" || options.nonlinearity() == "relu",
                  "[RNN] nonlinearity must be 'tanh' or 'relu', got '{}'", options.nonlinearity());
    int64_t h = options.hidden_size(), g = detail::gate_count(K) * h, dirs = options.bidirectional() ? 2 : 1;
    double bound = 1.0 / std::sqrt(static_cast<double>(h));
    weights.clear();
    for (int64_t l = 0; l < options.num_layers(); ++l)
      for (int64_t d = 0; d < dirs; ++d) {
        std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
        int64_t in = l == 0 ? options.input_size() : h * dirs;
        Layer w;
        w.w_ih = this->register_parameter("weight_ih" + sfx, empty<P>({g, in}));
        w.w_hh = this->register_parameter("weight_hh" + sfx, empty<P>({g, h}));
        if (options.bias()) {
          w.b_ih = this->register_parameter("bias_ih" + sfx, empty<P>({g}));
          w.b_hh = this->register_parameter("bias_hh" + sfx, empty<P>({g}));
        }
        for (TensorT* t : {&w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh})
          if (t->defined()) init::uniform_(*t, -bound, bound);
        weights.push_back(w);
      }
  }

  /// input (L, N, in) [batch_first: (N, L, in)] or unbatched (L, in); h0 (and c0)
  /// (layers * dirs, N, hidden). Returns the output (L, N, dirs * hidden) and the final states.
  std::tuple<TensorT, TensorT, TensorT> run(const TensorT& input, const TensorT& h0, const TensorT& c0) {
    const char* op = this->name().c_str();
    int64_t h = options.hidden_size(), dirs = options.bidirectional() ? 2 : 1, layers = options.num_layers();
    bool unbatched = input.dim() == 2;
    EMBER_CHECK(input.dim() == 3 || unbatched, "[{}] expects (L, N, {}) input (or (L, {})), got shape {}", op,
                options.input_size(), options.input_size(), input.sizes());
    EMBER_CHECK(input.size(-1) == options.input_size(), "[{}] expects {} input features, got shape {}", op,
                options.input_size(), input.sizes());
    TensorT x = unbatched ? input.unsqueeze(1) : (options.batch_first() ? input.transpose(0, 1) : input);
    int64_t len = x.size(0), n = x.size(1);
    auto init_state = [&](const TensorT& s, const char* what) {
      if (!s.defined()) return zeros<P>({layers * dirs, n, h}, TensorOptions(input.dtype()).device(input.device()));
      TensorT t = unbatched ? s.unsqueeze(1) : s;
      EMBER_CHECK(t.sizes() == Shape({layers * dirs, n, h}), "[{}] {} must have shape ({}, {}, {}), got {}", op, what,
                  layers * dirs, n, h, s.sizes());
      return t;
    };
    TensorT hx = init_state(h0, "h0"), cx = K == RnnKind::Lstm ? init_state(c0, "c0") : TensorT();
    RnnKind kind = K;
    if (K != RnnKind::Lstm && K != RnnKind::Gru) kind = options.nonlinearity() == "relu" ? RnnKind::RnnRelu : RnnKind::RnnTanh;
    std::vector<TensorT> hn, cn;
    TensorT layer_in = x;
    for (int64_t l = 0; l < layers; ++l) {
      std::vector<TensorT> dir_out;
      for (int64_t d = 0; d < dirs; ++d) {
        const Layer& w = weights[static_cast<size_t>(l * dirs + d)];
        TensorT xg = layer_in.matmul(w.w_ih.t());  // (L, N, G*H): all steps at once
        if (w.b_ih.defined()) xg = xg + w.b_ih;
        TensorT ht = hx.select(0, l * dirs + d), ct = cx.defined() ? cx.select(0, l * dirs + d) : TensorT();
        std::vector<TensorT> steps(static_cast<size_t>(len));
        for (int64_t s = 0; s < len; ++s) {
          int64_t t = d ? len - 1 - s : s;
          auto [hn2, cn2] = detail::rnn_step<P>(kind, xg.select(0, t), ht, ct, w.w_hh, w.b_hh);
          ht = hn2, ct = cn2;
          steps[static_cast<size_t>(t)] = ht;
        }
        dir_out.push_back(stack(steps, 0));
        hn.push_back(ht);
        if (ct.defined()) cn.push_back(ct);
      }
      layer_in = dirs == 1 ? dir_out[0] : cat(dir_out, 2);
      if (l + 1 < layers && options.dropout() > 0) layer_in = F::dropout(layer_in, options.dropout(), this->is_training());
    }
    TensorT out = layer_in, h_n = stack(hn, 0), c_n = cn.empty() ? TensorT() : stack(cn, 0);
    if (unbatched) {
      out = out.squeeze(1), h_n = h_n.squeeze(1);
      if (c_n.defined()) c_n = c_n.squeeze(1);
    } else if (options.batch_first()) {
      out = out.transpose(0, 1);
    }
    return {out, h_n, c_n};
  }
  std::string extra_repr() const override {
    std::string s = fmt::format("{}, {}", options.input_size(), options.hidden_size());
    if (options.num_layers() != 1) s += fmt::format(", num_layers={}", options.num_layers());
    if (!options.bias()) s += ", bias=False";
    if (options.batch_first()) s += ", batch_first=True";
    if (options.dropout() != 0) s += fmt::format(", dropout={}", options.dropout());
    if (options.bidirectional()) s += ", bidirectional=True";
    return s;
  }

  struct Layer {
    TensorT w_ih, w_hh, b_ih, b_hh;
  };
  RNNOptions options;
  std::vector<Layer> weights;
};

/// RNN: forward(input, h0) -> (output, h_n).
template <class P = DefaultPolicy>
class BasicRNNImpl : public BasicRNNImplBase<BasicRNNImpl<P>, RnnKind::RnnTanh, P> {
 public:
  using BasicRNNImplBase<BasicRNNImpl<P>, RnnKind::RnnTanh, P>::BasicRNNImplBase;
  using TensorT = BasicTensor<P>;
  std::pair<TensorT, TensorT> forward(const TensorT& input, const TensorT& h0 = {}) {
    auto [o, h, c] = this->run(input, h0, {});
    return {o, h};
  }
};
/// LSTM: forward(input, {h0, c0}) -> (output, (h_n, c_n)).
template <class P = DefaultPolicy>
class BasicLSTMImpl : public BasicRNNImplBase<BasicLSTMImpl<P>, RnnKind::Lstm, P> {
 public:
  using BasicRNNImplBase<BasicLSTMImpl<P>, RnnKind::Lstm, P>::BasicRNNImplBase;
  using TensorT = BasicTensor<P>;
  std::pair<TensorT, std::pair<TensorT, TensorT>> forward(const TensorT& input,
                                                          const std::pair<TensorT, TensorT>& state = {}) {
    auto [o, h, c] = this->run(input, state.first, state.second);
    return {o, {h, c}};
  }
};
/// GRU: forward(input, h0) -> (output, h_n).
template <class P = DefaultPolicy>
class BasicGRUImpl : public BasicRNNImplBase<BasicGRUImpl<P>, RnnKind::Gru, P> {
 public:
  using BasicRNNImplBase<BasicGRUImpl<P>, RnnKind::Gru, P>::BasicRNNImplBase;
  using TensorT = BasicTensor<P>;
  std::pair<TensorT, TensorT> forward(const TensorT& input, const TensorT& h0 = {}) {
    auto [o, h, c] = this->run(input, h0, {});
    return {o, h};
  }
};
using RNNImpl = BasicRNNImpl<>;
using LSTMImpl = BasicLSTMImpl<>;
using GRUImpl = BasicGRUImpl<>;
EMBER_MODULE(RNN);
EMBER_MODULE(LSTM);
EMBER_MODULE(GRU);

/// One step cells: weight_ih, weight_hh, bias_ih, bias_hh as PyTorch.
template <class Derived, RnnKind K, class P>
class BasicRNNCellImplBase : public Cloneable<Derived, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicRNNCellImplBase(int64_t input, int64_t hidden, bool bias = true, std::string nonlinearity = "tanh")
      : Cloneable<Derived, P>(K == RnnKind::Lstm ? "LSTMCell" : K == RnnKind::Gru ? "GRUCell" : "RNNCell"),
        input_size(input), hidden_size(hidden), bias(bias), nonlinearity(std::move(nonlinearity)) {
    reset();
  }
  void reset() override {
    int64_t g = detail::gate_count(K) * hidden_size;
    double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
    weight_ih = this->register_parameter("weight_ih", empty<P>({g, input_size}));
    weight_hh = this->register_parameter("weight_hh", empty<P>({g, hidden_size}));
    bias_ih = this->register_parameter("bias_ih", bias ? empty<P>({g}) : TensorT());
    bias_hh = this->register_parameter("bias_hh", bias ? empty<P>({g}) : TensorT());
    for (TensorT* t : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
      if (t->defined()) init::uniform_(*t, -bound, bound);
  }
  /// One step; for LSTM returns (h, c), otherwise (h, undefined).
  std::pair<TensorT, TensorT> step(const TensorT& x, const TensorT& h0, const TensorT& c0) {
    EMBER_CHECK((x.dim() == 1 || x.dim() == 2) && x.size(-1) == input_size,
                "[{}] expects (N, {}) or ({}) input, got shape {}", this->name(), input_size, input_size, x.sizes());
    Shape hs = x.sizes();
    hs[hs.size() - 1] = hidden_size;
    TensorT h = h0.defined() ? h0 : zeros<P>(hs, TensorOptions(x.dtype()).device(x.device()));
    TensorT c = K == RnnKind::Lstm ? (c0.defined() ? c0 : zeros<P>(hs, TensorOptions(x.dtype()).device(x.device())))
                                   : TensorT();
    TensorT xg = x.matmul(weight_ih.t());
    if (bias_ih.defined()) xg = xg + bias_ih;
    RnnKind kind = K;
    if (K != RnnKind::Lstm && K != RnnKind::Gru) kind = nonlinearity == "relu" ? RnnKind::RnnRelu : RnnKind::RnnTanh;
    return detail::rnn_step<P>(kind, xg, h, c, weight_hh, bias_hh);
  }
  std::string extra_repr() const override { return fmt::format("{}, {}", input_size, hidden_size); }
  int64_t input_size, hidden_size;
  bool bias;
  std::string nonlinearity;
  TensorT weight_ih, weight_hh, bias_ih, bias_hh;
};

template <class P = DefaultPolicy>
class BasicRNNCellImpl : public BasicRNNCellImplBase<BasicRNNCellImpl<P>, RnnKind::RnnTanh, P> {
 public:
  using BasicRNNCellImplBase<BasicRNNCellImpl<P>, RnnKind::RnnTanh, P>::BasicRNNCellImplBase;
  BasicTensor<P> forward(const BasicTensor<P>& x, const BasicTensor<P>& h = {}) { return this->step(x, h, {}).first; }
};
template <class P = DefaultPolicy>
class BasicLSTMCellImpl : public BasicRNNCellImplBase<BasicLSTMCellImpl<P>, RnnKind::Lstm, P> {
 public:
  using BasicRNNCellImplBase<BasicLSTMCellImpl<P>, RnnKind::Lstm, P>::BasicRNNCellImplBase;
  std::pair<BasicTensor<P>, BasicTensor<P>> forward(const BasicTensor<P>& x,
                                                    const std::pair<BasicTensor<P>, BasicTensor<P>>& s = {}) {
    return this->step(x, s.first, s.second);
  }
};
template <class P = DefaultPolicy>
class BasicGRUCellImpl : public BasicRNNCellImplBase<BasicGRUCellImpl<P>, RnnKind::Gru, P> {
 public:
  using BasicRNNCellImplBase<BasicGRUCellImpl<P>, RnnKind::Gru, P>::BasicRNNCellImplBase;
  BasicTensor<P> forward(const BasicTensor<P>& x, const BasicTensor<P>& h = {}) { return this->step(x, h, {}).first; }
};
using RNNCellImpl = BasicRNNCellImpl<>;
using LSTMCellImpl = BasicLSTMCellImpl<>;
using GRUCellImpl = BasicGRUCellImpl<>;
EMBER_MODULE(RNNCell);
EMBER_MODULE(LSTMCell);
EMBER_MODULE(GRUCell);

}  // namespace ember::nn
