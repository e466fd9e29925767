// What the factorisations of ember::linalg share (kernels_cpu/linalg.cpp, linalg_eigh.cpp,
// linalg_svd.cpp): Eigen under its own namespace, the row-major maps and the batch loop. The
// decompositions are three object files so that a build compiles them in parallel (kernels_cpu/
// linalg.cpp alone was the last ~70 s of a library-only build) and a program links only those
// it calls.
#pragma once

// Eigen's templates outside a per-build namespace would merge with other builds' copies at
// link time (Note [One definition per instruction set] in kernels_cpu/meson.build).
#define Eigen EmberEigenLinalg
#include <Eigen/Core>

#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>

namespace ember::detail::linalg_kernels {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

/// Runs f(begin, end) over blocks of the batch's matrices, several per task when they are
/// small (about 2^16 multiply-adds per task at the least, counting ~1000 for each matrix's
/// fixed cost). Each block makes its decomposition's workspace once and reuses it for every
/// matrix of the block (a 6 x 6 solve is ~0.35 us, and allocating its LU took a third of it).
/// Eigen allocates: a std::bad_alloc on a pool thread is carried over and rethrown here (a
/// worker must not throw).
template <class F>
void for_each_block(int64_t batch, int64_t work_per_matrix, F&& f) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / (std::max<int64_t>(0, work_per_matrix) + 1024));
#if defined(__cpp_exceptions)
  std::atomic<bool> out_of_memory{false};
  parallel_for(batch, grain, [&](int64_t begin, int64_t end) {
    try {
      f(begin, end);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
  });
  if (out_of_memory) throw std::bad_alloc();
#else
  parallel_for(batch, grain, [&](int64_t begin, int64_t end) { f(begin, end); });
#endif
}

/// Keeps the smallest failing index seen by any task.
inline void record_failure(std::atomic<int64_t>& first, int64_t i) {
  int64_t seen = first.load();
  while ((seen < 0 || i < seen) && !first.compare_exchange_weak(seen, i)) {
  }
}

}  // namespace ember::detail::linalg_kernels
