#pragma once
// The one shared driver of every elementwise kernel: coalesces the operands' dims, splits the
// elements across threads above a grain size, and hands each thread runs of the innermost
// dim as (pointers, byte strides, length). Kernels then specialise the contiguous and
// broadcast-scalar cases of that inner loop. See Note [Elementwise loops].

#include <ember/core/tensor_impl.hpp>
#include <ember/runtime/threading.hpp>

#include <cstdint>

namespace ember::cpu {

inline constexpr int kMaxLoopDims = 16;

template <int N>
struct Loop {
  int ndim = 0;
  int64_t numel = 1;
  int64_t sizes[kMaxLoopDims];
  int64_t strides[N][kMaxLoopDims];  // bytes
  char* base[N];

  /// ops[0] is the output; all ops have ops[0]'s shape (inputs already broadcast).
  explicit Loop(const detail::TensorImpl* const* ops) {
    const detail::TensorImpl& out = *ops[0];
    int nd = static_cast<int>(out.ndim());
    EMBER_CHECK(nd <= kMaxLoopDims, "[elementwise] rank {} exceeds the {} dims kernels support", nd, kMaxLoopDims);
    for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(ops[k]->data());
    // Fast path: every operand contiguous with the output's element count (the common
    // case of same-shape ops) is one flat run.
    bool flat = true;
    for (int k = 0; k < N; ++k) flat &= ops[k]->contiguous && ops[k]->numel == out.numel;
    if (flat) {
      ndim = 1;
      numel = out.numel;
      sizes[0] = numel;
      for (int k = 0; k < N; ++k) strides[k][0] = itemsize(ops[k]->dtype);
      return;
    }
    // Keep dims of size != 1, outermost first.
    for (int d = 0; d < nd; ++d) {
      if (out.sizes[d] == 1) continue;
      sizes[ndim] = out.sizes[d];
      for (int k = 0; k < N; ++k) strides[k][ndim] = ops[k]->strides[d] * itemsize(ops[k]->dtype);
      ++ndim;
    }
    numel = out.numel;
    // Merge dim i into i+1 when every operand steps through them as one.
    int w = 0;
    for (int d = 1; d < ndim; ++d) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge &= strides[k][w] == strides[k][d] * sizes[d];
      if (merge) {
        sizes[w] *= sizes[d];
        for (int k = 0; k < N; ++k) strides[k][w] = strides[k][d];
      } else {
        ++w;
        sizes[w] = sizes[d];
        for (int k = 0; k < N; ++k) strides[k][w] = strides[k][d];
      }
    }
    ndim = ndim ? w + 1 : 0;
    if (ndim == 0) {  // a single element
      ndim = 1;
      sizes[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
    }
  }

  /// The innermost-run callback, type-erased: one copy of the loop serves every kernel.
  using InnerFn = void (*)(const void* ctx, char** ptrs, const int64_t* strides, int64_t n);

  /// Calls inner(ptrs, inner_strides, n) over the linear element range [begin, end).
  void run_range(int64_t begin, int64_t end, InnerFn inner, const void* ctx) const {
    const int last = ndim - 1;
    int64_t idx[kMaxLoopDims];
    int64_t rem = begin;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % sizes[d];
      rem /= sizes[d];
    }
    // row[k]: operand k's address at (idx[0..last-1], 0). It steps by one stride per row and
    // is recomputed only when a carry passes the next-to-last dim, so short rows (a permuted
    // copy's 32-element runs) cost a few additions each, not a walk over every dim.
    char* row[N];
    auto locate_row = [&] {
      for (int k = 0; k < N; ++k) {
        char* p = base[k];
        for (int d = 0; d < last; ++d) p += idx[d] * strides[k][d];
        row[k] = p;
      }
    };
    locate_row();
    char* ptrs[N];
    int64_t inner_strides[N];
    for (int k = 0; k < N; ++k) inner_strides[k] = strides[k][last];
    int64_t pos = begin;
    while (pos < end) {
      for (int k = 0; k < N; ++k) ptrs[k] = row[k] + idx[last] * inner_strides[k];
      const int64_t n = std::min(sizes[last] - idx[last], end - pos);
      inner(ctx, ptrs, inner_strides, n);
      pos += n;
      idx[last] += n;
      if (idx[last] < sizes[last] || last == 0) continue;
      idx[last] = 0;
      if (++idx[last - 1] < sizes[last - 1]) {
        for (int k = 0; k < N; ++k) row[k] += strides[k][last - 1];
        continue;
      }
      for (int d = last - 1; d > 0 && idx[d] >= sizes[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
      if (pos < end) locate_row();
    }
  }

  /// Runs the whole loop, in parallel above `grain` elements. `inner` is any callable
  /// (ptrs, strides, n); it is called through a function pointer (see Note [Elementwise drivers]).
  template <class Inner>
  void run(const Inner& inner, int64_t grain = EMBER_GRAIN_SIZE) const {
    if (numel == 0) return;
    InnerFn fn = [](const void* ctx, char** p, const int64_t* s, int64_t n) {
      (*static_cast<const Inner*>(ctx))(p, s, n);
    };
    if (numel <= grain) {
      run_range(0, numel, fn, &inner);
      return;
    }
    detail::parallel_for(numel, grain, [&](int64_t b, int64_t e) { run_range(b, e, fn, &inner); });
  }
};

}  // namespace ember::cpu
