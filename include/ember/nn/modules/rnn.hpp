#pragma once
/// RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, initial states, dropout between
/// layers, packed sequences of different lengths, LSTM projections) and their cells, with
/// PyTorch's parameter names (weight_ih_l0, bias_hh_l1_reverse, weight_hr_l0, ...), gate order
/// (LSTM i f g o; GRU r z n) and init U(+-1/sqrt(hidden_size)).
/// The input projection of a whole sequence is one matrix product; the recurrence runs step
/// by step, each step's products through linear (weight gradients come out in the weights'
/// layout, the bias gradient in the same pass).

#include <ember/autocast/autocast_mode.hpp>
#include <ember/autograd/function.hpp>
#include <ember/nn/functional.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>
#include <ember/nn/utils_rnn.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace ember::nn {

enum class RnnKind { RnnTanh, RnnRelu, Lstm, Gru };

namespace detail {
inline int64_t gate_count(RnnKind k) { return k == RnnKind::Lstm ? 4 : k == RnnKind::Gru ? 3 : 1; }
inline const char* rnn_name(RnnKind k) { return k == RnnKind::Lstm ? "LSTM" : k == RnnKind::Gru ? "GRU" : "RNN"; }

/// x cut along `dim` into consecutive pieces of the given sizes (dropping the dim when
/// `squeeze`, all sizes 1): the steps of a sequence, the gates of a step. As narrow/select
/// views each piece's gradient would be a zero-filled tensor of x's shape with the piece
/// written, and the engine would add them all: for the 50 steps of an LSTM(32, 128) at batch
/// 16, 80 MB zeroed and summed per backward. Here the pieces are contiguous copies made by one
/// node, whose backward concatenates (or stacks) the pieces' gradients once.
template <class P>
struct Pieces : autograd::Function<Pieces<P>, P> {
  using T = BasicTensor<P>;
  static constexpr const char* name = "Pieces";
  static std::vector<T> forward(autograd::BasicAutogradContext<P>* ctx, const T& x, int64_t dim,
                                const std::vector<int64_t>& sizes, bool squeeze) {
    ctx->saved_data["shape"] = x.sizes();
    ctx->saved_data["sizes"] = sizes;
    ctx->saved_data["options"] = TensorOptions(x.dtype()).device(x.device());
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["squeeze"] = squeeze;
    std::vector<T> out;
    int64_t at = 0;
    for (int64_t size : sizes) {
      out.push_back(squeeze ? x.select(dim, at).contiguous() : x.narrow(dim, at, size).contiguous());
      at += size;
    }
    return out;
  }
  static std::vector<T> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<T> grads) {
    const int64_t dim = std::any_cast<int64_t>(ctx->saved_data["dim"]);
    const bool squeeze = std::any_cast<bool>(ctx->saved_data["squeeze"]);
    const auto& sizes = std::any_cast<const std::vector<int64_t>&>(ctx->saved_data["sizes"]);
    const TensorOptions options = std::any_cast<TensorOptions>(ctx->saved_data["options"]);
    for (size_t k = 0; k < grads.size(); ++k) {
      if (grads[k].defined()) continue;  // else a piece whose result was not used
      Shape piece = std::any_cast<Shape>(ctx->saved_data["shape"]);
      piece[static_cast<size_t>(dim)] = sizes[k];
      if (squeeze) piece.erase(static_cast<size_t>(dim));
      grads[k] = zeros<P>(piece, options);
    }
    return {squeeze ? stack(grads, dim) : cat(grads, dim), T(), T(), T()};
  }
};

/// x cut into pieces along dim (see Pieces): views without autograd or when nothing needs a
/// gradient, Pieces otherwise.
template <class P>
std::vector<BasicTensor<P>> pieces(const BasicTensor<P>& x, int64_t dim, const std::vector<int64_t>& sizes,
                                   bool squeeze) {
  if constexpr (autograd::detail::has_autograd<P>()) {
    if (x.requires_grad() && ember::detail::grad_enabled<P>()) return Pieces<P>::apply(x, dim, sizes, squeeze);
  }
  std::vector<BasicTensor<P>> out;
  int64_t at = 0;
  for (int64_t size : sizes) {
    out.push_back(squeeze ? x.select(dim, at) : x.narrow(dim, at, size));
    at += size;
  }
  return out;
}
/// x cut into equal pieces of `size` along dim.
template <class P>
std::vector<BasicTensor<P>> pieces(const BasicTensor<P>& x, int64_t dim, int64_t size, bool squeeze) {
  EMBER_CHECK(size > 0, "[RNN] pieces of size {} along dim {} of shape {}", size, dim, x.sizes());
  return pieces(x, dim, std::vector<int64_t>(static_cast<size_t>(x.size(dim) / size), size), squeeze);
}

/// One step: returns the new h (and c for LSTM). `xg` = x W_ih^T + b_ih already computed.
/// An LSTM with a projection (w_hr defined) returns h = w_hr (o * tanh(c)).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> rnn_step(RnnKind kind, const BasicTensor<P>& xg, const BasicTensor<P>& h,
                                                   const BasicTensor<P>& c, const BasicTensor<P>& w_hh,
                                                   const BasicTensor<P>& b_hh, const BasicTensor<P>& w_hr = {}) {
  BasicTensor<P> hg = linear(h, w_hh, b_hh);
  const int64_t hs = hg.size(-1) / gate_count(kind), last = hg.dim() - 1;
  switch (kind) {
    case RnnKind::RnnTanh: return {(xg + hg).tanh(), {}};
    case RnnKind::RnnRelu: return {(xg + hg).relu(), {}};
    case RnnKind::Lstm: {
      // Counted, not divided: a hidden size of 0 gives four empty gates (PyTorch's (N, 0) states).
      std::vector<BasicTensor<P>> g = pieces(xg + hg, last, std::vector<int64_t>(4, hs), false);  // i f g o
      BasicTensor<P> i = g[0].sigmoid(), f = g[1].sigmoid(), cand = g[2].tanh(), o = g[3].sigmoid();
      BasicTensor<P> c2 = f * c + i * cand, h2 = o * c2.tanh();
      return {w_hr.defined() ? linear(h2, w_hr) : h2, c2};
    }
    case RnnKind::Gru: {
      const std::vector<int64_t> three(3, hs);
      std::vector<BasicTensor<P>> x3 = pieces(xg, last, three, false), h3 = pieces(hg, last, three, false);  // r z n
      BasicTensor<P> r = (x3[0] + h3[0]).sigmoid();
      BasicTensor<P> z = (x3[1] + h3[1]).sigmoid();
      BasicTensor<P> n = (x3[2] + r * h3[2]).tanh();
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
  /// LSTM only: > 0 projects each step's hidden state to this many features (weight_hr_l*),
  /// which become h and the output; c keeps hidden_size.
  EMBER_ARG(int64_t, proj_size) = 0;
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
    EMBER_CHECK(K == RnnKind::Lstm || options.proj_size() == 0,
                "[{}] proj_size is only supported for LSTM, got proj_size {}", op, options.proj_size());
    EMBER_CHECK(options.proj_size() >= 0 && options.proj_size() < options.hidden_size(),
                "[{}] proj_size must be in [0, hidden_size {}), got {}", op, options.hidden_size(),
                options.proj_size());
    int64_t h = options.hidden_size(), g = ember::detail::checked_mul(detail::gate_count(K), h, op),
            dirs = options.bidirectional() ? 2 : 1, out = output_size();
    double bound = h > 0 ? 1.0 / std::sqrt(static_cast<double>(h)) : 0.0;  // as PyTorch: 0 for an empty layer
    weights.clear();
    for (int64_t l = 0; l < options.num_layers(); ++l)
      for (int64_t d = 0; d < dirs; ++d) {
        std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
        int64_t in = l == 0 ? options.input_size() : out * dirs;
        Layer w;
        w.w_ih = this->register_parameter("weight_ih" + sfx, empty<P>({g, in}));
        w.w_hh = this->register_parameter("weight_hh" + sfx, empty<P>({g, out}));
        if (options.bias()) {
          w.b_ih = this->register_parameter("bias_ih" + sfx, empty<P>({g}));
          w.b_hh = this->register_parameter("bias_hh" + sfx, empty<P>({g}));
        }
        if (options.proj_size() > 0) w.w_hr = this->register_parameter("weight_hr" + sfx, empty<P>({out, h}));
        for (TensorT* t : {&w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh, &w.w_hr})
          if (t->defined()) init::uniform_(*t, -bound, bound);
        weights.push_back(w);
      }
  }

  /// The features of h and of each direction's output: proj_size, or hidden_size without a
  /// projection.
  int64_t output_size() const { return options.proj_size() > 0 ? options.proj_size() : options.hidden_size(); }

  /// input (L, N, in) [batch_first: (N, L, in)] or unbatched (L, in); h0 (layers * dirs, N,
  /// output_size()) and c0 (layers * dirs, N, hidden). Returns the output (L, N, dirs *
  /// output_size()) and the final states.
  std::tuple<TensorT, TensorT, TensorT> run(const TensorT& input, const TensorT& h0, const TensorT& c0) {
    const char* op = this->name().c_str();
    const int64_t dirs = options.bidirectional() ? 2 : 1;
    bool unbatched = input.dim() == 2;
    EMBER_CHECK(input.dim() == 3 || unbatched, "[{}] expects (L, N, {}) input (or (L, {})), got shape {}", op,
                options.input_size(), options.input_size(), input.sizes());
    EMBER_CHECK(input.size(-1) == options.input_size(), "[{}] expects {} input features, got shape {}", op,
                options.input_size(), input.sizes());
    TensorT x = unbatched ? input.unsqueeze(1) : (options.batch_first() ? input.transpose(0, 1) : input);
    int64_t len = x.size(0), n = x.size(1);
    EMBER_CHECK(len > 0, "[{}] expects a sequence of length > 0, got input of shape {}", op, input.sizes());
    TensorT hx = initial_state(h0, n, unbatched, "h0", input, output_size()),
            cx = K == RnnKind::Lstm ? initial_state(c0, n, unbatched, "c0", input, options.hidden_size()) : TensorT();
    // Every step runs the whole batch: the packed form with equal batch sizes.
    auto [data, h_n, c_n] = run_steps(x.reshape({len * n, x.size(2)}), std::vector<int64_t>(static_cast<size_t>(len), n),
                                      hx, cx);
    TensorT out = data.reshape({len, n, dirs * output_size()});
    if (unbatched) {
      out = out.squeeze(1), h_n = h_n.squeeze(1);
      if (c_n.defined()) c_n = c_n.squeeze(1);
    } else if (options.batch_first()) {
      out = out.transpose(0, 1);
    }
    return {out, h_n, c_n};
  }

  /// The packed form: sequences of different lengths (utils::rnn::pack_padded_sequence). h0
  /// and c0 are in the batch's original order, as are the final states returned.
  std::tuple<utils::rnn::BasicPackedSequence<P>, TensorT, TensorT> run_packed(
      const utils::rnn::BasicPackedSequence<P>& packed, const TensorT& h0, const TensorT& c0) {
    const char* op = this->name().c_str();
    const TensorT& data = packed.data();
    EMBER_CHECK(data.defined() && data.dim() == 2 && data.size(1) == options.input_size(),
                "[{}] expects packed data of shape (steps, {}), got {}", op, options.input_size(),
                data.defined() ? data.sizes() : Shape{});
    const std::vector<int64_t> batch_sizes = packed.checked_batch_sizes(op);
    const int64_t n = batch_sizes[0];
    // The states in the order the sequences were packed, and back.
    auto sorted = [&](const TensorT& s) {
      return packed.is_sorted() || !s.defined() ? s : s.index_select(1, packed.sorted_indices());
    };
    auto unsorted = [&](const TensorT& s) {
      return packed.is_sorted() || !s.defined() ? s : s.index_select(1, packed.unsorted_indices());
    };
    TensorT hx = sorted(initial_state(h0, n, false, "h0", data, output_size())),
            cx = K == RnnKind::Lstm ? sorted(initial_state(c0, n, false, "c0", data, options.hidden_size())) : TensorT();
    auto [out, h_n, c_n] = run_steps(data, batch_sizes, hx, cx);
    return {utils::rnn::BasicPackedSequence<P>(out, packed.batch_sizes(), packed.sorted_indices(),
                                               packed.unsorted_indices()),
            unsorted(h_n), unsorted(c_n)};
  }

 private:
  /// h0 or c0 as given, or zeros; `h`: its features.
  TensorT initial_state(const TensorT& s, int64_t n, bool unbatched, const char* what, const TensorT& like, int64_t h) {
    const int64_t rows = options.num_layers() * (options.bidirectional() ? 2 : 1);
    if (!s.defined()) return zeros<P>({rows, n, h}, TensorOptions(like.dtype()).device(like.device()));
    TensorT t = unbatched ? s.unsqueeze(1) : s;
    EMBER_CHECK(t.sizes() == Shape({rows, n, h}), "[{}] {} must have shape ({}, {}, {}), got {}", this->name(), what,
                rows, n, h, s.sizes());
    return t;
  }

  /// The recurrence over packed steps: `data` (total, features) holds step t's rows for the
  /// batch_sizes[t] sequences still running (longest first, so those are rows 0..batch_sizes[t]
  /// of the batch), one step after another; a padded (L, N, F) input reshaped is the case of
  /// equal sizes. hx (layers * dirs, N, output_size()) and cx (layers * dirs, N, hidden).
  /// Returns the output data (total, dirs * output_size()) and the final states: each
  /// sequence's after its own last step (the reverse direction starts each sequence at its own
  /// end, from its initial state).
  std::tuple<TensorT, TensorT, TensorT> run_steps(const TensorT& data, const std::vector<int64_t>& batch_sizes,
                                                  const TensorT& hx, const TensorT& cx) {
    const int64_t dirs = options.bidirectional() ? 2 : 1, layers = options.num_layers();
    const int64_t len = static_cast<int64_t>(batch_sizes.size()), n = batch_sizes[0];
    RnnKind kind = K;
    if (K != RnnKind::Lstm && K != RnnKind::Gru) kind = options.nonlinearity() == "relu" ? RnnKind::RnnRelu : RnnKind::RnnTanh;
    // Rows that stopped (or, in reverse, have not started) keep their state: the running ones
    // step, the rest are carried over.
    auto merge = [&](const TensorT& stepped, const TensorT& state) {
      const int64_t running = stepped.size(0);
      return running == n ? stepped : cat({stepped, state.narrow(0, running, n - running)}, 0);
    };
    std::vector<TensorT> hn, cn;
    TensorT layer_in = data;
    for (int64_t l = 0; l < layers; ++l) {
      std::vector<TensorT> dir_out;
      for (int64_t d = 0; d < dirs; ++d) {
        const Layer& w = weights[static_cast<size_t>(l * dirs + d)];
        TensorT xg = linear(layer_in, w.w_ih, w.b_ih);  // (total, G*H): all steps at once
        std::vector<TensorT> xg_steps = detail::pieces(xg, 0, batch_sizes, false);
        TensorT ht = hx.select(0, l * dirs + d), ct = cx.defined() ? cx.select(0, l * dirs + d) : TensorT();
        std::vector<TensorT> steps(static_cast<size_t>(len));
        for (int64_t s = 0; s < len; ++s) {
          const int64_t t = d ? len - 1 - s : s, running = batch_sizes[static_cast<size_t>(t)];
          auto [h2, c2] = detail::rnn_step<P>(kind, xg_steps[static_cast<size_t>(t)],
                                              running == n ? ht : ht.narrow(0, 0, running),
                                              running == n || !ct.defined() ? ct : ct.narrow(0, 0, running), w.w_hh,
                                              w.b_hh, w.w_hr);
          steps[static_cast<size_t>(t)] = h2;
          ht = merge(h2, ht);
          if (ct.defined()) ct = merge(c2, ct);
        }
        dir_out.push_back(cat(steps, 0));
        hn.push_back(ht);
        if (ct.defined()) cn.push_back(ct);
      }
      layer_in = dirs == 1 ? dir_out[0] : cat(dir_out, 1);
      if (l + 1 < layers && options.dropout() > 0) layer_in = F::dropout(layer_in, options.dropout(), this->is_training());
    }
    return {layer_in, stack(hn, 0), cn.empty() ? TensorT() : stack(cn, 0)};
  }

 public:
  std::string extra_repr() const override {
    std::string s = EMBER_FORMAT("{}, {}", options.input_size(), options.hidden_size());
    if (options.proj_size() > 0) s += EMBER_FORMAT(", proj_size={}", options.proj_size());
    if (options.num_layers() != 1) s += EMBER_FORMAT(", num_layers={}", options.num_layers());
    if (!options.bias()) s += ", bias=False";
    if (options.batch_first()) s += ", batch_first=True";
    if (options.dropout() != 0) s += EMBER_FORMAT(", dropout={}", options.dropout());
    if (options.bidirectional()) s += ", bidirectional=True";
    return s;
  }

  struct Layer {
    TensorT w_ih, w_hh, b_ih, b_hh, w_hr;  ///< w_hr: LSTM's projection, when proj_size > 0
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
  /// Sequences of different lengths, packed: (packed output, h_n).
  std::pair<utils::rnn::BasicPackedSequence<P>, TensorT> forward_with_packed_input(
      const utils::rnn::BasicPackedSequence<P>& input, const TensorT& h0 = {}) {
    auto [o, h, c] = this->run_packed(input, h0, {});
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
  /// Sequences of different lengths, packed: (packed output, (h_n, c_n)).
  std::pair<utils::rnn::BasicPackedSequence<P>, std::pair<TensorT, TensorT>> forward_with_packed_input(
      const utils::rnn::BasicPackedSequence<P>& input, const std::pair<TensorT, TensorT>& state = {}) {
    auto [o, h, c] = this->run_packed(input, state.first, state.second);
    return {o, {h, c}};
  }
  /// The state as a std::tuple, as libtorch's forward(x, std::make_tuple(h0, c0)). A template,
  /// so that a braced {h0, c0} still goes to the pair form above.
  template <class H, class C>
    requires std::is_convertible_v<H, TensorT> && std::is_convertible_v<C, TensorT>
  std::pair<TensorT, std::pair<TensorT, TensorT>> forward(const TensorT& input, const std::tuple<H, C>& state) {
    return forward(input, std::pair<TensorT, TensorT>(std::get<0>(state), std::get<1>(state)));
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
  /// Sequences of different lengths, packed: (packed output, h_n).
  std::pair<utils::rnn::BasicPackedSequence<P>, TensorT> forward_with_packed_input(
      const utils::rnn::BasicPackedSequence<P>& input, const TensorT& h0 = {}) {
    auto [o, h, c] = this->run_packed(input, h0, {});
    return {o, h};
  }
};
using RNNImpl = BasicRNNImpl<>;
using LSTMImpl = BasicLSTMImpl<>;
using GRUImpl = BasicGRUImpl<>;
EMBER_MODULE(RNN);
template <class P = DefaultPolicy>
using BasicRNN = detail::PolicyHolder<P, RNN, BasicRNNImpl<P>>;
EMBER_MODULE(LSTM);
template <class P = DefaultPolicy>
using BasicLSTM = detail::PolicyHolder<P, LSTM, BasicLSTMImpl<P>>;
EMBER_MODULE(GRU);
template <class P = DefaultPolicy>
using BasicGRU = detail::PolicyHolder<P, GRU, BasicGRUImpl<P>>;

namespace detail {
/// One step of a cell with the weights given, as libtorch's functional cells: input (N, I) or
/// unbatched (I); states (N, H) or (H); w_ih (G H, I), w_hh (G H, H), biases (G H) or
/// undefined, G the kind's gate count. Returns (h, c) (c undefined but for LSTM).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> functional_cell(RnnKind kind, const BasicTensor<P>& input,
                                                          const BasicTensor<P>& h, const BasicTensor<P>& c,
                                                          const BasicTensor<P>& w_ih, const BasicTensor<P>& w_hh,
                                                          const BasicTensor<P>& b_ih, const BasicTensor<P>& b_hh,
                                                          const char* op) {
  EMBER_CHECK(input.defined() && h.defined() && w_ih.defined() && w_hh.defined() && (kind != RnnKind::Lstm || c.defined()),
              "[{}] needs a defined input, state{} and weights", op, kind == RnnKind::Lstm ? "s" : "");
  const int64_t gates = gate_count(kind);
  EMBER_CHECK(w_hh.dim() == 2 && w_hh.size(0) == gates * w_hh.size(1),
              "[{}] w_hh of shape {} must be ({} * hidden, hidden)", op, w_hh.sizes(), gates);
  const int64_t hidden = w_hh.size(1);
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2, "[{}] expects an (N, input) or (input) input, got shape {}", op,
              input.sizes());
  EMBER_CHECK(w_ih.dim() == 2 && w_ih.size(0) == gates * hidden && w_ih.size(1) == input.size(-1),
              "[{}] w_ih of shape {} must be ({}, {}) for input {} and hidden size {}", op, w_ih.sizes(), gates * hidden,
              input.size(-1), input.sizes(), hidden);
  for (const BasicTensor<P>* b : {&b_ih, &b_hh})
    EMBER_CHECK(!b->defined() || b->sizes() == Shape({gates * hidden}), "[{}] a bias of shape {} must be ({})", op,
                b->sizes(), gates * hidden);
  // Under autocast the projections may meet another floating dtype (linear casts them).
  for (const BasicTensor<P>* t : {&h, &c, &w_ih, &w_hh, &b_ih, &b_hh})
    EMBER_CHECK(!t->defined() || ((t->dtype() == input.dtype() || autocast::is_enabled()) && t->device() == input.device()),
                "[{}] states, weights and biases must be {} on {} as the input, got one {} on {}", op, input.dtype(),
                input.device(), t->dtype(), t->device());
  // The states must be exactly (N, hidden) for an (N, input) input: broadcasting would hide a
  // state of another batch (PyTorch: "Input batch size 2 doesn't match hidden batch size 1").
  Shape state = input.sizes();
  state[state.size() - 1] = hidden;
  for (const BasicTensor<P>* st : {&h, &c})
    EMBER_CHECK(!st->defined() || st->sizes() == state, "[{}] a state of shape {} does not fit input {} (expected {})",
                op, st->sizes(), input.sizes(), state);
  return rnn_step<P>(kind, linear(input, w_ih, b_ih), h, c, w_hh, b_hh);  // 1-d (unbatched) as well
}
}  // namespace detail

/// libtorch's cell options: RNNCell(RNNCellOptions(8, 16).nonlinearity(kReLU)).
struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  EMBER_ARG(int64_t, input_size);
  EMBER_ARG(int64_t, hidden_size);
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(std::string, nonlinearity) = "tanh";  ///< tanh or relu (kTanh, kReLU)
};
/// LSTMCell's and GRUCell's: without a nonlinearity.
struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  EMBER_ARG(int64_t, input_size);
  EMBER_ARG(int64_t, hidden_size);
  EMBER_ARG(bool, bias) = true;
};
using GRUCellOptions = LSTMCellOptions;

/// One step cells: weight_ih, weight_hh, bias_ih, bias_hh as PyTorch.
template <class Derived, RnnKind K, class P>
class BasicRNNCellImplBase : public Cloneable<Derived, P> {
 public:
  using TensorT = BasicTensor<P>;
  using Options = std::conditional_t<K == RnnKind::Lstm || K == RnnKind::Gru, LSTMCellOptions, RNNCellOptions>;
  BasicRNNCellImplBase(int64_t input, int64_t hidden, bool bias = true, std::string nonlinearity = "tanh")
      : Cloneable<Derived, P>(K == RnnKind::Lstm ? "LSTMCell" : K == RnnKind::Gru ? "GRUCell" : "RNNCell"),
        input_size(input), hidden_size(hidden), bias(bias), nonlinearity(std::move(nonlinearity)) {
    reset();
  }
  explicit BasicRNNCellImplBase(const Options& o)
      : BasicRNNCellImplBase(o.input_size(), o.hidden_size(), o.bias(), nonlinearity_of(o)) {}
  void reset() override {
    EMBER_CHECK(K != RnnKind::RnnTanh || nonlinearity == "tanh" || nonlinearity == "relu",
                "[RNNCell] unknown nonlinearity '{}' (tanh or relu)", nonlinearity);
    int64_t g = detail::gate_count(K) * hidden_size;
    double bound = hidden_size > 0 ? 1.0 / std::sqrt(static_cast<double>(hidden_size)) : 0.0;  // as PyTorch
    weight_ih = this->register_parameter("weight_ih", empty<P>({g, input_size}));
    weight_hh = this->register_parameter("weight_hh", empty<P>({g, hidden_size}));
    bias_ih = this->register_parameter("bias_ih", bias ? empty<P>({g}) : TensorT());
    bias_hh = this->register_parameter("bias_hh", bias ? empty<P>({g}) : TensorT());
    for (TensorT* t : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
      if (t->defined()) init::uniform_(*t, -bound, bound);
  }
  static std::string nonlinearity_of(const Options& o) {
    if constexpr (requires { o.nonlinearity(); }) return o.nonlinearity();
    else return "tanh";
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
    RnnKind kind = K;
    if (K != RnnKind::Lstm && K != RnnKind::Gru) kind = nonlinearity == "relu" ? RnnKind::RnnRelu : RnnKind::RnnTanh;
    // The functional cell's step, which checks the states' shapes (and dtypes) under this name.
    return detail::functional_cell<P>(kind, x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, this->name().c_str());
  }
  std::string extra_repr() const override { return EMBER_FORMAT("{}, {}", input_size, hidden_size); }
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
template <class P = DefaultPolicy>
using BasicRNNCell = detail::PolicyHolder<P, RNNCell, BasicRNNCellImpl<P>>;
EMBER_MODULE(LSTMCell);
template <class P = DefaultPolicy>
using BasicLSTMCell = detail::PolicyHolder<P, LSTMCell, BasicLSTMCellImpl<P>>;
EMBER_MODULE(GRUCell);
template <class P = DefaultPolicy>
using BasicGRUCell = detail::PolicyHolder<P, GRUCell, BasicGRUCellImpl<P>>;


}  // namespace ember::nn

namespace ember {

/// libtorch's functional cells (torch::lstm_cell, ...): one step with the weights passed in,
/// the computation of nn::LSTMCell, GRUCell and RNNCell. hx of lstm_cell is {h, c}. An
/// unbatched (I) input with (H) states is Ember's extension (libtorch's needs (N, I)).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> lstm_cell(const BasicTensor<P>& input, const std::vector<BasicTensor<P>>& hx,
                                                     const BasicTensor<P>& w_ih, const BasicTensor<P>& w_hh,
                                                     const BasicTensor<P>& b_ih = {}, const BasicTensor<P>& b_hh = {}) {
  EMBER_CHECK(hx.size() == 2, "[lstm_cell] expects two states (h, c), got {}", hx.size());
  auto [h, c] = nn::detail::functional_cell(nn::RnnKind::Lstm, input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh, "lstm_cell");
  return {h, c};
}
template <class P>
BasicTensor<P> gru_cell(const BasicTensor<P>& input, const BasicTensor<P>& hx, const BasicTensor<P>& w_ih,
                        const BasicTensor<P>& w_hh, const BasicTensor<P>& b_ih = {}, const BasicTensor<P>& b_hh = {}) {
  return nn::detail::functional_cell(nn::RnnKind::Gru, input, hx, BasicTensor<P>(), w_ih, w_hh, b_ih, b_hh, "gru_cell")
      .first;
}
template <class P>
BasicTensor<P> rnn_tanh_cell(const BasicTensor<P>& input, const BasicTensor<P>& hx, const BasicTensor<P>& w_ih,
                             const BasicTensor<P>& w_hh, const BasicTensor<P>& b_ih = {},
                             const BasicTensor<P>& b_hh = {}) {
  return nn::detail::functional_cell(nn::RnnKind::RnnTanh, input, hx, BasicTensor<P>(), w_ih, w_hh, b_ih, b_hh,
                                     "rnn_tanh_cell")
      .first;
}
template <class P>
BasicTensor<P> rnn_relu_cell(const BasicTensor<P>& input, const BasicTensor<P>& hx, const BasicTensor<P>& w_ih,
                             const BasicTensor<P>& w_hh, const BasicTensor<P>& b_ih = {},
                             const BasicTensor<P>& b_hh = {}) {
  return nn::detail::functional_cell(nn::RnnKind::RnnRelu, input, hx, BasicTensor<P>(), w_ih, w_hh, b_ih, b_hh,
                                     "rnn_relu_cell")
      .first;
}

}  // namespace ember
