// Fused optimiser updates (see include/ember/optim/fused.hpp): one pass over each parameter
// applies the whole update, element by element. Compiled once per instruction set, like
// elementwise.cpp (see Note [One definition per instruction set] in kernels_cpu/meson.build);
// optim_dispatch.cpp picks the build.
//
// Each update is written once, over xsimd batches. Every element goes through that one code
// path: the last partial batch of a range is copied into zero-padded buffers, updated, and
// copied back. So an element's result does not depend on its position or on which thread
// handled it, even where the compiler contracts a * b + c into an FMA (which it may do
// differently in scalar and vector code). The order of operations is PyTorch's
// (torch/optim/*.py, _single_tensor_*): addcmul is self + (value * t1) * t2, addcdiv is
// self + (value * t1) / t2, add with alpha is self + alpha * other; hyper-parameters are
// rounded to T once, as PyTorch's kernels round their scalar arguments.

#include "flush_denormals.hpp"
#include "optim_arch.hpp"

#include <ember/core/config.hpp>
#include <ember/runtime/threading.hpp>

#include "simd.hpp"

#include <algorithm>

namespace ember::cpu::EMBER_CPU_ARCH::optim {
namespace {

/// The arrays of one parameter: 0 = the parameter, 1 = its gradient, 2-4 = state buffers
/// (null when unused). The gradient is only read.
template <class T>
struct Arrays {
  T* a[5];
};

template <class T>
using B = xsimd::batch<T>;

template <class T>
inline B<T> ld(const Arrays<T>& p, int k, int64_t i) {
  return B<T>::load_unaligned(p.a[k] + i);
}
template <class T>
inline void st(const Arrays<T>& p, int k, int64_t i, const B<T>& v) {
  v.store_unaligned(p.a[k] + i);
}
/// torch.maximum: NaN when either input is NaN (a + b is then NaN).
template <class V>
inline V vmax(const V& a, const V& b) {
  return xsimd::select(xsimd::isnan(a) || xsimd::isnan(b), a + b, xsimd::max(a, b));
}
/// torch.sign: -1, 0 or 1.
template <class V>
inline V vsign(const V& x) {
  const V zero(0), one(1);
  return xsimd::select(x > zero, one, xsimd::select(x < zero, -one, zero));
}

/// Calls body(arrays, i) for every batch of the parameter's elements (see the note at the
/// top: a range's last partial batch runs on padded copies); split across threads above
/// EMBER_GRAIN_SIZE. Subnormal state flushes to zero (see flush_denormals.hpp).
template <class T, class Body>
void run(const Param& p, const Body& body) {
  const Arrays<T> arr = {{static_cast<T*>(p.param), const_cast<T*>(static_cast<const T*>(p.grad)),
                          static_cast<T*>(p.buf[0]), static_cast<T*>(p.buf[1]), static_cast<T*>(p.buf[2])}};
  auto range = [&](int64_t begin, int64_t end) {
    FlushDenormalsGuard ftz;  // per thread: each worker has its own control register
    // Work on local copies of the body (whose captures are by value) and the pointers. The
    // stores below are xsimd stores, which may alias anything; through the references, every
    // constant and pointer was reloaded after each store (adam: 18 vs 12 cycles per vector).
    // Copies whose address never escapes stay in registers.
    const Body f = body;
    const Arrays<T> arr_local = arr;
    constexpr int64_t W = B<T>::size;
    int64_t i = begin;
    for (; i + W <= end; i += W) f(arr_local, i);
    if (i == end) return;
    const int64_t m = end - i;
    alignas(64) T tmp[5][W] = {};
    Arrays<T> t;
    for (int k = 0; k < 5; ++k) {
      t.a[k] = arr.a[k] ? tmp[k] : nullptr;
      if (arr.a[k]) std::copy(arr.a[k] + i, arr.a[k] + i + m, tmp[k]);
    }
    f(t, 0);
    for (int k = 0; k < 5; ++k)
      if (k != 1 && arr.a[k]) std::copy(tmp[k], tmp[k] + m, arr.a[k] + i);
  };
  if (p.numel <= EMBER_GRAIN_SIZE) range(0, p.numel);
  else detail::parallel_for(p.numel, EMBER_GRAIN_SIZE, [&](int64_t b, int64_t e) { range(b, e); });
}

/// Calls f.template operator()<T>(param) with T the parameter's compute type.
template <class F>
void by_dtype(const Param& p, const F& f) {
  if (p.dtype == DType::F64) f.template operator()<double>(p);
  else f.template operator()<float>(p);
}

}  // namespace

void sgd(const SgdArgs& a, const Param* params, const SgdCoef* coef, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const bool first = coef[k].fresh;
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V wd(T(a.weight_decay)), mu(T(a.momentum)), damp(T(1 - a.dampening)), neg_lr(T(-a.lr));
      const bool decay = a.weight_decay != 0, use_mom = a.momentum != 0;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V d = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) d = -d;
        if (decay) d = d + wd * w;
        if (use_mom) {
          V b = first ? d : ld(x, 2, i) * mu + damp * d;
          st(x, 2, i, b);
          d = a.nesterov ? d + mu * b : b;
        }
        st(x, 0, i, w + neg_lr * d);
      });
    });
  }
}

void adam(const AdamArgs& a, const Param* params, const AdamCoef* coef, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const AdamCoef c = coef[k];
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V b1(T(a.beta1)), c1(T(1 - a.beta1)), b2(T(a.beta2)), c2(T(1 - a.beta2)), wd(T(a.weight_decay)),
          shrink(T(1 - a.lr * a.weight_decay)), eps(T(a.eps)), inv_bc2(T(1 / c.bias2_sqrt)), neg_step(T(-c.step_size));
      const bool l2 = a.weight_decay != 0 && !a.decoupled, decoupled = a.weight_decay != 0 && a.decoupled;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (l2) g = g + wd * w;
        if (decoupled) w = w * shrink;
        V m = ld(x, 2, i) * b1 + c1 * g;
        V v = ld(x, 3, i) * b2 + c2 * g * g;
        st(x, 2, i, m);
        st(x, 3, i, v);
        if (a.amsgrad) {
          v = vmax(ld(x, 4, i), v);
          st(x, 4, i, v);
        }
        // sqrt(v) / bc2 as a product with 1 / bc2 (as PyTorch's CUDA kernels divide by a
        // scalar): the divider is this loop's bottleneck (a sqrt and two divisions per
        // element took ~1.4 cycles per float on Zen 4), and the results differ by an ulp.
        V den = xsimd::sqrt(v) * inv_bc2 + eps;
        st(x, 0, i, w + neg_step * m / den);
      });
    });
  }
}

void adamax(const AdamaxArgs& a, const Param* params, const AdamaxCoef* coef, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const AdamaxCoef c = coef[k];
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V b1(T(a.beta1)), c1(T(1 - a.beta1)), b2(T(a.beta2)), wd(T(a.weight_decay)), eps(T(a.eps)),
          neg_clr(T(-c.clr));
      const bool decay = a.weight_decay != 0;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (decay) g = g + wd * w;
        V m = ld(x, 2, i) * b1 + c1 * g;
        V u = vmax(ld(x, 3, i) * b2, xsimd::abs(g) + eps);
        st(x, 2, i, m);
        st(x, 3, i, u);
        st(x, 0, i, w + neg_clr * m / u);
      });
    });
  }
}

void nadam(const NAdamArgs& a, const Param* params, const NAdamCoef* coef, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const NAdamCoef c = coef[k];
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V b1(T(a.beta1)), c1(T(1 - a.beta1)), b2(T(a.beta2)), c2(T(1 - a.beta2)), wd(T(a.weight_decay)),
          shrink(T(1 - a.lr * a.weight_decay)), eps(T(a.eps)), bc2(T(c.bias2)), cg(T(c.grad_coef)),
          cm(T(c.avg_coef));
      const bool l2 = a.weight_decay != 0 && !a.decoupled, decoupled = a.weight_decay != 0 && a.decoupled;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (l2) g = g + wd * w;
        if (decoupled) w = w * shrink;
        V m = ld(x, 2, i) * b1 + c1 * g;
        V v = ld(x, 3, i) * b2 + c2 * g * g;
        st(x, 2, i, m);
        st(x, 3, i, v);
        V den = xsimd::sqrt(v / bc2) + eps;
        w = w + cg * g / den;
        st(x, 0, i, w + cm * m / den);
      });
    });
  }
}

void radam(const RAdamArgs& a, const Param* params, const RAdamCoef* coef, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const RAdamCoef c = coef[k];
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V b1(T(a.beta1)), c1(T(1 - a.beta1)), b2(T(a.beta2)), c2(T(1 - a.beta2)), wd(T(a.weight_decay)),
          shrink(T(1 - a.lr * a.weight_decay)), eps(T(a.eps)), bc1(T(c.bias1)), bc2(T(c.bias2_sqrt)), lr(T(a.lr)),
          rect(T(c.rect));
      const bool l2 = a.weight_decay != 0 && !a.decoupled, decoupled = a.weight_decay != 0 && a.decoupled;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (l2) g = g + wd * w;
        if (decoupled) w = w * shrink;
        V m = ld(x, 2, i) * b1 + c1 * g;
        V v = ld(x, 3, i) * b2 + c2 * g * g;
        st(x, 2, i, m);
        st(x, 3, i, v);
        V step = m / bc1 * lr;
        if (c.rectified) step = step * (bc2 / (xsimd::sqrt(v) + eps)) * rect;
        st(x, 0, i, w - step);
      });
    });
  }
}

void rmsprop(const RMSpropArgs& a, const Param* params, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V al(T(a.alpha)), c(T(1 - a.alpha)), wd(T(a.weight_decay)), eps(T(a.eps)), mu(T(a.momentum)),
          neg_lr(T(-a.lr)), minus_one(T(-1));
      const bool decay = a.weight_decay != 0, use_mom = a.momentum > 0;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (decay) g = g + wd * w;
        V sq = ld(x, 2, i) * al + c * g * g;
        st(x, 2, i, sq);
        V avg;
        if (a.centered) {
          V ga = ld(x, 4, i) * al + c * g;
          st(x, 4, i, ga);
          avg = xsimd::sqrt(sq + minus_one * ga * ga);
        } else {
          avg = xsimd::sqrt(sq);
        }
        avg = avg + eps;
        if (use_mom) {
          V b = ld(x, 3, i) * mu + g / avg;
          st(x, 3, i, b);
          st(x, 0, i, w + neg_lr * b);
        } else {
          st(x, 0, i, w + neg_lr * g / avg);
        }
      });
    });
  }
}

void adagrad(const AdagradArgs& a, const Param* params, const AdagradCoef* coef, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const AdagradCoef c = coef[k];
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V wd(T(a.weight_decay)), eps(T(a.eps)), neg_clr(T(-c.clr)), one(T(1));
      const bool decay = a.weight_decay != 0;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (decay) g = g + wd * w;
        V sum = ld(x, 2, i) + one * g * g;
        st(x, 2, i, sum);
        st(x, 0, i, w + neg_clr * g / (xsimd::sqrt(sum) + eps));
      });
    });
  }
}

void adadelta(const AdadeltaArgs& a, const Param* params, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V rho(T(a.rho)), c(T(1 - a.rho)), wd(T(a.weight_decay)), eps(T(a.eps)), neg_lr(T(-a.lr));
      const bool decay = a.weight_decay != 0;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (decay) g = g + wd * w;
        V sq = ld(x, 2, i) * rho + c * g * g;
        st(x, 2, i, sq);
        V rms = xsimd::sqrt(sq + eps);
        V acc = ld(x, 3, i);
        V delta = xsimd::sqrt(acc + eps) / rms * g;
        st(x, 3, i, acc * rho + c * delta * delta);
        st(x, 0, i, w + neg_lr * delta);
      });
    });
  }
}

void lion(const LionArgs& a, const Param* params, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V b1(T(a.beta1)), c1(T(1 - a.beta1)), b2(T(a.beta2)), c2(T(1 - a.beta2)),
          shrink(T(1 - a.lr * a.weight_decay)), neg_lr(T(-a.lr));
      const bool decay = a.weight_decay != 0;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (decay) w = w * shrink;
        V m = ld(x, 2, i);
        st(x, 0, i, w + neg_lr * vsign(m * b1 + c1 * g));
        st(x, 2, i, m * b2 + c2 * g);
      });
    });
  }
}

void rprop(const RpropArgs& a, const Param* params, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V up(T(a.etaplus)), down(T(a.etaminus)), lo(T(a.step_size_min)), hi(T(a.step_size_max)), one(T(1)),
          zero(T(0)), minus_one(T(-1));
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i);
        if (a.maximize) g = -g;
        // PyTorch replaces sign(g * prev) by etaplus, etaminus and 1 in turn; torch.sign of
        // NaN is 0, so a NaN gradient keeps the step size and moves nothing (vsign agrees).
        const V s = vsign(g * ld(x, 2, i));
        const auto flip = s < zero;
        V step = ld(x, 3, i) * xsimd::select(s > zero, up, xsimd::select(flip, down, one));
        step = xsimd::select(step < lo, lo, xsimd::select(step > hi, hi, step));  // clamp, keeping NaN
        g = xsimd::select(flip, zero, g);
        st(x, 3, i, step);
        st(x, 0, i, ld(x, 0, i) + minus_one * vsign(g) * step);
        st(x, 2, i, g);
      });
    });
  }
}

void asgd(const AsgdArgs& a, const Param* params, const AsgdCoef* coef, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const AsgdCoef c = coef[k];
    by_dtype(params[k], [&]<class T>(const Param& p) {
      using V = B<T>;
      const V wd(T(a.weight_decay)), shrink(T(1 - a.lambd * c.eta)), neg_eta(T(-c.eta)), mu(T(c.mu));
      const bool decay = a.weight_decay != 0, average = c.mu != 1;
      run<T>(p, [=](const Arrays<T>& x, int64_t i) {
        V g = ld(x, 1, i), w = ld(x, 0, i);
        if (a.maximize) g = -g;
        if (decay) g = g + wd * w;
        w = w * shrink;
        w = w + neg_eta * g;
        st(x, 0, i, w);
        if (average) {
          const V ax = ld(x, 2, i);
          st(x, 2, i, ax + (w - ax) * mu);
        } else {
          st(x, 2, i, w);
        }
      });
    });
  }
}

}  // namespace ember::cpu::EMBER_CPU_ARCH::optim
