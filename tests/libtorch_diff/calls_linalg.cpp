// ember-vs-libtorch, the third set of call families: matrix products (mm, bmm, dot, outer,
// addmm, baddbmm, linear, bilinear) and the nn ops the first two sets left out (shrinks,
// threshold, logsigmoid, softmin, power-average pools, 3-d adaptive pools and transposed
// convolution, max_unpool1d, affine_grid, tile, argsort), and the attention and transformer
// modules against libtorch's. Random configurations, invalid ones
// included; values and, where the op has them, gradients (harness.hpp's named_call).

#include "harness.hpp"
#include "module_layout.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

namespace ediff {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

}  // namespace

void linalg_calls(Report& rep, const std::string& filter) {
  reseed("linalg");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 30; ++n) {
      // Sizes from 0 (empty products: zeros, or beta * c) up; one call in eight mismatches K.
      const int M = pick(0, 5), K = pick(0, 6), N = pick(0, 5), B = pick(1, 3);
      const int K2 = n % 8 == 7 ? K + 1 : K;
      const Buf a = random_operand(t, {M, K}), b = random_operand(t, {K2, N});
      named_call(rep, filter, "mm", {a, b}, {}, false, true);
      const Buf ba = random_operand(t, {B, M, K}), bb = random_operand(t, {B, K2, N});
      named_call(rep, filter, "bmm", {ba, bb}, {}, false, true);
      named_call(rep, filter, "dot", {random_operand(t, {K}), random_operand(t, {K2})}, {}, false, true);
      named_call(rep, filter, "outer", {random_operand(t, {M}), random_operand(t, {N})}, {}, false, true);
      // addmm/baddbmm: c full, a row (N), or a column (M, 1); beta 0 with NaN/inf in c.
      const double beta = n % 4 == 0 ? 0.0 : n % 4 == 1 ? 1.0 : 0.5, alpha = n % 3 == 0 ? 1.0 : -1.5;
      const bool dirty = beta == 0;
      const int shape = pick(0, 2);
      const Buf cm = shape == 0 ? random_operand(t, {M, N}, dirty) : shape == 1 ? random_operand(t, {N}, dirty) : random_operand(t, {M, 1}, dirty);
      named_call(rep, filter, "addmm", {cm, a, b}, {beta, alpha}, false, true);
      const Buf cb = shape == 0 ? random_operand(t, {B, M, N}, dirty) : random_operand(t, {M, N}, dirty);
      named_call(rep, filter, "baddbmm", {cb, ba, bb}, {beta, alpha}, false, true);
      // linear: input (K), (M, K) or (B, M, K); with and without bias.
      const Buf w = random_operand(t, {N, K2}), bias = random_operand(t, {N});
      const Buf x = n % 3 == 0 ? random_operand(t, {K}) : n % 3 == 1 ? a : ba;
      named_call(rep, filter, "linear", {x, w, bias}, {}, false, true);
      named_call(rep, filter, "linear", {x, w}, {}, false, true);
      // bilinear: (R, I1) and (R, I2) into (R, O).
      const int R = pick(1, 4), I1 = pick(1, 4), I2 = pick(1, 4), O = pick(1, 3);
      const Buf x1 = random_operand(t, {R, I1}), x2 = random_operand(t, {R, I2}), wb = random_operand(t, {O, I1, n % 8 == 3 ? I2 + 1 : I2});
      named_call(rep, filter, "bilinear", {x1, x2, wb, random_operand(t, {O})}, {}, false, true);
      named_call(rep, filter, "bilinear", {x1, x2, wb}, {}, false, true);
    }
  }
}

void more_nn_calls(Report& rep, const std::string& filter) {
  reseed("more nn");
  for (DT t : {DT::F32, DT::F64}) {
    const std::vector<Val> edges = specials(t);
    const Buf e = make_buf(t, edges, {static_cast<int64_t>(edges.size())});
    // Reversed too: libtorch's elementwise kernels treat a row's tail (its scalar loop) apart.
    const Buf r = make_buf(t, std::vector<Val>(edges.rbegin(), edges.rend()), {static_cast<int64_t>(edges.size())});
    for (double lambda : {0.0, 0.5, 2.0})
      for (const Buf& x : {e, r}) {
        named_call(rep, filter, "hardshrink", {x}, {lambda}, false, true);
        named_call(rep, filter, "softshrink", {x}, {lambda}, false, true);
      }
    named_call(rep, filter, "hardshrink", {e}, {-1.0}, false, true);  // a negative lambda: refused
    named_call(rep, filter, "tanhshrink", {e}, {}, true, true);
    for (double th : {0.0, 1.0, -1.5}) named_call(rep, filter, "threshold", {e}, {th, 20.0}, false, true);
    named_call(rep, filter, "logsigmoid", {e}, {}, true, true);
    for (int dim : {0, 1, -1}) named_call(rep, filter, "softmin", {tie_matrix(t)}, {d(dim)}, true, true);
    for (int n = 0; n < 30; ++n) {
      const int C = pick(1, 3), L = pick(1, 9), H = pick(1, 6), W = pick(1, 6);
      const double p = n % 3 == 0 ? 1.0 : n % 3 == 1 ? 2.0 : 3.5;
      // Positive inputs for the fractional power (PyTorch's x^p is NaN for negative x).
      const Buf x1 = random_buf(t, {2, C, L}, {n % 3 == 2 ? 0.1 : -2.0, 2}, false);
      const int k = pick(1, 4), s = pick(1, 3);
      named_call(rep, filter, "lp_pool1d", {x1}, {p, d(k), d(s), d(pick(0, 1))}, true, true);
      const Buf x2 = random_buf(t, {2, C, H, W}, {n % 3 == 2 ? 0.1 : -2.0, 2}, false);
      const int kh = pick(1, 3), kw = pick(1, 3);
      named_call(rep, filter, "lp_pool2d", {x2}, {p, d(kh), d(kw), d(pick(1, 2)), d(pick(1, 2)), d(pick(0, 1))}, true, true);
      const Buf x3 = random_buf(t, {1, C, pick(1, 5), pick(1, 5), pick(1, 5)}, {-2, 2}, false);
      const std::vector<double> out3 = {d(pick(1, 4)), d(pick(1, 4)), d(pick(1, 4))};
      named_call(rep, filter, "adaptive_avg_pool3d", {x3}, out3, false, true);
      named_call(rep, filter, "adaptive_max_pool3d", {x3}, out3, false, true);
      // conv_transpose3d: weight (C_in, C_out / groups, k...); output_padding < stride or dilation.
      const int groups = pick(1, 2), ci = C * groups, co = pick(1, 2) * groups, st = pick(1, 2), dil = pick(1, 2);
      const Buf xt = random_buf(t, {1, ci, pick(1, 4), pick(1, 4), pick(1, 4)}, {-2, 2}, false);
      const Buf wt = random_buf(t, {ci, co / groups, pick(1, 3), pick(1, 3), pick(1, 2)}, {-1, 1}, false);
      const double op = d(pick(0, std::max(st, dil) - 1));
      named_call(rep, filter, "conv_transpose3d", {xt, wt, random_buf(t, {co}, {-1, 1}, false)},
                 {d(st), d(st), d(st), d(pick(0, 1)), 0, d(pick(0, 1)), op, op, op, d(groups), d(dil), d(dil), d(dil)}, false,
                 true);
      // max_unpool1d: distinct positions per row in an output of length `out`.
      const int out = pick(2, 8), in = pick(1, out);
      std::vector<Val> pos;
      for (int row = 0; row < 2 * C; ++row) {
        std::vector<int64_t> perm(static_cast<size_t>(out));
        for (int i = 0; i < out; ++i) perm[static_cast<size_t>(i)] = i;
        std::shuffle(perm.begin(), perm.end(), rng());
        for (int i = 0; i < in; ++i) pos.push_back({d(perm[static_cast<size_t>(i)]), perm[static_cast<size_t>(i)]});
      }
      named_call(rep, filter, "max_unpool1d", {random_buf(t, {2, C, in}, {-2, 2}, false), make_buf(DT::I64, pos, {2, C, in})},
                 {d(out)}, false, true);
      // affine_grid: 2-d (N, 2, 3) and 3-d (N, 3, 4) transforms.
      const int Nb = pick(1, 2), align = pick(0, 1);
      named_call(rep, filter, "affine_grid", {random_buf(t, {Nb, 2, 3}, {-1.5, 1.5}, false)},
                 {d(Nb), d(C), d(H), d(W), d(align)}, false, true);
      named_call(rep, filter, "affine_grid", {random_buf(t, {Nb, 3, 4}, {-1.5, 1.5}, false)},
                 {d(Nb), d(C), d(pick(1, 4)), d(H), d(W), d(align)}, false, true);
      // interpolate over 1-d and 3-d inputs (nearest, linear/trilinear, nearest-exact, area),
      // by size or by scale factor, and 2-d with antialias (bilinear, bicubic; shrinking too).
      const int im = std::array<int, 4>{0, 1, 3, 4}[static_cast<size_t>(pick(0, 3))];
      const int corners = im == 1 ? pick(0, 1) : 0;
      if (n % 2 == 0) {
        named_call(rep, filter, "interpolate1d", {x1}, {d(pick(1, 12)), d(im), d(corners), 0}, true, true);
      } else if (im != 4) {
        const double f = pick(3, 30) / 10.0;
        const int out = static_cast<int>(std::floor(L * f));
        if (out > 0) named_call(rep, filter, "interpolate1d", {x1}, {d(out), d(im), d(corners), f}, true, true);
      }
      const Buf xv = random_buf(t, {1, C, pick(1, 4), pick(1, 4), pick(1, 4)}, {-2, 2}, false);
      named_call(rep, filter, "interpolate3d", {xv}, {d(pick(1, 6)), d(pick(1, 6)), d(pick(1, 6)), d(im), d(corners), 0, 0, 0},
                 true, true);
      const int aa_mode = pick(1, 2);
      named_call(rep, filter, "interpolate_aa", {x2}, {d(pick(1, 9)), d(pick(1, 9)), d(aa_mode), d(pick(0, 1))}, true, true);
      // Convolutions padded by name (same: stride 1, odd and even kernels, dilation) or numbers,
      // with the Conv modules' padding modes.
      for (int nd = 1; nd <= 3; ++nd) {
        const int g = pick(1, 2), cin = g * pick(1, 2), cout = g * pick(1, 2), name = pick(0, 2), mode = pick(0, 3);
        std::vector<int64_t> xs = {2, cin}, ws = {cout, cin / g};
        std::vector<double> a = {d(nd), d(name), d(mode), d(g)};
        std::vector<double> stride, numbers, dilation;
        for (int k = 0; k < nd; ++k) {
          xs.push_back(pick(3, 7));
          ws.push_back(pick(1, 4));
          stride.push_back(name == 1 ? 1 : d(pick(1, 2)));
          numbers.push_back(d(pick(0, 2)));
          dilation.push_back(d(pick(1, 2)));
        }
        a.insert(a.end(), stride.begin(), stride.end());
        a.insert(a.end(), numbers.begin(), numbers.end());
        a.insert(a.end(), dilation.begin(), dilation.end());
        std::vector<Buf> ins = {random_buf(t, xs, {-2, 2}, false), random_buf(t, ws, {-1, 1}, false)};
        if (pick(0, 1)) ins.push_back(random_buf(t, {cout}, {-1, 1}, false));
        named_call(rep, filter, "conv_padded", ins, a, false, true);
      }
      // tile: fewer, as many or more repeats than dims.
      const Buf tx = random_buf(t, {pick(1, 3), pick(1, 3)}, {-2, 2}, false);
      named_call(rep, filter, "tile", {tx}, {d(pick(1, 3))}, false, true);
      named_call(rep, filter, "tile", {tx}, {d(pick(1, 2)), d(pick(0, 2))}, false, true);
      named_call(rep, filter, "tile", {tx}, {2, d(pick(1, 2)), d(pick(1, 3))}, false, true);
    }
  }
  // argsort (stable, as the libtorch side sorts) over ties and edge values, every dtype.
  for (DT t : kAllDT)
    for (int dim : {0, 1})
      for (int desc : {0, 1}) named_call(rep, filter, "argsort", {tie_matrix(t)}, {d(dim), d(desc)}, false, false);
}

/// Index expressions mixing slices, integers, None, Ellipsis and index tensors (i64 with
/// negative entries and broadcasting shapes, bool masks over one or two dims), read and written
/// (index_put_ into a non-leaf), over a (4, 5, 6) tensor: where the advanced dims land in the
/// result (together, or first when slices separate them) is the part libraries get wrong.
void index_expr_calls(Report& rep, const std::string& filter) {
  reseed("index expressions");
  for (DT t : {DT::F32, DT::F64}) {
    const Buf x = random_buf(t, {4, 5, 6}, {-3, 3}, false);
    for (int n = 0; n < 150; ++n) {
      std::vector<double> codes;
      std::vector<Buf> ins = {x};
      const int slots = pick(1, 4);
      bool ellipsis = false;
      for (int k = 0; k < slots; ++k) {
        int code = pick(0, 7);
        if (code == 3 && ellipsis) code = 0;
        ellipsis = ellipsis || code == 3;
        if (code == 7 && pick(0, 3) == 0) {  // a bool mask over dim 1 (5) or dims 0-1 (4, 5)
          const bool two = pick(0, 1) != 0;
          ins.push_back(random_buf(DT::Bool, two ? std::vector<int64_t>{4, 5} : std::vector<int64_t>{5}, {0, 1}, false));
        } else if (code == 7) {  // i64 in [-4, 3]: valid for every dim; shapes that broadcast, or not
          const int shape = pick(0, 3);
          const std::vector<int64_t> s = shape == 0 ? std::vector<int64_t>{3}
                                         : shape == 1 ? std::vector<int64_t>{2, 1}
                                         : shape == 2 ? std::vector<int64_t>{1, 3}
                                                      : std::vector<int64_t>{};
          ins.push_back(random_buf(DT::I64, s, {-4, 3}, false));
        }
        codes.push_back(d(code));
      }
      named_call(rep, filter, "index_expr", ins, codes, false, true);
      // Written: 1 or 3 values, which broadcast to the indexed shape or not (both must refuse).
      std::vector<Buf> put = ins;
      put.push_back(random_buf(t, {pick(0, 1) ? 1 : 3}, {-3, 3}, false));
      named_call(rep, filter, "index_put_expr", put, codes, false, true);
    }
  }
}

/// nn::MultiheadAttention against torch::nn::MultiheadAttention with the same projections:
/// heads, key/value widths (packed or separate projections), bias, add_bias_kv,
/// add_zero_attn, key padding masks and boolean or additive attention masks (no row fully
/// masked: there the libraries differ on purpose), weights averaged or per head, or none.
void attention_calls(Report& rep, const std::string& filter) {
  reseed("attention");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 24; ++n) {
      const int heads = pick(1, 3), E = heads * pick(1, 3), L = pick(1, 4), S = pick(1, 4), N = pick(1, 2);
      // Keys and values of one width (libtorch's C++ frontend asserts it; PyTorch's Python does not).
      const int kd = n % 3 == 0 ? pick(1, 5) : E, vd = kd;
      const bool bias = n % 4 != 0;
      const Buf none = make_buf(t, {}, {0});
      std::vector<Buf> ins = {random_operand(t, {L, N, E}), random_operand(t, {S, N, kd}), random_operand(t, {S, N, vd})};
      auto weight = [&](int64_t rows, int64_t cols) {
        Buf w = random_buf(t, {rows, cols}, {-0.6, 0.6}, false);
        return w;
      };
      ins.push_back(weight(E, E));
      ins.push_back(weight(E, kd));
      ins.push_back(weight(E, vd));
      ins.push_back(bias ? random_buf(t, {3 * E}, {-0.3, 0.3}, false) : none);
      ins.push_back(weight(E, E));
      ins.push_back(bias ? random_buf(t, {E}, {-0.3, 0.3}, false) : none);
      // Masks: key 0 is never masked, so that no row is fully masked.
      std::vector<Val> kpm, bm;
      for (int i = 0; i < N * S; ++i) kpm.push_back({0, i % S != 0 && pick(0, 2) == 0});
      for (int i = 0; i < L * S; ++i) bm.push_back({0, i % S != 0 && pick(0, 2) == 0});
      ins.push_back(n % 2 ? make_buf(DT::Bool, kpm, {N, S}) : make_buf(DT::Bool, {}, {0}));
      const int mask_kind = pick(0, 2);
      ins.push_back(mask_kind == 0   ? make_buf(t, {}, {0})
                    : mask_kind == 1 ? make_buf(DT::Bool, bm, {L, S})
                                     : random_buf(t, {L, S}, {-2, 1}, false));
      const int need = pick(0, 1), average = pick(0, 1);
      // Appended keys: learned bias_k/bias_v (add_bias_kv), a zero key (add_zero_attn).
      const bool bias_kv = n % 5 == 2, zero_attn = n % 3 == 2;
      for (int j = 0; j < 2; ++j) ins.push_back(bias_kv ? random_buf(t, {1, 1, E}, {-0.6, 0.6}, false) : none);
      named_call(rep, filter, "mha", ins, {d(heads), d(need), d(average), d(zero_attn)}, true, true);
    }
  }
  // The functional form: the same inputs, with packed or separate projections, self-attention
  // (k and v are q), and static keys and values (then no bias_k / bias_v, as libtorch).
  reseed("attention_functional");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 24; ++n) {
      const int heads = pick(1, 3), hd = pick(1, 3), E = heads * hd, L = pick(1, 4), S = pick(1, 4), N = pick(1, 2);
      const bool self = n % 4 == 1, separate = !self && n % 3 == 0, static_kv = !self && n % 4 == 2;
      const int kd = separate ? pick(1, 5) : E;
      const int Ss = static_kv ? pick(1, 4) : S;  // keys the masks see
      const bool bias = n % 5 != 0;
      const Buf none = make_buf(t, {}, {0});
      std::vector<Buf> ins = {random_operand(t, {L, N, E}), random_operand(t, {S, N, kd}), random_operand(t, {S, N, kd})};
      for (int j = 0; j < 3; ++j) ins.push_back(random_buf(t, {E, j == 0 ? E : kd}, {-0.6, 0.6}, false));
      ins.push_back(bias ? random_buf(t, {3 * E}, {-0.3, 0.3}, false) : none);
      ins.push_back(random_buf(t, {E, E}, {-0.6, 0.6}, false));
      ins.push_back(bias ? random_buf(t, {E}, {-0.3, 0.3}, false) : none);
      const int keys = self ? L : Ss;
      std::vector<Val> kpm, bm;
      for (int i = 0; i < N * keys; ++i) kpm.push_back({0, i % keys != 0 && pick(0, 2) == 0});
      for (int i = 0; i < L * keys; ++i) bm.push_back({0, i % keys != 0 && pick(0, 2) == 0});
      // A padding mask on every other pair of calls: with and without static keys and self-attention.
      ins.push_back((n / 2) % 2 ? make_buf(DT::Bool, kpm, {N, keys}) : make_buf(DT::Bool, {}, {0}));
      const int mask_kind = pick(0, 2);
      ins.push_back(mask_kind == 0   ? make_buf(t, {}, {0})
                    : mask_kind == 1 ? make_buf(DT::Bool, bm, {L, keys})
                                     : random_buf(t, {L, keys}, {-2, 1}, false));
      const bool bias_kv = !static_kv && n % 5 == 2, zero_attn = n % 3 == 2;
      for (int j = 0; j < 2; ++j) ins.push_back(bias_kv ? random_buf(t, {1, 1, E}, {-0.6, 0.6}, false) : none);
      for (int j = 0; j < 2; ++j) ins.push_back(static_kv ? random_buf(t, {N * heads, Ss, hd}, {-1, 1}, false) : none);
      const int need = pick(0, 1), average = pick(0, 1);
      named_call(rep, filter, "mha_f", ins, {d(heads), d(need), d(average), d(zero_attn), d(separate), d(self)}, true,
                 true);
    }
  }
}

namespace {

/// Random parameters for the transformer modules' names (module_layout.hpp): norm weights
/// near 1, the rest small.
std::vector<Buf> transformer_parameters(DT t, const std::vector<std::string>& names, int64_t e, int64_t ff) {
  std::vector<Buf> out;
  for (const std::string& n : names) {
    const bool norm_weight = n.find("norm") != std::string::npos && n.find(".weight") != std::string::npos;
    out.push_back(random_buf(t, transformer_parameter_shape(n, e, ff),
                             norm_weight ? ember::test::Domain{0.5, 1.5} : ember::test::Domain{-0.6, 0.6}, false));
  }
  return out;
}

/// A bool key padding mask (n, s) with key 0 never masked (a fully masked row is where the
/// libraries differ on purpose), or an empty one.
Buf key_padding_mask(bool on, int n, int s) {
  if (!on) return make_buf(DT::Bool, {}, {0});
  std::vector<Val> m;
  for (int i = 0; i < n * s; ++i) m.push_back({0, i % s != 0 && pick(0, 2) == 0});
  return make_buf(DT::Bool, m, {n, s});
}

/// An additive float attention mask (l, s), or an empty one.
Buf attention_mask(DT t, bool on, int l, int s) {
  return on ? random_buf(t, {l, s}, {-2, 1}, false) : make_buf(t, {}, {0});
}

}  // namespace

/// nn::TransformerEncoderLayer, TransformerDecoderLayer and Transformer against libtorch's
/// (post-norm, sequence first, no dropout: libtorch 1.13's C++ modules have no other form):
/// relu or gelu, additive attention masks, key padding masks. Among the decoder layer calls
/// with two heads, one in eight has an odd model width, which both must refuse.
void transformer_calls(Report& rep, const std::string& filter) {
  reseed("encoder layer");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 12; ++n) {
      const int heads = pick(1, 2), E = heads * pick(1, 3), L = pick(1, 4), N = pick(1, 2), ff = pick(1, 6);
      std::vector<Buf> ins = {random_operand(t, {L, N, E})};
      for (Buf& p : transformer_parameters(t, encoder_layer_parameter_names(), E, ff)) ins.push_back(std::move(p));
      ins.push_back(attention_mask(t, n % 3 == 1, L, L));
      ins.push_back(key_padding_mask(n % 2 == 1, N, L));
      named_call(rep, filter, "encoder_layer", ins, {d(heads), d(ff), d(n % 4 == 3)}, true, true);
    }
  }
  reseed("decoder layer");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 16; ++n) {
      const int heads = pick(1, 2), L = pick(1, 4), S = pick(1, 4), N = pick(1, 2), ff = pick(1, 6);
      const int E = heads * pick(1, 3) + (n % 8 == 5 && heads == 2 ? 1 : 0);
      std::vector<Buf> ins = {random_operand(t, {L, N, E}), random_operand(t, {S, N, E})};
      for (Buf& p : transformer_parameters(t, decoder_layer_parameter_names(), E, ff)) ins.push_back(std::move(p));
      ins.push_back(attention_mask(t, n % 3 == 1, L, L));
      ins.push_back(attention_mask(t, n % 3 == 2, L, S));
      ins.push_back(key_padding_mask(n % 2 == 1, N, L));
      ins.push_back(key_padding_mask(n % 4 >= 2, N, S));
      named_call(rep, filter, "decoder_layer", ins, {d(heads), d(ff), d(n % 4 == 3)}, true, true);
    }
  }
  reseed("transformer");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 8; ++n) {
      const int heads = pick(1, 2), E = heads * pick(1, 2), S = pick(1, 3), T = pick(1, 3), N = pick(1, 2),
                ff = pick(1, 4), encoders = pick(1, 2), decoders = pick(1, 2);
      std::vector<Buf> ins = {random_operand(t, {S, N, E}), random_operand(t, {T, N, E})};
      for (Buf& p : transformer_parameters(t, transformer_parameter_names(encoders, decoders), E, ff))
        ins.push_back(std::move(p));
      ins.push_back(attention_mask(t, n % 3 == 0, S, S));
      ins.push_back(attention_mask(t, n % 3 == 1, T, T));
      ins.push_back(attention_mask(t, n % 3 == 2, T, S));
      ins.push_back(key_padding_mask(n % 2 == 1, N, S));
      ins.push_back(key_padding_mask(n % 4 == 2, N, T));
      ins.push_back(key_padding_mask(n % 4 == 3, N, S));
      named_call(rep, filter, "transformer", ins, {d(heads), d(ff), d(n % 4 == 1), d(encoders), d(decoders)}, true, true);
    }
  }
}

}  // namespace ediff
