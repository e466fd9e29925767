// CPU index kernels: they move elements by index, so most work on raw bytes of itemsize and
// need no per-dtype code; scatter reductions, sort, topk and unique dispatch on the dtype.

#include "int_wrapping.hpp"

#include <ember/core/device_hooks.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/index_ops.hpp>
#include <ember/ops/view_ops.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

namespace ember::detail {
namespace {

using Kc = Kernels<Cpu>;

template <class T>
inline constexpr bool is_reduced_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
using compute_t = std::conditional_t<is_reduced_v<T>, float, T>;

Ref<TensorImpl> share(const TensorImpl& t) { return Ref<TensorImpl>::share(const_cast<TensorImpl*>(&t)); }

Ref<TensorImpl> select_view(const TensorImpl& t, int64_t dim, int64_t i) {
  ops::ViewOp v{ops::ViewKind::Select};
  v.dim = dim, v.start = i;
  return v.make(t);
}

Ref<TensorImpl> clone(const TensorImpl& t) {
  Ref<TensorImpl> c = make_tensor(t.sizes, t.dtype, t.device(), "clone");
  Kc::copy(*c, t);
  return c;
}

/// Reads index tensor element `k` (contiguous i32/i64) as int64.
struct IndexReader {
  Ref<TensorImpl> t;
  explicit IndexReader(const TensorImpl& idx, const char* op) {
    EMBER_CHECK(idx.dtype == DType::I64 || idx.dtype == DType::I32, "[{}] index must be i64 or i32, got {}", op,
                idx.dtype);
    t = contiguous_on_device(idx, op);
  }
  int64_t operator[](int64_t k) const {
    return t->dtype == DType::I64 ? static_cast<const int64_t*>(t->data())[k]
                                  : static_cast<const int32_t*>(t->data())[k];
  }
  int64_t size() const { return t->numel; }
};

/// Calls f(offset_in_elements_per_operand...) for every position of `sizes` (row-major order).
template <size_t N, class F>
void for_each_index(IntArrayRef sizes, const std::array<const Shape*, N>& strides, F&& f) {
  int64_t nd = static_cast<int64_t>(sizes.size());
  int64_t total = 1;
  for (int64_t s : sizes) total *= s;
  if (total == 0) return;
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  std::array<int64_t, N> off{};
  for (int64_t k = 0; k < total; ++k) {
    f(idx.data(), off);
    for (int64_t d = nd - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t o = 0; o < N; ++o) off[o] += (*strides[o])[d];
      if (idx[d] < sizes[d]) break;
      for (size_t o = 0; o < N; ++o) off[o] -= (*strides[o])[d] * sizes[d];
      idx[d] = 0;
    }
  }
}

/// An index of advanced indexing (x.index({idx}), index_put_): a negative one counts from the
/// end, as in PyTorch.
int64_t check_index(int64_t i, int64_t size, const char* op, int64_t dim) {
  EMBER_CHECK(i >= -size && i < size, "[{}] index {} is out of bounds for dim {} with size {}", op, i, dim, size);
  return i < 0 ? i + size : i;
}
/// An index of gather, scatter, index_add and index_copy: in [0, size), as PyTorch requires (a
/// -1 meant as padding must not read or write the last element).
int64_t check_position(int64_t i, int64_t size, const char* op, int64_t dim) {
  EMBER_CHECK(i >= 0 && i < size, "[{}] index {} is out of bounds for dim {} with size {}", op, i, dim, size);
  return i;
}

/// A contiguous tensor seen as (outer, size, inner) around dim d.
struct AroundDim {
  int64_t outer = 1, size = 1, inner = 1;
  AroundDim(const TensorImpl& t, int64_t d) {
    for (int64_t k = 0; k < t.ndim(); ++k) (k < d ? outer : k == d ? size : inner) *= t.sizes[k];
  }
};

/// Calls f(i) with the index tensor's elements as a typed array (i32 or i64).
template <class F>
void with_indices(const IndexReader& idx, F&& f) {
  if (idx.t->dtype == DType::I64) f(static_cast<const int64_t*>(idx.t->data()));
  else f(static_cast<const int32_t*>(idx.t->data()));
}

/// Element copies of one itemsize as a typed loop (the compiler moves 4 or 8 bytes at once).
template <class F>
void by_itemsize(int64_t es, F&& f) {
  switch (es) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

/// The first pass of a parallel compaction (masked_select, nonzero): `count(b)` of each of
/// `blocks` blocks, in parallel, then their prefix sums: element b of the result is where
/// block b's output starts, the last element the total.
template <class Count>
std::vector<int64_t> block_starts(int64_t blocks, Count count) {
  std::vector<int64_t> first(static_cast<size_t>(blocks + 1), 0);
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) first[static_cast<size_t>(b + 1)] = count(b);
  });
  std::partial_sum(first.begin(), first.end(), first.begin());
  return first;
}

/// Whether a gather/scatter index is in [0, size). The copy loops below test every index with
/// this (a branch that is never taken in a correct program), stop on the first bad one and
/// call report_bad_index after the loop, so that no loop body throws.
inline bool in_range(int64_t i, int64_t size) {
  return static_cast<uint64_t>(i) < static_cast<uint64_t>(size);
}
template <class I>
[[noreturn]] void report_bad_index(const I* ix, int64_t n, int64_t size, const char* op, int64_t dim) {
  for (int64_t k = 0; k < n; ++k) check_position(ix[k], size, op, dim);
  EMBER_FAIL("[{}] an index is out of range for dim {} with size {}", op, dim, size);
}

/// Walks the rows of a shape's last dim from row `begin` on, keeping each operand's element
/// offset of the row start (offsets use the operands' own strides for dims 0..ndim-2).
template <size_t N>
struct RowWalker {
  const Shape& sizes;
  std::array<const Shape*, N> strides;
  Shape pos;
  std::array<int64_t, N> off{};
  RowWalker(const Shape& s, std::array<const Shape*, N> st, int64_t begin) : sizes(s), strides(st) {
    const int64_t rd = static_cast<int64_t>(s.size()) - 1;
    pos = Shape(static_cast<size_t>(std::max<int64_t>(rd, 0)), 0);
    for (int64_t d = rd - 1; d >= 0; --d) {
      pos[d] = begin % s[d];
      begin /= s[d];
      for (size_t o = 0; o < N; ++o) off[o] += pos[d] * (*strides[o])[d];
    }
  }
  void next() {
    for (int64_t d = static_cast<int64_t>(pos.size()) - 1; d >= 0; --d) {
      ++pos[d];
      for (size_t o = 0; o < N; ++o) off[o] += (*strides[o])[d];
      if (pos[d] < sizes[d]) return;
      for (size_t o = 0; o < N; ++o) off[o] -= (*strides[o])[d] * sizes[d];
      pos[d] = 0;
    }
  }
};

/// scatter and the scatter reductions that need no per-position count (every write combines
/// with the current value): rows of the index's last dim, each a typed loop, indices checked
/// up front. Rows write disjoint output rows only when d is the last dim; then they run in
/// parallel, otherwise in order (so repeated indices combine in the same order as always).
void scatter_rows(TensorImpl& out, int64_t d, const IndexReader& idx, const Shape& isizes, const TensorImpl& src,
                  const Shape& sstr, ScatterReduce reduce, const char* op) {
  const int64_t numel = idx.size();
  if (numel == 0) return;
  const int64_t last = out.ndim() - 1, n = isizes[last], rows = numel / n, size = out.sizes[d];
  Shape rstr = out.strides;
  rstr[d] = 0;  // dim d's position comes from the index
  const int64_t os = out.strides[d], os_inner = d == last ? 0 : out.strides[last], ss_inner = sstr[last];
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / n);
  with_indices(idx, [&](const auto* ix) {
    std::atomic<bool> bad{false};
    visit_dtype(out.dtype, [&]<class T>() {
      using C = compute_t<T>;
      T* o = static_cast<T*>(out.data());
      const T* s = static_cast<const T*>(src.data());
      auto run = [&](auto combine) {
        auto body = [&](int64_t b, int64_t e) {
          // Locals, not captures: stores through dst would otherwise reload them each element.
          const int64_t sz = size, step = os, inner = os_inner, sinner = ss_inner, len = n;
          RowWalker<2> w(isizes, {&rstr, &sstr}, b);
          for (int64_t r = b; r < e; ++r, w.next()) {
            T* orow = o + w.off[0];
            const T* srow = s + w.off[1];
            const auto* ir = ix + r * len;
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = ir[j];
              if (!in_range(i, sz)) [[unlikely]] {
                bad.store(true, std::memory_order_relaxed);
                return;
              }
              T& dst = orow[i * step + j * inner];
              dst = static_cast<T>(combine(static_cast<C>(dst), static_cast<C>(srow[j * sinner])));
            }
          }
        };
        if (d == last) parallel_for(rows, grain, body);
        else body(0, rows);
      };
      if constexpr (std::is_same_v<C, bool>) {
        switch (reduce) {
          case ScatterReduce::None: return run([](C, C v) { return v; });
          case ScatterReduce::Prod:
          case ScatterReduce::Amin: return run([](C c, C v) { return c && v; });
          default: return run([](C c, C v) { return c || v; });
        }
      } else {
        switch (reduce) {
          case ScatterReduce::None: return run([](C, C v) { return v; });
          case ScatterReduce::Mean:  // not reached: a mean needs counts
          case ScatterReduce::Sum: return run([](C c, C v) { return cpu::add_wrapping(c, v); });
          case ScatterReduce::Prod: return run([](C c, C v) { return cpu::mul_wrapping(c, v); });
          case ScatterReduce::Amax: return run([](C c, C v) { return (v > c || v != v) ? v : c; });
          case ScatterReduce::Amin: return run([](C c, C v) { return (v < c || v != v) ? v : c; });
        }
      }
    });
    if (bad.load()) report_bad_index(ix, numel, size, op, d);
  });
}

}  // namespace

Ref<TensorImpl> IndexKernels<Cpu>::cat(std::span<const TensorImpl* const> xs, int64_t dim) {
  // PyTorch skips legacy empty 1-d tensors of shape [0] when the others have more dims.
  const TensorImpl* ref = nullptr;
  DType t = xs[0]->dtype;
  for (const TensorImpl* x : xs) {
    if (!(x->ndim() == 1 && x->numel == 0) && !ref) ref = x;
    t = promote_types(t, x->dtype);
  }
  if (!ref) ref = xs[0];
  EMBER_CHECK(ref->ndim() > 0, "[cat] zero-dimensional tensors cannot be concatenated");
  int64_t d = wrap_dim(dim, ref->ndim(), "cat");
  Shape out_shape = ref->sizes;
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const TensorImpl* x = xs[i];
    if (x->ndim() == 1 && x->numel == 0 && ref->ndim() != 1) continue;
    EMBER_CHECK(x->device() == ref->device(), "[cat] tensors on {} and {}", ref->device(), x->device());
    EMBER_CHECK(x->ndim() == ref->ndim(), "[cat] tensor {} has rank {} but tensor 0 has rank {} (shapes {} and {})",
                i, x->ndim(), ref->ndim(), x->sizes, ref->sizes);
    for (int64_t k = 0; k < ref->ndim(); ++k)
      EMBER_CHECK(k == d || x->sizes[k] == ref->sizes[k],
                  "[cat] sizes must match except in dim {}: shapes {} and {} differ in dim {}", d, ref->sizes,
                  x->sizes, k);
    total += x->sizes[d];
  }
  out_shape[d] = total;
  Ref<TensorImpl> out = make_tensor(out_shape, t, ref->device(), "cat");
  int64_t pos = 0;
  for (const TensorImpl* x : xs) {
    if (x->ndim() == 1 && x->numel == 0 && ref->ndim() != 1) continue;
    ops::ViewOp v{ops::ViewKind::Narrow};
    v.dim = d, v.start = pos, v.length = x->sizes[d];
    Ref<TensorImpl> dst = v.make(*out);
    Kc::copy(*dst, *x);
    pos += x->sizes[d];
  }
  return out;
}

Ref<TensorImpl> IndexKernels<Cpu>::index_select(const TensorImpl& x, int64_t dim, const TensorImpl& index) {
  EMBER_CHECK(index.ndim() <= 1, "[index_select] index must be 0-d or 1-d, got shape {}", index.sizes);
  int64_t d = wrap_dim(dim, x.ndim(), "index_select");
  IndexReader idx(index, "index_select");
  Shape out_shape = x.sizes;
  int64_t size = x.ndim() ? x.sizes[d] : 1;
  if (x.ndim()) out_shape[d] = idx.size();
  Ref<TensorImpl> out = make_tensor(out_shape, x.dtype, x.device(), "index_select");
  if (x.ndim() == 0) {
    for (int64_t k = 0; k < idx.size(); ++k) check_position(idx[k], 1, "index_select", 0);
    Kc::copy(*out, x);
    return out;
  }
  for (int64_t k = 0; k < idx.size(); ++k) {
    int64_t i = idx[k];
    EMBER_CHECK(i >= 0 && i < size, "[index_select] index {} is out of range for dim {} of size {}", i, d, size);
  }
  if (!x.contiguous) {
    for (int64_t k = 0; k < idx.size(); ++k) Kc::copy(*select_view(*out, d, k), *select_view(x, d, idx[k]));
    return out;
  }
  // A contiguous input as (outer, size, inner): blocks of inner elements move with one memcpy
  // each (an embedding lookup: whole rows), single elements (the last dim, as nearest
  // upsampling selects) with a typed gather; no views or copy kernels per index.
  const AroundDim g(x, d);
  const int64_t n = idx.size(), es = itemsize(x.dtype);
  if (g.outer * n * g.inner == 0) return out;
  const char* xp = static_cast<const char*>(x.data());
  char* op = static_cast<char*>(out->data());
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(n * g.inner, 1));
  with_indices(idx, [&](const auto* ix) {
    if (g.inner > 1) {
      const size_t block = static_cast<size_t>(g.inner * es);
      parallel_for(g.outer, grain, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o)
          for (int64_t k = 0; k < n; ++k)
            std::memcpy(op + (o * n + k) * static_cast<int64_t>(block), xp + (o * g.size + ix[k]) * static_cast<int64_t>(block), block);
      });
      return;
    }
    by_itemsize(es, [&]<class U>(U) {
      const U* src = reinterpret_cast<const U*>(xp);
      U* dst = reinterpret_cast<U*>(op);
      parallel_for(g.outer, grain, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const U* row = src + o * g.size;
          U* orow = dst + o * n;
          for (int64_t k = 0; k < n; ++k) orow[k] = row[ix[k]];
        }
      });
    });
  });
  return out;
}

Ref<TensorImpl> IndexKernels<Cpu>::gather(const TensorImpl& x, int64_t dim, const TensorImpl& index) {
  int64_t d = wrap_dim(dim, x.ndim(), "gather");
  EMBER_CHECK(index.ndim() == x.ndim() || (x.ndim() == 0 && index.ndim() <= 1),
              "[gather] index rank {} must equal input rank {} (shapes {} and {})", index.ndim(), x.ndim(),
              index.sizes, x.sizes);
  for (int64_t k = 0; k < x.ndim(); ++k)
    EMBER_CHECK(k == d || index.sizes[k] <= x.sizes[k],
                "[gather] index shape {} exceeds input shape {} in dim {}", index.sizes, x.sizes, k);
  IndexReader idx(index, "gather");
  Ref<TensorImpl> out = make_tensor(index.sizes, x.dtype, x.device(), "gather");
  int64_t es = itemsize(x.dtype), size = x.ndim() ? x.sizes[d] : 1, xs = x.ndim() ? x.strides[d] : 0;
  const char* xp = static_cast<const char*>(x.data());
  char* op = static_cast<char*>(out->data());
  if (x.ndim() > 0) {
    // Rows of the index's last dim, each a typed loop: out[r, j] = x[row r's offset +
    // index * stride of d (+ j * stride of the last dim when d is not the last)]. Indices are
    // checked up front, so the loop cannot throw and runs in parallel.
    if (out->numel == 0) return out;
    const int64_t last = x.ndim() - 1, n = index.sizes[last], rows = out->numel / n;
    Shape rstr = x.strides;
    rstr[d] = 0;  // dim d's position comes from the index
    const int64_t xs_inner = d == last ? 0 : x.strides[last];
    const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / n);
    with_indices(idx, [&](const auto* ix) {
      std::atomic<bool> bad{false};
      by_itemsize(es, [&]<class U>(U) {
        const U* src = reinterpret_cast<const U*>(xp);
        U* dst = reinterpret_cast<U*>(op);
        parallel_for(rows, grain, [&](int64_t b, int64_t e) {
          // Locals, not captures: stores through dst would otherwise reload them each element.
          const int64_t sz = size, step = xs, inner = xs_inner, len = n;
          RowWalker<1> w(index.sizes, {&rstr}, b);
          for (int64_t r = b; r < e; ++r, w.next()) {
            const U* xr = src + w.off[0];
            const auto* ir = ix + r * len;
            U* orow = dst + r * len;
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = ir[j];
              if (!in_range(i, sz)) [[unlikely]] {
                bad.store(true, std::memory_order_relaxed);
                return;
              }
              orow[j] = xr[i * step + j * inner];
            }
          }
        });
      });
      if (bad.load()) report_bad_index(ix, out->numel, size, "gather", d);
    });
    return out;
  }
  // A 0-d input: every index must be 0, and every output element is x.
  for (int64_t k = 0; k < out->numel; ++k) {
    check_position(idx[k], size, "gather", d);
    std::memcpy(op + k * es, xp, static_cast<size_t>(es));
  }
  return out;
}

Ref<TensorImpl> IndexKernels<Cpu>::scatter(const TensorImpl& x, int64_t dim, const TensorImpl& index,
                                           const TensorImpl& src, ScatterReduce reduce, bool include_self) {
  const char* op = reduce == ScatterReduce::None ? "scatter" : "scatter_reduce";
  int64_t d = wrap_dim(dim, x.ndim(), op);
  EMBER_CHECK(index.ndim() == x.ndim(), "[{}] index rank {} must equal input rank {}", op, index.ndim(), x.ndim());
  bool src_scalar = src.ndim() == 0;
  if (!src_scalar) {
    EMBER_CHECK(src.ndim() == x.ndim(), "[{}] src rank {} must equal input rank {}", op, src.ndim(), x.ndim());
    for (int64_t k = 0; k < x.ndim(); ++k)
      EMBER_CHECK(index.sizes[k] <= src.sizes[k], "[{}] index shape {} exceeds src shape {} in dim {}", op,
                  index.sizes, src.sizes, k);
  }
  for (int64_t k = 0; k < x.ndim(); ++k)  // a scalar src too: the index alone picks where to write
    EMBER_CHECK(k == d || index.sizes[k] <= x.sizes[k], "[{}] index shape {} exceeds input shape {} in dim {}", op,
                index.sizes, x.sizes, k);
  EMBER_CHECK(src.dtype == x.dtype, "[{}] src dtype {} differs from input dtype {}", op, src.dtype, x.dtype);
  IndexReader idx(index, op);
  Ref<TensorImpl> out = clone(x);
  int64_t size = x.ndim() ? x.sizes[d] : 1;
  const Shape& ostr = out->strides;
  Shape sstr = src_scalar ? Shape(index.sizes.size(), 0) : src.strides;
  // Per-position counts are needed only to average (mean) or to tell a position's first write
  // (include_self false). Otherwise every write combines with the current value, and a
  // count per output element (gather's backward: the size of the whole input) would cost
  // more than the scatter itself.
  const bool need_counts = reduce == ScatterReduce::Mean || (reduce != ScatterReduce::None && !include_self);
  if (!need_counts && x.ndim() > 0) {
    scatter_rows(*out, d, idx, index.sizes, src, sstr, reduce, op);
    return out;
  }
  std::vector<int64_t> counts;
  if (need_counts) counts.assign(static_cast<size_t>(out->numel), include_self ? 1 : 0);
  visit_dtype(x.dtype, [&]<class T>() {
    using C = compute_t<T>;
    T* o = static_cast<T*>(out->data());
    const T* s = static_cast<const T*>(src.data());
    int64_t k = 0;
    const bool rank0 = x.ndim() == 0;  // one element, at offset 0 (pos and ostr are empty)
    for_each_index<2>(index.sizes, {&ostr, &sstr}, [&](const int64_t* pos, const std::array<int64_t, 2>& off) {
      int64_t i = check_position(idx[k++], size, op, d);
      int64_t at = rank0 ? 0 : off[0] + (i - pos[d]) * ostr[d];
      C v = static_cast<C>(s[off[1]]);
      if (reduce == ScatterReduce::None) {
        o[at] = static_cast<T>(v);
        return;
      }
      int64_t unused = 1;
      int64_t& cnt = need_counts ? counts[static_cast<size_t>(at)] : unused;
      C cur = static_cast<C>(o[at]);
      if (cnt == 0) {
        o[at] = static_cast<T>(v);
      } else if constexpr (std::is_same_v<C, bool>) {
        if (reduce == ScatterReduce::Prod || reduce == ScatterReduce::Amin) o[at] = cur && v;
        else o[at] = cur || v;
      } else {
        switch (reduce) {
          case ScatterReduce::Sum:
          case ScatterReduce::Mean: o[at] = static_cast<T>(cpu::add_wrapping(cur, v)); break;
          case ScatterReduce::Prod: o[at] = static_cast<T>(cpu::mul_wrapping(cur, v)); break;
          case ScatterReduce::Amax: o[at] = static_cast<T>((v > cur || v != v) ? v : cur); break;
          case ScatterReduce::Amin: o[at] = static_cast<T>((v < cur || v != v) ? v : cur); break;
          case ScatterReduce::None: break;
        }
      }
      ++cnt;
    });
    if (reduce == ScatterReduce::Mean) {
      // Positions were written in place contiguously (out is a fresh clone), so offsets are linear.
      for (int64_t p = 0; p < out->numel; ++p) {
        int64_t c = counts[static_cast<size_t>(p)];
        if (c > 1) {
          if constexpr (std::is_same_v<C, bool>) {
            // a mean of booleans: any true stays true (c > 0)
          } else if constexpr (std::is_integral_v<C>) {
            // PyTorch floors an integer mean (-7 / 2 = -4); in int64, as the count may not fit C.
            const int64_t a = static_cast<int64_t>(o[p]);
            int64_t q = a / c;
            if (a % c != 0 && a < 0) --q;
            o[p] = static_cast<T>(q);
          } else {
            o[p] = static_cast<T>(static_cast<C>(o[p]) / static_cast<C>(c));
          }
        }
      }
    }
  });
  return out;
}

Ref<TensorImpl> IndexKernels<Cpu>::index_add(const TensorImpl& x, int64_t dim, const TensorImpl& index,
                                             const TensorImpl& src, double alpha, bool copy) {
  const char* op = copy ? "index_copy" : "index_add";
  int64_t d = wrap_dim(dim, x.ndim(), op);
  EMBER_CHECK(index.ndim() <= 1, "[{}] index must be 1-d, got shape {}", op, index.sizes);
  EMBER_CHECK(src.dtype == x.dtype, "[{}] src dtype {} differs from input dtype {}", op, src.dtype, x.dtype);
  // An integer tensor's alpha is converted to its dtype: a fraction or an out-of-range value
  // would be truncated (or undefined), so it is refused, as PyTorch refuses it.
  if (is_integral(x.dtype, true)) {
    bool holds = true;
    visit_dtype(x.dtype, [&]<class T>() {
      if constexpr (std::is_integral_v<T>) holds = cpu::holds_integer<T>(alpha);
    });
    EMBER_CHECK(holds, "[{}] alpha {} is not a value of the tensor's dtype {}", op, alpha, x.dtype);
  }
  IndexReader idx(index, op);
  Shape expect = x.sizes;
  if (x.ndim()) expect[d] = idx.size();
  EMBER_CHECK(src.sizes == expect, "[{}] src shape {} must be {} (input shape {} with dim {} = index length {})", op,
              src.sizes, expect, x.sizes, d, idx.size());
  Ref<TensorImpl> out = clone(x);
  int64_t size = x.ndim() ? x.sizes[d] : 1;
  if (!copy && x.ndim() >= 1 && out->contiguous && idx.size() > 0 &&
      (x.dtype == DType::F32 || x.dtype == DType::F64)) {
    // Blocks of inner elements into blocks, as (outer, size, inner) around dim d: whole rows
    // for an embedding's backward, single elements for nearest upsampling's; no per-element
    // index walk or per-index views. An expanded src (a gradient of sum()) is made contiguous
    // first. Each outer slice adds its indices in order, so repeated indices sum in the same
    // order on any thread count.
    for (int64_t k = 0; k < idx.size(); ++k) check_position(idx[k], size, op, d);
    Ref<TensorImpl> sc = src.contiguous ? share(src) : contiguous_on_device(src, op);
    const AroundDim g(*out, d);
    const int64_t n = idx.size();
    const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(n * g.inner, 1));
    // Runs of equal consecutive indices, the same for every outer slice, plus an
    // end marker; a per-thread buffer, so a warm loop allocates nothing.
    struct Run {
      int64_t index, start;
    };
    static thread_local std::vector<Run> run_buf;
    std::vector<Run>& runs = run_buf;
    runs.clear();
    auto add = [&]<class T>(T*, const auto* ix) {
      if (g.inner == 1) {
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = ix[k];
          if (runs.empty() || runs.back().index != i) runs.push_back({i, k});
        }
        runs.push_back({-1, n});
      }
      T* o = static_cast<T*>(out->data());
      const T* s = static_cast<const T*>(sc->data());
      const T a = static_cast<T>(alpha);
      parallel_for(g.outer, grain, [&](int64_t b, int64_t e) {
        for (int64_t oi = b; oi < e; ++oi) {
          T* orow = o + oi * g.size * g.inner;
          const T* srow = s + oi * n * g.inner;
          if (g.inner == 1) {
            // Single elements: a run of equal indices (nearest upsampling's backward repeats
            // each) adds into a register, in the same order, instead of through memory.
            for (size_t r = 0; r + 1 < runs.size(); ++r) {
              T acc = orow[runs[r].index];
              const int64_t k1 = runs[r + 1].start;
              if (a == T(1))
                for (int64_t k = runs[r].start; k < k1; ++k) acc += srow[k];
              else
                for (int64_t k = runs[r].start; k < k1; ++k) acc += srow[k] * a;
              orow[runs[r].index] = acc;
            }
            continue;
          }
          for (int64_t k = 0; k < n; ++k) {
            const int64_t i = ix[k];
            T* dst = orow + i * g.inner;
            const T* sr = srow + k * g.inner;
            if (a == T(1)) for (int64_t j = 0; j < g.inner; ++j) dst[j] += sr[j];
            else for (int64_t j = 0; j < g.inner; ++j) dst[j] += sr[j] * a;
          }
        }
      });
    };
    with_indices(idx, [&](const auto* ix) {
      if (x.dtype == DType::F32) add(static_cast<float*>(nullptr), ix);
      else add(static_cast<double*>(nullptr), ix);
    });
    return out;
  }
  for (int64_t k = 0; k < idx.size(); ++k) {
    int64_t i = check_position(idx[k], size, op, d);
    Ref<TensorImpl> dst = x.ndim() ? select_view(*out, d, i) : out;
    Ref<TensorImpl> s = x.ndim() ? select_view(src, d, k) : share(src);
    if (copy) {
      Kc::copy(*dst, *s);
      continue;
    }
    visit_dtype(x.dtype, [&]<class T>() {
      using C = compute_t<T>;
      T* o = static_cast<T*>(dst->data());
      const T* sp = static_cast<const T*>(s->data());
      for_each_index<2>(dst->sizes, {&dst->strides, &s->strides}, [&](const int64_t*, const std::array<int64_t, 2>& off) {
        if constexpr (std::is_same_v<C, bool>) o[off[0]] = o[off[0]] || (sp[off[1]] && alpha != 0);
        else o[off[0]] = static_cast<T>(cpu::add_wrapping(static_cast<C>(o[off[0]]), cpu::mul_wrapping(static_cast<C>(sp[off[1]]), static_cast<C>(alpha))));
      });
    });
  }
  return out;
}

Ref<TensorImpl> IndexKernels<Cpu>::masked_select(const TensorImpl& x, const TensorImpl& mask) {
  EMBER_CHECK(mask.dtype == DType::Bool, "[masked_select] mask must be bool, got {}", mask.dtype);
  Shape shape = ops::broadcast_shapes(x.sizes, mask.sizes, "masked_select");
  Ref<TensorImpl> bx = ops::broadcast_to(x, shape, "masked_select");
  Ref<TensorImpl> bm = ops::broadcast_to(mask, shape, "masked_select");
  int64_t es = itemsize(x.dtype);
  if (bx->contiguous && bm->contiguous) {
    // Same-shape contiguous operands: blocks counted in parallel, then each block copies its
    // elements from its prefix sum on, in parallel (no offset list).
    const bool* m = static_cast<const bool*>(bm->data());
    const int64_t n = bm->numel, block = EMBER_GRAIN_SIZE, blocks = (n + block - 1) / block;
    const std::vector<int64_t> first = block_starts(blocks, [&](int64_t b) {  // first[b]: kept before block b
      int64_t c = 0;
      for (int64_t i = b * block, e = std::min(n, i + block); i < e; ++i) c += m[i];
      return c;
    });
    Ref<TensorImpl> out = make_tensor(Shape{first.back()}, x.dtype, x.device(), "masked_select");
    by_itemsize(es, [&]<class U>(U) {
      const U* src = static_cast<const U*>(bx->data());
      U* dst = static_cast<U*>(out->data());
      parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          // Written always, kept when the mask is set: no branch on random masks. A block ends
          // with its last kept element, so dst[j] never leaves the block's range.
          const int64_t end = first[static_cast<size_t>(b + 1)];
          for (int64_t i = b * block, j = first[static_cast<size_t>(b)]; j < end; ++i) {
            dst[j] = src[i];
            j += m[i];
          }
        }
      });
    });
    return out;
  }
  std::vector<int64_t> picks;
  const bool* mp = static_cast<const bool*>(bm->data());
  for_each_index<2>(shape, {&bx->strides, &bm->strides}, [&](const int64_t*, const std::array<int64_t, 2>& off) {
    if (mp[off[1]]) picks.push_back(off[0]);
  });
  Ref<TensorImpl> out = make_tensor(Shape{static_cast<int64_t>(picks.size())}, x.dtype, x.device(), "masked_select");
  const char* xp = static_cast<const char*>(bx->data());
  char* op = static_cast<char*>(out->data());
  for (size_t k = 0; k < picks.size(); ++k) std::memcpy(op + k * es, xp + picks[k] * es, static_cast<size_t>(es));
  return out;
}

Ref<TensorImpl> IndexKernels<Cpu>::nonzero(const TensorImpl& x) {
  const int64_t nd = x.ndim();
  if (nd == 0) {
    bool nz = false;
    visit_dtype(x.dtype, [&]<class T>() { nz = static_cast<compute_t<T>>(*static_cast<const T*>(x.data())) != compute_t<T>(0); });
    return make_tensor(Shape{nz ? 1 : 0, 0}, DType::I64, x.device(), "nonzero");
  }
  // Two passes over blocks of rows (along the last dim; a 1-d input is cut into rows of
  // 4096), both in parallel: count each block's nonzeros, then each block writes its
  // coordinates from its prefix sum on, keeping the coordinates of the current row as an
  // odometer. The writes do not branch on the values (a random mask mispredicted a third of
  // them): every element's coordinates are written at the block's next slot, which advances
  // only for a nonzero, and a block stops at its last nonzero, so no write leaves its range.
  Ref<TensorImpl> xc = contiguous_on_device(x, "nonzero");
  Ref<TensorImpl> out;
  visit_dtype(x.dtype, [&]<class T>() {
    using C = compute_t<T>;
    const T* p = static_cast<const T*>(xc->data());
    const int64_t n = xc->numel;
    const int64_t last = nd == 1 ? std::min<int64_t>(n, 4096) : x.sizes[nd - 1];  // elements per row
    const int64_t rows = last ? (n + last - 1) / last : 0;  // the last one short only when 1-d
    const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(last, 1));
    const int64_t blocks = (rows + grain - 1) / grain;
    const std::vector<int64_t> first = block_starts(blocks, [&](int64_t b) {  // first[b]: nonzeros before block b
      const T* q = p + b * grain * last;
      const int64_t len = std::min(n, (b + 1) * grain * last) - b * grain * last;
      int64_t c = 0;
      for (int64_t i = 0; i < len; ++i) c += static_cast<C>(q[i]) != C(0);
      return c;
    });
    const int64_t count = first.back();
    out = make_tensor(Shape{count, nd}, DType::I64, x.device(), "nonzero");
    int64_t* o = static_cast<int64_t*>(out->data());
    if (count == 0) return;
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      Shape pos(static_cast<size_t>(nd), 0);
      for (int64_t b = b0; b < b1; ++b) {
        int64_t left = first[static_cast<size_t>(b + 1)] - first[static_cast<size_t>(b)];
        int64_t* w = o + first[static_cast<size_t>(b)] * nd;
        int64_t r = b * grain;
        for (int64_t d = nd - 2, rest = r; d >= 0; --d) {  // the block's first row's coordinates
          pos[static_cast<size_t>(d)] = rest % x.sizes[d];
          rest /= x.sizes[d];
        }
        for (; left > 0; ++r) {
          const T* row = p + r * last;
          const int64_t flat = nd == 1 ? r * last : 0;  // a 1-d row's first index
          for (int64_t j = 0; j < last && left > 0; ++j) {
            for (int64_t d = 0; d + 1 < nd; ++d) w[d] = pos[static_cast<size_t>(d)];
            w[nd - 1] = flat + j;
            const int64_t nz = static_cast<C>(row[j]) != C(0);
            w += nz * nd;
            left -= nz;
          }
          for (int64_t d = nd - 2; d >= 0; --d) {  // next row
            if (++pos[static_cast<size_t>(d)] < x.sizes[d]) break;
            pos[static_cast<size_t>(d)] = 0;
          }
        }
      }
    });
  });
  return out;
}

namespace {
/// NaN sorts as the largest value, as in PyTorch.
template <class C>
inline bool less_nan_last(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (b != b) return a == a;
    if (a != a) return false;
  }
  return a < b;
}

/// The element offsets (input, values, indices) of each row along dim, in row-major order of
/// the other dims: rows are then sorted in parallel.
std::vector<std::array<int64_t, 3>> row_offsets(const TensorImpl& x, int64_t dim, const TensorImpl& vals,
                                                const TensorImpl& idxs) {
  int64_t nd = x.ndim();
  Shape outer_sizes, xs, vs, is;
  for (int64_t d = 0; d < nd; ++d) {
    if (d == dim) continue;
    outer_sizes.push_back(x.sizes[d]);
    xs.push_back(x.strides[d]);
    vs.push_back(vals.strides[d]);
    is.push_back(idxs.strides[d]);
  }
  std::vector<std::array<int64_t, 3>> rows;
  for_each_index<3>(outer_sizes, {&xs, &vs, &is},
                    [&](const int64_t*, const std::array<int64_t, 3>& off) { rows.push_back(off); });
  return rows;
}

/// A row's element with its position: sorting these pairs (ties broken by position) gives
/// a stable order with std::sort, and compares values held in the buffer rather than
/// loaded through the input's strides.
template <class C>
struct Keyed {
  C key;
  int64_t pos;
};

/// Orders by value (NaN largest), then by position: ascending, or descending with ties still
/// in position order (PyTorch's stable sort; topk's lower index first).
template <class C>
auto keyed_order(bool descending) {
  return [descending](const Keyed<C>& a, const Keyed<C>& b) {
    const bool lt = descending ? less_nan_last(b.key, a.key) : less_nan_last(a.key, b.key);
    if (lt) return true;
    const bool gt = descending ? less_nan_last(a.key, b.key) : less_nan_last(b.key, a.key);
    return !gt && a.pos < b.pos;
  };
}

/// keyed_order as one integer for values computed in f32 (f32, f16, bf16): an
/// order-preserving image of the value in the high half (NaN above +inf, -0 equal to +0,
/// complemented when descending) and the position in the low half, so that plain integer
/// order is the stable order and sorting compares integers (3-4x faster than the pairs).
inline uint64_t packed_key(float v, int64_t pos, bool descending) {
  uint32_t u = 0xFFFFFFFFu;
  if (v == v) {
    if (v == 0.0f) v = 0.0f;  // -0 ties with +0 (PyTorch compares values)
    std::memcpy(&u, &v, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  if (descending) u = ~u;
  return (static_cast<uint64_t>(u) << 32) | static_cast<uint64_t>(pos);
}

/// Replaces the largest key of the max-heap h[0, k) by v (smaller) and restores the heap: one
/// sift down (std::pop_heap + std::push_heap walk the heap twice). Keys are distinct.
inline void replace_top(uint64_t* h, int64_t k, uint64_t v) {
  int64_t i = 0;
  for (int64_t c = 1; c < k; c = 2 * i + 1) {
    if (c + 1 < k && h[c + 1] > h[c]) ++c;
    if (h[c] < v) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = v;
}

/// Sorts packed keys (packed_key) of a row in order: LSD radix sort on the value half, 8 bits
/// a pass, which is stable, so keys that tie keep their position order and the result is the
/// order of the whole keys; a pass whose digit is the same in every key is skipped. `tmp`
/// holds n keys. No comparisons: std::sort's branches on random keys mispredict about half
/// the time.
inline void radix_sort_packed(uint64_t* keys, uint64_t* tmp, int64_t n) {
  int64_t count[4][256] = {};
  for (int64_t i = 0; i < n; ++i)
    for (int d = 0; d < 4; ++d) ++count[d][(keys[i] >> (32 + 8 * d)) & 0xFF];
  uint64_t *from = keys, *to = tmp;
  for (int d = 0; d < 4; ++d) {
    const int shift = 32 + 8 * d;
    if (count[d][(from[0] >> shift) & 0xFF] == n) continue;
    int64_t sum = 0;
    for (int64_t& c : count[d]) {
      const int64_t here = c;
      c = sum;
      sum += here;
    }
    for (int64_t i = 0; i < n; ++i) to[count[d][(from[i] >> shift) & 0xFF]++] = from[i];
    std::swap(from, to);
  }
  if (from != keys) std::copy(from, from + n, keys);
}

/// Puts the first k of [first, last) in order at the front: all of it sorted, or (k < n) the
/// k selected, then sorted.
template <class It, class... Order>
void first_in_order(It first, It last, int64_t k, Order... order) {
  if (k < last - first) std::nth_element(first, first + k, last, order...);
  std::sort(first, first + k, order...);
}

/// Sorts (k = the row's length) or selects the first k of every row along dim in order, in
/// parallel, and writes them to vals/idxs.
template <class T>
void for_rows_sorted(const TensorImpl& x, int64_t d, TensorImpl& vals, TensorImpl& idxs, int64_t k, bool descending) {
  using C = compute_t<T>;
  const int64_t len = x.sizes[d], sx = x.strides[d], sv = vals.strides[d], si = idxs.strides[d];
  const std::vector<std::array<int64_t, 3>> rows = row_offsets(x, d, vals, idxs);
  const T* xp = static_cast<const T*>(x.data());
  T* vp = static_cast<T*>(vals.data());
  int64_t* ip = static_cast<int64_t*>(idxs.data());
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(len * 8, 1));
  constexpr bool packed = std::is_same_v<C, float>;
  parallel_for(static_cast<int64_t>(rows.size()), grain, [&](int64_t b, int64_t e) {
    auto write = [&](const std::array<int64_t, 3>& row, int64_t j, int64_t pos) {
      vp[row[1] + j * sv] = xp[row[0] + pos * sx];
      ip[row[2] + j * si] = pos;
    };
    if constexpr (packed) {
      if (len <= int64_t{0xFFFFFFFF}) {  // positions fit the low half
        // Whole rows of 128 or more: a radix sort (with its second buffer).
        const bool radix = k == len && len >= 128;
        std::vector<uint64_t> buf(static_cast<size_t>(radix ? 2 * len : len));
        // A few of many (topk): one pass keeping the k first in a heap whose top is the
        // last of them; past the first elements most fail the one comparison with the top.
        const bool heap = k > 0 && k * 8 <= len;
        for (int64_t r = b; r < e; ++r) {
          const auto& row = rows[static_cast<size_t>(r)];
          auto key = [&](int64_t i) { return packed_key(static_cast<float>(xp[row[0] + i * sx]), i, descending); };
          if (heap) {
            const auto top = buf.begin(), end = buf.begin() + k;
            for (int64_t i = 0; i < k; ++i) buf[static_cast<size_t>(i)] = key(i);
            std::make_heap(top, end);
            for (int64_t i = k; i < len; ++i) {
              const uint64_t v = key(i);
              if (v < *top) replace_top(buf.data(), k, v);
            }
            std::sort(top, end);
          } else {
            for (int64_t i = 0; i < len; ++i) buf[static_cast<size_t>(i)] = key(i);
            if (radix) radix_sort_packed(buf.data(), buf.data() + len, len);
            else first_in_order(buf.begin(), buf.begin() + len, k);
          }
          for (int64_t j = 0; j < k; ++j) write(row, j, static_cast<int64_t>(buf[static_cast<size_t>(j)] & 0xFFFFFFFFu));
        }
        return;
      }
    }
    std::vector<Keyed<C>> buf(static_cast<size_t>(len));
    const auto order = keyed_order<C>(descending);
    for (int64_t r = b; r < e; ++r) {
      const auto& row = rows[static_cast<size_t>(r)];
      for (int64_t i = 0; i < len; ++i) buf[static_cast<size_t>(i)] = {static_cast<C>(xp[row[0] + i * sx]), i};
      first_in_order(buf.begin(), buf.end(), k, order);
      for (int64_t j = 0; j < k; ++j) write(row, j, buf[static_cast<size_t>(j)].pos);
    }
  });
}
}  // namespace

std::pair<Ref<TensorImpl>, Ref<TensorImpl>> IndexKernels<Cpu>::sort(const TensorImpl& x, int64_t dim, bool descending,
                                                                    bool stable) {
  (void)stable;  // ties always keep their order (PyTorch's stable=True)
  int64_t d = x.ndim() ? wrap_dim(dim, x.ndim(), "sort") : 0;
  Ref<TensorImpl> vals = make_tensor(x.sizes, x.dtype, x.device(), "sort");
  Ref<TensorImpl> idxs = make_tensor(x.sizes, DType::I64, x.device(), "sort");
  if (x.ndim() == 0) {
    Kc::copy(*vals, x);
    *static_cast<int64_t*>(idxs->data()) = 0;
    return {vals, idxs};
  }
  if (x.numel == 0) return {vals, idxs};
  visit_dtype(x.dtype, [&]<class T>() { for_rows_sorted<T>(x, d, *vals, *idxs, x.sizes[d], descending); });
  return {vals, idxs};
}

std::pair<Ref<TensorImpl>, Ref<TensorImpl>> IndexKernels<Cpu>::topk(const TensorImpl& x, int64_t k, int64_t dim,
                                                                    bool largest, bool sorted) {
  (void)sorted;  // results are always sorted, which also satisfies sorted=false
  int64_t d = x.ndim() ? wrap_dim(dim, x.ndim(), "topk") : 0;
  int64_t len = x.ndim() ? x.sizes[d] : 1;
  EMBER_CHECK(k >= 0 && k <= len, "[topk] k ({}) is out of range for dim {} of size {}", k, d, len);
  Shape shape = x.sizes;
  if (x.ndim()) shape[d] = k;
  Ref<TensorImpl> vals = make_tensor(shape, x.dtype, x.device(), "topk");
  Ref<TensorImpl> idxs = make_tensor(shape, DType::I64, x.device(), "topk");
  if (x.ndim() == 0) {
    // A 0-d result always holds one element: the input, also for k = 0 (as PyTorch; it was
    // left uninitialised).
    Kc::copy(*vals, x);
    *static_cast<int64_t*>(idxs->data()) = 0;
    return {vals, idxs};
  }
  if (vals->numel == 0) return {vals, idxs};
  visit_dtype(x.dtype, [&]<class T>() { for_rows_sorted<T>(x, d, *vals, *idxs, k, largest); });
  return {vals, idxs};
}

std::vector<Ref<TensorImpl>> IndexKernels<Cpu>::unique(const TensorImpl& x, bool return_inverse,
                                                       bool return_counts) {
  Ref<TensorImpl> flat = contiguous_on_device(x, "unique");
  int64_t n = x.numel;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<Ref<TensorImpl>> result;
  visit_dtype(x.dtype, [&]<class T>() {
    using C = compute_t<T>;
    const T* p = static_cast<const T*>(flat->data());
    auto key = [&](int64_t i) { return static_cast<C>(p[i]); };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return less_nan_last(key(a), key(b)); });
    std::vector<int64_t> inverse(static_cast<size_t>(n)), counts;
    std::vector<int64_t> firsts;
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = order[static_cast<size_t>(k)];
      bool is_new = firsts.empty() || less_nan_last(key(firsts.back()), key(i));
      if constexpr (std::is_floating_point_v<C>) {
        if (key(i) != key(i)) is_new = true;  // every NaN is its own value, as in PyTorch
      }
      if (is_new) {
        firsts.push_back(i);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<size_t>(i)] = static_cast<int64_t>(firsts.size()) - 1;
    }
    Ref<TensorImpl> vals = make_tensor(Shape{static_cast<int64_t>(firsts.size())}, x.dtype, x.device(), "unique");
    T* vp = static_cast<T*>(vals->data());
    for (size_t k = 0; k < firsts.size(); ++k) vp[k] = p[firsts[k]];
    result.push_back(vals);
    if (return_inverse) {
      Ref<TensorImpl> inv = make_tensor(x.sizes, DType::I64, x.device(), "unique");
      if (n) std::memcpy(inv->data(), inverse.data(), inverse.size() * sizeof(int64_t));
      result.push_back(inv);
    }
    if (return_counts) {
      Ref<TensorImpl> cnt = make_tensor(Shape{static_cast<int64_t>(counts.size())}, DType::I64, x.device(), "unique");
      if (!counts.empty()) std::memcpy(cnt->data(), counts.data(), counts.size() * sizeof(int64_t));
      result.push_back(cnt);
    }
  });
  return result;
}

namespace {
/// Turns bool masks into index tensors and broadcasts all index tensors to one shape.
struct AdvancedIndex {
  std::vector<Ref<TensorImpl>> idx;  // broadcast, i64
  Shape bshape;                      // broadcast index shape
  int64_t ndims_indexed = 0;

  AdvancedIndex(const TensorImpl& x, std::span<const TensorImpl* const> indices, const char* op) {
    std::vector<Ref<TensorImpl>> raw;
    for (const TensorImpl* t : indices) {
      if (t->dtype == DType::Bool) {
        EMBER_CHECK(ndims_indexed + t->ndim() <= x.ndim(), "[{}] bool mask of shape {} indexes too many dims of {}",
                    op, t->sizes, x.sizes);
        for (int64_t k = 0; k < t->ndim(); ++k)
          EMBER_CHECK(t->sizes[k] == x.sizes[ndims_indexed + k],
                      "[{}] mask shape {} does not match the indexed dims of shape {}", op, t->sizes, x.sizes);
        Ref<TensorImpl> nz = IndexKernels<Cpu>::nonzero(*t);
        for (int64_t k = 0; k < t->ndim(); ++k) {
          ops::ViewOp v{ops::ViewKind::Select};
          v.dim = 1, v.start = k;
          raw.push_back(contiguous_on_device(*v.make(*nz), op));
        }
        ndims_indexed += t->ndim();
      } else {
        EMBER_CHECK(t->dtype == DType::I64 || t->dtype == DType::I32, "[{}] index tensors must be i64, i32 or bool, got {}",
                    op, t->dtype);
        raw.push_back(share(*t));
        ++ndims_indexed;
      }
    }
    EMBER_CHECK(ndims_indexed <= x.ndim(), "[{}] too many indices ({}) for a tensor of shape {}", op, ndims_indexed,
                x.sizes);
    for (auto& r : raw) bshape = ops::broadcast_shapes(bshape, r->sizes, op);
    for (auto& r : raw) {
      Ref<TensorImpl> b = ops::broadcast_to(*r, bshape, op);
      Ref<TensorImpl> c = make_tensor(bshape, DType::I64, x.device(), op);
      Kc::copy(*c, *b);
      idx.push_back(c);
    }
  }
  /// Element offset in x of index position k (flat over bshape).
  int64_t offset(const TensorImpl& x, int64_t k, const char* op) const {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t i = static_cast<const int64_t*>(idx[d]->data())[k];
      i = check_index(i, x.sizes[d], op, static_cast<int64_t>(d));
      off += i * x.strides[d];
    }
    return off;
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : bshape) n *= s;
    return n;
  }
};

/// PyTorch reads a 0-d bool index as a new dim of size 1 at its place, indexed by a one-element
/// mask: true keeps it (a dim of 1), false selects nothing (a dim of 0). `x` is then a view
/// with those dims inserted and `indices` has the masks as 1-D; both share their storage.
struct ZeroDimMasks {
  Ref<TensorImpl> x;
  std::vector<Ref<TensorImpl>> masks;
  std::vector<const TensorImpl*> indices;

  static bool present(std::span<const TensorImpl* const> indices) {
    for (const TensorImpl* t : indices)
      if (t->dtype == DType::Bool && t->ndim() == 0) return true;
    return false;
  }
  ZeroDimMasks(const TensorImpl& base, std::span<const TensorImpl* const> in) {
    Shape sizes = base.sizes, strides = base.strides;
    size_t pos = 0;  // x's dims consumed by the indices so far
    masks.reserve(in.size());
    for (const TensorImpl* t : in) {
      if (t->dtype == DType::Bool && t->ndim() == 0) {
        sizes.insert(std::min(pos, sizes.size()), 1);
        strides.insert(std::min(pos, strides.size()), 0);
        masks.push_back(make_view(t->storage, t->dtype, Shape{1}, Shape{1}, t->offset));
        indices.push_back(masks.back().get());
        pos += 1;
      } else {
        indices.push_back(t);
        pos += t->dtype == DType::Bool ? static_cast<size_t>(t->ndim()) : 1;
      }
    }
    x = make_view(base.storage, base.dtype, sizes, strides, base.offset);
  }
};

Ref<TensorImpl> trailing_view(const TensorImpl& x, int64_t skip, int64_t offset) {
  Shape s, st;
  for (int64_t d = skip; d < x.ndim(); ++d) s.push_back(x.sizes[d]), st.push_back(x.strides[d]);
  return make_view(x.storage, x.dtype, s, st, x.offset + offset);
}
}  // namespace

Ref<TensorImpl> IndexKernels<Cpu>::index_tensor(const TensorImpl& x, std::span<const TensorImpl* const> indices) {
  if (ZeroDimMasks::present(indices)) {
    ZeroDimMasks lifted(x, indices);
    return index_tensor(*lifted.x, lifted.indices);
  }
  AdvancedIndex ai(x, indices, "index");
  Shape out_shape = ai.bshape;
  for (int64_t d = ai.ndims_indexed; d < x.ndim(); ++d) out_shape.push_back(x.sizes[d]);
  Ref<TensorImpl> out = make_tensor(out_shape, x.dtype, x.device(), "index");
  const int64_t n = ai.count();
  // Each index position picks a block of x's trailing dims; the output holds them in order.
  // Offsets first (checked, even when the blocks are empty), then one memcpy per block when
  // the trailing dims are contiguous in x (rows of a replay buffer, elements picked by a
  // mask), a typed strided copy otherwise: no views or copy kernels per position.
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) offsets[static_cast<size_t>(k)] = ai.offset(x, k, "index");
  if (out->numel == 0) return out;
  Ref<TensorImpl> trailing = trailing_view(x, ai.ndims_indexed, 0);
  const int64_t block = trailing->numel, es = itemsize(x.dtype);
  const char* xp = static_cast<const char*>(x.data());
  char* op = static_cast<char*>(out->data());
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(block, 1));
  if (trailing->contiguous) {
    const size_t bytes = static_cast<size_t>(block * es);
    parallel_for(n, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k)
        std::memcpy(op + k * static_cast<int64_t>(bytes), xp + offsets[static_cast<size_t>(k)] * es, bytes);
    });
    return out;
  }
  by_itemsize(es, [&]<class U>(U) {
    const U* src = reinterpret_cast<const U*>(xp);
    U* dst = reinterpret_cast<U*>(op);
    parallel_for(n, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        U* o = dst + k * block;
        const U* base = src + offsets[static_cast<size_t>(k)];
        int64_t j = 0;
        for_each_index<1>(trailing->sizes, {&trailing->strides},
                          [&](const int64_t*, const std::array<int64_t, 1>& off) { o[j++] = base[off[0]]; });
      }
    });
  });
  return out;
}

Ref<TensorImpl> IndexKernels<Cpu>::index_put(const TensorImpl& x, std::span<const TensorImpl* const> indices,
                                             const TensorImpl& values, bool accumulate, const char* op) {
  Ref<TensorImpl> out = clone(x);
  index_put_into(*out, indices, values, accumulate, op);
  return out;
}

void IndexKernels<Cpu>::index_put_into(TensorImpl& out, std::span<const TensorImpl* const> indices,
                                       const TensorImpl& values, bool accumulate, const char* op) {
  if (ZeroDimMasks::present(indices)) {
    ZeroDimMasks lifted(out, indices);  // a view of out: the writes land in out
    return index_put_into(*lifted.x, lifted.indices, values, accumulate, op);
  }
  AdvancedIndex ai(out, indices, op);
  EMBER_CHECK(values.dtype == out.dtype, "[{}] values dtype {} differs from the tensor's {}", op, values.dtype,
              out.dtype);
  Shape target = ai.bshape;
  for (int64_t d = ai.ndims_indexed; d < out.ndim(); ++d) target.push_back(out.sizes[d]);
  // Values that share the destination's storage (x.index_put_({i}, x[j])) are read from a
  // copy: the writes below would otherwise change values not yet read.
  Ref<TensorImpl> vals = ops::broadcast_to(values.storage.get() == out.storage.get() ? *clone(values) : values,
                                           target, op);
  int64_t n = ai.count();
  // Values viewed as [n, trailing...]: broadcast index dims collapse only when contiguous, so
  // walk them with a multi-index instead.
  std::vector<int64_t> voff(static_cast<size_t>(n));
  {
    Shape bstr;
    for (size_t d = 0; d < ai.bshape.size(); ++d) bstr.push_back(vals->strides[d]);
    int64_t k = 0;
    for_each_index<1>(ai.bshape, {&bstr}, [&](const int64_t*, const std::array<int64_t, 1>& off) {
      voff[static_cast<size_t>(k++)] = off[0];
    });
    if (ai.bshape.empty()) voff[0] = 0;
  }
  // Offsets first (checked), then each position's block: a typed loop over the trailing dims
  // (flat when both blocks are contiguous), in order, so repeated indices accumulate in the
  // same order as the positions. No views or copy kernels per position.
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) offsets[static_cast<size_t>(k)] = ai.offset(out, k, op);
  Ref<TensorImpl> dst_block = trailing_view(out, ai.ndims_indexed, 0);
  Ref<TensorImpl> src_block = trailing_view(*vals, static_cast<int64_t>(ai.bshape.size()), 0);
  const int64_t block = dst_block->numel;
  if (block == 0) return;
  const bool flat = dst_block->contiguous && src_block->contiguous;
  visit_dtype(out.dtype, [&]<class T>() {
    using C = compute_t<T>;
    T* o = static_cast<T*>(out.data());
    const T* v = static_cast<const T*>(vals->data());
    auto put = [&](T& d, T s) {
      if (!accumulate) d = s;
      else if constexpr (std::is_same_v<C, bool>) d = d || s;
      else d = static_cast<T>(cpu::add_wrapping(static_cast<C>(d), static_cast<C>(s)));
    };
    const bool one_dim = dst_block->ndim() == 1;  // rows: any steps, a broadcast gradient's 0 included
    const int64_t dstep = one_dim ? dst_block->strides[0] : 1, sstep = one_dim ? src_block->strides[0] : 1;
    for (int64_t k = 0; k < n; ++k) {
      T* d = o + offsets[static_cast<size_t>(k)];
      const T* sv = v + voff[static_cast<size_t>(k)];
      if (one_dim) {
        for (int64_t j = 0; j < block; ++j) put(d[j * dstep], sv[j * sstep]);
        continue;
      }
      if (flat) {
        for (int64_t j = 0; j < block; ++j) put(d[j], sv[j]);
        continue;
      }
      for_each_index<2>(dst_block->sizes, {&dst_block->strides, &src_block->strides},
                        [&](const int64_t*, const std::array<int64_t, 2>& off) { put(d[off[0]], sv[off[1]]); });
    }
  });
}

}  // namespace ember::detail
