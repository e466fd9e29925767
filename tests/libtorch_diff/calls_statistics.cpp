// ember-vs-libtorch, counting, order statistics and distances (ops/counting.hpp,
// ops/order_statistics.hpp, nn/functional_distance.hpp): searchsorted and bucketize (left and
// right, one sequence or one per row, ties and edge values), bincount (weights, minlength),
// histc (given bounds or the data's range), median and nanmedian (all, or along a dim with
// indices), quantile and nanquantile (every interpolation, q a number or a tensor), cdist and
// pdist (p = 0, 1, 2, 3.5, inf; both of cdist's algorithms), on every dtype, invalid arguments
// included (both must refuse them); values and gradients (strided operands too; second order
// in f64).

#include "harness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ediff {
namespace {

double d(int64_t v) { return static_cast<double>(v); }
constexpr double kInf = std::numeric_limits<double>::infinity();

/// One sorted row of m levels with ties for dtype t (halves for floating dtypes, shifted to be
/// non-negative for u8), drawn from the input generator.
std::vector<Val> sorted_levels(DT t, int64_t m) {
  std::vector<int> row;
  for (int64_t j = 0; j < m; ++j) row.push_back(t == DT::Bool ? pick(0, 1) : pick(-4, 4));
  std::sort(row.begin(), row.end());
  std::vector<Val> v;
  for (int q : row) {
    const double x = dt_floating(t) ? q / 2.0 : t == DT::U8 ? q + 4 : q;
    v.push_back({x, static_cast<int64_t>(x)});
  }
  return v;
}

/// The number of rows (all dims but the last) of a shape.
int64_t row_count(const std::vector<int64_t>& shape) {
  int64_t rows = 1;
  for (size_t k = 0; k + 1 < shape.size(); ++k) rows *= shape[k];
  return rows;
}

/// n sorted values of dtype t with ties (n / 2 distinct levels), as a buffer of `shape` whose
/// rows (last dim) are each sorted: the sequences of searchsorted and bucketize.
Buf sorted_rows(DT t, std::vector<int64_t> shape) {
  std::vector<Val> v;
  for (int64_t r = 0; r < row_count(shape); ++r) {
    const std::vector<Val> row = sorted_levels(t, shape.back());
    v.insert(v.end(), row.begin(), row.end());
  }
  return make_buf(t, v, std::move(shape));
}

/// The rows of sorted_rows(t, shape) each shuffled, and the i64 sorter that sorts them back:
/// searchsorted's sequence and sorter.
std::pair<Buf, Buf> shuffled_rows(DT t, std::vector<int64_t> shape) {
  const int64_t m = shape.back();
  std::vector<Val> v, order;
  for (int64_t r = 0; r < row_count(shape); ++r) {
    const std::vector<Val> row = sorted_levels(t, m);
    std::vector<int64_t> perm(static_cast<size_t>(m)), sorter(static_cast<size_t>(m));
    for (int64_t j = 0; j < m; ++j) perm[static_cast<size_t>(j)] = j;
    for (int64_t j = m - 1; j > 0; --j) std::swap(perm[static_cast<size_t>(j)], perm[static_cast<size_t>(pick(0, static_cast<int>(j)))]);
    for (int64_t j = 0; j < m; ++j) {  // position j holds sorted element perm[j]
      v.push_back(row[static_cast<size_t>(perm[static_cast<size_t>(j)])]);
      sorter[static_cast<size_t>(perm[static_cast<size_t>(j)])] = j;
    }
    for (int64_t s : sorter) order.push_back({static_cast<double>(s), s});
  }
  Buf sorter_buf = make_buf(DT::I64, order, shape);
  return {make_buf(t, v, std::move(shape)), std::move(sorter_buf)};
}

/// Values to look up: the sequences' own levels (ties), values between and beyond them, and
/// for floating dtypes NaN, the infinities and -0.
Buf lookups(DT t, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<Val> v;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> floating_edges = {nan, kInf, -kInf, -0.0, 0.25};
  for (int64_t i = 0; i < n; ++i) {
    double x;
    if (dt_floating(t) && i % 4 == 3) x = floating_edges[static_cast<size_t>(i / 4) % floating_edges.size()];
    else if (t == DT::Bool) x = pick(0, 1);
    else if (dt_floating(t)) x = pick(-10, 10) / 2.0;
    else x = t == DT::U8 ? pick(0, 10) : pick(-6, 6);
    v.push_back({x, static_cast<int64_t>(std::isfinite(x) ? x : 0)});
  }
  return make_buf(t, v, std::move(shape));
}

/// Interpolation codes of the quantile calls (both sides map them to these names).
constexpr int kInterpolations = 5;  // linear, lower, higher, midpoint, nearest

}  // namespace

void statistics_calls(Report& rep, const std::string& filter) {
  reseed("statistics");
  for (DT t : kAllDT) {
    const bool fl = dt_floating(t);
    // searchsorted: (out_int32, right, side: 0 none, 1 "left", 2 "right")
    const Buf seq = sorted_rows(t, {9}), seq_rows = sorted_rows(t, {3, 6});
    for (int right : {0, 1})
      for (int i32 : {0, 1}) {
        named_call(rep, filter, "searchsorted", {seq, lookups(t, {4, 5})}, {d(i32), d(right), 0}, false, false);
        named_call(rep, filter, "searchsorted", {seq_rows, lookups(t, {3, 7})}, {d(i32), d(right), 0}, false, false);
      }
    named_call(rep, filter, "searchsorted", {seq, lookups(t, {6})}, {0, 0, 2}, false, false);
    named_call(rep, filter, "searchsorted", {seq, lookups(t, {6})}, {0, 1, 2}, false, false);
    named_call(rep, filter, "searchsorted", {seq, lookups(t, {6})}, {0, 1, 1}, false, false);  // contradicts: refused
    named_call(rep, filter, "searchsorted", {seq, lookups(t, {})}, {0, 0, 0}, false, false);    // a 0-d value
    named_call(rep, filter, "searchsorted", {seq_rows, lookups(t, {2, 7})}, {0, 0, 0}, false, false);  // 2 rows vs 3
    named_call(rep, filter, "searchsorted", {seq_rows, lookups(t, {7})}, {0, 0, 0}, false, false);     // rank
    named_call(rep, filter, "searchsorted", {sorted_rows(t, {0}), lookups(t, {3})}, {0, 0, 0}, false, false);
    named_call(rep, filter, "searchsorted", {seq, lookups(DT::I64, {5})}, {0, 0, 0}, false, false);  // mixed dtypes
    // With a sorter: an unsorted sequence (1-d, and one per row) and the indices that sort it.
    const auto [shuffled, sorter] = shuffled_rows(t, {9});
    const auto [shuffled_rows_, row_sorter] = shuffled_rows(t, {3, 6});
    for (int right : {0, 1}) {
      named_call(rep, filter, "searchsorted", {shuffled, lookups(t, {4, 5}), sorter}, {0, d(right), 0}, false, false);
      named_call(rep, filter, "searchsorted", {shuffled_rows_, lookups(t, {3, 7}), row_sorter}, {0, d(right), 0}, false,
                 false);
    }
    named_call(rep, filter, "searchsorted", {shuffled, lookups(t, {4}), row_sorter}, {0, 0, 0}, false, false);  // shape
    for (int right : {0, 1}) named_call(rep, filter, "bucketize", {lookups(t, {3, 4}), seq}, {d(right)}, false, false);
    named_call(rep, filter, "bucketize", {lookups(t, {3, 4}), seq_rows}, {0}, false, false);  // 2-d boundaries

    // bincount: (minlength; with a second operand, its weights)
    const Buf labels = ints_buf({0, 3, 3, 1, 7, 0, 3}, {7}, t);
    if (!fl && t != DT::Bool) {
      for (int minlength : {0, 4, 12}) {
        named_call(rep, filter, "bincount", {labels}, {d(minlength)}, false, false);
        for (DT w : {DT::F32, DT::F64, DT::I32, DT::F16})
          named_call(rep, filter, "bincount", {labels, random_buf(w, {7}, {-3, 3}, false)}, {d(minlength)}, false, false);
      }
      named_call(rep, filter, "bincount", {ints_buf({}, {0}, t)}, {0}, false, false);
      named_call(rep, filter, "bincount", {ints_buf({}, {0}, t), random_buf(DT::F32, {0}, {0, 1})}, {3}, false, false);
      named_call(rep, filter, "bincount", {labels, random_buf(DT::F32, {6}, {0, 1})}, {0}, false, false);  // length
      named_call(rep, filter, "bincount", {labels}, {-1}, false, false);                                    // minlength
      named_call(rep, filter, "bincount", {ints_buf({0, 1, 2, 0}, {2, 2}, t)}, {0}, false, false);          // 2-d
      if (t != DT::U8) named_call(rep, filter, "bincount", {ints_buf({0, -1, 2}, {3}, t)}, {0}, false, false);
    } else {
      named_call(rep, filter, "bincount", {random_buf(t, {5}, {0, 4})}, {0}, false, false);  // refused
    }

    // histc: (bins, min, max)
    const Buf samples = random_buf(t, {40}, {-3, 3}, false);
    for (auto [bins, lo, hi] : {std::tuple{10, -2.0, 2.0}, {7, 0.0, 0.0}, {1, -1.0, 1.0}, {5, 0.1, 0.7}, {3, 2.0, 2.0}})
      named_call(rep, filter, "histc", {samples}, {d(bins), lo, hi}, false, false);
    named_call(rep, filter, "histc", {random_buf(t, {30}, {-3, 3})}, {6, -2.0, 2.0}, false, false);  // edge values
    named_call(rep, filter, "histc", {random_buf(t, {30}, {-3, 3})}, {6, 0.0, 0.0}, false, false);   // NaN: range
    named_call(rep, filter, "histc", {random_buf(t, {0}, {-3, 3})}, {4, 0.0, 0.0}, false, false);
    named_call(rep, filter, "histc", {samples}, {0, -1.0, 1.0}, false, false);  // bins
    named_call(rep, filter, "histc", {samples}, {4, 1.0, -1.0}, false, false);  // min > max

    // median, nanmedian: (dim or -9 for all elements, keepdim)
    const Buf m = tie_matrix(t);
    const Buf noisy = random_buf(t, {5, 7}, {-3, 3});
    for (const char* op : {"median", "nanmedian"}) {
      named_call(rep, filter, op, {m}, {-9, 0}, false, true);
      named_call(rep, filter, op, {random_buf(t, {4, 6}, {-3, 3}, false)}, {-9, 0}, false, true);
      for (int dim : {0, 1, -1})
        for (int keep : {0, 1}) {
          named_call(rep, filter, op, {random_buf(t, {5, 7}, {-3, 3}, false)}, {d(dim), d(keep)}, false, true);
          named_call(rep, filter, op, {noisy}, {d(dim), d(keep)}, false, true);
        }
      named_call(rep, filter, op, {random_buf(t, {}, {-3, 3})}, {0, 0}, false, true);
      named_call(rep, filter, op, {random_buf(t, {0, 3}, {-3, 3})}, {0, 0}, false, true);  // empty: refused
      named_call(rep, filter, op, {random_buf(t, {0, 3}, {-3, 3})}, {1, 0}, false, true);
      named_call(rep, filter, op, {noisy}, {2, 0}, false, true);  // dim out of range
    }

    // quantile, nanquantile: (q or -9 for the tensor q operand, dim or -9, keepdim, interpolation)
    const Buf clean = random_buf(t, {4, 9}, {-3, 3}, false);
    for (const char* op : {"quantile", "nanquantile"}) {
      for (int interp = 0; interp < kInterpolations; ++interp) {
        for (double q : {0.0, 0.3, 0.5, 1.0})
          named_call(rep, filter, op, {clean}, {q, -9, 0, d(interp)}, false, true);
        named_call(rep, filter, op, {noisy}, {0.75, 1, 0, d(interp)}, false, true);
        named_call(rep, filter, op, {noisy}, {0.4, 0, 1, d(interp)}, false, true);
        named_call(rep, filter, op, {clean, random_buf(t, {3}, {0, 1}, false)}, {-9, -1, 1, d(interp)}, false, true);
      }
      named_call(rep, filter, op, {clean, random_buf(t, {}, {0, 1}, false)}, {-9, 0, 0, 0}, false, true);
      named_call(rep, filter, op, {random_buf(t, {}, {-3, 3})}, {0.5, -9, 0, 0}, false, true);
      named_call(rep, filter, op, {clean}, {1.5, -9, 0, 0}, false, true);                          // q > 1
      named_call(rep, filter, op, {clean}, {-0.1, 1, 0, 0}, false, true);                          // q < 0
      named_call(rep, filter, op, {clean, random_buf(t, {2, 2}, {0, 1})}, {-9, 0, 0, 0}, false, true);  // 2-d q
      named_call(rep, filter, op, {random_buf(t, {0, 3}, {-3, 3})}, {0.5, 0, 0, 0}, false, true);  // empty dim
      if (t != DT::F64) named_call(rep, filter, op, {clean, random_buf(DT::F64, {2}, {0, 1})}, {-9, 0, 0, 0}, false, true);
    }

    // cdist: (p, compute_mode or -9), pdist: (p)
    const Buf x1 = random_buf(t, {2, 4, 3}, {-2, 2}, false), x2 = random_buf(t, {5, 3}, {-2, 2}, false);
    for (double p : {0.0, 1.0, 2.0, 3.5, kInf}) {
      named_call(rep, filter, "cdist", {x1, x2}, {p, -9}, false, true);
      named_call(rep, filter, "pdist", {random_buf(t, {5, 3}, {-2, 2}, false)}, {p}, false, true);
    }
    for (int mode : {0, 1, 2})
      named_call(rep, filter, "cdist", {random_buf(t, {30, 4}, {-2, 2}, false), x2}, {2, d(mode)}, false, true);
    named_call(rep, filter, "cdist", {x1, random_buf(t, {5, 2}, {-2, 2})}, {2, -9}, false, true);  // columns
    named_call(rep, filter, "cdist", {x1, x2}, {-1, -9}, false, true);                             // p < 0
    named_call(rep, filter, "cdist", {random_buf(t, {3}, {-2, 2}), x2}, {2, -9}, false, true);     // 1-d
    named_call(rep, filter, "cdist", {random_buf(t, {2, 1, 3}, {-2, 2}), random_buf(t, {3, 2, 3}, {-2, 2})}, {1, -9},
               false, true);  // batch dims 2 vs 3
    named_call(rep, filter, "cdist", {x1, random_buf(t, {0, 3}, {-2, 2})}, {2, -9}, false, true);
    named_call(rep, filter, "pdist", {random_buf(t, {1, 3}, {-2, 2})}, {2}, false, true);
    named_call(rep, filter, "pdist", {random_buf(t, {4}, {-2, 2})}, {2}, false, true);  // 1-d: refused
    if (t != DT::F64) named_call(rep, filter, "cdist", {x1, random_buf(DT::F64, {5, 3}, {-2, 2})}, {2, -9}, false, true);
  }
}

}  // namespace ediff
