// GEMM through Eigen's tuned product (compiled per instruction set like the other kernels, so
// the AVX2/FMA build uses Eigen's FMA micro-kernels). Rows of the output are split across
// Ember's thread pool for large products; each block is an independent Eigen product.

#include <ember/core/error.hpp>
#include <ember/core/tensor_impl.hpp>
#include <ember/runtime/threading.hpp>

#include <Eigen/Core>
#include "simd.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__AVX2__)
#include "gemm_packed.hpp"
#endif
#include "cascade_sum.hpp"
#include "lane_reduce.hpp"
#include "leading_lanes.hpp"

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;
template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using Stride = Eigen::OuterStride<Eigen::Dynamic>;

/// Batch-1 (GEMV) paths serve f32 in the AVX2 and AVX-512 builds: inference. f64 (gradchecks)
/// and the baseline build use the general product, which keeps the static footprint
/// (tests/footprint) small.
#if defined(__AVX2__)
template <class T>
constexpr bool kFastPaths = std::is_same_v<T, float>;
#else
template <class T>
constexpr bool kFastPaths = false;
#endif

/// C[r0:r1, c0:c1] = alpha * A[r0:r1, :] * B[:, c0:c1] + beta * C[r0:r1, c0:c1].
template <class T, class A, class B>
void product_block(T* c, int64_t ldc, const A& a, const B& b, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                   T alpha, T beta) {
  Eigen::Map<RowMat<T>, 0, Stride> C(c + r0 * ldc + c0, r1 - r0, c1 - c0, Stride(ldc));
  auto Bb = b.middleCols(c0, c1 - c0);
  auto assign = [&](auto&& Cx, const auto& Ax) {
    if (beta == T(0)) {
      if (alpha == T(1)) Cx.noalias() = Ax * Bb;
      else Cx.noalias() = alpha * (Ax * Bb);
    } else {
      Cx *= beta;
      Cx.noalias() += alpha * (Ax * Bb);
    }
  };
  // Single rows in the f32 AVX2/AVX-512 builds went to gemv_columns/gemv_rows (gemm_typed);
  // the rest is one general product (Eigen itself switches to a GEMV for one row).
  assign(C, a.middleRows(r0, r1 - r0));
}

/// Sum of a vector's lanes: halves added down to one lane (lane_reduce.hpp) for 16 floats,
/// cheaper than xsimd 8.1's reduction, which goes through two 256-bit vhaddps.
template <class T>
T lane_sum(const xsimd::batch<T>& v) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && xsimd::batch<T>::size == 16) return sum_lanes(v);
#endif
  return xsimd::hadd(v);
}

/// The lane sums of four f32 vectors, as lanes 0..3 of one 128-bit vector: halving to 256 bits
/// and three horizontal adds share the shuffles that four separate reductions would each do
/// (on the 64-256-256-8 MLP's batch-1 GEMVs: 2.75 -> 2.45 us; K = 64 columns are only four
/// vectors long, so the reduction was a third of the work).
#if defined(__AVX2__)
template <class V>
__m128 lane_sums4(const V& a, const V& b, const V& c, const V& d) {
  auto half = [](const V& v) -> __m256 {
#if defined(__AVX512F__)
    if constexpr (V::size == 16) return add_halves(v);
    else
#endif
      return v;
  };
  const __m256 ab = _mm256_hadd_ps(half(a), half(b)), cd = _mm256_hadd_ps(half(c), half(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a, b, c, d partial sums in each 128-bit half
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}
#endif

/// y = alpha * d + beta * y, with y not read when beta is 0 (BLAS: C may hold garbage then).
/// One fma for beta, as in the vector paths, so an element's result does not depend on whether
/// it fell in a vector or a tail.
template <class T>
void store_scaled(T& y, T alpha, T d, T beta) {
  y = beta == T(0) ? alpha * d : std::fma(beta, y, alpha * d);
}

/// y[j] = alpha * dot(x, B[:, j]) + beta * y[j] for j in [c0, c1), B's columns contiguous
/// (column j at b + j * ldb): a batch-1 Linear, whose weight rows are these columns. Four
/// columns share each load of x. Measured on the 64-256-256-8 MLP's weights (L2-resident):
/// Eigen's GEMV 2.52 us, this 2.22 us; a vector's width of columns per block with one
/// combined reduction (xsimd::haddp) 2.50 us, as 16 streams at once defeat the prefetcher.
///
/// Dot products longer than 16 blocks of kBlockK elements per lane (dot(), a matrix-vector
/// product over a long row) push each block's sums into a cascade (cascade_sum.hpp): one
/// accumulator per lane over 4M elements was off by 1.4e-5 relative (PyTorch's dot: 7e-7).
/// Shorter ones, every Linear at batch 1, keep the single pass.
constexpr int64_t kBlockK = 64;
constexpr int64_t kLongDot = 4096;

/// Whether gemm_typed sends an (m, k) x (k, n) product to the packed f32 GEMM, which adds the
/// bias row and applies the ReLU in its stores; after the other paths gemm_relu adds the row
/// and runs a ReLU pass. A matrix times a long vector takes the GEMV instead.
template <class T>
constexpr bool packed_product(int64_t m, int64_t n, int64_t k) {
  return kFastPaths<T> && m > 1 && k > 0 && !(n == 1 && k >= kLongDot);
}
template <class T>
void gemv_columns(T* y, const T* x, const T* b, int64_t ldb, int64_t k, int64_t c0, int64_t c1, T alpha, T beta) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = static_cast<int64_t>(V::size);
  const int64_t kv = k / W * W;
  const bool cascade = kv > 16 * kBlockK * W;
  auto finish = [&](int64_t j, T dot) { store_scaled(y[j], alpha, dot, beta); };
  int64_t j = c0;
  for (; j + 4 <= c1; j += 4) {
    const T* b0 = b + j * ldb;
    const T *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
    V s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0));
    auto accumulate = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i += W) {
        const V xv = V::load_unaligned(x + i);
        s0 = xsimd::fma(V::load_unaligned(b0 + i), xv, s0);
        s1 = xsimd::fma(V::load_unaligned(b1 + i), xv, s1);
        s2 = xsimd::fma(V::load_unaligned(b2 + i), xv, s2);
        s3 = xsimd::fma(V::load_unaligned(b3 + i), xv, s3);
      }
    };
    add_by_blocks(kv, kBlockK * W, cascade, V(T(0)), accumulate, s0, s1, s2, s3);
    alignas(16) T d[4];
#if defined(__AVX2__)
    if constexpr (std::is_same_v<T, float>) _mm_store_ps(d, lane_sums4(s0, s1, s2, s3));
    else
#endif
      d[0] = lane_sum(s0), d[1] = lane_sum(s1), d[2] = lane_sum(s2), d[3] = lane_sum(s3);
    for (int64_t i = kv; i < k; ++i)
      d[0] += x[i] * b0[i], d[1] += x[i] * b1[i], d[2] += x[i] * b2[i], d[3] += x[i] * b3[i];
    finish(j, d[0]), finish(j + 1, d[1]), finish(j + 2, d[2]), finish(j + 3, d[3]);
  }
  for (; j < c1; ++j) {
    const T* bj = b + j * ldb;
    V s(T(0));
    auto accumulate = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i += W) s = xsimd::fma(V::load_unaligned(bj + i), V::load_unaligned(x + i), s);
    };
    add_by_blocks(kv, kBlockK * W, cascade, V(T(0)), accumulate, s);
    T d = lane_sum(s);
    for (int64_t i = kv; i < k; ++i) d += x[i] * bj[i];
    finish(j, d);
  }
}

/// y[j] = alpha * sum_i x[i * incx] * B[i, j] + beta * y[j] for j in [c0, c1), B's rows
/// contiguous (row i at b + i * ldb): a batch-1 product with a row-major right operand (x @ W,
/// or a Linear's input gradient). Four vectors of columns accumulate in registers over all of
/// k, so y is written once.
template <class T>
void gemv_rows(T* y, const T* x, int64_t incx, const T* b, int64_t ldb, int64_t k, int64_t c0, int64_t c1, T alpha,
               T beta) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = static_cast<int64_t>(V::size);
  auto finish = [&](int64_t j, const V& acc) {
    V r = V(alpha) * acc;
    if (beta != T(0)) r = xsimd::fma(V(beta), V::load_unaligned(y + j), r);
    r.store_unaligned(y + j);
  };
  // Each lane adds k products: beyond 16 blocks of kBlockK rows, block sums into a cascade.
  const bool cascade = k > 16 * kBlockK;
  int64_t j = c0;
  for (; j + 4 * W <= c1; j += 4 * W) {
    V s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0));
    auto accumulate = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const V xv(x[i * incx]);
        const T* bi = b + i * ldb + j;
        s0 = xsimd::fma(xv, V::load_unaligned(bi), s0);
        s1 = xsimd::fma(xv, V::load_unaligned(bi + W), s1);
        s2 = xsimd::fma(xv, V::load_unaligned(bi + 2 * W), s2);
        s3 = xsimd::fma(xv, V::load_unaligned(bi + 3 * W), s3);
      }
    };
    add_by_blocks(k, kBlockK, cascade, V(T(0)), accumulate, s0, s1, s2, s3);
    finish(j, s0), finish(j + W, s1), finish(j + 2 * W, s2), finish(j + 3 * W, s3);
  }
  for (; j + W <= c1; j += W) {
    V s(T(0));
    auto accumulate = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) s = xsimd::fma(V(x[i * incx]), V::load_unaligned(b + i * ldb + j), s);
    };
    add_by_blocks(k, kBlockK, cascade, V(T(0)), accumulate, s);
    finish(j, s);
  }
  if (j < c1) {
    // The last n % W columns: one partial vector, in four chains of rows, as one chain would
    // wait on each fma's latency. They ran one scalar column at a time, each a chain down k:
    // x(1, 20000) @ W(20000, 8) took 119 us, now 19-23 (W(20000, 15): 307 -> 30). They are
    // the last columns of the last block on any number of threads, so their sums are too.
    const LeadingLanes<T> lanes(c1 - j);
    const T* bj = b + j;
    V s(T(0));
    auto accumulate = [&](int64_t i0, int64_t i1) {
      V s1(T(0)), s2(T(0)), s3(T(0));
      int64_t i = i0;
      for (; i + 4 <= i1; i += 4) {
        s = xsimd::fma(V(x[i * incx]), lanes.load(bj + i * ldb), s);
        s1 = xsimd::fma(V(x[(i + 1) * incx]), lanes.load(bj + (i + 1) * ldb), s1);
        s2 = xsimd::fma(V(x[(i + 2) * incx]), lanes.load(bj + (i + 2) * ldb), s2);
        s3 = xsimd::fma(V(x[(i + 3) * incx]), lanes.load(bj + (i + 3) * ldb), s3);
      }
      for (; i < i1; ++i) s = xsimd::fma(V(x[i * incx]), lanes.load(bj + i * ldb), s);
      s = s + ((s1 + s2) + s3);
    };
    add_by_blocks(k, kBlockK, cascade, V(T(0)), accumulate, s);
    V r = V(alpha) * s;
    if (beta != T(0)) r = xsimd::fma(V(beta), lanes.load(y + j), r);
    lanes.store(y + j, r);
  }
}

/// The granularity of gemm_typed's thread split of an (m, k) x (k, n) product: blocks that
/// start at multiples of it get the arithmetic of the one-thread product. Ember's GEMV takes
/// columns 4 at a time (32 kept from its packed GEMM). Eigen computes the row-major C as
/// C^T = B^T A^T, so C's columns are its micro-kernel's rows, mr per register block (12
/// floats with NEON, 12 doubles with AVX2), and C's rows its columns, nr per block; a block
/// starting elsewhere moves columns between its 3-packet and 1-packet kernels, which sum in
/// different orders (NEON, 100 x 100: a split at column 64 changed 690 sums). Eigen also cuts
/// its rows into blocks of mc, a multiple of mr unless mc < mr (a product of 1 or 2 rows
/// with k near 120 under a 16 KiB L1: mc 10 or 11), and then the split follows mc too.
template <class T>
int64_t split_unit(int64_t m, int64_t n, int64_t k, bool by_cols) {
  using Traits = Eigen::internal::gebp_traits<T, T>;
  if (kFastPaths<T>) return 32;
  if (!by_cols) return std::lcm(int64_t{32}, int64_t{Traits::nr});
  Eigen::Index kc = k, mc = n, nc = m;  // Eigen's view of the product: C^T is n x m
  Eigen::internal::computeProductBlockingSizes<T, T, 1>(kc, mc, nc, Eigen::Index(1));
  const int64_t mr = Traits::mr;
  return mc > 0 && mc < mr ? std::lcm(mr, int64_t{mc}) : mr;
}

/// With `row` (2-D products only): out's prior value is taken to be that row in every row (a
/// Linear's bias, not yet written to out). Only the packed GEMM takes it (in its stores);
/// gemm_relu adds it after the other paths.
template <class T>
void gemm_typed(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha_d, double beta_d,
                const T* row, bool relu) {
  // Operands are (batch, rows, cols) or, for two plain matrices, (rows, cols) with one batch.
  const size_t d = out.sizes.size() == 3 ? 1 : 0;
  const int64_t batch = d ? out.sizes[0] : 1, m = out.sizes[d], n = out.sizes[d + 1], k = a.sizes[d + 1];
  const int64_t sa0 = d ? a.strides[0] : 0, sb0 = d ? b.strides[0] : 0, sc0 = d ? out.strides[0] : 0;
  T alpha = static_cast<T>(alpha_d), beta = static_cast<T>(beta_d);
  T* cp = static_cast<T*>(out.data());
  const T* ap = static_cast<const T*>(a.data());
  const T* bp = static_cast<const T*>(b.data());
  int64_t ldc = out.strides[d];
  if (k == 0) {  // empty inner dim: out = beta * out, through out's strides (a view may have gaps)
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t i = 0; i < m; ++i) {
        T* row = cp + bi * sc0 + i * ldc;
        for (int64_t j = 0; j < n; ++j) row[j] = beta == T(0) ? T(0) : row[j] * beta;
      }
    return;
  }
  auto with_layout = [&](const T* p, int64_t rows, int64_t cols, int64_t sr, int64_t sc, auto&& f) {
    if (sc == 1 || cols == 1) {
      Eigen::Map<const RowMat<T>, 0, Stride> M(p, rows, cols, Stride(std::max<int64_t>(sr, cols)));
      f(M);
    } else {
      Eigen::Map<const ColMat<T>, 0, Stride> M(p, rows, cols, Stride(std::max<int64_t>(sc, rows)));
      f(M);
    }
  };
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = get_num_threads();
  // Below ~4 MFLOP a product is done before threads would have woken up.
  const bool parallel = threads > 1 && flops * static_cast<double>(batch) > 4e6;
  const int64_t a_sr = a.strides[d], a_sc = a.strides[d + 1], b_sr = b.strides[d], b_sc = b.strides[d + 1];
#if defined(__AVX2__)
  // C[r0:r1, c0:c1] of product bi through Ember's packed GEMM, on `thr` threads.
  auto packed = [&](int64_t bi, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int thr) {
    if constexpr (kFastPaths<T>)  // f32 only
      packed_gemm::sgemm(r1 - r0, c1 - c0, k, {ap + bi * sa0 + r0 * a_sr, a_sr, a_sc},
                         {bp + bi * sb0 + c0 * b_sc, b_sr, b_sc}, cp + bi * sc0 + r0 * ldc + c0, ldc, alpha, beta,
                         thr, row ? row + c0 : nullptr, relu);
  };
#endif
  auto product = [&](int64_t bi, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    // Long single-row products take the GEMV kernels in every build and dtype, for their
    // cascaded sums: Eigen's product added a dot of 4M floats in one accumulator (1.9e-3
    // relative in the baseline build, the only build on ARM).
    if (k >= kLongDot && c1 - c0 == 1 && r1 - r0 > 1 && a_sc == 1 && b_sr == 1 && ldc == 1)
      // A matrix times a long vector: the matrix's rows are the dot products' columns.
      return gemv_columns<T>(cp + bi * sc0 + c0, bp + bi * sb0 + c0 * b_sc, ap + bi * sa0, a_sr, k, r0, r1, alpha,
                             beta);
    if ((kFastPaths<T> || k >= kLongDot) && r1 - r0 == 1) {
      // One row (batch-1 inference): GEMV kernels that read B in place; the general product
      // would first pack B. B with contiguous columns (a Linear's weight) takes dot products,
      // B with contiguous rows takes scaled row sums.
      T* y = cp + bi * sc0 + r0 * ldc;
      const T* x = ap + bi * sa0 + r0 * a_sr;
      const T* bm = bp + bi * sb0;
      if ((a_sc == 1 || k == 1) && (b_sr == 1 || k == 1) && (b_sc >= k || n == 1))
        return gemv_columns<T>(y, x, bm, b_sc, k, c0, c1, alpha, beta);
      if (b_sc == 1 || n == 1) return gemv_rows<T>(y, x, a_sc, bm, b_sr, k, c0, c1, alpha, beta);
    }
#if defined(__AVX2__)
    if constexpr (kFastPaths<T>) {
      return packed(bi, r0, r1, c0, c1, 1);
    } else
#endif
    {
      with_layout(ap + bi * sa0, m, k, a_sr, a_sc, [&](const auto& A) {
        with_layout(bp + bi * sb0, k, n, b_sr, b_sc, [&](const auto& B) {
          product_block<T>(cp + bi * sc0, ldc, A, B, r0, r1, c0, c1, alpha, beta);
        });
      });
    }
  };
  if (parallel && batch >= threads) {
    // Many products (a batched matmul, a convolution's samples): one whole product per task.
    detail::parallel_for(batch, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi) product(bi, 0, m, 0, n);
    });
    return;
  }
#if defined(__AVX2__)
  if constexpr (kFastPaths<T>) {
    // Ember's packed GEMM splits one product over the threads itself; a matrix times a long
    // vector goes to the GEMV below instead (it reads A once and cascades its sums).
    if (packed_product<T>(m, n, k)) {
      for (int64_t bi = 0; bi < batch; ++bi) packed(bi, 0, m, 0, n, parallel ? threads : 1);
      return;
    }
  }
#endif
  // A single row (batch-1 inference) is split too, below the flop threshold, when its weight
  // takes several times longer to read than handing half of it to another thread costs: the
  // GEMV streams B from L2 and does little else, so each thread reads its columns from its own
  // core's L2. At ~110 GB/s a byte takes ~0.009 ns. A split costs several measured hand-offs
  // (x and y cross cores too, and in a network the previous layer's output), so it pays when
  // the read takes 6 hand-offs or more: on a Xeon VM (hand-off ~0.5-0.7 us) splitting the
  // 256 KiB weight of mlp_infer_b1 made it slower (3.7 -> 4.15 us; alone, that GEMV went
  // 2.28 -> 2.09 us), while 512 KiB went 6.5 -> 4.6 us and 1 MiB 12.0 -> 7.2; on a Zen 4 VM
  // (hand-off ~0.3 us) splitting the 256 KiB weight took the MLP from 3.6 to 3.1 us. The
  // blocks of 32 columns keep every column's arithmetic as in one thread.
  const double weight_read_ns = static_cast<double>(k) * static_cast<double>(n) * sizeof(T) * 0.009;
  const double handoff_ns = static_cast<double>(std::max<int64_t>(ember::detail::region_overhead_ns(), 100));
  const bool wide_gemv = kFastPaths<T> && m == 1 && threads > 1 && n >= 64 && weight_read_ns >= 6.0 * handoff_ns;
  for (int64_t bi = 0; bi < batch; ++bi) {
    if (!wide_gemv && (!parallel || flops < 4e6 || (m < 64 && n < 64))) {
      product(bi, 0, m, 0, n);
      continue;
    }
    // One block per thread along the longer side of C, each starting where a block of the
    // one-thread product's micro-kernels starts (split_unit), so that every element gets the
    // same arithmetic at any thread count. Splitting columns when C is wide keeps each
    // thread's packed copy of B to its own slice (a row split would pack all of B once per
    // block). Blocks are at least 32 wide, and a narrower last one joins the one before it:
    // alone, a single column or row would go to Eigen's matrix-vector kernel, and a block
    // with k + rows + cols < 20 to its coefficient-wise product, both summing in other orders.
    const bool by_cols = n >= m;
    const int64_t len = by_cols ? n : m;
    const int64_t unit = split_unit<T>(m, n, k, by_cols);
    const int64_t min_block = (32 + unit - 1) / unit * unit;
    const int64_t per_thread = (len + threads - 1) / threads;
    const int64_t block = std::max<int64_t>(min_block, (per_thread + unit - 1) / unit * unit);
    int64_t nblocks = (len + block - 1) / block;
    if (nblocks > 1 && len - (nblocks - 1) * block < min_block) --nblocks;
    detail::parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t lo = blk * block, hi = blk + 1 == nblocks ? len : lo + block;
        if (by_cols) product(bi, 0, m, lo, hi);
        else product(bi, lo, hi, 0, n);
      }
    });
  }
}

/// ReLU of every element of out (ReLU's kernel arithmetic: NaN and -0 pass), for the
/// products whose path has no ReLU in its stores.
template <class T>
void relu_in_place(TensorImpl& out) {
  const size_t d = out.sizes.size() == 3 ? 1 : 0;
  const int64_t batch = d ? out.sizes[0] : 1, m = out.sizes[d], n = out.sizes[d + 1];
  T* cp = static_cast<T*>(out.data());
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i) {
      T* y = cp + (d ? bi * out.strides[0] : 0) + i * out.strides[d];
      for (int64_t j = 0; j < n; ++j) {
        T& v = y[j * out.strides[d + 1]];
        v = v < T(0) ? T(0) : v;
      }
    }
}

/// out = beta * row + out in every row of a 2-D out, rounded once per element (as the packed
/// GEMM's stores and store_scaled); beta 0 leaves out alone (addmm's input, NaN or not, is
/// then ignored). With an empty inner dim out is just beta * row (a -0 bias stays -0).
template <class T>
void add_row(TensorImpl& out, const T* row, T beta, bool empty_sum) {
  if (beta == T(0) && !empty_sum) return;
  T* cp = static_cast<T*>(out.data());
  for (int64_t i = 0; i < out.sizes[0]; ++i) {
    T* y = cp + i * out.strides[0];
    for (int64_t j = 0; j < out.sizes[1]; ++j) {
      T& v = y[j * out.strides[1]];
      if (empty_sum) v = beta == T(0) ? T(0) : beta * row[j];
      else v = beta == T(1) ? v + row[j] : std::fma(beta, row[j], v);
    }
  }
}

template <class T>
void gemm_relu(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta, const T* row,
               bool relu) {
  // Only the packed f32 GEMM (two or more rows, a non-empty sum) adds the row and applies the
  // ReLU in its stores.
  const size_t d = out.sizes.size() == 3 ? 1 : 0;
  const bool in_stores = packed_product<T>(out.sizes[d], out.sizes[d + 1], a.sizes[d + 1]);
  if (row && !in_stores) {
    // The product first, then the row: the sum is the product rounded plus the row, whatever
    // slices of the inner dimension the GEMM takes (Eigen's blocking follows the CPU's caches:
    // its 16 KiB L1 default on ARM cut k = 256 in two), so linear(x, w, b) is bitwise
    // x.matmul(w.t()) + b on these paths at any k (the packed GEMM: for k <= 512).
    gemm_typed<T>(out, a, b, alpha, 0.0, nullptr, false);
    add_row<T>(out, row, static_cast<T>(beta), a.sizes[d + 1] == 0);
  } else {
    gemm_typed<T>(out, a, b, alpha, beta, row, relu);
  }
  if (relu && !in_stores) relu_in_place<T>(out);
}

}  // namespace

void gemm(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta,
          const TensorImpl* row, bool relu) {
  const void* r = row ? row->data() : nullptr;
  switch (out.dtype) {
    case DType::F32: return gemm_relu<float>(out, a, b, alpha, beta, static_cast<const float*>(r), relu);
#if !defined(EMBER_GEMM_F32_ONLY)
    case DType::F64: return gemm_relu<double>(out, a, b, alpha, beta, static_cast<const double*>(r), relu);
#endif
    default: EMBER_FAIL("[matmul] the CPU GEMM supports f32 and f64 directly, got {}", out.dtype);
  }
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
