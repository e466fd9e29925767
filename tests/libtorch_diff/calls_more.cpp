// ember-vs-libtorch, the second set of call families: indexing and scattering, shape ops,
// the losses and layers beyond main.cpp's first set. Each draws random configurations
// (invalid ones included: both libraries must refuse them) and compares values, and the
// gradients where the op has them. The argument lists are in bridge.hpp.

#include "harness.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <tuple>

namespace ediff {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

/// An index of shape (rows, cols) into a dim of size n along `dim` (0: down the columns, 1:
/// along the rows), each value in [0, n); distinct along that dim where `distinct` (a scatter
/// with repeated targets keeps an unspecified one of them).
Buf scatter_index(int64_t rows, int64_t cols, int64_t n, int dim, bool distinct) {
  std::vector<int64_t> v(static_cast<size_t>(rows * cols));
  const int64_t lines = dim == 0 ? cols : rows, len = dim == 0 ? rows : cols;
  for (int64_t l = 0; l < lines; ++l) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng());
    for (int64_t k = 0; k < len; ++k) {
      const int64_t value = distinct ? perm[static_cast<size_t>(k)] : pick(0, static_cast<int>(n - 1));
      v[static_cast<size_t>(dim == 0 ? k * cols + l : l * cols + k)] = value;
    }
  }
  return ints_buf(v, {rows, cols});
}

}  // namespace

/// scatter, scatter (value), scatter_reduce, index_add, index_copy, index_put, masked_fill on
/// every dtype, over the 8 x 6 matrix of ties and edge values.
void index_calls(Report& rep, const std::string& filter) {
  reseed("index");
  for (DT t : kAllDT) {
    const Buf x = tie_matrix(t);
    const double value = dt_floating(t) ? 2.5 : 3;
    for (int dim : {0, 1}) {
      const int64_t n = dim == 0 ? 8 : 6;
      const Buf unique_idx = scatter_index(4, 3, n, dim, true), repeated_idx = scatter_index(4, 3, n, dim, false);
      const Buf src = random_buf(t, {4, 3}, {-3, 3});
      named_call(rep, filter, "scatter", {x, unique_idx, src}, {d(dim)}, false, true);
      named_call(rep, filter, "scatter_value", {x, unique_idx}, {d(dim), value}, false, true);
      for (int reduce = 0; reduce < 5; ++reduce)
        for (int include_self : {0, 1})
          named_call(rep, filter, "scatter_reduce", {x, repeated_idx, src}, {d(dim), d(reduce), d(include_self)}, false,
                     true);
      // index_add / index_copy take whole slices: src is x's shape with 3 slices along dim.
      const Buf slices = random_buf(t, dim == 0 ? std::vector<int64_t>{3, 6} : std::vector<int64_t>{8, 3}, {-3, 3});
      for (double alpha : {1.0, 2.0, 0.5})
        named_call(rep, filter, "index_add", {x, ints_buf({2, 0, 2}, {3}), slices}, {d(dim), alpha}, false, true);
      named_call(rep, filter, "index_copy", {x, ints_buf({4, 0, 1}, {3}), slices}, {d(dim)}, false, true);
      named_call(rep, filter, "index_copy", {x, ints_buf({4, 0, n}, {3}), slices}, {d(dim)}, false, true);  // out of range
      named_call(rep, filter, "index_add", {x, ints_buf({-1, 0, 1}, {3}), slices}, {d(dim), 1.0}, false, true);
    }
    // index_put: rows, (row, column) pairs, a boolean mask; accumulate with repeats.
    for (int accumulate : {0, 1}) {
      const Buf rows = ints_buf(accumulate ? std::vector<int64_t>{1, 5, 1, -2, 0} : std::vector<int64_t>{1, 5, 3, -2, 0}, {5});
      named_call(rep, filter, "index_put", {x, rows, random_buf(t, {5, 6}, {-3, 3})}, {d(accumulate)}, false, true);
      named_call(rep, filter, "index_put", {x, rows, random_buf(t, {6}, {-3, 3})}, {d(accumulate)}, false, true);
      named_call(rep, filter, "index_put",
                 {x, ints_buf({0, 7, 3}, {3}), ints_buf(accumulate ? std::vector<int64_t>{1, 5, 1} : std::vector<int64_t>{1, 5, 2}, {3}),
                  random_buf(t, {3}, {-3, 3})},
                 {d(accumulate)}, false, true);
      named_call(rep, filter, "index_put", {x, random_buf(DT::Bool, {8, 6}, {0, 1}), random_buf(t, {}, {-3, 3})},
                 {d(accumulate)}, false, true);
      named_call(rep, filter, "index_put", {x, ints_buf({0, 8}, {2}), random_buf(t, {6}, {-3, 3})}, {d(accumulate)}, false,
                 true);  // out of range
    }
    for (double v : {value, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
      if (std::isnan(v) && !dt_floating(t)) continue;
      named_call(rep, filter, "masked_fill", {x, random_buf(DT::Bool, {8, 6}, {0, 1})}, {v}, false, true);
      named_call(rep, filter, "masked_fill", {x, random_buf(DT::Bool, {6}, {0, 1})}, {v}, false, true);
    }
  }
}

/// flip, roll, repeat_interleave, repeat, tril / triu, diag, diagonal, one_hot, norm,
/// var_mean, pixel and channel shuffles on every dtype.
void shape_calls(Report& rep, const std::string& filter) {
  reseed("shape");
  for (DT t : kAllDT) {
    const Buf x = tie_matrix(t);
    const Buf x3 = random_buf(t, {3, 4, 5}, {-3, 3});
    for (int mask : {1, 2, 3}) named_call(rep, filter, "flip", {x}, {d(mask)}, false, true);
    named_call(rep, filter, "flip", {x3}, {5}, false, true);
    for (int shift : {-7, 2, 13})
      for (int dim : {0, 1, -1, -9}) named_call(rep, filter, "roll", {x}, {d(shift), d(dim)}, false, true);
    for (int repeats : {0, 2, -1})
      for (int dim : {0, 1, -9}) named_call(rep, filter, "repeat_interleave", {x}, {d(repeats), d(dim)}, false, true);
    named_call(rep, filter, "repeat", {x}, {2, 1}, false, true);
    named_call(rep, filter, "repeat", {x}, {2, 1, 3}, false, true);
    named_call(rep, filter, "repeat", {x}, {2}, false, true);  // fewer repeats than dims: refused
    for (int k : {-2, 0, 3, 7, -9}) {
      for (const char* op : {"tril", "triu"}) {
        named_call(rep, filter, op, {x}, {d(k)}, false, true);
        named_call(rep, filter, op, {x3}, {d(k)}, false, true);
      }
      named_call(rep, filter, "diag", {x}, {d(k)}, false, true);
      named_call(rep, filter, "diag", {random_buf(t, {5}, {-3, 3})}, {d(k)}, false, true);
    }
    for (int offset : {-2, 0, 1, 4})
      for (auto [d0, d1] : {std::pair{0, 1}, {1, 0}, {0, 2}, {2, 1}, {1, 1}})
        named_call(rep, filter, "diagonal", {x3}, {d(offset), d(d0), d(d1)}, false, true);
    for (int r : {1, 2, 3}) {
      named_call(rep, filter, "pixel_shuffle", {random_buf(t, {2, 8, 2, 3}, {-3, 3})}, {d(r)}, false, true);
      named_call(rep, filter, "pixel_unshuffle", {random_buf(t, {2, 2, 4, 6}, {-3, 3})}, {d(r)}, false, true);
    }
    // (no gradients: libtorch has no derivative for channel_shuffle)
    for (int g : {1, 2, 3, 4}) named_call(rep, filter, "channel_shuffle", {random_buf(t, {2, 4, 3}, {-3, 3})}, {d(g)}, false, false);
    for (double p : {0.0, 0.5, 1.0, 2.0, 3.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()})
      for (int dim : {0, 1, -9})
        for (int keep : {0, 1}) named_call(rep, filter, "norm", {x}, {p, d(dim), d(keep)}, true, true);
    for (int dim : {0, 1})
      for (double correction : {0.0, 1.0}) named_call(rep, filter, "var_mean", {x}, {d(dim), correction}, false, true);
  }
  for (DT t : {DT::I64, DT::I32, DT::U8}) {
    const Buf labels = ints_buf({0, 3, 1, 3, 2, 0}, {2, 3}, t);
    for (int classes : {-1, 4, 6, 3, 0}) named_call(rep, filter, "one_hot", {labels}, {d(classes)}, false, false);
    named_call(rep, filter, "one_hot", {ints_buf({0, -1, 2}, {3}, t)}, {-1}, false, false);
    named_call(rep, filter, "one_hot", {ints_buf({}, {0}, t)}, {3}, false, false);
  }
}

/// The losses beyond main.cpp's: regression and margin losses, BCE on probabilities, Poisson
/// NLL, CTC; random shapes and every reduction.
void loss_more_calls(Report& rep, const std::string& filter) {
  reseed("losses more");
  const Buf none = make_buf(DT::F32, {}, {0});
  auto signs = [](int64_t n, std::vector<int64_t> shape, DT t) {
    std::vector<Val> v;
    for (int64_t i = 0; i < n; ++i) v.push_back({pick(0, 1) ? 1.0 : -1.0, 0});
    return make_buf(t, v, std::move(shape));
  };
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 30; ++n) {
      const int batch = pick(1, 4), classes = pick(2, 5), red = pick(0, 2);
      const std::vector<int64_t> xs = {batch, classes};
      const Buf x = random_buf(t, xs, {-3, 3}, false), y = random_buf(t, xs, {-3, 3}, false);
      named_call(rep, filter, "mse_loss", {x, y}, {d(red)}, false, true);
      named_call(rep, filter, "l1_loss", {x, y}, {d(red)}, false, true);
      named_call(rep, filter, "soft_margin_loss", {x, signs(batch * classes, xs, t)}, {d(red)}, true, true);
      named_call(rep, filter, "hinge_embedding_loss", {x, signs(batch * classes, xs, t)}, {n % 2 ? 0.5 : 1.0, d(red)}, false,
                 true);
      // BCE on probabilities, exact 0 and 1 among them (PyTorch clamps the logs at -100).
      std::vector<Val> pv;
      for (int i = 0; i < batch * classes; ++i) pv.push_back({pick(0, 3) == 0 ? d(pick(0, 1)) : pick(1, 99) / 100.0, 0});
      const Buf p = make_buf(t, pv, xs), target = random_buf(t, xs, {0, 1}, false);
      named_call(rep, filter, "binary_cross_entropy", {p, target}, {d(red)}, true, true);
      named_call(rep, filter, "binary_cross_entropy", {p, target, random_buf(t, xs, {0, 2}, false)}, {d(red)}, true, true);
      named_call(rep, filter, "binary_cross_entropy", {x, target}, {d(red)}, true, true);  // outside [0, 1]: refused
      const Buf a = random_buf(t, {batch}, {-3, 3}, false), b = random_buf(t, {batch}, {-3, 3}, false);
      named_call(rep, filter, "margin_ranking_loss", {a, b, signs(batch, {batch}, t)}, {n % 3 * 0.5, d(red)}, false, true);
      named_call(rep, filter, "cosine_embedding_loss", {x, y, signs(batch, {batch}, t)}, {n % 3 * 0.25, d(red)}, true, true);
      named_call(rep, filter, "cosine_embedding_loss", {random_buf(t, {classes}, {-3, 3}, false),
                                                          random_buf(t, {classes}, {-3, 3}, false), signs(1, {}, t)},
                 {0.1, d(red)}, true, true);
      const Buf z = random_buf(t, xs, {-3, 3}, false);
      for (double pn : {1.0, 2.0, 3.0})
        named_call(rep, filter, "triplet_margin_loss", {x, y, z}, {1.0, pn, 1e-6, d(n % 2), d(red)}, true, true);
      const Buf cls = random_buf(DT::I64, {batch}, {0, d(classes - 1)}, false);
      for (int pm : {1, 2}) {
        named_call(rep, filter, "multi_margin_loss", {x, cls, none}, {d(pm), n % 2 ? 0.5 : 1.0, d(red)}, false, true);
        named_call(rep, filter, "multi_margin_loss", {x, cls, random_buf(t, {classes}, {0.2, 2}, false)},
                   {d(pm), 1.0, d(red)}, false, true);
      }
      // multilabel_margin_loss: each row's labels, then -1 (the rest ignored).
      std::vector<int64_t> labels;
      for (int r = 0; r < batch; ++r) {
        const int k = pick(0, classes);
        for (int c = 0; c < classes; ++c) labels.push_back(c < k ? pick(0, classes - 1) : c == k ? -1 : pick(-1, classes - 1));
      }
      named_call(rep, filter, "multilabel_margin_loss", {x, ints_buf(labels, xs)}, {d(red)}, false, true);
      const Buf counts = random_buf(t, xs, {0, 4}, false), rates = random_buf(t, xs, {0, 3}, false);
      for (int full : {0, 1}) {
        named_call(rep, filter, "poisson_nll_loss", {x, counts}, {1, d(full), 1e-8, d(red)}, true, true);
        named_call(rep, filter, "poisson_nll_loss", {rates, counts}, {0, d(full), 1e-8, d(red)}, true, true);
      }
    }
    // CTC: (T, N, C) log-probabilities (both sides take log_softmax of them again), padded (N, S) targets, lengths; blank 0 or the last
    // class; some targets too long for their input (infinite loss, zero_infinity both ways).
    for (int n = 0; n < 12; ++n) {
      const int T = pick(1, 8), N = pick(1, 3), C = pick(2, 5), S = pick(1, 4), blank = n % 2 ? C - 1 : 0;
      std::vector<Val> lp;
      for (int i = 0; i < T * N; ++i) {
        std::vector<double> row(static_cast<size_t>(C));
        double m = 0;
        for (double& v : row) v = std::uniform_real_distribution<double>(-2, 2)(rng()), m = std::max(m, v);
        double s = 0;
        for (double v : row) s += std::exp(v - m);
        for (double v : row) lp.push_back({v - m - std::log(s), 0});
      }
      std::vector<int64_t> targets, in_len, tg_len;
      for (int b = 0; b < N; ++b) {
        for (int s = 0; s < S; ++s) {
          int label = pick(0, C - 2);
          if (label >= blank) ++label;  // any class but the blank
          targets.push_back(label);
        }
        in_len.push_back(pick(1, T));
        tg_len.push_back(pick(0, S));
      }
      const Buf lpb = make_buf(t, lp, {T, N, C});
      for (int red = 0; red < 3; ++red)
        for (int zero_inf : {0, 1})
          named_call(rep, filter, "ctc_loss", {lpb, ints_buf(targets, {N, S}), ints_buf(in_len, {N}), ints_buf(tg_len, {N})},
                     {d(blank), d(red), d(zero_inf)}, true, true);
    }
  }
}

/// conv1d / conv3d / conv_transpose1d, the 2-d convolution's fast paths (Winograd and direct:
/// 3x3, stride 1, 8+ channels; inputs with NaN and infinities), 1-d and 3-d pooling, max
/// unpooling, instance norm, embedding, distances, glu, prelu, scaled dot-product attention.
void layer_calls(Report& rep, const std::string& filter) {
  reseed("layers");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 40; ++n) {
      const int groups = pick(1, 2), ci = pick(1, 3) * groups, co = pick(1, 3) * groups, k = pick(1, 4);
      const int len = pick(1, 12);
      const Buf x1 = random_buf(t, {2, ci, len}, {-2, 2}, false);
      const Buf w1 = random_buf(t, {co, ci / groups, k}, {-1, 1}, false), b1 = random_buf(t, {co}, {-1, 1}, false);
      const std::vector<double> a1 = {d(pick(1, 3)), d(pick(0, 2)), d(pick(1, 2)), d(groups)};
      named_call(rep, filter, "conv1d", n % 3 ? std::vector<Buf>{x1, w1, b1} : std::vector<Buf>{x1, w1}, a1, false, true);
      // (Inputs and arguments drawn into locals first: the order in which a call's arguments
      // are evaluated is the compiler's.)
      const int stride = pick(1, 3), dil = pick(1, 2), tpad = pick(0, 2), out_pad = pick(0, std::max(stride, dil) - 1);
      const Buf wt1 = random_buf(t, {ci, co / groups, k}, {-1, 1}, false);
      named_call(rep, filter, "conv_transpose1d", {x1, wt1, b1}, {d(stride), d(tpad), d(out_pad), d(groups), d(dil)}, false,
                 true);
      const int pk = pick(1, 4);
      named_call(rep, filter, "max_pool1d", {x1}, {d(pk), d(pick(1, 3)), d(pick(0, pk / 2)), d(pick(1, 2)), d(pick(0, 1))},
                 false, true);
      named_call(rep, filter, "avg_pool1d", {x1}, {d(pk), d(pick(1, 3)), d(pick(0, pk / 2)), d(pick(0, 1)), d(pick(0, 1))},
                 false, true);
      named_call(rep, filter, "adaptive_avg_pool1d", {x1}, {d(pick(1, 7))}, false, true);
      named_call(rep, filter, "adaptive_max_pool1d", {x1}, {d(pick(1, 7))}, false, true);
      // 3-d: small volumes.
      const int dd = pick(1, 5), hh = pick(1, 5), ww = pick(1, 5), k3 = pick(1, 3);
      const Buf x3 = random_buf(t, {1, ci, dd, hh, ww}, {-2, 2}, false);
      const Buf w3 = random_buf(t, {co, ci / groups, k3, pick(1, 3), k3}, {-1, 1}, false);
      const std::vector<double> a3 = {d(pick(1, 2)), d(pick(1, 2)), d(pick(1, 2)), d(pick(0, 1)), d(pick(0, 1)),
                                      d(pick(0, 1)),  1,             1,             d(pick(1, 2)), d(groups)};
      named_call(rep, filter, "conv3d", {x3, w3, b1}, a3, false, true);
      named_call(rep, filter, "max_pool3d", {x3},
                 {d(k3), d(k3), d(pick(1, 2)), d(pick(1, 2)), d(pick(1, 2)), d(pick(1, 2)), d(pick(0, k3 / 2)), 0, 0, 1, 1, 1,
                  d(pick(0, 1))},
                 false, true);
      named_call(rep, filter, "avg_pool3d", {x3},
                 {d(k3), d(k3), d(k3), d(pick(1, 2)), d(pick(1, 2)), d(pick(1, 2)), d(pick(0, k3 / 2)), 0, 0, d(pick(0, 1)),
                  d(pick(0, 1)), n % 4 == 0 ? 3.0 : 0.0},
                 false, true);
      // The 2-d convolution's own kernels: 3x3 stride 1 with 8+ channels (Winograd) or a
      // small kernel over few channels (direct), padding 0-2, NaN/inf in some inputs.
      const int c8 = 8 + pick(0, 4), o8 = 8 + pick(0, 4), h = pick(3, 14), w = pick(3, 14), pad = pick(0, 2);
      const bool nonfinite = n % 4 == 1;
      const Buf x2 = random_operand(t, {2, c8, h, w}, nonfinite);
      named_call(rep, filter, "conv2d", {x2, random_buf(t, {o8, c8, 3, 3}, {-1, 1}, false), random_buf(t, {o8}, {-1, 1}, false)},
                 {1, 1, d(pad), d(pad), 1, 1, 1}, false, true);
      const int kd = pick(2, 5), cd = pick(1, 3), ph = pick(0, 2), pw = pick(0, 2);
      const Buf xd = random_operand(t, {2, cd, h, w}, nonfinite), wd = random_buf(t, {o8, cd, kd, kd}, {-1, 1}, false);
      named_call(rep, filter, "conv2d", {xd, wd}, {1, 1, d(ph), d(pw), 1, 1, 1}, false, true);
      // max_unpool2d: distinct positions per plane in an (oh, ow) output.
      const int oh = pick(2, 6), ow = pick(2, 6), ih = pick(1, oh), iw = pick(1, ow);
      std::vector<int64_t> pos;
      for (int plane = 0; plane < 2 * ci; ++plane) {
        std::vector<int64_t> perm(static_cast<size_t>(oh * ow));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng());
        pos.insert(pos.end(), perm.begin(), perm.begin() + ih * iw);
      }
      named_call(rep, filter, "max_unpool2d", {random_buf(t, {2, ci, ih, iw}, {-2, 2}, false), ints_buf(pos, {2, ci, ih, iw})},
                 {d(oh), d(ow)}, false, true);
      const Buf img = random_buf(t, {pick(1, 3), ci, pick(1, 4), pick(1, 4)}, {-3, 3}, false);
      named_call(rep, filter, "instance_norm", {img}, {1e-5}, false, true);
      named_call(rep, filter, "instance_norm",
                 {img, random_buf(t, {ci}, {0.5, 2}, false), random_buf(t, {ci}, {-1, 1}, false)}, {1e-3}, false, true);
      // embedding: rows of a (7, 3) table, a padding row, repeated indices.
      const Buf table = random_buf(t, {7, 3}, {-2, 2}, false);
      const Buf idx = random_buf(DT::I64, {2, 4}, {0, 6}, false);
      for (int padding : {-1, 2, -3}) named_call(rep, filter, "embedding", {table, idx}, {d(padding), d(n % 2)}, false, true);
      // max_norm: the rows read (repeated ones once) renormalised in place, in p-norms.
      const double max_norm = n % 3 == 0 ? 0.5 : 1.5, norm_type = n % 3 == 0 ? 1.0 : n % 3 == 1 ? 2.0 : 3.5;
      named_call(rep, filter, "embedding", {table, idx}, {d(n % 2 ? -1 : 2), d(n % 2), max_norm, norm_type}, false, true);
      // distances and gated units over random shapes.
      const Buf u = random_buf(t, {3, 4}, {-2, 2}, false), v = random_buf(t, {3, 4}, {-2, 2}, false);
      for (int dim : {0, 1, -1}) named_call(rep, filter, "cosine_similarity", {u, v}, {d(dim), 1e-8}, true, true);
      named_call(rep, filter, "cosine_similarity", {u, random_buf(t, {1, 4}, {-2, 2}, false)}, {1, 1e-8}, true, true);
      for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()})
        named_call(rep, filter, "pairwise_distance", {u, v}, {p, 1e-6, d(n % 2)}, true, true);
      for (int dim : {0, 1, -1}) named_call(rep, filter, "glu", {random_buf(t, {4, 6}, {-2, 2}, false)}, {d(dim)}, true, true);
      named_call(rep, filter, "prelu", {img, random_buf(t, {n % 2 ? ci : 1}, {-1, 1}, false)}, {}, false, true);
      // attention: (N, H, L, E) queries over (N, H, S, E) keys; boolean or additive masks,
      // causal, an explicit scale.
      const int L = pick(1, 5), S = pick(1, 5), E = pick(1, 4), Ev = pick(1, 4);
      const Buf q = random_buf(t, {2, 2, L, E}, {-2, 2}, false), kk = random_buf(t, {2, 2, S, E}, {-2, 2}, false),
                vv = random_buf(t, {2, 2, S, Ev}, {-2, 2}, false);
      named_call(rep, filter, "sdpa", {q, kk, vv}, {d(n % 2), n % 3 == 0 ? 0.7 : 0.0}, true, true);
      named_call(rep, filter, "sdpa", {q, kk, vv, random_buf(t, {L, S}, {-2, 2}, false)}, {0, 0}, true, true);
      std::vector<Val> keep;
      for (int i = 0; i < L * S; ++i) keep.push_back({0, i % S == 0 || pick(0, 1)});  // no row fully masked
      named_call(rep, filter, "sdpa", {q, kk, vv, make_buf(DT::Bool, keep, {L, S})}, {0, 0}, true, true);
    }
  }
}

/// RNN, LSTM and GRU over random configurations: layers, directions, batch_first, biases,
/// LSTM projections (proj_size: h0 narrower than c0); given initial states and weights
/// (PyTorch's flat order: per layer and direction w_ih, w_hh, b_ih, b_hh, w_hr). Outputs,
/// final states and every gradient compared.
void rnn_calls(Report& rep, const std::string& filter) {
  reseed("rnn");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 24; ++n) {
      const char* op = std::array<const char*, 4>{"lstm", "gru", "rnn_tanh", "rnn_relu"}[static_cast<size_t>(n % 4)];
      const int layers = pick(1, 2), dirs = pick(1, 2), batch_first = pick(0, 1), bias = n % 5 != 0;
      const int L = pick(1, 5), N = pick(1, 3), in = pick(1, 4), H = pick(1, 4);
      const int gates = n % 4 == 0 ? 4 : n % 4 == 1 ? 3 : 1;
      // Half the LSTMs project h to Hp < H features.
      const int Hp = n % 8 == 4 && H > 1 ? pick(1, H - 1) : H;
      std::vector<Buf> ins = {random_buf(t, batch_first ? std::vector<int64_t>{N, L, in} : std::vector<int64_t>{L, N, in},
                                         {-2, 2}, false),
                              random_buf(t, {layers * dirs, N, Hp}, {-1, 1}, false)};
      if (n % 4 == 0) ins.push_back(random_buf(t, {layers * dirs, N, H}, {-1, 1}, false));
      for (int l = 0; l < layers; ++l)
        for (int dir = 0; dir < dirs; ++dir) {
          const int64_t width = l == 0 ? in : Hp * dirs;
          ins.push_back(random_buf(t, {gates * H, width}, {-0.8, 0.8}, false));
          ins.push_back(random_buf(t, {gates * H, Hp}, {-0.8, 0.8}, false));
          if (bias) {
            ins.push_back(random_buf(t, {gates * H}, {-0.5, 0.5}, false));
            ins.push_back(random_buf(t, {gates * H}, {-0.5, 0.5}, false));
          }
          if (Hp != H) ins.push_back(random_buf(t, {Hp, H}, {-0.8, 0.8}, false));
        }
      named_call(rep, filter, op, ins, {d(layers), d(dirs - 1), d(batch_first), d(bias)}, true, true);
      // Packed: sequence lengths from 1 to L in any order (ties included).
      std::vector<double> packed_args = {d(layers), d(dirs - 1), d(batch_first), d(bias)};
      for (int b = 0; b < N; ++b) packed_args.push_back(d(b == 0 ? L : pick(1, L)));
      named_call(rep, filter, op, ins, packed_args, true, true);
    }
  }
  // The functional cells (torch::lstm_cell, ...): one step with the weights passed in.
  reseed("rnn cells");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 16; ++n) {
      const char* op =
          std::array<const char*, 4>{"lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"}[static_cast<size_t>(n % 4)];
      // Empty batches and hidden size 0 too (libtorch gives empty states).
      const int gates = n % 4 == 0 ? 4 : n % 4 == 1 ? 3 : 1, N = pick(0, 3), in = pick(1, 4), H = pick(0, 4);
      const bool bias = n % 3 != 0;
      std::vector<Buf> ins = {random_buf(t, {N, in}, {-2, 2}, false), random_buf(t, {N, H}, {-1, 1}, false),
                              n % 4 == 0 ? random_buf(t, {N, H}, {-1, 1}, false) : make_buf(t, {}, {0}),
                              random_buf(t, {gates * H, in}, {-0.8, 0.8}, false),
                              random_buf(t, {gates * H, H}, {-0.8, 0.8}, false)};
      for (int b = 0; b < 2; ++b) ins.push_back(bias ? random_buf(t, {gates * H}, {-0.5, 0.5}, false) : make_buf(t, {}, {0}));
      named_call(rep, filter, op, ins, {}, true, true);
    }
  }
}

/// Functions PyTorch writes in Python (torch/nn/functional.py): the libtorch side composes
/// ATen ops as that code does, so its conventions (gaussian_nll_loss's clamp under no_grad,
/// local_response_norm's padding) are what Ember is checked against.
void python_composite_calls(Report& rep, const std::string& filter) {
  reseed("python composites");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 20; ++n) {
      const int batch = pick(1, 3), c = pick(1, 6), h = pick(1, 4), w = pick(1, 4), red = pick(0, 2);
      const Buf x = random_buf(t, {batch, c, h, w}, {-2, 2}, false);
      // (p = 3's gradient, x |x| / |x|_3^3 terms against g / |x|_3, cancels to residues of the
      // intermediate terms' rounding in both libraries: its values are compared, not its gradient.)
      for (double p : {1.0, 2.0, 3.0})
        for (int dim : {1, -1})
          named_call(rep, filter, "normalize", {x}, {p, d(dim), n % 3 ? 1e-12 : 0.5}, true, p != 3);
      const int size = pick(1, 5);
      named_call(rep, filter, "local_response_norm", {x}, {d(size), 1e-2 * pick(1, 20), 0.25 * pick(1, 4), 0.5 * pick(1, 4)},
                 true, true);
      named_call(rep, filter, "local_response_norm", {random_buf(t, {batch, c, w}, {-2, 2}, false)}, {d(size), 1e-3, 0.75, 1},
                 true, true);
      const Buf in = random_buf(t, {batch, c}, {-3, 3}, false), target = random_buf(t, {batch, c}, {-3, 3}, false);
      // Variances, some below eps (the clamp), full variance or one per row ((N, 1) and (N)).
      const Buf var = random_buf(t, {batch, c}, {0, 2}, false), var_row = random_buf(t, {batch, 1}, {1e-8, 2}, false),
                var_n = random_buf(t, {batch}, {0.1, 2}, false);
      for (int full : {0, 1}) {
        named_call(rep, filter, "gaussian_nll_loss", {in, target, var}, {d(full), n % 2 ? 0.5 : 1e-6, d(red)}, true, true);
        named_call(rep, filter, "gaussian_nll_loss", {in, target, var_row}, {d(full), 1e-6, d(red)}, true, true);
        named_call(rep, filter, "gaussian_nll_loss", {in, target, var_n}, {d(full), 1e-6, d(red)}, true, true);
      }
      const Buf labels = random_buf(t, {batch, c}, {0, 1}, false);
      named_call(rep, filter, "multilabel_soft_margin_loss", {in, labels}, {d(red)}, true, true);
      named_call(rep, filter, "multilabel_soft_margin_loss", {in, labels, random_buf(t, {c}, {0.2, 2}, false)}, {d(red)}, true,
                 true);
      const int k = pick(1, 2);
      std::vector<int64_t> shape(x.shape.end() - k, x.shape.end());
      named_call(rep, filter, "rms_norm", {x, random_buf(t, shape, {0.5, 2}, false)}, {d(k), n % 2 ? 1e-5 : -1}, true, true);
      named_call(rep, filter, "rms_norm", {x}, {d(k), -1}, true, true);
    }
  }
}

/// Optimisers: a (3, 4) parameter stepped k times with given gradients, on random
/// hyperparameters (invalid ones included: nesterov without momentum or with dampening).
void optimizer_calls(Report& rep, const std::string& filter) {
  reseed("optimizers");
  auto any = [](std::initializer_list<double> v) { return *(v.begin() + pick(0, static_cast<int>(v.size()) - 1)); };
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 30; ++n) {
      const int steps = pick(1, 5);
      const Buf param = random_buf(t, {3, 4}, {-2, 2}, false), grads = random_buf(t, {steps, 3, 4}, {-2, 2}, false);
      const double lr = any({1e-3, 0.01, 0.1, 1.0}), wd = any({0.0, 0.0, 0.1, 1e-2});
      const double momentum = any({0.0, 0.5, 0.9}), dampening = any({0.0, 0.0, 0.5});
      const std::vector<double> sgd = {lr, momentum, dampening, wd, d(pick(0, 1))};
      named_call(rep, filter, "sgd", {param, grads}, sgd, false, false);
      const std::vector<double> adam = {lr, any({0.9, 0.5, 0.0}), any({0.999, 0.9}), any({1e-8, 1e-3}), wd, d(pick(0, 1))};
      named_call(rep, filter, "adam", {param, grads}, adam, true, false);
      named_call(rep, filter, "adamw", {param, grads}, adam, true, false);
      const std::vector<double> rmsprop = {lr, any({0.99, 0.9}), any({1e-8, 1e-3}), wd, momentum, d(pick(0, 1))};
      named_call(rep, filter, "rmsprop", {param, grads}, rmsprop, true, false);
      const std::vector<double> adagrad = {lr, any({0.0, 0.1}), wd, any({0.0, 0.1}), any({1e-10, 1e-3})};
      named_call(rep, filter, "adagrad", {param, grads}, adagrad, true, false);
    }
  }
}

/// Ops added after the families above were drawn, each family on its own random stream (so
/// that adding them changed no other call's inputs): geqrf, householder_product, ormqr,
/// fractional_max_pool2d with given samples, histogram and histogramdd.
void late_op_calls(Report& rep, const std::string& filter) {
  reseed("householder");
  for (DT t : {DT::F32, DT::F64}) {
    for (auto shape : {std::vector<int64_t>{2, 5, 3}, std::vector<int64_t>{2, 3, 5}, std::vector<int64_t>{4, 4}}) {
      // LAPACK's packed form and its products: geqrf (not differentiable), householder_product
      // (m >= n) and ormqr's four forms, with k = min(m, n) or fewer reflectors.
      const Buf m = random_operand(t, shape);
      const int64_t rows = shape[shape.size() - 2], cols = shape.back(), k = std::min(rows, cols) - (t == DT::F64 ? 1 : 0);
      std::vector<int64_t> tau_shape(shape.begin(), shape.end() - 1);
      tau_shape.back() = k;
      const Buf tau = random_buf(t, tau_shape, {0.5, 1.8}, false);
      named_call(rep, filter, "geqrf", {m}, {}, true, false);
      if (rows >= cols) named_call(rep, filter, "householder_product", {m, tau}, {}, true, true);
      std::vector<int64_t> other_shape = shape;
      other_shape.back() = 2;
      for (int left : {0, 1})
        for (int transpose : {0, 1}) {
          std::vector<int64_t> o = other_shape;
          if (!left) std::swap(o[o.size() - 1], o[o.size() - 2]);
          // (values only: libtorch 1.13 has no ormqr derivative; Ember's is gradchecked in
          // tests/test_householder.cpp)
          named_call(rep, filter, "ormqr", {m, tau, random_operand(t, o)}, {d(left), d(transpose)}, true, false);
        }
    }
  }
  reseed("fractional pooling");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n = 0; n < 30; ++n) {
      // Given samples (N, C, 2) in x's dtype; output sizes within input - kernel + 1, and
      // beyond (refused alike).
      const int C = pick(1, 3), fh = pick(2, 7), fw = pick(2, 7), fkh = pick(1, 2), fkw = pick(1, 3);
      const Buf xf = random_buf(t, {2, C, fh, fw}, {-2, 2}, false);
      const Buf samples = random_buf(t, {2, C, 2}, {0, 0.999}, false);
      named_call(rep, filter, "fractional_max_pool2d", {xf, samples},
                 {d(fkh), d(fkw), d(pick(1, std::max(1, fh - fkh + 1))), d(pick(1, fw - fkw + 1 + (n % 7 == 0 ? 1 : 0)))},
                 false, true);
    }
  }
  reseed("histogram");
  for (DT t : kAllDT) {
    // histogram (bins, with a range, min, max, density) and histogramdd (the same for every
    // dim) -> counts, (first) edges; without NaN (PyTorch 1.13 counts it in a last bin, Ember
    // leaves it out, as NumPy). Weights: a second operand.
    const Buf samples = random_buf(t, {40}, {-3, 3}, false);
    const Buf points = random_buf(t, {12, 3}, {-3, 3}, false), weights = random_buf(t, {12}, {0, 2}, false);
    for (auto [bins, ranged, lo, hi, density] :
         {std::tuple{4, 0, 0.0, 0.0, 0}, {3, 1, -1.0, 2.0, 0}, {5, 1, -2.0, 2.0, 1}, {1, 0, 0.0, 0.0, 1}, {2, 1, 1.0, 1.0, 0}}) {
      const std::vector<double> a = {d(bins), d(ranged), lo, hi, d(density)};
      named_call(rep, filter, "histogram", {samples}, a, false, false);
      named_call(rep, filter, "histogram", {points, random_buf(t, {12, 3}, {0, 2}, false)}, a, false, false);
      named_call(rep, filter, "histogramdd", {points}, a, false, false);
      named_call(rep, filter, "histogramdd", {points, weights}, a, false, false);
    }
    named_call(rep, filter, "histogramdd", {random_buf(t, {0, 2}, {-1, 1}, false)}, {2, 0, 0, 0, 0}, false, false);
    named_call(rep, filter, "histogramdd", {random_buf(t, {2, 2, 2}, {-1, 1}, false)}, {2, 0, 0, 0, 0}, false, false);
    named_call(rep, filter, "histogram", {samples}, {0, 0, 0, 0, 0}, false, false);        // bins: refused
    named_call(rep, filter, "histogramdd", {samples}, {2, 0, 0, 0, 0}, false, false);      // 1-d: refused
    named_call(rep, filter, "histogramdd", {points}, {2, 1, 1.0, -1.0, 0}, false, false);  // min > max
  }
}

}  // namespace ediff
