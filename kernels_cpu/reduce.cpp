// Reductions, arg-reductions, softmax and scans. Compiled once per instruction set, like
// elementwise.cpp. Every output element is produced by one thread in a fixed order, and a
// full reduction splits into fixed-size chunks combined in order, so results do not depend
// on the thread count.

#include "cascade_sum.hpp"
#include "functors.hpp"

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;

/// The calling thread's buffer for the chunk partials of one long reduction, reused (a warm
/// loop allocates nothing), one per nesting depth: an executor that runs queued tasks while a
/// region waits (a work-stealing pool) can start another long reduction on the waiting
/// thread, which must not overwrite the first one's partials. Past four levels, a buffer of
/// its own. Not a template: one copy of this code for every reduction's accumulator type.
class ChunkPartials {
 public:
  explicit ChunkPartials(size_t bytes) : own_(depth_ >= kDepths ? bytes / sizeof(Word) + 1 : 0) {
    std::vector<Word>& buffer = depth_ < kDepths ? levels_[depth_] : own_;
    if (buffer.size() * sizeof(Word) < bytes) buffer.resize(bytes / sizeof(Word) + 1);
    data_ = buffer.data();
    ++depth_;
  }
  ~ChunkPartials() { --depth_; }
  ChunkPartials(const ChunkPartials&) = delete;
  ChunkPartials& operator=(const ChunkPartials&) = delete;
  void* data() const { return data_; }

 private:
  using Word = std::max_align_t;  // aligned for any accumulator
  static constexpr int kDepths = 4;
  static thread_local std::vector<Word> levels_[kDepths];
  static thread_local int depth_;
  std::vector<Word> own_;
  void* data_;
};
thread_local std::vector<ChunkPartials::Word> ChunkPartials::levels_[ChunkPartials::kDepths];
thread_local int ChunkPartials::depth_ = 0;

template <class T>
inline constexpr bool is_reduced_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
using compute_t = std::conditional_t<is_reduced_v<T>, float, T>;

/// Geometry split into kept (outer) and reduced (inner) dims, each coalesced.
struct Split {
  Shape ksize, kstride, ostride, rsize, rstride;  // element strides; inline, so no heap
  int64_t kept = 1, reduced = 1;
};

Split split_dims(const TensorImpl& x, const TensorImpl& out, uint64_t mask) {
  Split s;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (x.sizes[d] == 1) continue;
    if (mask >> d & 1) {
      if (!s.rsize.empty() && s.rstride.back() == x.strides[d] * x.sizes[d]) {
        s.rsize[s.rsize.size() - 1] *= x.sizes[d];
        s.rstride[s.rstride.size() - 1] = x.strides[d];
      } else {
        s.rsize.push_back(x.sizes[d]);
        s.rstride.push_back(x.strides[d]);
      }
      s.reduced *= x.sizes[d];
    } else {
      if (!s.ksize.empty() && s.kstride.back() == x.strides[d] * x.sizes[d] &&
          s.ostride.back() == out.strides[d] * x.sizes[d]) {
        // Adjacent kept dims laid out as one (in the input and the output): one dim.
        s.ksize[s.ksize.size() - 1] *= x.sizes[d];
        s.kstride[s.kstride.size() - 1] = x.strides[d];
        s.ostride[s.ostride.size() - 1] = out.strides[d];
      } else {
        s.ksize.push_back(x.sizes[d]);
        s.kstride.push_back(x.strides[d]);
        s.ostride.push_back(out.strides[d]);
      }
      s.kept *= x.sizes[d];
    }
  }
  if (x.numel == 0) {
    s.reduced = 0;
    s.kept = out.numel;
  }
  return s;
}

/// Offsets (input, output) of kept index `i`.
inline void kept_offsets(const Split& s, int64_t i, int64_t& in, int64_t& out) {
  in = 0, out = 0;
  for (size_t d = s.ksize.size(); d-- > 0;) {
    int64_t idx = i % s.ksize[d];
    i /= s.ksize[d];
    in += idx * s.kstride[d];
    out += idx * s.ostride[d];
  }
}

/// Calls f(ptr_offset, n, stride) over the reduced region as runs of its innermost dim.
template <class F>
inline void for_runs(const Split& s, F&& f) {
  if (s.rsize.empty()) {
    f(int64_t{0}, s.reduced == 0 ? int64_t{0} : int64_t{1}, int64_t{1});
    return;
  }
  size_t nd = s.rsize.size();
  int64_t inner = s.rsize[nd - 1], istride = s.rstride[nd - 1];
  int64_t outer = s.reduced / std::max<int64_t>(inner, 1);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off = 0, rem = o;
    for (size_t d = nd - 1; d-- > 0;) {
      off += (rem % s.rsize[d]) * s.rstride[d];
      rem /= s.rsize[d];
    }
    f(off, inner, istride);
  }
}

// ---- reducers ---------------------------------------------------------------------------------
template <class C, ops::ReduceOp Op>
struct Reducer {
  using Acc = std::conditional_t<Op == ops::ReduceOp::CountNonzero, int64_t,
                                 std::conditional_t<std::is_same_v<C, bool>, int64_t, C>>;
  static Acc init() {
    if constexpr (Op == ops::ReduceOp::Prod || Op == ops::ReduceOp::All) return Acc(1);
    else if constexpr (Op == ops::ReduceOp::Amax) {
      if constexpr (std::is_floating_point_v<Acc>) return -std::numeric_limits<Acc>::infinity();
      else return std::numeric_limits<Acc>::lowest();
    } else if constexpr (Op == ops::ReduceOp::Amin) {
      if constexpr (std::is_floating_point_v<Acc>) return std::numeric_limits<Acc>::infinity();
      else return std::numeric_limits<Acc>::max();
    } else return Acc(0);
  }
  static Acc step(Acc a, C v) {
    using R = ops::ReduceOp;
    if constexpr (Op == R::Sum || Op == R::Mean) return add_wrapping(a, Acc(v));
    else if constexpr (Op == R::Nansum) {
      if constexpr (std::is_floating_point_v<C>) return v != v ? a : a + Acc(v);
      else return add_wrapping(a, Acc(v));
    } else if constexpr (Op == R::Prod) return mul_wrapping(a, Acc(v));
    else if constexpr (Op == R::Amax) {
      if constexpr (std::is_floating_point_v<C>) {
        if (v != v || a != a) return std::numeric_limits<Acc>::quiet_NaN();
      }
      return Acc(v) > a ? Acc(v) : a;
    } else if constexpr (Op == R::Amin) {
      if constexpr (std::is_floating_point_v<C>) {
        if (v != v || a != a) return std::numeric_limits<Acc>::quiet_NaN();
      }
      return Acc(v) < a ? Acc(v) : a;
    } else if constexpr (Op == R::All) return Acc(a && v != C(0));
    else if constexpr (Op == R::Any) return Acc(a || v != C(0));
    else if constexpr (Op == R::CountNonzero) return a + (v != C(0) ? 1 : 0);
    else if constexpr (Op == R::Norm1) return a + Acc(v < C(0) ? -v : v);
    else if constexpr (Op == R::Norm2) return a + Acc(v) * Acc(v);
    else if constexpr (Op == R::NormInf) {
      Acc m = Acc(v < C(0) ? -v : v);
      if constexpr (std::is_floating_point_v<C>) {
        if (v != v || a != a) return std::numeric_limits<Acc>::quiet_NaN();
      }
      return m > a ? m : a;
    }
  }
  static Acc merge(Acc a, Acc b) {
    using R = ops::ReduceOp;
    if constexpr (Op == R::Prod) return mul_wrapping(a, b);
    else if constexpr (Op == R::Amax || Op == R::Amin || Op == R::NormInf || Op == R::All || Op == R::Any)
      return step(a, static_cast<C>(b));
    else return add_wrapping(a, b);
  }
  static Acc finish(Acc a, int64_t n) {
    if constexpr (Op == ops::ReduceOp::Mean) return n == 0 ? std::numeric_limits<Acc>::quiet_NaN() : a / Acc(n);
    else if constexpr (Op == ops::ReduceOp::Norm2) {
      if constexpr (std::is_floating_point_v<Acc>) return std::sqrt(a);
      else return a;
    } else return a;
  }
};

/// The reductions with a batch form (float and double): sums of x, |x| and x^2 (in SIMD
/// order: four accumulators, then lane sums), and the NaN-propagating extremes amax, amin and
/// max |x| (order-free: the same result as the scalar loop). A NaN mask rides along with the
/// extremes, because SIMD max/min return one operand, not NaN, when either is NaN.
/// A size-first build (x86-64's baseline, see meson.build) keeps the plain sums only.
template <class T, ops::ReduceOp Op>
struct SimdReduce {
  using R = ops::ReduceOp;
#ifdef EMBER_KERNELS_SIZE_FIRST
  static constexpr bool kSum = Op == R::Sum || Op == R::Mean;
  static constexpr bool kExtreme = false;
#else
  static constexpr bool kSum = Op == R::Sum || Op == R::Mean || Op == R::Norm1 || Op == R::Norm2;
  static constexpr bool kExtreme = Op == R::Amax || Op == R::Amin || Op == R::NormInf;
#endif
  static constexpr bool kEnabled = (kSum || kExtreme) && (std::is_same_v<T, float> || std::is_same_v<T, double>);
  using B = xsimd::batch<T>;
  using M = xsimd::batch_bool<T>;
  static constexpr int64_t W = B::size;

  static B init() { return B(Reducer<T, Op>::init()); }
  static B step(const B& acc, const B& v, M& nan) {
    if constexpr (Op == R::Sum || Op == R::Mean) return acc + v;
    else if constexpr (Op == R::Norm1) return acc + xsimd::abs(v);
    else if constexpr (Op == R::Norm2) return acc + v * v;
    else {
      nan = nan || xsimd::isnan(v);
      if constexpr (Op == R::Amin) return xsimd::min(acc, v);
      else if constexpr (Op == R::NormInf) return xsimd::max(acc, xsimd::abs(v));
      else return xsimd::max(acc, v);
    }
  }
  static B merge(const B& a, const B& b) {
    if constexpr (kSum) return a + b;
    else if constexpr (Op == R::Amin) return xsimd::min(a, b);
    else return xsimd::max(a, b);
  }
  /// acc with NaN in the lanes that saw one (the extremes).
  static B settle(const B& acc, const M& nan) {
    if constexpr (kExtreme) return xsimd::select(nan, B(std::numeric_limits<T>::quiet_NaN()), acc);
    else return acc;
  }

  /// The first n (a multiple of 4 W) elements at p, vector i into accumulator i % 4. Always
  /// inlined, as add_by_blocks (cascade_sum.hpp): out of line the accumulators would live in
  /// memory.
  [[gnu::always_inline]] static void step4(const T* p, int64_t n, B& a0, B& a1, B& a2, B& a3, M& nan) {
    for (int64_t k = 0; k < n; k += 4 * W) {
      a0 = step(a0, B::load_unaligned(p + k), nan);
      a1 = step(a1, B::load_unaligned(p + k + W), nan);
      a2 = step(a2, B::load_unaligned(p + k + 2 * W), nan);
      a3 = step(a3, B::load_unaligned(p + k + 3 * W), nan);
    }
  }

  /// Sums longer than this go by blocks of it into a cascade (each lane of the four
  /// accumulators adds 64 elements per block).
  static constexpr int64_t kBlock = 64 * 4 * W;

  /// The reduction of n contiguous elements, as the scalar reducer's value for them.
  static T run(const T* p, int64_t n) {
    if constexpr (kSum) {
      if (n > kBlock) {
        Cascade<B> blocks(B(T(0)));
        M nan(false);  // unused by sums
        int64_t k = 0;
        for (; k + kBlock <= n; k += kBlock) {
          B a0 = init(), a1 = init(), a2 = init(), a3 = init();
          step4(p + k, kBlock, a0, a1, a2, a3, nan);
          blocks.push(merge(merge(a0, a1), merge(a2, a3)));
        }
        return xsimd::hadd(blocks.total(B(T(0)))) + run_short(p + k, n - k);
      }
    }
    return run_short(p, n);
  }

  /// run() for n <= kBlock (sums), or any n (extremes: order-free).
  static T run_short(const T* p, int64_t n) {
    using Rd = Reducer<T, Op>;
    B a0 = init(), a1 = init(), a2 = init(), a3 = init();
    M nan(false);
    int64_t k = n / (4 * W) * (4 * W);
    step4(p, k, a0, a1, a2, a3, nan);
    for (; k + W <= n; k += W) a0 = step(a0, B::load_unaligned(p + k), nan);
    const B a = merge(merge(a0, a1), merge(a2, a3));
    T r;
    if constexpr (kSum) {
      r = xsimd::hadd(a);
    } else {
      alignas(64) T lanes[W];
      settle(a, nan).store_aligned(lanes);
      r = lanes[0];
      for (int64_t j = 1; j < W; ++j) r = Rd::merge(r, lanes[j]);
    }
    for (; k < n; ++k) r = Rd::step(r, p[k]);
    return r;
  }
};

template <class T, ops::ReduceOp Op>
void reduce_typed(TensorImpl& out, const TensorImpl& x, uint64_t mask) {
  using C = compute_t<T>;
  using Rd = Reducer<C, Op>;
  using Acc = typename Rd::Acc;
  Split s = split_dims(x, out, mask);
  const T* xp = static_cast<const T*>(x.data());
  char* op = static_cast<char*>(out.data());
  const DType od = out.dtype;
  auto store = [&](int64_t off, Acc v) {
    visit_dtype(od, [&]<class O>() {
      if constexpr (std::is_same_v<O, bool>) reinterpret_cast<O*>(op)[off] = v != Acc(0);
      else reinterpret_cast<O*>(op)[off] = static_cast<O>(v);
    });
  };
  using Simd = SimdReduce<T, Op>;
  // Floating sums (sum, mean, nansum, the 1- and 2-norms) add blocks into a cascade
  // (cascade_sum.hpp): one accumulator down a million elements was off by ~1e-4.
  constexpr bool kAdditive = std::is_floating_point_v<Acc> && (Op == ops::ReduceOp::Sum || Op == ops::ReduceOp::Mean ||
                                                               Op == ops::ReduceOp::Nansum || Op == ops::ReduceOp::Norm1 ||
                                                               Op == ops::ReduceOp::Norm2);
  constexpr int64_t kScalarBlock = 64;
  // The region's sum by blocks of kScalarBlock elements (or runs, which cascade themselves).
  auto cascade_region = [&](int64_t base) -> Acc {
    Cascade<Acc> blocks(Acc(0));
    Acc block = Rd::init();
    int64_t in_block = 0;
    for_runs(s, [&](int64_t off, int64_t n, int64_t stride) {
      const T* p = xp + base + off;
      if constexpr (Simd::kEnabled) {
        if (stride == 1) {  // run() cascades long runs itself
          block = Rd::merge(block, Simd::run(p, n));
          in_block += n;
          if (in_block >= kScalarBlock) blocks.push(std::exchange(block, Rd::init())), in_block = 0;
          return;
        }
      }
      for (int64_t k = 0; k < n;) {
        const int64_t end = k + std::min(n - k, kScalarBlock - in_block);
        in_block += end - k;
        for (; k < end; ++k) block = Rd::step(block, static_cast<C>(p[k * stride]));
        if (in_block == kScalarBlock) blocks.push(std::exchange(block, Rd::init())), in_block = 0;
      }
    });
    return blocks.total(block);
  };
  auto reduce_region = [&](int64_t base) -> Acc {
    if constexpr (kAdditive) {
      if (s.reduced > kScalarBlock) return cascade_region(base);
    }
    Acc acc = Rd::init();
    for_runs(s, [&](int64_t off, int64_t n, int64_t stride) {
      const T* p = xp + base + off;
      if constexpr (Simd::kEnabled) {
        if (stride == 1) {
          acc = Rd::merge(acc, Simd::run(p, n));
          return;
        }
      }
      for (int64_t k = 0; k < n; ++k) acc = Rd::step(acc, static_cast<C>(p[k * stride]));
    });
    return acc;
  };
  if (s.kept == 1 && s.rsize.size() == 1 && s.rstride[0] == 1 && s.reduced > 2 * EMBER_GRAIN_SIZE) {
    // One output over a long contiguous run: fixed chunks in parallel, merged in order.
    constexpr int64_t kChunk = 1 << 15;
    int64_t n = s.reduced, nchunks = (n + kChunk - 1) / kChunk;
    static_assert(std::is_trivially_copyable_v<Acc>);
    ChunkPartials scratch(static_cast<size_t>(nchunks) * sizeof(Acc));
    // Workers write through this pointer (the buffer belongs to the calling thread).
    Acc* part = static_cast<Acc*>(scratch.data());
    std::fill(part, part + nchunks, Rd::init());
    detail::parallel_for(nchunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const T* p = xp + c * kChunk;
        int64_t len = std::min(kChunk, n - c * kChunk);
        Acc acc = Rd::init();
        if constexpr (Simd::kEnabled) {
          acc = Simd::run(p, len);
        } else if constexpr (kAdditive) {  // nansum; the norms in a size-first build
          Cascade<Acc> blocks(Acc(0));
          for (int64_t k0 = 0; k0 < len; k0 += kScalarBlock) {
            Acc block = Rd::init();
            for (int64_t k = k0; k < std::min(len, k0 + kScalarBlock); ++k) block = Rd::step(block, static_cast<C>(p[k]));
            blocks.push(block);
          }
          acc = blocks.total(Acc(0));
        } else {
          for (int64_t k = 0; k < len; ++k) acc = Rd::step(acc, static_cast<C>(p[k]));
        }
        part[c] = acc;
      }
    });
    Acc acc = part[0];
    if constexpr (kAdditive) {
      Cascade<Acc> chunks(Acc(0));
      for (int64_t c = 0; c < nchunks; ++c) chunks.push(part[c]);
      acc = chunks.total(Acc(0));
    } else {
      for (int64_t c = 1; c < nchunks; ++c) acc = Rd::merge(acc, part[c]);
    }
    store(0, Rd::finish(acc, n));
    return;
  }
  if constexpr (Simd::kEnabled) {
    if (!s.ksize.empty() && s.kstride.back() == 1 && s.ostride.back() == 1 && od == x.dtype && s.reduced > 1) {
      // The innermost kept dim contiguous, the reduced dims outside it (a bias gradient: the
      // sum over the rows of a matrix; a per-column max; a middle dim of (N, C, L)). Four
      // vectors of that dim accumulate in registers down all the reduced rows, then are
      // stored once: the input is read row by row in 4-vector strips, and each output
      // combines its values in row order whatever the thread count. Tasks are (block of the
      // outer kept dims, strip). (Adding each row into the outputs in memory was a scalar
      // loop at -O2, ~60 us for a 1024x128 bias gradient; this takes ~10. A middle dim went
      // through the per-output loop: 3 ns per element for (512, 4, 784) over dim 1.)
      using B = typename Simd::B;
      constexpr int64_t W = Simd::W, kStrip = 4 * W;
      const int64_t inner = s.ksize.back(), blocks = s.kept / inner;
      const int64_t strips = (inner + kStrip - 1) / kStrip;
      const int64_t grain_strips = std::max<int64_t>(1, EMBER_GRAIN_SIZE / (kStrip * s.reduced));
      detail::parallel_for(blocks * strips, grain_strips, [&](int64_t b, int64_t e) {
        for (int64_t task = b; task < e; ++task) {
          const int64_t blk = task / strips, st = task % strips;
          int64_t in_base, out_base;  // offsets of this block: its first kept element's
          kept_offsets(s, blk * inner, in_base, out_base);
          const T* xb = xp + in_base;
          const int64_t j0 = st * kStrip, w = std::min(kStrip, inner - j0);
          T* dst = reinterpret_cast<T*>(op) + out_base + j0;
          // A narrower last strip is copied row by row into `pad` (its other lanes stay at
          // the reducer's identity), so that it takes the same vector path.
          alignas(64) T pad[kStrip];
          std::fill(pad, pad + kStrip, Rd::init());
          B a0 = Simd::init(), a1 = Simd::init(), a2 = Simd::init(), a3 = Simd::init();
          typename Simd::M n0(false), n1(false), n2(false), n3(false);
          // Sums push every kRows rows into cascades (cascade_sum.hpp).
          constexpr int64_t kRows = 64;
          const B zero(T(0));
          Cascade<B> c0(zero), c1(zero), c2(zero), c3(zero);
          int64_t in_block = 0;
          for_runs(s, [&](int64_t off, int64_t n, int64_t stride) {
            for (int64_t r = 0; r < n; ++r) {
              const T* row = xb + off + r * stride + j0;
              if (w < kStrip) row = static_cast<const T*>(std::memcpy(pad, row, static_cast<size_t>(w) * sizeof(T)));
              a0 = Simd::step(a0, B::load_unaligned(row), n0);
              a1 = Simd::step(a1, B::load_unaligned(row + W), n1);
              a2 = Simd::step(a2, B::load_unaligned(row + 2 * W), n2);
              a3 = Simd::step(a3, B::load_unaligned(row + 3 * W), n3);
              if constexpr (Simd::kSum) {
                if (++in_block == kRows) {
                  c0.push(a0), c1.push(a1), c2.push(a2), c3.push(a3);
                  a0 = a1 = a2 = a3 = Simd::init();
                  in_block = 0;
                }
              }
            }
          });
          if constexpr (Simd::kSum) a0 = c0.total(a0), a1 = c1.total(a1), a2 = c2.total(a2), a3 = c3.total(a3);
          T* sink = w == kStrip ? dst : pad;
          Simd::settle(a0, n0).store_unaligned(sink);
          Simd::settle(a1, n1).store_unaligned(sink + W);
          Simd::settle(a2, n2).store_unaligned(sink + 2 * W);
          Simd::settle(a3, n3).store_unaligned(sink + 3 * W);
          if (w < kStrip) std::copy(pad, pad + w, dst);
          for (int64_t j = 0; j < w; ++j) dst[j] = Rd::finish(dst[j], s.reduced);
        }
      });
      return;
    }
  }
  int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(s.reduced, 1));
  detail::parallel_for(s.kept, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t in_off, out_off;
      kept_offsets(s, i, in_off, out_off);
      store(out_off, Rd::finish(reduce_region(in_off), s.reduced));
    }
  });
}

}  // namespace

namespace {
/// The input dtypes ops::prepare_reduce hands each op: f16/bf16 come as f32 (they accumulate
/// in f32); sum, nansum and prod see floats or i64; mean and the norms floats. Instantiating
/// only these keeps ~150 KB of dead kernels out of every binary (both ISA builds).
template <class T, ops::ReduceOp Op>
constexpr bool reaches_kernel() {
  if constexpr (is_reduced_v<T>) return false;
  constexpr ops::ReduceRule r = ops::rule(Op);
  if constexpr (r == ops::ReduceRule::Sum) return std::is_floating_point_v<T> || std::is_same_v<T, int64_t>;
  if constexpr (r == ops::ReduceRule::Float) return std::is_floating_point_v<T>;
  if constexpr (std::is_same_v<T, bool>)
    return Op == ops::ReduceOp::All || Op == ops::ReduceOp::Any || Op == ops::ReduceOp::CountNonzero ||
           Op == ops::ReduceOp::Amax || Op == ops::ReduceOp::Amin;
  return true;
}
}  // namespace

void reduce(ops::ReduceOp op, TensorImpl& out, const TensorImpl& x, uint64_t mask) {
  using R = ops::ReduceOp;
  if ((op == R::All || op == R::Any) && x.dtype == DType::Bool && x.contiguous && out.numel == 1) {
    // all()/any() of a whole bool tensor (isfinite(x).all(), mask checks): a scan for the
    // first false byte (memchr) or the first nonzero word, instead of the generic reduction.
    const auto* p = static_cast<const unsigned char*>(x.data());
    const size_t n = static_cast<size_t>(x.numel);
    bool r;
    if (op == R::All) {
      r = n == 0 || std::memchr(p, 0, n) == nullptr;
    } else {
      size_t i = 0;
      uint64_t acc = 0;
      for (; i + 8 <= n && acc == 0; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        acc = w;
      }
      for (; i < n && acc == 0; ++i) acc = p[i];
      r = acc != 0;
    }
    *static_cast<bool*>(out.data()) = r;
    return;
  }
  switch (op) {
#define EMBER_REDUCE_OP(E, n, r)                                                              \
  case R::E:                                                                                  \
    return visit_dtype(x.dtype, [&]<class T>() {                                               \
      if constexpr (!reaches_kernel<T, R::E>())                                                \
        EMBER_FAIL("[{}] the kernel does not take {} input (ops::prepare_reduce converts it)", #n, x.dtype); \
      else reduce_typed<T, R::E>(out, x, mask);                                                \
    });
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
  }
}

// ---- along one dim: arg-reduce, softmax, scans ------------------------------------------------
namespace {

/// Calls f(in_offset, out_offset) for every position of the other dims; `dim` is walked by f.
/// A chunk decomposes its first position once and then steps the index like an odometer:
/// a division per dim per line cost more than a softmax over a 64-element line.
template <class F>
void along_dim(const TensorImpl& x, const TensorImpl& out, int64_t dim, int64_t grain, F&& f) {
  int64_t n = x.ndim();
  int64_t outer = 1;
  for (int64_t d = 0; d < n; ++d)
    if (d != dim) outer *= x.sizes[d];
  detail::parallel_for(outer, grain, [&](int64_t b, int64_t e) {
    Shape idx(static_cast<size_t>(n), 0);  // inline storage: no allocation for usual ranks
    int64_t rem = b, io = 0, oo = 0;
    for (int64_t d = n - 1; d >= 0; --d) {
      if (d == dim) continue;
      idx[d] = rem % x.sizes[d];
      rem /= x.sizes[d];
      io += idx[d] * x.strides[d];
      oo += idx[d] * out.strides[d];
    }
    for (int64_t i = b; i < e; ++i) {
      f(io, oo);
      for (int64_t d = n - 1; d >= 0; --d) {  // next position: carry from the last dim
        if (d == dim) continue;
        io += x.strides[d], oo += out.strides[d];
        if (++idx[d] < x.sizes[d]) break;
        io -= idx[d] * x.strides[d], oo -= idx[d] * out.strides[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace

void arg_reduce(detail::ArgReduceOp op, TensorImpl* values, TensorImpl& indices, const TensorImpl& x, int64_t dim) {
  visit_dtype(x.dtype, [&]<class T>() {
    using C = compute_t<T>;
    int64_t len = x.ndim() ? x.sizes[dim] : 1, xs = x.ndim() ? x.strides[dim] : 0;
    const T* xp = static_cast<const T*>(x.data());
    int64_t* ip = static_cast<int64_t*>(indices.data());
    T* vp = values ? static_cast<T*>(values->data()) : nullptr;
    bool is_max = op == detail::ArgReduceOp::Max;
    along_dim(x, indices, x.ndim() ? dim : 0, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)),
              [&](int64_t io, int64_t oo) {
                C best = static_cast<C>(xp[io]);
                int64_t bi = 0;
                for (int64_t k = 1; k < len; ++k) {
                  C v = static_cast<C>(xp[io + k * xs]);
                  if constexpr (std::is_floating_point_v<C>) {
                    if (best != best) break;  // NaN wins, first occurrence
                    if (v != v) {
                      best = v, bi = k;
                      break;
                    }
                  }
                  if (is_max ? (v > best) : (v < best)) best = v, bi = k;
                }
                ip[oo] = bi;
                if (vp) vp[oo] = static_cast<T>(best);
              });
  });
}

namespace {

/// Softmax of W neighbouring lines of a contiguous (outer, n, inner) tensor: the lanes of the
/// inner dim walk down the n steps together, as the contiguous-row path does along a row.
/// Special lines need no test: a NaN, or a +inf (inf - inf), makes the lane's sum NaN, and a
/// line of -inf subtracts -inf from itself; each gives the NaN line the scalar path gives.
template <class C>
void softmax_strip(const C* x, C* y, int64_t n, int64_t inner, bool log) {
  using B = xsimd::batch<C>;
  B m(-std::numeric_limits<C>::infinity());
  for (int64_t k = 0; k < n; ++k) m = xsimd::max(m, B::load_unaligned(x + k * inner));
  B sum(C(0));
  for (int64_t k = 0; k < n; ++k) {
    const B e = xsimd::exp(B::load_unaligned(x + k * inner) - m);
    if (!log) e.store_unaligned(y + k * inner);
    sum += e;
  }
  if (log) {
    // (x - m) - log(sum), not x - (m + log(sum)): at |m| ~ 1e7 in f32, m + log(sum) rounds
    // log(sum) away (log_softmax([1e7, 1e7]) gave -1; PyTorch does the same, issue #11752).
    const B lse = xsimd::log(sum);
    for (int64_t k = 0; k < n; ++k) ((B::load_unaligned(x + k * inner) - m) - lse).store_unaligned(y + k * inner);
  } else {
    const B inv = B(C(1)) / sum;
    for (int64_t k = 0; k < n; ++k) (B::load_unaligned(y + k * inner) * inv).store_unaligned(y + k * inner);
  }
}

}  // namespace

void softmax(TensorImpl& out, const TensorImpl& x, int64_t dim, bool log) {
  visit_dtype(x.dtype, [&]<class T>() {
    if constexpr (!std::is_floating_point_v<compute_t<T>>) {
      EMBER_FAIL("[softmax] needs a floating tensor, got {}", x.dtype);
    } else {
      using C = compute_t<T>;
      // A 0-d tensor is one line of one element.
      int64_t len = x.ndim() ? x.sizes[dim] : 1, xs = x.ndim() ? x.strides[dim] : 0,
              os = x.ndim() ? out.strides[dim] : 0;
      const T* xp = static_cast<const T*>(x.data());
      T* op = static_cast<T*>(out.data());
      // Any line, any dtype, NaN and infinities: one element at a time.
      auto scalar_line = [&](int64_t io, int64_t oo) {
        C m = -std::numeric_limits<C>::infinity();
        for (int64_t k = 0; k < len; ++k) {
          C v = static_cast<C>(xp[io + k * xs]);
          if (v != v) m = v;
          else if (!(m != m)) m = std::max(m, v);
        }
        // An all -inf line shifts by 0 (and gives NaN, as PyTorch); a +inf max makes the
        // line NaN (inf - inf), as PyTorch's x - max does.
        C safe = std::isinf(m) && m < 0 ? C(0) : m;
        C sum = 0;
        for (int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<C>(xp[io + k * xs]) - safe);
        for (int64_t k = 0; k < len; ++k) {
          C v = static_cast<C>(xp[io + k * xs]) - safe;
          op[oo + k * os] = static_cast<T>(log ? v - std::log(sum) : std::exp(v) / sum);
        }
      };
      if constexpr (std::is_same_v<T, C>) {
        // Not the last dim of contiguous tensors, e.g. the channels of (N, C, H, W): W-wide
        // strips of the inner dims, instead of lines that stride through memory.
        int64_t inner = 1;
        for (int64_t d = dim + 1; d < x.ndim(); ++d) inner *= x.sizes[d];
        constexpr int64_t W = xsimd::batch<C>::size;
        if (inner > 1 && x.contiguous && out.contiguous && len > 0) {
          const int64_t outer = x.numel / (len * inner), strips = (inner + W - 1) / W;
          const int64_t grain = std::max<int64_t>(1, 16384 / (len * W));
          detail::parallel_for(outer * strips, grain, [&](int64_t b, int64_t e) {
            for (int64_t t = b; t < e; ++t) {
              const int64_t o = t / strips, i0 = t % strips * W, at = o * len * inner + i0;
              const int64_t width = std::min(W, inner - i0);
              if (width == W) softmax_strip<C>(xp + at, op + at, len, inner, log);
              else
                for (int64_t i = 0; i < width; ++i) scalar_line(at + i, at + i);
            }
          });
          return;
        }
      }
      along_dim(x, out, dim, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)), [&](int64_t io, int64_t oo) {
        if constexpr (std::is_same_v<T, C>) {
          if (xs == 1 && os == 1) {
            // Contiguous row: vectorised max, exp-sum and scale.
            using B = xsimd::batch<C>;
            constexpr int64_t W = B::size;
            const C* r = xp + io;
            C* w = op + oo;
            int64_t k = 0;
            // One pass finds the max and any NaN (SIMD max does not propagate NaN reliably).
            B mb(-std::numeric_limits<C>::infinity());
            B nan_seen(C(0));
            for (; k + W <= len; k += W) {
              B v = B::load_unaligned(r + k);
              nan_seen = nan_seen + xsimd::select(xsimd::isnan(v), B(C(1)), B(C(0)));
              mb = xsimd::max(mb, v);
            }
            alignas(64) C lanes[W];
            mb.store_aligned(lanes);
            C m = lanes[0];
            for (int64_t j = 1; j < W; ++j) m = std::max(m, lanes[j]);
            bool has_nan = xsimd::hadd(nan_seen) != C(0);
            for (; k < len; ++k) {
              has_nan |= r[k] != r[k];
              m = std::max(m, r[k]);
            }
            if (!has_nan && !std::isinf(m)) {  // NaN or infinite lines take the scalar path below
              B mv(m), sb(C(0));
              k = 0;
              for (; k + W <= len; k += W) {
                B e = xsimd::exp(B::load_unaligned(r + k) - mv);
                if (!log) e.store_unaligned(w + k);
                sb += e;
              }
              C sum = xsimd::hadd(sb);
              for (; k < len; ++k) {
                C e = std::exp(r[k] - m);
                if (!log) w[k] = e;
                sum += e;
              }
              if (log) {  // (x - m) - log(sum), as above
                const C lse = std::log(sum);
                const B mb(m), lb(lse);
                k = 0;
                for (; k + W <= len; k += W) ((B::load_unaligned(r + k) - mb) - lb).store_unaligned(w + k);
                for (; k < len; ++k) w[k] = (r[k] - m) - lse;
              } else {
                B inv(C(1) / sum);
                k = 0;
                for (; k + W <= len; k += W) (B::load_unaligned(w + k) * inv).store_unaligned(w + k);
                for (; k < len; ++k) w[k] *= C(1) / sum;
              }
              return;
            }
          }
        }
        scalar_line(io, oo);
      });
    }
  });
}

// ---- softmax / log_softmax backward (ops/softmax_backward_op.hpp) ----------------------------
// The tensors are seen as (outer, n, inner) around the softmax dim. With inner = 1 (the last
// dim, the usual case) each row is two vector passes; otherwise W-wide strips of the inner
// dim accumulate their sums down the n steps in registers. Tasks are rows or strips, which
// never share outputs, so the result does not depend on the thread count.
namespace softmax_grad {

template <class T>
using V = xsimd::batch<T>;

/// One row (inner = 1): dx[0, n) from g and y.
template <class T>
void backward_row(const T* g, const T* y, T* dx, int64_t n, bool log) {
  constexpr int64_t W = V<T>::size;
  V<T> acc(T(0));
  int64_t j = 0;
  if (log) {
    for (; j + W <= n; j += W) acc += V<T>::load_unaligned(g + j);
  } else {
    for (; j + W <= n; j += W) acc = xsimd::fma(V<T>::load_unaligned(g + j), V<T>::load_unaligned(y + j), acc);
  }
  T s = xsimd::hadd(acc);
  for (; j < n; ++j) s += log ? g[j] : g[j] * y[j];
  const V<T> vs(s);
  j = 0;
  if (log) {
    for (; j + W <= n; j += W)
      (V<T>::load_unaligned(g + j) - xsimd::exp(V<T>::load_unaligned(y + j)) * vs).store_unaligned(dx + j);
    for (; j < n; ++j) dx[j] = g[j] - std::exp(y[j]) * s;
  } else {
    for (; j + W <= n; j += W)
      (V<T>::load_unaligned(y + j) * (V<T>::load_unaligned(g + j) - vs)).store_unaligned(dx + j);
    for (; j < n; ++j) dx[j] = y[j] * (g[j] - s);
  }
}

/// `width` (<= W) lanes of the inner dim at g, y, dx (stride `inner` between the n steps).
template <class T>
void backward_strip(const T* g, const T* y, T* dx, int64_t n, int64_t inner, int64_t width, bool log) {
  constexpr int64_t W = V<T>::size;
  if (width == W) {
    V<T> s(T(0));
    for (int64_t k = 0; k < n; ++k) {
      const V<T> gv = V<T>::load_unaligned(g + k * inner);
      s = log ? s + gv : xsimd::fma(gv, V<T>::load_unaligned(y + k * inner), s);
    }
    for (int64_t k = 0; k < n; ++k) {
      const V<T> gv = V<T>::load_unaligned(g + k * inner), yv = V<T>::load_unaligned(y + k * inner);
      (log ? gv - xsimd::exp(yv) * s : yv * (gv - s)).store_unaligned(dx + k * inner);
    }
    return;
  }
  for (int64_t i = 0; i < width; ++i) {
    T s = 0;
    for (int64_t k = 0; k < n; ++k) s += log ? g[k * inner + i] : g[k * inner + i] * y[k * inner + i];
    for (int64_t k = 0; k < n; ++k) {
      const int64_t at = k * inner + i;
      dx[at] = log ? g[at] - std::exp(y[at]) * s : y[at] * (g[at] - s);
    }
  }
}

template <class T>
void softmax_backward_typed(TensorImpl& dx, const TensorImpl& g, const TensorImpl& y, int64_t dim, bool log) {
  const int64_t n = y.sizes[static_cast<size_t>(dim)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= y.sizes[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < y.sizes.size(); ++d) inner *= y.sizes[d];
  const T* gp = static_cast<const T*>(g.data());
  const T* yp = static_cast<const T*>(y.data());
  T* dp = static_cast<T*>(dx.data());
  if (n == 0 || outer == 0 || inner == 0) return;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / n);
    detail::parallel_for(outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) backward_row(gp + r * n, yp + r * n, dp + r * n, n, log);
    });
    return;
  }
  constexpr int64_t W = V<T>::size;
  const int64_t strips = (inner + W - 1) / W, tasks = outer * strips;
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / (n * W));
  detail::parallel_for(tasks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / strips, i0 = t % strips * W, at = o * n * inner + i0;
      backward_strip(gp + at, yp + at, dp + at, n, inner, std::min(W, inner - i0), log);
    }
  });
}


}  // namespace softmax_grad

void softmax_backward(TensorImpl& dx, const TensorImpl& g, const TensorImpl& y, int64_t dim, bool log) {
  if (y.dtype == DType::F32) softmax_grad::softmax_backward_typed<float>(dx, g, y, dim, log);
  else softmax_grad::softmax_backward_typed<double>(dx, g, y, dim, log);
}

namespace scan {

/// cumsum/cumprod of contiguous tensors along a dim with elements after it: each step k
/// combines a whole row of `inner` elements with step k-1's row (one loop the compiler
/// vectorises), in the same order per element as the scalar scan.
template <class T, class Combine>
bool rows_along(TensorImpl& out, const TensorImpl& x, int64_t dim, Combine combine) {
  if (!x.contiguous || !out.contiguous || x.ndim() == 0) return false;
  int64_t outer = 1, inner = 1;
  const int64_t len = x.sizes[dim];
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != dim) (d < dim ? outer : inner) *= x.sizes[d];
  if (inner == 1 || outer * len * inner == 0) return false;
  const T* xp = static_cast<const T*>(x.data());
  T* op = static_cast<T*>(out.data());
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / (len * inner));
  detail::parallel_for(outer, grain, [&](int64_t b, int64_t e) {
    const int64_t n = len, w = inner;
    // The running values in double (PyTorch's acc_type for float scans): a row of them,
    // combined with each step's row and rounded into the output.
    static thread_local std::vector<double> run;
    run.resize(static_cast<size_t>(w));
    double* acc = run.data();
    for (int64_t o = b; o < e; ++o) {
      const T* xs = xp + o * n * w;
      T* os = op + o * n * w;
      for (int64_t i = 0; i < w; ++i) acc[i] = static_cast<double>(xs[i]), os[i] = xs[i];
      for (int64_t k = 1; k < n; ++k) {
        const T* cur = xs + k * w;
        T* dst = os + k * w;
        for (int64_t i = 0; i < w; ++i) {
          acc[i] = combine(acc[i], static_cast<double>(cur[i]));
          dst[i] = static_cast<T>(acc[i]);
        }
      }
    }
  });
  return true;
}

}  // namespace scan

void cumulative(detail::CumOp op, TensorImpl& out, TensorImpl* indices, const TensorImpl& x, int64_t dim) {
  visit_dtype(x.dtype, [&]<class T>() {
    using C = compute_t<T>;
    int64_t n = x.ndim();
    int64_t len = n ? x.sizes[dim] : 1, xs = n ? x.strides[dim] : 0, os = n ? out.strides[dim] : 0;
    int64_t is = indices && n ? indices->strides[dim] : 0;
    const T* xp = static_cast<const T*>(x.data());
    T* outp = static_cast<T*>(out.data());
    int64_t* ip = indices ? static_cast<int64_t*>(indices->data()) : nullptr;
    // cumsum/cumprod hand this floats or i64 (ops/reduction.cpp promotes the rest), and
    // logcumsumexp floats only: other dtypes instantiate the max/min scans alone.
    constexpr bool kSumProd = std::is_floating_point_v<C> || std::is_same_v<T, int64_t>;
    if ((op == detail::CumOp::Sum || op == detail::CumOp::Prod) && !kSumProd)
      EMBER_FAIL("[cumulative] cumsum/cumprod of {} (expected a float or i64 input)", x.dtype);
    if (op == detail::CumOp::Logsumexp && !std::is_floating_point_v<C>)
      EMBER_FAIL("[logcumsumexp] needs a floating tensor, got {}", x.dtype);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {  // rows along a middle dim
      if (op == detail::CumOp::Sum && scan::rows_along<T>(out, x, dim, [](double a, double b) { return a + b; }))
        return;
      if (op == detail::CumOp::Prod && scan::rows_along<T>(out, x, dim, [](double a, double b) { return a * b; }))
        return;
    }
    // One walk over the lines along dim per dtype; the op is chosen per line, outside the
    // scan loop, and step(acc, v, k, best) folds v into the running value.
    along_dim(x, out, n ? dim : 0, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)), [&](int64_t io, int64_t oo) {
      const int64_t m = len, sx = xs, so = os, si = is;
      if (m == 0) return;
      // Sums, products and logcumsumexp of floats run in double (PyTorch's acc_type: the last
      // of a million-element f32 cumsum was off by 2e-5 relative in float).
      using A = std::conditional_t<std::is_floating_point_v<C>, double, C>;
      auto scan_line = [&]<class Acc = C>(auto step) {
        Acc acc = static_cast<Acc>(xp[io]);
        int64_t best = 0;
        outp[oo] = static_cast<T>(acc);
        if (ip) ip[oo] = 0;  // indices share out's (contiguous) layout
        for (int64_t k = 1; k < m; ++k) {
          step(acc, static_cast<Acc>(static_cast<C>(xp[io + k * sx])), k, best);
          outp[oo + k * so] = static_cast<T>(acc);
          if (ip) ip[oo + k * si] = best;
        }
      };
      switch (op) {
        case detail::CumOp::Sum:
          if constexpr (kSumProd)
            scan_line.template operator()<A>([](A& acc, A v, int64_t, int64_t&) { acc = add_wrapping(acc, v); });
          return;
        case detail::CumOp::Prod:
          if constexpr (kSumProd)
            scan_line.template operator()<A>([](A& acc, A v, int64_t, int64_t&) { acc = mul_wrapping(acc, v); });
          return;
        case detail::CumOp::Max:
          scan_line([](C& acc, C v, int64_t k, int64_t& best) {
            bool nan_v = false, nan_acc = false;
            if constexpr (std::is_floating_point_v<C>) nan_v = v != v, nan_acc = acc != acc;
            if (nan_v || (!nan_acc && v >= acc)) acc = v, best = k;
          });
          return;
        case detail::CumOp::Min:
          scan_line([](C& acc, C v, int64_t k, int64_t& best) {
            bool nan_v = false, nan_acc = false;
            if constexpr (std::is_floating_point_v<C>) nan_v = v != v, nan_acc = acc != acc;
            if (nan_v || (!nan_acc && v <= acc)) acc = v, best = k;
          });
          return;
        case detail::CumOp::Logsumexp:
          if constexpr (std::is_floating_point_v<C>) {
            scan_line.template operator()<A>([](A& acc, A v, int64_t, int64_t&) {
              // PyTorch's _log_add_exp_helper: NaN propagates, equal infinities stay.
              if (acc != acc || v != v) {
                acc = std::numeric_limits<C>::quiet_NaN();
              } else if (!(std::isinf(acc) && acc == v)) {
                A hi = std::max(acc, v), lo = std::min(acc, v);
                acc = hi + std::log1p(std::exp(lo - hi));
              }
            });
          }
          return;
      }
    });
  });
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
