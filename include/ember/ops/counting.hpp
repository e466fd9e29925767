#pragma once
/// Binning and counting, as libtorch's: searchsorted, bucketize, bincount, histc, histogram,
/// histogramdd.
///
///   Tensor bin = bucketize(x, edges);            // the bucket of each x among sorted edges
///   Tensor n = bincount(labels, {}, classes);    // a count per class label
///   Tensor h = histc(x, 10, 0.0, 1.0);           // a 10-bin histogram of [0, 1]
///
/// Not differentiable (PyTorch's are not either). Computed on the host: device tensors are
/// copied over and the result copied back.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/descriptors.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace ember {

namespace detail {

/// A CPU, contiguous copy of t in f64 (floating) or i64 (integral), for host loops.
template <class P>
BasicTensor<P> host_values(const BasicTensor<P>& t, bool floating) {
  return t.detach().to(kCPU, floating ? DType::F64 : DType::I64).contiguous();
}

/// PyTorch's binary search: the first position whose value is not below v (right: not at or
/// below v). NaN compares as the largest value, in the sequence and as v. With `order` (a
/// sorter's row), the sequence is read as seq[order[0]], seq[order[1]], ...
template <class T>
int64_t search_position(const T* seq, int64_t n, T v, bool right, const int64_t* order = nullptr) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const T at = seq[order ? order[mid] : mid];
    const bool go_right = right ? !(at > v) : !(at >= v);
    if (go_right) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace detail

/// For each value, its insertion position in sorted_sequence that keeps it sorted: the first
/// position whose element is >= the value (right: > the value). sorted_sequence is 1-d, or
/// (..., M) with the values' leading dims (..., K) (one sequence per row). i64 result (i32 with
/// out_int32) of the values' shape. side "left" or "right" overrides right, as libtorch's.
/// With a sorter (i64, sorted_sequence's shape: the indices that sort each row, as argsort
/// gives them) the sequence need not be sorted; positions are in the sorted order.
template <class P>
BasicTensor<P> searchsorted(const BasicTensor<P>& sorted_sequence, const BasicTensor<P>& values, bool out_int32 = false,
                            bool right = false, std::optional<std::string_view> side = std::nullopt,
                            const BasicTensor<P>& sorter = {}) {
  constexpr const char* op = "searchsorted";
  if (side) {
    EMBER_CHECK(*side == "left" || *side == "right", "[{}] side must be \"left\" or \"right\", got \"{}\"", op, *side);
    EMBER_CHECK(!right || *side == "right", "[{}] side \"left\" contradicts right=true", op);
    right = *side == "right";
  }
  EMBER_CHECK(sorted_sequence.dim() >= 1, "[{}] the sorted sequence must have at least 1 dim, got shape {}", op,
              sorted_sequence.sizes());
  // Compared in their common dtype, as libtorch's: bool only where both are bool.
  EMBER_CHECK(sorted_sequence.dtype() != DType::Bool || values.dtype() != DType::Bool,
              "[{}] expects numeric tensors, got {} and {}", op, sorted_sequence.dtype(), values.dtype());
  const bool rows = sorted_sequence.dim() > 1;
  if (rows) {
    bool leading = values.dim() == sorted_sequence.dim();
    for (int64_t d = 0; leading && d + 1 < values.dim(); ++d) leading = values.size(d) == sorted_sequence.size(d);
    EMBER_CHECK(leading,
                "[{}] a sequence of shape {} needs values with the same leading dims (..., K), got shape {}", op,
                sorted_sequence.sizes(), values.sizes());
  }
  const int64_t m = sorted_sequence.size(-1), count = values.numel();
  BasicTensor<P> order;
  if (sorter.defined()) {
    EMBER_CHECK(sorter.dtype() == DType::I64, "[{}] the sorter must be i64, got {}", op, sorter.dtype());
    EMBER_CHECK(sorter.sizes() == sorted_sequence.sizes(),
                "[{}] the sorter must have the sequence's shape {}, got shape {}", op, sorted_sequence.sizes(),
                sorter.sizes());
    EMBER_CHECK(sorter.device() == sorted_sequence.device(), "[{}] the sorter is on {}, the sequence on {}", op,
                sorter.device(), sorted_sequence.device());
    order = sorter.to(kCPU).contiguous();
    const int64_t* o = order.template data_ptr<int64_t>();
    for (int64_t i = 0; i < order.numel(); ++i)
      EMBER_CHECK(o[i] >= 0 && o[i] < m, "[{}] sorter index {} is out of range for rows of {} elements", op, o[i], m);
  }
  // Both in their common dtype first (an i64 sequence searched for f16 values is rounded to
  // f16, as libtorch's), then in f64 or i64, which hold every value of it.
  const DType common = ops::result_type({&sorted_sequence.impl(), &values.impl()});
  const bool floating = is_floating(common);
  const BasicTensor<P> seq = detail::host_values(sorted_sequence.to(common), floating),
                       val = detail::host_values(values.to(common), floating);
  const int64_t per_row = rows ? (values.dim() == 0 ? 1 : values.size(-1)) : count;
  std::vector<int64_t> out(static_cast<size_t>(count));
  auto run = [&]<class T>(const T* s, const T* v) {
    const int64_t* o = order.defined() ? order.template data_ptr<int64_t>() : nullptr;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t r = rows && per_row != 0 ? i / per_row : 0;
      out[static_cast<size_t>(i)] = detail::search_position(s + r * m, m, v[i], right, o ? o + r * m : nullptr);
    }
  };
  if (floating) run(seq.template data_ptr<double>(), val.template data_ptr<double>());
  else run(seq.template data_ptr<int64_t>(), val.template data_ptr<int64_t>());
  BasicTensor<P> result = from_blob<P>(out.data(), values.sizes(), TensorOptions(DType::I64)).clone();
  return result.to(values.device(), out_int32 ? DType::I32 : DType::I64);
}

/// searchsorted of one value: a 0-d result, as libtorch's Scalar form. The value promotes as a
/// C++ number does next to a tensor (a float with an integer sequence is compared in f32; with
/// a floating sequence, in the sequence's dtype; an integer with a bool sequence, in i64).
template <class P>
BasicTensor<P> searchsorted(const BasicTensor<P>& sorted_sequence, const Scalar& value, bool out_int32 = false,
                            bool right = false, std::optional<std::string_view> side = std::nullopt,
                            const BasicTensor<P>& sorter = {}) {
  return searchsorted(sorted_sequence, sorted_sequence.scalar_like(value), out_int32, right, side, sorter);
}

/// The bucket of each input element among sorted boundaries (1-d): searchsorted(boundaries,
/// input, right), so with right = false bucket i holds boundaries[i-1] < x <= boundaries[i].
template <class P>
BasicTensor<P> bucketize(const BasicTensor<P>& input, const BasicTensor<P>& boundaries, bool out_int32 = false,
                         bool right = false) {
  EMBER_CHECK(boundaries.dim() == 1, "[bucketize] boundaries must be 1-d, got shape {}", boundaries.sizes());
  return searchsorted(boundaries, input, out_int32, right);
}

/// The number of occurrences of each value 0, 1, ..., max(input) of a 1-d tensor of
/// non-negative integers (at least minlength bins). With weights (input's length), the sum of
/// the weights instead: f32 weights give f32, other weights f64; without, i64.
template <class P>
BasicTensor<P> bincount(const BasicTensor<P>& input, const BasicTensor<P>& weights = {}, int64_t minlength = 0) {
  constexpr const char* op = "bincount";
  EMBER_CHECK(input.dim() == 1, "[{}] expects a 1-d tensor, got shape {}", op, input.sizes());
  EMBER_CHECK(!input.is_floating_point() && input.dtype() != DType::Bool,
              "[{}] expects an integer tensor, got {}", op, input.dtype());
  EMBER_CHECK(minlength >= 0, "[{}] minlength must be non-negative, got {}", op, minlength);
  EMBER_CHECK(!weights.defined() || input.size(0) == 0 || (weights.dim() == 1 && weights.size(0) == input.size(0)),
              "[{}] weights must be 1-d with the input's length {}, got shape {}", op, input.size(0),
              weights.defined() ? EMBER_FORMAT("{}", weights.sizes()) : std::string());
  const BasicTensor<P> idx = detail::host_values(input, false);
  const int64_t* v = idx.template data_ptr<int64_t>();
  const int64_t n = input.size(0);
  int64_t bins = minlength;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(v[i] >= 0, "[{}] expects non-negative values, got {} at {}", op, v[i], i);
    bins = std::max(bins, v[i] + 1);
  }
  const Device device = input.device();
  if (!weights.defined() || n == 0) {  // (an empty input gives i64 zeros even with weights, as PyTorch)
    std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
    for (int64_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(v[i])];
    return from_blob<P>(counts.data(), {bins}, TensorOptions(DType::I64)).clone().to(device);
  }
  const BasicTensor<P> w = detail::host_values(weights, true);
  const double* wv = w.template data_ptr<double>();
  std::vector<double> sums(static_cast<size_t>(bins), 0.0);
  for (int64_t i = 0; i < n; ++i) sums[static_cast<size_t>(v[i])] += wv[i];
  const DType dt = weights.dtype() == DType::F32 ? DType::F32 : DType::F64;
  return from_blob<P>(sums.data(), {bins}, TensorOptions(DType::F64)).clone().to(device, dt);
}

namespace detail {
/// The smallest and largest of n values (n > 0), as PyTorch's aminmax: NaN anywhere makes
/// both NaN, which histc and histogram refuse as a range.
inline std::pair<double, double> value_range(const double* v, int64_t n) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) return {v[i], v[i]};
    lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
  }
  return {lo, hi};
}
}  // namespace detail

/// A histogram of `bins` equal-width bins over [min, max] (min = max: the elements' own range,
/// which NaN makes an error, as PyTorch's), in the input's dtype. Elements outside the range
/// (and NaN) are not counted; one equal to max goes to the last bin. An element's bin is
/// (x - min) / (max - min) * bins with the bounds and every step rounded to the input's dtype,
/// in that order, as PyTorch's kernel computes it, so that elements at an edge land in the
/// same bin (bf16 shows the order: multiplying first puts a third of random 64-element
/// inputs' boundary elements in other bins than PyTorch 1.13).
template <class P>
BasicTensor<P> histc(const BasicTensor<P>& input, int64_t bins = 100, double min = 0, double max = 0) {
  constexpr const char* op = "histc";
  EMBER_CHECK(input.is_floating_point(), "[{}] expects a floating tensor, got {}", op, input.dtype());
  EMBER_CHECK(bins > 0, "[{}] bins must be positive, got {}", op, bins);
  EMBER_CHECK(min <= max, "[{}] max must be >= min, got min={} max={}", op, min, max);
  const BasicTensor<P> x = detail::host_values(input, true);
  const double* v = x.template data_ptr<double>();
  const int64_t n = x.numel();
  // The bounds as the input's dtype holds them (an f32 0.1f equals max = 0.1 there).
  // (Rounding an exact f64 result to f32 and then to f16/bf16 gives what PyTorch's f32
  // arithmetic followed by its rounding gives: f64 and f32 hold both roundings exactly.)
  const DType dt = input.dtype();
  auto rounded = [dt](double b) {
    const float f = static_cast<float>(b);
    if (dt == DType::F64) return b;
    if (dt == DType::F16) return static_cast<double>(static_cast<float>(Half(f)));
    if (dt == DType::BF16) return static_cast<double>(static_cast<float>(BFloat16(f)));
    return static_cast<double>(f);
  };
  double lo = rounded(min), hi = rounded(max);
  if (lo == hi && n > 0) std::tie(lo, hi) = detail::value_range(v, n);  // NaN: refused below
  // A single value widens to [v - 1, v + 1]. Where the dtype cannot hold those bounds apart
  // (f16 2052), or the number of bins (f16, above 65504), the bins are computed in f64
  // instead: PyTorch divides by zero or by infinity there.
  bool in_dtype = std::isfinite(rounded(static_cast<double>(bins)));
  if (lo == hi) {
    lo -= 1, hi += 1;
    in_dtype = in_dtype && rounded(lo) < rounded(hi);
    if (in_dtype) lo = rounded(lo), hi = rounded(hi);
  }
  EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), "[{}] the range [{}, {}] is not finite", op, lo, hi);
  EMBER_CHECK(lo < hi, "[{}] the range [{}, {}] is empty in f64 (min {}, max {})", op, lo, hi, min, max);
  auto step = [&](double r) { return in_dtype ? rounded(r) : r; };
  std::vector<double> counts(static_cast<size_t>(bins), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    if (!(v[i] >= lo && v[i] <= hi)) continue;
    const double fraction = step(step(v[i] - lo) / step(hi - lo));
    const double pos = step(fraction * step(static_cast<double>(bins)));
    // (max itself, and a position that rounding took to bins or beyond, go to the last bin)
    const int64_t b = pos < static_cast<double>(bins - 1) ? static_cast<int64_t>(pos) : bins - 1;
    counts[static_cast<size_t>(b)] += 1;
  }
  return from_blob<P>(counts.data(), {bins}, TensorOptions(DType::F64)).clone().to(input.device(), input.dtype());
}

namespace detail {
/// f32 and f64, as PyTorch 1.13's (f16 and bf16 edges would collapse: too few values).
template <class P>
void check_histogram_input(const BasicTensor<P>& input) {
  EMBER_CHECK(input.dtype() == DType::F32 || input.dtype() == DType::F64,
              "[histogram] expects an f32 or f64 tensor, got {}", input.dtype());
}
/// The counting of histogram and histogramdd: n points of d coordinates each (row-major),
/// edges[j] (bins[j] + 1 of them, non-decreasing) along coordinate j; a point outside them
/// or with a NaN coordinate is left out (NumPy's rule); the last bin of each coordinate takes
/// its right edge; weights (one per point) add instead of ones; density divides by the total
/// and each bin's volume. The result is row-major over (bins[0], ..., bins[d - 1]).
inline std::vector<double> count_in_bins(const double* points, int64_t n, int64_t d,
                                         const std::vector<const double*>& edges, const std::vector<int64_t>& bins,
                                         const double* weights, bool density, const char* op) {
  int64_t cells = 1;
  for (int64_t j = 0; j < d; ++j) {
    const double* edge = edges[static_cast<size_t>(j)];
    for (int64_t k = 0; k < bins[static_cast<size_t>(j)]; ++k)
      EMBER_CHECK(edge[k] <= edge[k + 1], "[{}] bin edges must not decrease, got {} then {}", op, edge[k], edge[k + 1]);
    // (a product past what a vector holds would be an out-of-bounds write below)
    EMBER_CHECK(!__builtin_mul_overflow(cells, bins[static_cast<size_t>(j)], &cells) &&
                    cells <= std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(double)),
                "[{}] the number of cells overflows: {} bins along dim {} after {} cells", op,
                bins[static_cast<size_t>(j)], j, cells);
  }
  std::vector<double> hist(static_cast<size_t>(cells), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t cell = 0;
    bool inside = true;
    for (int64_t j = 0; j < d && inside; ++j) {
      const double v = points[i * d + j];
      const double* edge = edges[static_cast<size_t>(j)];
      const int64_t nb = bins[static_cast<size_t>(j)];
      inside = v >= edge[0] && v <= edge[nb];
      // The last edge not above v (the last bin also takes its right edge).
      if (inside) cell = cell * nb + std::min<int64_t>(search_position(edge, nb + 1, v, true) - 1, nb - 1);
    }
    if (inside) hist[static_cast<size_t>(cell)] += weights != nullptr ? weights[i] : 1.0;
  }
  if (density) {
    double total = 0;
    for (double h : hist) total += h;
    for (int64_t c = 0; c < cells; ++c) {
      double volume = 1;
      for (int64_t j = d - 1, rest = c; j >= 0; --j) {
        const int64_t nb = bins[static_cast<size_t>(j)], k = rest % nb;
        volume *= edges[static_cast<size_t>(j)][k + 1] - edges[static_cast<size_t>(j)][k];
        rest /= nb;
      }
      hist[static_cast<size_t>(c)] /= total * volume;
    }
  }
  return hist;
}

/// torch::histogram's counting over given edges (non-decreasing; the last bin includes its
/// right edge): values outside them and NaN are left out (NumPy's rule; PyTorch 1.13 counts
/// a NaN in the last bin); weights add instead of ones;
/// density divides by the total and the bin widths (0 / 0 is NaN, as PyTorch's).
/// `x` is the input's values on the host in f64 (host_values), when the caller has them.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> histogram_over(const BasicTensor<P>& input, BasicTensor<P> x,
                                                         const BasicTensor<P>& edges, const BasicTensor<P>& weight,
                                                         bool density) {
  constexpr const char* op = "histogram";
  EMBER_CHECK(!weight.defined() || weight.sizes() == input.sizes(),
              "[{}] weight has shape {} but the input has shape {}", op, weight.defined() ? weight.sizes() : Shape{},
              input.sizes());
  EMBER_CHECK(!weight.defined() || weight.dtype() == input.dtype(), "[{}] weight is {} but the input is {}", op,
              weight.defined() ? weight.dtype() : input.dtype(), input.dtype());
  if (!x.defined()) x = host_values(input, true);
  const BasicTensor<P> e = host_values(edges, true);
  const BasicTensor<P> w = weight.defined() ? host_values(weight, true) : BasicTensor<P>();
  const int64_t bins = e.numel() - 1;
  std::vector<double> hist = count_in_bins(x.template data_ptr<double>(), x.numel(), 1,
                                                 {e.template data_ptr<double>()}, {bins},
                                                 w.defined() ? w.template data_ptr<double>() : nullptr, density, op);
  BasicTensor<P> h = from_blob<P>(hist.data(), {bins}, TensorOptions(DType::F64)).clone();
  return {h.to(input.device(), input.dtype()), edges.detach().clone()};
}
}  // namespace detail

/// torch::histogram with `bins` equal bins over `range` (the data's range without one, which
/// must be finite: infinite or NaN data is refused;
/// a single value v spans [v - 0.5, v + 0.5], no data [0, 1]): {counts, bin edges}, both in
/// the input's floating dtype. With `weight` (the input's shape and dtype) the bins add
/// weights; with `density` they integrate to 1 over the edges.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> histogram(const BasicTensor<P>& input, int64_t bins,
                                                    std::optional<std::pair<double, double>> range = std::nullopt,
                                                    const BasicTensor<P>& weight = {}, bool density = false) {
  constexpr const char* op = "histogram";
  detail::check_histogram_input(input);
  EMBER_CHECK(bins > 0, "[{}] bins must be positive, got {}", op, bins);
  double lo = 0, hi = 0;
  BasicTensor<P> x;  // the input on the host, once, when the range comes from it
  if (range) {
    lo = range->first, hi = range->second;
    EMBER_CHECK(!(lo > hi), "[{}] the range's min must not exceed its max, got [{}, {}]", op, lo, hi);
  } else if (input.numel() > 0) {
    x = detail::host_values(input, true);
    std::tie(lo, hi) = detail::value_range(x.template data_ptr<double>(), x.numel());
  } else {
    hi = 1;
  }
  EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), "[{}] the range [{}, {}] is not finite", op, lo, hi);
  if (lo == hi) lo -= 0.5, hi += 0.5;
  const BasicTensor<P> edges =
      linspace<P>(lo, hi, bins + 1, TensorOptions(input.dtype())).to(input.device());
  return detail::histogram_over(input, std::move(x), edges, weight, density);
}
/// The range as a braced pair: histogram(x, 10, {0.0, 1.0}).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> histogram(const BasicTensor<P>& input, int64_t bins,
                                                    std::pair<double, double> range, const BasicTensor<P>& weight = {},
                                                    bool density = false) {
  return histogram(input, bins, std::optional<std::pair<double, double>>(range), weight, density);
}
/// torch::histogram over given bin edges (1-d, non-decreasing, the input's dtype and device).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> histogram(const BasicTensor<P>& input, const BasicTensor<P>& bins,
                                                    const BasicTensor<P>& weight = {}, bool density = false) {
  constexpr const char* op = "histogram";
  detail::check_histogram_input(input);
  EMBER_CHECK(bins.device() == input.device(), "[{}] bin edges are on {} but the input is on {}", op, bins.device(),
              input.device());
  EMBER_CHECK(bins.dim() == 1 && bins.numel() >= 2, "[{}] bin edges must be 1-d with at least 2 edges, got shape {}",
              op, bins.sizes());
  EMBER_CHECK(bins.dtype() == input.dtype(), "[{}] bin edges are {} but the input is {}", op, bins.dtype(),
              input.dtype());
  return detail::histogram_over(input, BasicTensor<P>(), bins, weight, density);
}

namespace detail {
/// histogramdd over given edges (each 1-d, >= 2 edges, the input's dtype and device). `x` is
/// the input's values on the host in f64 (host_values), when the caller has them; `own_edges`:
/// the caller made the edges for this call (returned as they are, not copied).
template <class P>
std::pair<BasicTensor<P>, std::vector<BasicTensor<P>>> histogramdd_over(const BasicTensor<P>& input, BasicTensor<P> x,
                                                                        std::vector<BasicTensor<P>> edges,
                                                                        const BasicTensor<P>& weight, bool density,
                                                                        bool own_edges) {
  constexpr const char* op = "histogramdd";
  const int64_t d = input.size(-1);
  EMBER_CHECK(static_cast<int64_t>(edges.size()) == d, "[{}] expects bin edges for each of the {} dims, got {}", op, d,
              edges.size());
  const Shape points = Shape(IntArrayRef(input.sizes().data(), input.sizes().size() - 1));
  EMBER_CHECK(!weight.defined() || weight.sizes() == points,
              "[{}] weight has shape {} but expects one per point, shape {} (the input's without its last dim)", op,
              weight.defined() ? weight.sizes() : Shape{}, points);
  EMBER_CHECK(!weight.defined() || (weight.dtype() == input.dtype() && weight.device() == input.device()),
              "[{}] weight ({} on {}) must match the input ({} on {})", op, weight.dtype(), weight.device(),
              input.dtype(), input.device());
  std::vector<BasicTensor<P>> host(edges.size());
  std::vector<const double*> edge(edges.size());
  std::vector<int64_t> bins(edges.size());
  for (size_t j = 0; j < edges.size(); ++j) {
    const BasicTensor<P>& e = edges[j];
    EMBER_CHECK(e.defined() && e.dim() == 1 && e.numel() >= 2,
                "[{}] bin edges of dim {} must be 1-d with at least 2 edges, got {}", op, j,
                e.defined() ? EMBER_FORMAT("shape {}", e.sizes()) : std::string("an undefined tensor"));
    EMBER_CHECK(e.dtype() == input.dtype() && e.device() == input.device(),
                "[{}] bin edges of dim {} ({} on {}) must match the input ({} on {})", op, j, e.dtype(), e.device(),
                input.dtype(), input.device());
    host[j] = host_values(e, true);
    edge[j] = host[j].template data_ptr<double>();
    bins[j] = e.numel() - 1;
  }
  if (!x.defined()) x = host_values(input, true);
  const BasicTensor<P> w = weight.defined() ? host_values(weight, true) : BasicTensor<P>();
  std::vector<double> hist = count_in_bins(x.template data_ptr<double>(), d == 0 ? 0 : x.numel() / d, d, edge, bins,
                                           w.defined() ? w.template data_ptr<double>() : nullptr, density, op);
  const BasicTensor<P> h = from_blob<P>(hist.data(), Shape(IntArrayRef(bins.data(), bins.size())),
                                        TensorOptions(DType::F64))
                               .clone()
                               .to(input.device(), input.dtype());
  if (!own_edges)
    for (BasicTensor<P>& e : edges) e = e.detach().clone();
  return {h, std::move(edges)};
}
template <class P>
void check_histogramdd_input(const BasicTensor<P>& input) {
  EMBER_CHECK(input.defined() && (input.dtype() == DType::F32 || input.dtype() == DType::F64),
              "[histogramdd] expects an f32 or f64 tensor, got {}",
              input.defined() ? dtype_name(input.dtype()) : std::string_view("an undefined tensor"));
  EMBER_CHECK(input.dim() >= 2, "[histogramdd] expects points of D coordinates, shape (*, D), got shape {}",
              input.sizes());
}
}  // namespace detail

/// torch::histogramdd: a D-dimensional histogram of the points in `input` (*, D), bins[j]
/// equal bins along coordinate j over range {min_0, max_0, min_1, max_1, ...} (the data's
/// own range per coordinate without one, as histogram's); {counts (bins[0], ..., bins[D-1]),
/// the D bin edges}. A point outside the range, or with a NaN coordinate, is left out.
/// weight: one per point (the input's shape without its last dim); density: the counts
/// integrate to 1.
template <class P>
std::pair<BasicTensor<P>, std::vector<BasicTensor<P>>> histogramdd(const BasicTensor<P>& input,
                                                                   const std::vector<int64_t>& bins,
                                                                   std::optional<std::vector<double>> range = std::nullopt,
                                                                   const BasicTensor<P>& weight = {},
                                                                   bool density = false) {
  constexpr const char* op = "histogramdd";
  detail::check_histogramdd_input(input);
  const int64_t d = input.size(-1);
  EMBER_CHECK(static_cast<int64_t>(bins.size()) == d, "[{}] expects a bin count for each of the {} dims, got {}", op,
              d, bins.size());
  EMBER_CHECK(!range || static_cast<int64_t>(range->size()) == 2 * d,
              "[{}] a {}-dimensional histogram's range has {} values (min and max per dim), got {}", op, d, 2 * d,
              range ? range->size() : 0);
  BasicTensor<P> x = range || input.numel() == 0 ? BasicTensor<P>() : detail::host_values(input, true);
  std::vector<BasicTensor<P>> edges;
  for (int64_t j = 0; j < d; ++j) {
    EMBER_CHECK(bins[static_cast<size_t>(j)] > 0, "[{}] bins must be positive, got {} for dim {}", op,
                bins[static_cast<size_t>(j)], j);
    double lo = 0, hi = 0;
    if (range) {
      lo = (*range)[static_cast<size_t>(2 * j)], hi = (*range)[static_cast<size_t>(2 * j + 1)];
      EMBER_CHECK(!(lo > hi), "[{}] the range's min must not exceed its max, got [{}, {}] for dim {}", op, lo, hi,
                  j);  // (NaN passes here, to be named "not finite" below)
    } else if (input.numel() > 0) {
      // This coordinate of every point (NaN makes the range NaN: refused below).
      const double* v = x.template data_ptr<double>();
      std::vector<double> column(static_cast<size_t>(x.numel() / d));
      for (size_t i = 0; i < column.size(); ++i) column[i] = v[static_cast<int64_t>(i) * d + j];
      std::tie(lo, hi) = detail::value_range(column.data(), static_cast<int64_t>(column.size()));
    } else {
      hi = 1;
    }
    EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), "[{}] the range [{}, {}] of dim {} is not finite", op, lo, hi,
                j);
    if (lo == hi) lo -= 0.5, hi += 0.5;
    edges.push_back(linspace<P>(lo, hi, bins[static_cast<size_t>(j)] + 1, TensorOptions(input.dtype())).to(input.device()));
  }
  return detail::histogramdd_over(input, std::move(x), std::move(edges), weight, density, /*own_edges=*/true);
}
/// The same bin count for every coordinate.
template <class P>
std::pair<BasicTensor<P>, std::vector<BasicTensor<P>>> histogramdd(const BasicTensor<P>& input, int64_t bins,
                                                                   std::optional<std::vector<double>> range = std::nullopt,
                                                                   const BasicTensor<P>& weight = {},
                                                                   bool density = false) {
  detail::check_histogramdd_input(input);
  return histogramdd(input, std::vector<int64_t>(static_cast<size_t>(input.size(-1)), bins), std::move(range), weight,
                     density);
}
/// Over given bin edges, one 1-d tensor per coordinate (non-decreasing, the input's dtype and device).
template <class P>
std::pair<BasicTensor<P>, std::vector<BasicTensor<P>>> histogramdd(const BasicTensor<P>& input,
                                                                   const std::vector<BasicTensor<P>>& bins,
                                                                   const BasicTensor<P>& weight = {},
                                                                   bool density = false) {
  detail::check_histogramdd_input(input);
  return detail::histogramdd_over(input, BasicTensor<P>(), bins, weight, density, /*own_edges=*/false);
}

template <class P>
BasicTensor<P> BasicTensor<P>::bincount(const BasicTensor& weights, int64_t minlength) const {
  return ember::bincount(*this, weights, minlength);
}
template <class P>
BasicTensor<P> BasicTensor<P>::histc(int64_t bins, double min, double max) const {
  return ember::histc(*this, bins, min, max);
}

}  // namespace ember
