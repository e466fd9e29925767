// ember-vs-libtorch, rearranging and building tensors (ops/rearrange_ops.hpp,
// ops/matrix_builders.hpp, ops/differences.hpp, ops/inplace_index_ops.hpp): movedim, rot90,
// roll over several dims, take_along_dim, repeat_interleave with a tensor, Tensor::unfold, kron,
// tensordot, trace, block_diag, cartesian_prod, isin, unique_consecutive, combinations,
// diag_embed, diagflat, vander, diff, cov,
// corrcoef, index_fill, masked_scatter, masked_fill with a tensor and the in-place index ops,
// on every dtype with edge values, invalid arguments included (both must refuse them); values
// and gradients (strided operands too; second order in f64).

#include "harness.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace ediff {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

/// n random values in [lo, hi] as an i64 buffer of `shape`.
Buf random_ints(std::vector<int64_t> shape, int lo, int hi) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(pick(lo, hi));
  return ints_buf(v, std::move(shape));
}

/// A (6, 3) buffer of runs for unique_consecutive and isin (transposed: (3, 6)): rows 0 and 1
/// equal only by -0 == 0, rows 3 and 4 equal but for NaN (which keeps them apart), rows 2
/// and 5 the same; integer dtypes take 0 for -0, 3 for NaN and 1 for 0.5. Without with_nan, 2
/// instead of NaN (for unique_dim, whose order of slices holding NaN libtorch leaves open).
Buf runs_buf(DT t, bool transposed, bool with_nan = true) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double rows[6][3] = {{0.5, 0.5, -0.0}, {0.5, 0.5, 0.0}, {1, 1, 2}, {nan, 1, 2}, {nan, 1, 2}, {1, 1, 2}};
  std::vector<Val> v;
  for (int i = 0; i < (transposed ? 3 : 6); ++i)
    for (int j = 0; j < (transposed ? 6 : 3); ++j) {
      double x = transposed ? rows[j][i] : rows[i][j];
      if (!with_nan && std::isnan(x)) x = 2;
      if (!dt_floating(t)) x = std::isnan(x) ? 3 : x == 0.5 ? 1 : x + 0.0;
      v.push_back({x, static_cast<int64_t>(x)});
    }
  return make_buf(t, v, transposed ? std::vector<int64_t>{3, 6} : std::vector<int64_t>{6, 3});
}
/// Values of the runs' grid (and one off it) to test membership in.
Buf members_buf(DT t) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Val> v;
  for (double x : {0.5, 2.0, nan, -0.0, 7.0}) {
    if (!dt_floating(t)) x = std::isnan(x) ? 3 : x == 0.5 ? 1 : x + 0.0;
    v.push_back({x, static_cast<int64_t>(x)});
  }
  return make_buf(t, v, {5});
}

}  // namespace

void arrange_calls(Report& rep, const std::string& filter) {
  reseed("arrange");
  for (DT t : kAllDT) {
    const Buf x3 = random_buf(t, {2, 3, 4}, {-3, 3});
    const Buf m = tie_matrix(t);  // 8 x 6, ties and edge values
    // movedim: (n; sources..., destinations...)
    named_call(rep, filter, "movedim", {x3}, {2, 0, 2, 2, 0}, false, true);
    named_call(rep, filter, "movedim", {x3}, {1, -1, 0}, false, true);
    named_call(rep, filter, "movedim", {x3}, {2, 0, -3, 1, 2}, false, true);  // a dim twice
    named_call(rep, filter, "movedim", {x3}, {1, 3, 0}, false, true);         // out of range
    for (int k : {-5, -1, 0, 1, 2, 3, 6})
      for (auto [d0, d1] : {std::pair{0, 1}, {1, 0}, {2, 0}, {-1, -2}})
        named_call(rep, filter, "rot90", {x3}, {d(k), d(d0), d(d1)}, false, true);
    named_call(rep, filter, "rot90", {x3}, {1, 0, -3}, false, true);  // one dim twice
    for (auto [s0, s1] : {std::pair{1, -1}, {7, 13}, {-4, 0}})
      named_call(rep, filter, "roll_dims", {m}, {d(s0), d(s1), 0, 1}, false, true);
    // take_along_dim along each dim (broadcast over the other), and on flat positions.
    named_call(rep, filter, "take_along_dim", {x3, random_ints({1, 3, 5}, 0, 3)}, {2}, false, true);
    named_call(rep, filter, "take_along_dim", {x3, random_ints({2, 3, 1}, 0, 3)}, {-1}, false, true);
    named_call(rep, filter, "take_along_dim", {x3, random_ints({4, 1, 4}, 0, 1)}, {0}, false, true);
    named_call(rep, filter, "take_along_dim", {x3, random_ints({7}, -24, 23)}, {-9}, false, true);
    named_call(rep, filter, "take_along_dim", {x3, random_ints({2, 3}, 0, 3)}, {1}, false, true);  // rank
    named_call(rep, filter, "take_along_dim", {x3, random_ints({2, 2, 2}, 0, 3)}, {0}, false, true);
    // repeat_interleave with a tensor of repeats
    named_call(rep, filter, "repeat_interleave_tensor", {m, random_ints({6}, 0, 3)}, {1}, false, true);
    named_call(rep, filter, "repeat_interleave_tensor", {m, random_ints({1}, 0, 3)}, {0}, false, true);
    named_call(rep, filter, "repeat_interleave_tensor", {m, random_ints({5}, 0, 3)}, {1}, false, true);  // 5 != 6
    named_call(rep, filter, "repeat_interleave_tensor", {m, ints_buf({1, -1, 0, 1, 1, 1}, {6})}, {1}, false, true);
    named_call(rep, filter, "repeat_interleave_tensor", {random_buf(t, {2, 3}, {-3, 3}), random_ints({6}, 0, 2)},
               {-9}, false, true);
    // unfold: (dim, size, step)
    for (auto [dim, size, step] : {std::tuple{0, 3, 2}, {1, 2, 1}, {-1, 6, 3}, {1, 0, 2}, {0, 9, 1}, {1, 2, 0}, {2, 1, 1}})
      named_call(rep, filter, "tensor_unfold", {m}, {d(dim), d(size), d(step)}, false, true);
    named_call(rep, filter, "tensor_unfold", {x3}, {2, 2, 1}, false, true);
    // kron and tensordot (integers too; tensordot refuses bool, as mm)
    named_call(rep, filter, "kron", {random_buf(t, {2, 3}, {-3, 3}), random_buf(t, {3, 2}, {-3, 3})}, {}, false, true);
    named_call(rep, filter, "kron", {random_buf(t, {2}, {-3, 3}), random_buf(t, {2, 1, 3}, {-3, 3})}, {}, false, true);
    named_call(rep, filter, "kron", {random_buf(t, {2, 2}, {-3, 3}), random_buf(DT::F64, {2}, {-3, 3})}, {}, false, true);
    const Buf a = random_buf(t, {2, 3, 4}, {-2, 2}, false), b = random_buf(t, {4, 3, 2}, {-2, 2}, false);
    named_call(rep, filter, "tensordot", {a, b}, {2, 1, 2, 1, 0}, true, true);
    named_call(rep, filter, "tensordot", {a, b}, {1, 2, 0}, true, true);
    named_call(rep, filter, "tensordot", {a, b}, {1, 0, 2}, true, true);
    named_call(rep, filter, "tensordot", {a, b}, {0}, true, true);  // an outer product
    named_call(rep, filter, "tensordot", {a, random_buf(t, {1, 2}, {-2, 2}, false)}, {1, 1, 0}, true, true);  // 3 vs 1
    named_call(rep, filter, "tensordot", {a, b}, {1, 1, 1}, true, true);  // 3 vs 3 ok
    named_call(rep, filter, "tensordot", {a, b}, {1, 0, 0}, true, true);  // 2 vs 4: refused
    named_call(rep, filter, "trace", {m}, {}, false, true);
    named_call(rep, filter, "trace", {x3}, {}, false, true);
    // block_diag, cartesian_prod
    named_call(rep, filter, "block_diag", {random_buf(t, {}, {-3, 3}), random_buf(t, {3}, {-3, 3}), random_buf(t, {2, 2}, {-3, 3})},
               {}, false, true);
    named_call(rep, filter, "block_diag", {random_buf(t, {2, 3}, {-3, 3}), random_buf(DT::I32, {1, 2}, {-3, 3})}, {}, false, true);
    named_call(rep, filter, "block_diag", {random_buf(t, {2, 2, 1}, {-3, 3})}, {}, false, true);
    named_call(rep, filter, "cartesian_prod", {random_buf(t, {3}, {-3, 3}), random_buf(t, {2}, {-3, 3})}, {}, false, true);
    named_call(rep, filter, "cartesian_prod", {random_buf(t, {2}, {-3, 3}), random_buf(t, {2}, {-3, 3}), random_buf(t, {3}, {-3, 3})},
               {}, false, true);
    // isin (invert), unique_consecutive (dim or -9: flattened), combinations (r, with_replacement)
    const Buf runs = runs_buf(t, false), runs_t = runs_buf(t, true);
    for (int invert : {0, 1}) {
      named_call(rep, filter, "isin", {runs, members_buf(t)}, {d(invert)}, false, false);
      named_call(rep, filter, "isin", {runs_t, members_buf(DT::I32)}, {d(invert)}, false, false);
      named_call(rep, filter, "isin", {m, members_buf(DT::F64)}, {d(invert)}, false, false);
    }
    for (int dim : {-9, 0, 1, -1, 2}) {
      named_call(rep, filter, "unique_consecutive", {runs}, {d(dim)}, false, false);
      named_call(rep, filter, "unique_consecutive", {runs_t}, {d(dim)}, false, false);
    }
    named_call(rep, filter, "unique_consecutive", {m}, {-9}, false, false);
    named_call(rep, filter, "unique_consecutive", {random_buf(t, {0, 0}, {-1, 1})}, {0}, false, false);  // refused
    // unique_dim (dim): ties and -0 == 0 between rows (runs_buf without its NaN rows), small
    // random integers with repeated rows, empty dims
    for (int dim : {0, 1, -1}) {
      named_call(rep, filter, "unique_dim", {runs_buf(t, false, false)}, {d(dim)}, false, false);
      named_call(rep, filter, "unique_dim", {runs_buf(t, true, false)}, {d(dim)}, false, false);
    }
    named_call(rep, filter, "unique_dim", {random_buf(t, {0, 0}, {-1, 1})}, {0}, false, false);  // refused
    named_call(rep, filter, "unique_dim", {random_buf(t, {0, 3}, {-1, 1})}, {0}, false, false);
    named_call(rep, filter, "unique_dim", {random_buf(t, {3, 0}, {-1, 1})}, {0}, false, false);  // refused
    named_call(rep, filter, "unique_dim", {random_buf(t, {2, 3, 2}, {0, 1}, false)}, {1}, false, false);
    named_call(rep, filter, "unique_dim", {random_buf(t, {}, {0, 1}, false)}, {0}, false, false);  // 0-d: refused
    std::vector<int64_t> small;
    for (int k = 0; k < 18; ++k) small.push_back(pick(0, t == DT::Bool ? 1 : 2));
    named_call(rep, filter, "unique_dim", {ints_buf(small, {9, 2}, t)}, {0}, false, false);
    named_call(rep, filter, "unique_dim", {ints_buf(small, {3, 6}, t)}, {1}, false, false);
    for (int r : {0, 1, 2, 3, 5})
      for (int with : {0, 1})
        named_call(rep, filter, "combinations", {random_buf(t, {4}, {-3, 3})}, {d(r), d(with)}, false, r > 0);
    named_call(rep, filter, "combinations", {x3}, {2, 0}, false, true);  // not 1-d
    // diag_embed (offset, dim1, dim2), diagflat (offset), vander (N or -9, increasing)
    for (int off : {-2, 0, 1})
      for (auto [d1, d2] : {std::pair{-2, -1}, {0, 2}, {2, 0}, {1, 1}})
        named_call(rep, filter, "diag_embed", {random_buf(t, {2, 3}, {-3, 3})}, {d(off), d(d1), d(d2)}, false, true);
    for (int off : {-1, 0, 2}) named_call(rep, filter, "diagflat", {random_buf(t, {2, 2}, {-3, 3})}, {d(off)}, false, true);
    // (libtorch's vander backward always fails, 1.13 and 2.x: a known rule; values only for N < 2,
    // where libtorch's result of ones takes no gradient and Ember's takes a zero one)
    for (int n : {-9, 0, 1, 2, 4})
      for (int inc : {0, 1})
        named_call(rep, filter, "vander", {random_buf(t, {3}, {-2, 2}, false)}, {d(n), d(inc)}, true, n >= 2);
    // diff (n, dim, has_prepend, has_append)
    for (int n : {0, 1, 2, 9})
      for (int dim : {0, 1}) named_call(rep, filter, "diff", {m}, {d(n), d(dim), 0, 0}, false, true);
    named_call(rep, filter, "diff", {m, random_buf(t, {8, 2}, {-3, 3}), random_buf(t, {8, 1}, {-3, 3})}, {2, 1, 1, 1}, false, true);
    named_call(rep, filter, "diff", {m, random_buf(DT::F64, {1, 6}, {-3, 3})}, {1, 0, 1, 0}, false, true);
    named_call(rep, filter, "diff", {m, random_buf(t, {6}, {-3, 3})}, {1, 0, 1, 0}, false, true);  // rank differs
    // index_fill (dim, value), masked_scatter, masked_fill with a 0-d tensor
    for (int dim : {0, 1, -1}) {
      const double value = dt_floating(t) ? -1.5 : 1;
      named_call(rep, filter, "index_fill", {m, ints_buf({2, 0, 2, -1}, {4})}, {d(dim), value}, false, true);
      named_call(rep, filter, "index_fill_tensor", {m, ints_buf({1, 3}, {2}), random_buf(t, {}, {-3, 3})}, {d(dim)}, false, true);
      named_call(rep, filter, "index_fill_inplace", {m, ints_buf({5}, {})}, {d(dim), value}, false, true);
    }
    named_call(rep, filter, "index_fill", {m, ints_buf({0, 8}, {2})}, {0, 1}, false, true);  // out of range
    const Buf mask = random_buf(DT::Bool, {8, 6}, {0, 1});
    named_call(rep, filter, "masked_scatter", {m, mask, random_buf(t, {60}, {-3, 3})}, {}, false, true);
    named_call(rep, filter, "masked_scatter", {m, random_buf(DT::Bool, {6}, {0, 1}), random_buf(t, {7, 7}, {-3, 3})}, {}, false, true);
    named_call(rep, filter, "masked_scatter", {m, mask, random_buf(t, {2}, {-3, 3})}, {}, false, true);  // too few
    named_call(rep, filter, "masked_scatter_inplace", {m, random_buf(DT::Bool, {1, 6}, {0, 1}), random_buf(t, {48}, {-3, 3})}, {},
               false, true);
    named_call(rep, filter, "masked_fill_tensor", {m, mask, random_buf(t, {}, {-3, 3})}, {}, false, true);
    // the in-place index ops on a copy: index_add_ (dim, alpha), index_copy_ and scatter_ (dim)
    for (int dim : {0, 1}) {
      const Buf slices = random_buf(t, dim == 0 ? std::vector<int64_t>{3, 6} : std::vector<int64_t>{8, 3}, {-3, 3});
      named_call(rep, filter, "index_add_inplace", {m, ints_buf({2, 0, 2}, {3}), slices}, {d(dim), 2}, false, true);
      named_call(rep, filter, "index_copy_inplace", {m, ints_buf({4, 0, 1}, {3}), slices}, {d(dim)}, false, true);
    }
    named_call(rep, filter, "scatter_inplace", {m, ints_buf({7, 0, 3, 1, 2, 6}, {2, 3}), random_buf(t, {2, 3}, {-3, 3})}, {0},
               false, true);
  }
  // cov (correction, has_fweights, has_aweights) and corrcoef on every dtype but bool
  // (refused by both), with and without weights; observations in the columns.
  for (DT t : kAllDT) {
    const Buf x = random_buf(t, {3, 7}, {-3, 3}, false);
    for (int correction : {0, 1, 2}) named_call(rep, filter, "cov", {x}, {d(correction), 0, 0}, true, true);
    const Buf fw = random_ints({7}, 0, 3), aw = random_buf(DT::F64, {7}, {0.1, 2}, false);
    named_call(rep, filter, "cov", {x, fw}, {1, 1, 0}, true, true);
    named_call(rep, filter, "cov", {x, aw}, {1, 0, 1}, true, true);
    named_call(rep, filter, "cov", {x, fw, aw}, {2, 1, 1}, true, true);
    named_call(rep, filter, "cov", {random_buf(t, {5}, {-3, 3}, false)}, {1, 0, 0}, true, true);
    named_call(rep, filter, "cov", {x, ints_buf({1, 1, 1, -1, 1, 1, 1}, {7})}, {1, 1, 0}, true, true);  // negative
    named_call(rep, filter, "corrcoef", {x}, {}, true, true);
  }
}

}  // namespace ediff
