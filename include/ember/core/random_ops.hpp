#pragma once
/// Random sampling beyond the factories, as libtorch's: in-place fills (uniform_, normal_,
/// bernoulli_, exponential_, log_normal_, cauchy_, geometric_, random_), bernoulli, normal, poisson,
/// binomial,
/// multinomial, randperm, randint_like;
/// and comparisons with a tolerance (isclose, allclose, equal).
///
///   Tensor keep = empty({64, 128}).bernoulli_(0.9);          // a dropout mask
///   Tensor next = multinomial(softmax(logits / t, -1), 1);    // sample a token per row
///   Tensor order = randperm(n);                               // shuffle
///   CHECK(allclose(got, want, 1e-6, 1e-9));
///
/// Every draw comes from the global counter-based generator (manual_seed), or from a Generator
/// of one's own (core/generator.hpp): the same seed gives the same values whatever the thread
/// count. The draws are not PyTorch's (another generator).

#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/inplace_check.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string_view>
#include <vector>

namespace ember {

namespace detail {
/// Uniform f64 draws on [0, 1) of `shape`, on the CPU.
template <class P>
BasicTensor<P> uniform01(const Shape& shape) {
  return random_tensor<P>(shape, TensorOptions(DType::F64), false, 0.0, 1.0, "random");
}

/// The integers a dtype holds exactly: [lo, hi].
struct IntRange {
  int64_t lo, hi;
};
inline IntRange exact_integers(DType t) {
  constexpr int64_t i64_max = std::numeric_limits<int64_t>::max();
  switch (t) {
    case DType::Bool: return {0, 1};
    case DType::U8: return {0, 255};
    case DType::I8: return {-128, 127};
    case DType::I32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::F16: return {-2048, 2048};
    case DType::BF16: return {-256, 256};
    case DType::F32: return {-(int64_t{1} << 24), int64_t{1} << 24};
    case DType::F64: return {-(int64_t{1} << 53), int64_t{1} << 53};
    default: return {-i64_max - 1, i64_max};
  }
}

/// The finite range of a floating dtype.
inline double largest_finite(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

/// A random fill may not write where autograd forbids an in-place op (checked before drawing,
/// so that a refused fill does not advance the generator).
template <class P>
void check_fill_target(const BasicTensor<P>& t, const char* op) {
  if constexpr (autograd::detail::has_autograd<P>())
    if (autograd::GradMode::is_enabled()) autograd::detail::check_inplace_target(t.impl(), op, "");
}
}  // namespace detail

// ---- in-place fills --------------------------------------------------------------------------

/// Uniform on [from, to) (from when they are equal); both within the dtype's finite range.
/// (After rounding to f32/f16/bf16, a value that would reach `to` becomes the largest below it.)
template <class P>
BasicTensor<P>& BasicTensor<P>::uniform_(double from, double to) {
  EMBER_CHECK(is_floating_point(), "[uniform_] needs a floating tensor, got {}", dtype());
  const double big = detail::largest_finite(dtype());
  EMBER_CHECK(from <= to && from >= -big && to <= big && std::isfinite(to - from),
              "[uniform_] expects from <= to within {}'s range (+-{}), got from={} to={}", dtype(), big, from, to);
  detail::check_fill_target(*this, "uniform_");
  if (from == to) return fill_(from);
  return copy_(detail::random_tensor<P>(sizes(), TensorOptions(dtype()), false, from, to, "uniform_"));
}

/// Normal with the given mean and standard deviation.
template <class P>
BasicTensor<P>& BasicTensor<P>::normal_(double mean, double std) {
  EMBER_CHECK(is_floating_point(), "[normal_] needs a floating tensor, got {}", dtype());
  EMBER_CHECK(std >= 0 && std::isfinite(std) && std::isfinite(mean),
              "[normal_] expects a finite mean and std >= 0, got mean={} std={}", mean, std);
  detail::check_fill_target(*this, "normal_");
  return copy_(detail::random_tensor<P>(sizes(), TensorOptions(dtype()), true, mean, std, "normal_"));
}

/// 1 with probability p, else 0 (any dtype).
template <class P>
BasicTensor<P>& BasicTensor<P>::bernoulli_(double p) {
  EMBER_CHECK(p >= 0 && p <= 1, "[bernoulli_] expects p in [0, 1], got {}", p);
  detail::check_fill_target(*this, "bernoulli_");
  return copy_(detail::uniform01<P>(sizes()).lt(p));
}

/// 1 with probability p[i] (p broadcast to this tensor's shape), else 0.
template <class P>
BasicTensor<P>& BasicTensor<P>::bernoulli_(const BasicTensor& p) {
  EMBER_CHECK(p.is_floating_point(), "[bernoulli_] expects floating probabilities, got {}", p.dtype());
  BasicTensor prob = p.detach().to(kCPU, DType::F64);
  EMBER_CHECK(prob.ge(0.0).logical_and(prob.le(1.0)).all().template item<bool>(),
              "[bernoulli_] expects every probability in [0, 1] (shape {})", p.sizes());
  EMBER_CHECK(ops::broadcast_shapes(prob.sizes(), sizes(), "bernoulli_") == Shape(sizes()),
              "[bernoulli_] probabilities of shape {} do not broadcast to the tensor's shape {}", p.sizes(), sizes());
  detail::check_fill_target(*this, "bernoulli_");
  return copy_(detail::uniform01<P>(sizes()).lt(prob));
}

/// Exponential with rate lambd: -log(1 - u) / lambd.
template <class P>
BasicTensor<P>& BasicTensor<P>::exponential_(double lambd) {
  EMBER_CHECK(is_floating_point(), "[exponential_] needs a floating tensor, got {}", dtype());
  EMBER_CHECK(lambd > 0 && std::isfinite(lambd), "[exponential_] expects a finite lambd > 0, got {}", lambd);
  detail::check_fill_target(*this, "exponential_");
  BasicTensor u = detail::uniform01<P>(sizes());  // one f64 buffer, transformed in place
  return copy_(u.neg_().log1p_().mul_(-1.0 / lambd));
}

/// exp of a normal draw with the given mean and std (of the logarithm), as PyTorch's.
template <class P>
BasicTensor<P>& BasicTensor<P>::log_normal_(double mean, double std) {
  EMBER_CHECK(is_floating_point(), "[log_normal_] needs a floating tensor, got {}", dtype());
  EMBER_CHECK(std > 0 && std::isfinite(std) && std::isfinite(mean),
              "[log_normal_] expects a finite mean and std > 0, got mean={} std={}", mean, std);
  detail::check_fill_target(*this, "log_normal_");
  return copy_(detail::random_tensor<P>(sizes(), TensorOptions(DType::F64), true, mean, std, "log_normal_").exp_());
}

/// Cauchy with the given median and scale: median + sigma tan(pi (u - 1/2)).
template <class P>
BasicTensor<P>& BasicTensor<P>::cauchy_(double median, double sigma) {
  EMBER_CHECK(is_floating_point(), "[cauchy_] needs a floating tensor, got {}", dtype());
  EMBER_CHECK(sigma > 0 && std::isfinite(sigma) && std::isfinite(median),
              "[cauchy_] expects a finite median and sigma > 0, got median={} sigma={}", median, sigma);
  detail::check_fill_target(*this, "cauchy_");
  BasicTensor u = detail::uniform01<P>(sizes());  // one f64 buffer, transformed in place
  return copy_(u.sub_(0.5).mul_(std::numbers::pi).tan_().mul_(sigma).add_(median));
}

/// The number of Bernoulli(p) trials up to the first success (1, 2, ...): ceil(log(1 - u) /
/// log(1 - p)), in any dtype but bool (integer ones saturate at their largest value).
template <class P>
BasicTensor<P>& BasicTensor<P>::geometric_(double p) {
  EMBER_CHECK(p > 0 && p < 1, "[geometric_] expects p in (0, 1), got {}", p);
  EMBER_CHECK(dtype() != DType::Bool, "[geometric_] needs a numeric tensor, got bool");
  detail::check_fill_target(*this, "geometric_");
  BasicTensor u = detail::uniform01<P>(sizes());
  u.neg_().log1p_().div_(std::log1p(-p)).ceil_().clamp_(1.0, std::nullopt);  // u = 0 would give 0 trials
  if (!is_floating_point()) {
    // The largest double that converts into the dtype (int64's largest, 2^63 - 1, does not).
    const double cap = dtype() == DType::I64 ? 9223372036854774784.0
                                             : static_cast<double>(detail::exact_integers(dtype()).hi);
    u.clamp_(std::nullopt, cap);
  }
  return copy_(u);
}

/// Integers uniform on [from, to), in this tensor's dtype, which must hold every one of them
/// exactly (f16 up to 2048, bf16 256, f32 2^24).
template <class P>
BasicTensor<P>& BasicTensor<P>::random_(int64_t from, int64_t to) {
  EMBER_CHECK(to > from, "[random_] expects from < to, got from={} to={}", from, to);
  const detail::IntRange r = detail::exact_integers(dtype());
  EMBER_CHECK(from >= r.lo && to - 1 <= r.hi, "[random_] [{}, {}) does not fit {} (exact integers {}..{})", from, to,
              dtype(), r.lo, r.hi);
  detail::check_fill_target(*this, "random_");
  return copy_(randint<P>(from, to, sizes(), TensorOptions(DType::I64)));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::random_(int64_t to) {
  return random_(0, to);
}

// ---- sampling functions ------------------------------------------------------------------------

/// 1 with probability p[i], else 0, in p's shape and dtype.
template <class P>
BasicTensor<P> bernoulli(const BasicTensor<P>& p) {
  EMBER_CHECK(p.is_floating_point(), "[bernoulli] expects floating probabilities, got {}", p.dtype());
  BasicTensor<P> out = empty_like(p);
  out.bernoulli_(p);
  return out;
}
/// 1 with probability p, else 0, in `input`'s shape and dtype.
template <class P>
BasicTensor<P> bernoulli(const BasicTensor<P>& input, double p) {
  BasicTensor<P> out = empty_like(input);
  out.bernoulli_(p);
  return out;
}

/// mean + std * z for standard normal z, mean and std broadcast, in mean's dtype (std's for a
/// number mean). Every std must be >= 0. A sample, not a function of mean and std: no
/// gradient flows to them (PyTorch's is zero); mean + std * randn_like(std) is the
/// reparameterised, differentiable form.
template <class P>
BasicTensor<P> normal(const BasicTensor<P>& mean, const BasicTensor<P>& std) {
  EMBER_CHECK(mean.is_floating_point() && std.is_floating_point(),
              "[normal] expects floating mean and std, got {} and {}", mean.dtype(), std.dtype());
  EMBER_CHECK(mean.device() == std.device(), "[normal] expects mean and std on one device, got {} and {}",
              mean.device(), std.device());
  const BasicTensor<P> m = mean.detach(), s = std.detach();
  EMBER_CHECK(s.ge(0.0).all().template item<bool>(), "[normal] expects every std >= 0 (shape {})", std.sizes());
  const Shape shape = ops::broadcast_shapes(mean.sizes(), std.sizes(), "normal");
  BasicTensor<P> z = randn<P>(shape, TensorOptions(DType::F64));
  return (m.to(kCPU, DType::F64) + s.to(kCPU, DType::F64) * z).to(mean.device(), mean.dtype());
}
template <class P>
BasicTensor<P> normal(const BasicTensor<P>& mean, double std = 1.0) {
  EMBER_CHECK(std >= 0, "[normal] expects std >= 0, got {}", std);
  return normal(mean, full_like(mean, std));
}
template <class P>
BasicTensor<P> normal(double mean, const BasicTensor<P>& std) {
  return normal(full_like(std, mean), std);
}
/// A new tensor of `shape` drawn from N(mean, std^2).
template <class P = DefaultPolicy>
BasicTensor<P> normal(double mean, double std, const Shape& shape, TensorOptions o = {}) {
  EMBER_CHECK(std >= 0 && std::isfinite(std) && std::isfinite(mean),
              "[normal] expects a finite mean and std >= 0, got mean={} std={}", mean, std);
  return detail::random_tensor<P>(shape, o, true, mean, std, "normal");
}

/// A random permutation of 0 .. n-1 (i64 unless o says otherwise; the dtype must hold n - 1
/// exactly).
template <class P = DefaultPolicy>
BasicTensor<P> randperm(int64_t n, TensorOptions o = {}) {
  EMBER_CHECK(n >= 0, "[randperm] n must be non-negative, got {}", n);
  const DType dt = o.dtype_or(DType::I64);
  EMBER_CHECK(dt != DType::Bool, "[randperm] needs a numeric dtype, got bool");
  const int64_t largest = detail::exact_integers(dt).hi;
  EMBER_CHECK(n - 1 <= largest, "[randperm] n = {} is too large for {} (largest exact value {})", n, dt, largest);
  // The order of n uniform keys (53 random bits each: ties have probability ~n^2 / 2^54).
  return detail::uniform01<P>({n}).argsort().to(dt).to(o.device_or(kCPU));
}

/// randint(low, high) in t's shape, dtype and device.
template <class P>
BasicTensor<P> randint_like(const BasicTensor<P>& t, int64_t low, int64_t high) {
  return randint<P>(low, high, t.sizes(), TensorOptions(t.dtype())).to(t.device());
}
template <class P>
BasicTensor<P> randint_like(const BasicTensor<P>& t, int64_t high) {
  return randint_like(t, 0, high);
}

/// `num_samples` category indices per row of `probs` (1-d: one distribution; 2-d: one per
/// row), each drawn with probability proportional to its weight; without replacement, no index
/// twice in a row. Weights must be finite, >= 0, with a positive sum per row. i64 result of
/// shape (num_samples) or (rows, num_samples).
template <class P>
BasicTensor<P> multinomial(const BasicTensor<P>& probs, int64_t num_samples, bool replacement = false) {
  constexpr const char* op = "multinomial";
  EMBER_CHECK(probs.dim() == 1 || probs.dim() == 2, "[{}] expects 1 or 2 dims, got shape {}", op, probs.sizes());
  EMBER_CHECK(probs.is_floating_point(), "[{}] expects floating weights, got {}", op, probs.dtype());
  EMBER_CHECK(num_samples > 0, "[{}] cannot draw {} samples", op, num_samples);
  const int64_t n = probs.size(-1);
  EMBER_CHECK(replacement || num_samples <= n,
              "[{}] cannot draw {} samples without replacement from {} categories", op, num_samples, n);
  BasicTensor<P> p = probs.detach().to(kCPU, DType::F64);
  if (p.dim() == 1) p = p.unsqueeze(0);
  const int64_t rows = p.size(0);
  const Device device = probs.device();
  if (rows == 0) {
    Shape s = {0, num_samples};
    return empty<P>(probs.dim() == 1 ? Shape{num_samples} : s, TensorOptions(DType::I64).device(device));
  }
  EMBER_CHECK(p.isfinite().logical_and(p.ge(0.0)).all().template item<bool>(),
              "[{}] the weights (shape {}) contain inf, NaN or a negative value", op, probs.sizes());
  BasicTensor<P> nonzero = p.gt(0.0).sum({-1});  // i64 (rows)
  EMBER_CHECK(nonzero.gt(int64_t{0}).all().template item<bool>(),
              "[{}] a row of the weights (shape {}) sums to 0", op, probs.sizes());
  EMBER_CHECK(replacement || nonzero.ge(num_samples).all().template item<bool>(),
              "[{}] a row of the weights (shape {}) has fewer than {} non-zero categories to draw without "
              "replacement",
              op, probs.sizes(), num_samples);
  BasicTensor<P> out;
  if (!replacement) {
    // PyTorch's algorithm: the largest p / e for exponential e (the exponential race): an
    // ordered draw without replacement. A zero weight's key is 0, below every positive one.
    BasicTensor<P> e = empty<P>(p.sizes(), TensorOptions(DType::F64));
    e.exponential_(1.0);
    BasicTensor<P> keys = (p / e).masked_fill(p.eq(0.0), 0.0);  // e = 0 (rate 2^-53): no 0 / 0
    out = num_samples == 1 ? keys.argmax(-1, true) : keys.topk(num_samples, -1).second;
  } else {
    // Inverse CDF: the number of cumulative weights <= u * total is the drawn index; a zero
    // weight adds no width. Rounding can put u * total at the total: the last non-zero
    // category then. Blocks of draws keep the comparison table near 2^22 entries.
    BasicTensor<P> cdf = p.cumsum(-1);
    BasicTensor<P> total = cdf.narrow(-1, n - 1, 1);                                    // (rows, 1)
    BasicTensor<P> last = p.gt(0.0).flip(-1).to(DType::I64).argmax(-1, true).neg() + (n - 1);  // (rows, 1)
    const int64_t step = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, rows * n));
    std::vector<BasicTensor<P>> parts;
    for (int64_t s = 0; s < num_samples; s += step) {
      const int64_t len = std::min(step, num_samples - s);
      BasicTensor<P> x = detail::uniform01<P>({rows, len}) * total;                    // (rows, len)
      BasicTensor<P> count = cdf.unsqueeze(1).le(x.unsqueeze(-1)).sum({-1});          // (rows, len)
      parts.push_back(count.minimum(last));
    }
    out = parts.size() == 1 ? parts[0] : cat(parts, -1);
  }
  if (probs.dim() == 1) out = out.squeeze(0);
  return out.to(device);
}
namespace detail {
/// Draws for the `pending` elements by a rejection method: make(i) gives element i's sampler,
/// whose attempt(u, v) takes two uniforms in [0, 1) and returns the draw or NaN (rejected);
/// accept(i, draw) stores it. Rounds of a few attempts for every pending element, fresh
/// uniforms each round, until all are accepted (the same draws for the same seed, whatever
/// the order of acceptance).
template <class P, class Make, class Accept>
void draw_by_rejection(std::vector<int64_t> pending, Make&& make, Accept&& accept) {
  constexpr int64_t kAttempts = 4;
  while (!pending.empty()) {
    const int64_t m = static_cast<int64_t>(pending.size());
    const BasicTensor<P> pairs = uniform01<P>({m, 2 * kAttempts});
    const double* w = pairs.template data_ptr<double>();
    std::vector<int64_t> rejected;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = pending[static_cast<size_t>(j)];
      const auto sampler = make(i);
      double k = std::numeric_limits<double>::quiet_NaN();
      for (int64_t t = 0; t < kAttempts && std::isnan(k); ++t)
        k = sampler.attempt(w[j * 2 * kAttempts + 2 * t], w[j * 2 * kAttempts + 2 * t + 1]);
      if (std::isnan(k)) rejected.push_back(i);
      else accept(i, k);
    }
    pending.swap(rejected);
  }
}

/// A Poisson(lam) draw for lam < 10 from one uniform u in [0, 1): the smallest k whose
/// cumulative probability exceeds u.
inline double poisson_by_inversion(double lam, double u) {
  double p = std::exp(-lam), cdf = p, k = 0;
  // (p negligible against the cdf, past the mode: u sat above the cdf's rounded total, a
  // case of probability ~1e-16; the count stops in the tail instead of running on)
  while (u >= cdf && p > 1e-17 * cdf) {
    k += 1;
    p *= lam / k;
    cdf += p;
  }
  return k;
}
/// Hörmann's transformed rejection (PTRS, 1993) for lam >= 10: one attempt from two uniforms
/// in [0, 1); NaN when the attempt is rejected. About 1.1 attempts per draw on average.
struct PoissonPtrs {
  double lam, log_lam, a, b, log_inv_alpha, vr;
  explicit PoissonPtrs(double rate) : lam(rate), log_lam(std::log(rate)) {
    b = 0.931 + 2.53 * std::sqrt(rate);
    a = -0.059 + 0.02483 * b;
    log_inv_alpha = std::log(1.1239 + 1.1328 / (b - 3.4));
    vr = 0.9277 - 3.6224 / (b - 2);
  }
  double attempt(double u0, double v) const {
    const double u = u0 - 0.5, us = 0.5 - std::abs(u);
    const double k = std::floor((2 * a / us + b) * u + lam + 0.43);  // us = 0: -inf, rejected
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) return std::numeric_limits<double>::quiet_NaN();
    const bool accept = std::log(v) + log_inv_alpha - std::log(a / (us * us) + b) <=
                        -lam + k * log_lam - log_factorial(k);
    return accept ? k : std::numeric_limits<double>::quiet_NaN();
  }
  /// log(k!) by lgamma_r: std::lgamma writes the global signgam, a race between threads.
  static double log_factorial(double k) {
    int sign = 0;
    return ::lgamma_r(k + 1, &sign);
  }
};
}  // namespace detail

/// One Poisson(rate) count per element of `rates` (finite, >= 0), in rates' dtype and device,
/// as torch::poisson: inversion below rate 10, Hörmann's PTRS above. A sample, not a function
/// of the rates: no gradient flows to them (PyTorch's is zero).
template <class P>
BasicTensor<P> poisson(const BasicTensor<P>& rates) {
  constexpr const char* op = "poisson";
  EMBER_CHECK(rates.defined() && rates.is_floating_point(), "[{}] expects floating rates, got {}", op,
              rates.defined() ? dtype_name(rates.dtype()) : std::string_view("an undefined tensor"));
  const BasicTensor<P> r = rates.detach().to(kCPU, DType::F64).contiguous();
  const int64_t n = r.numel();
  const double* lam = r.template data_ptr<double>();
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(lam[i] >= 0 && std::isfinite(lam[i]), "[{}] rates must be finite and >= 0, got {} (shape {})", op,
                lam[i], rates.sizes());
  BasicTensor<P> out = empty<P>(r.sizes(), TensorOptions(DType::F64));
  double* o = out.template data_ptr<double>();
  const BasicTensor<P> u = detail::uniform01<P>({n});
  const double* uv = u.template data_ptr<double>();
  std::vector<int64_t> pending;  // rates >= 10, drawn by rejection below
  for (int64_t i = 0; i < n; ++i) {
    if (lam[i] < 10) o[i] = detail::poisson_by_inversion(lam[i], uv[i]);
    else pending.push_back(i);
  }
  detail::draw_by_rejection<P>(
      std::move(pending), [&](int64_t i) { return detail::PoissonPtrs(lam[i]); }, [&](int64_t i, double k) { o[i] = k; });
  return out.to(rates.device(), rates.dtype());
}

namespace detail {
/// A Binomial(n, p) draw for n min(p, 1 - p) < 10 from one uniform u in [0, 1), p <= 1/2:
/// the smallest k whose cumulative probability exceeds u (the pmf by its ratio recursion,
/// from (1 - p)^n = exp(n log1p(-p)), which does not underflow here).
inline double binomial_by_inversion(double n, double p, double u) {
  const double ratio = p / (1 - p);
  double pmf = std::exp(n * std::log1p(-p)), cdf = pmf, k = 0;
  while (u >= cdf && k < n && pmf > 1e-17 * cdf) {  // (the rounded total: see poisson_by_inversion)
    pmf *= ratio * (n - k) / (k + 1);
    k += 1;
    cdf += pmf;
  }
  return k;
}
/// Hörmann's transformed rejection with squeeze (BTRS, 1993) for n min(p, 1 - p) >= 10,
/// p <= 1/2: one attempt from two uniforms in [0, 1); NaN when it is rejected. About 1.15
/// attempts per draw on average.
struct BinomialBtrs {
  double n, p, spq, a, b, c, vr, alpha, r, m;
  BinomialBtrs(double count, double prob) : n(count), p(prob) {
    spq = std::sqrt(n * p * (1 - p));
    b = 1.15 + 2.53 * spq;
    a = -0.0873 + 0.0248 * b + 0.01 * p;
    c = n * p + 0.5;
    vr = 0.92 - 4.2 / b;
    alpha = (2.83 + 5.1 / b) * spq;
    r = p / (1 - p);
    m = std::floor((n + 1) * p);  // the mode
  }
  double attempt(double u0, double v) const {
    const double u = u0 - 0.5, us = 0.5 - std::abs(u);
    const double k = std::floor((2 * a / us + b) * u + c);  // us = 0: -inf, rejected
    if (k < 0 || k > n) return std::numeric_limits<double>::quiet_NaN();
    if (us >= 0.07 && v <= vr) return k;
    // The exact test, log of the scaled uniform against log(pmf(k) / pmf(m)) by Stirling's
    // series: differences of log-factorials of size n log n would cancel away the precision
    // at counts of 1e11 and more; these terms stay of the size of the result.
    const double lhs = std::log(v * alpha / (a / (us * us) + b));
    const double rhs = (m + 0.5) * std::log((m + 1) / (r * (n - m + 1))) + (n + 1) * std::log1p((k - m) / (n - k + 1)) +
                       (k + 0.5) * std::log(r * (n - k + 1) / (k + 1)) + stirling_tail(m) + stirling_tail(n - m) -
                       stirling_tail(k) - stirling_tail(n - k);
    return lhs <= rhs ? k : std::numeric_limits<double>::quiet_NaN();
  }
  /// log(k!) less Stirling's approximation (k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2:
  /// exact through lgamma for small k, the series' next terms above.
  static double stirling_tail(double k) {
    if (k <= 9) {
      return PoissonPtrs::log_factorial(k) -
             ((k + 0.5) * std::log(k + 1) - (k + 1) + 0.5 * std::log(2 * std::numbers::pi));
    }
    const double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
  }
};
}  // namespace detail

/// One Binomial(count, prob) draw per element, as torch::binomial: `count` (floating, whole
/// numbers >= 0) gives the shape, dtype and device; `prob` (in [0, 1], any floating dtype)
/// broadcasts to it. Inversion where count min(p, 1 - p) < 10, Hörmann's BTRS above
/// (PyTorch's split). A sample: no gradient flows to count or prob. Stricter than PyTorch's
/// on purpose: a negative, fractional or infinite count and a prob outside [0, 1] or NaN are
/// errors (PyTorch returns 0, count or NaN for them without a word).
template <class P>
BasicTensor<P> binomial(const BasicTensor<P>& count, const BasicTensor<P>& prob) {
  constexpr const char* op = "binomial";
  EMBER_CHECK(count.defined() && prob.defined(), "[{}] got an undefined tensor", op);
  EMBER_CHECK(count.is_floating_point() && prob.is_floating_point(),
              "[{}] expects floating count and prob, got {} and {}", op, count.dtype(), prob.dtype());
  EMBER_CHECK(count.device() == prob.device(), "[{}] expects count and prob on one device, got {} and {}", op,
              count.device(), prob.device());
  EMBER_CHECK(ops::broadcast_shapes(count.sizes(), prob.sizes(), op) == count.sizes(),
              "[{}] prob of shape {} does not broadcast to count's shape {}", op, prob.sizes(), count.sizes());
  const BasicTensor<P> nt = count.detach().to(kCPU, DType::F64).contiguous();
  const BasicTensor<P> pt = prob.detach().to(kCPU, DType::F64).expand(count.sizes()).contiguous();
  const int64_t total = nt.numel();
  const double* nv = nt.template data_ptr<double>();
  const double* pv = pt.template data_ptr<double>();
  for (int64_t i = 0; i < total; ++i) {
    EMBER_CHECK(nv[i] >= 0 && std::isfinite(nv[i]) && nv[i] == std::floor(nv[i]),
                "[{}] count must hold whole numbers >= 0, got {} (shape {})", op, nv[i], count.sizes());
    EMBER_CHECK(pv[i] >= 0 && pv[i] <= 1, "[{}] prob must be in [0, 1], got {} (shape {})", op, pv[i],
                prob.sizes());
  }
  BasicTensor<P> out = empty<P>(nt.sizes(), TensorOptions(DType::F64));
  double* o = out.template data_ptr<double>();
  const BasicTensor<P> u = detail::uniform01<P>({total});
  const double* uv = u.template data_ptr<double>();
  // Drawn with p <= 1/2 (a count of the rarer outcome), mirrored back.
  auto mirrored = [&](int64_t i, double k) { return pv[i] > 0.5 ? nv[i] - k : k; };
  std::vector<int64_t> pending;  // drawn by rejection below
  for (int64_t i = 0; i < total; ++i) {
    const double p = std::min(pv[i], 1 - pv[i]);
    if (p == 0 || nv[i] == 0) o[i] = mirrored(i, 0);
    else if (nv[i] * p < 10) o[i] = mirrored(i, detail::binomial_by_inversion(nv[i], p, uv[i]));
    else pending.push_back(i);
  }
  detail::draw_by_rejection<P>(
      std::move(pending), [&](int64_t i) { return detail::BinomialBtrs(nv[i], std::min(pv[i], 1 - pv[i])); },
      [&](int64_t i, double k) { o[i] = mirrored(i, k); });
  return out.to(count.device(), count.dtype());
}

/// libtorch's forms with a generator (core/generator.hpp).
template <class P, std::same_as<Generator> G>
BasicTensor<P> binomial(const BasicTensor<P>& count, const BasicTensor<P>& prob, const G& gen) {
  GeneratorGuard use(gen);
  return binomial(count, prob);
}
template <class P, std::same_as<Generator> G>
BasicTensor<P> poisson(const BasicTensor<P>& rates, const G& gen) {
  GeneratorGuard use(gen);
  return poisson(rates);
}
template <class P = DefaultPolicy, std::same_as<Generator> G>
BasicTensor<P> randperm(int64_t n, const G& gen, TensorOptions o = {}) {
  GeneratorGuard use(gen);
  return randperm<P>(n, o);
}
template <class P, std::same_as<Generator> G>
BasicTensor<P> multinomial(const BasicTensor<P>& probs, int64_t num_samples, bool replacement, const G& gen) {
  GeneratorGuard use(gen);
  return multinomial(probs, num_samples, replacement);
}

// ---- comparisons with a tolerance ----------------------------------------------------------------

/// |a - b| <= atol + rtol |b| element by element (a and b broadcast, one dtype); equal infinities
/// are close, NaN is close to NaN only with equal_nan. Integers compare in f64, bools exactly.
template <class P>
BasicTensor<P> isclose(const BasicTensor<P>& a, const BasicTensor<P>& b, double rtol = 1e-5, double atol = 1e-8,
                       bool equal_nan = false) {
  EMBER_CHECK(a.dtype() == b.dtype(), "[isclose] expects a and b of one dtype, got {} and {}", a.dtype(), b.dtype());
  EMBER_CHECK(rtol >= 0 && atol >= 0, "[isclose] rtol and atol must be >= 0, got rtol={} atol={}", rtol, atol);
  BasicTensor<P> close = a.eq(b);
  if (a.dtype() == DType::Bool) return close;
  if (equal_nan && a.is_floating_point()) close = close.logical_or(a.detach().isnan().logical_and(b.detach().isnan()));
  if (rtol == 0 && atol == 0) return close;  // exact (also integers beyond 2^53)
  BasicTensor<P> x = a.detach(), y = b.detach();
  if (!a.is_floating_point()) x = x.to(DType::F64), y = y.to(DType::F64);
  BasicTensor<P> actual = (x - y).abs(), allowed = (y * rtol).abs() + atol;
  return close.logical_or(actual.isfinite().logical_and(actual.le(allowed)));
}

/// isclose everywhere.
template <class P>
bool allclose(const BasicTensor<P>& a, const BasicTensor<P>& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false) {
  return isclose(a, b, rtol, atol, equal_nan).all().template item<bool>();
}

/// The same shape and equal elements (NaN equals nothing).
template <class P>
bool equal(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  EMBER_CHECK(a.device() == b.device(), "[equal] expects tensors on one device, got {} and {}", a.device(),
              b.device());
  if (a.sizes() != b.sizes()) return false;
  return a.numel() == 0 || a.detach().eq(b.detach()).all().template item<bool>();
}

template <class P>
bool BasicTensor<P>::equal(const BasicTensor& o) const {
  return ember::equal(*this, o);
}
template <class P>
bool BasicTensor<P>::allclose(const BasicTensor& o, double rtol, double atol, bool equal_nan) const {
  return ember::allclose(*this, o, rtol, atol, equal_nan);
}
template <class P>
BasicTensor<P> BasicTensor<P>::isclose(const BasicTensor& o, double rtol, double atol, bool equal_nan) const {
  return ember::isclose(*this, o, rtol, atol, equal_nan);
}

}  // namespace ember
