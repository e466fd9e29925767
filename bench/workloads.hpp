#pragma once
/// The interface between ember-bench's driver (ember_bench.cpp) and the optional libtorch
/// translation unit (libtorch_workloads.cpp). It uses only the standard library so that the
/// two sides can be compiled with different flags (libtorch's headers want C++17).
///
/// A workload is a callable run(iters) that performs the timed operation `iters` times on
/// inputs prepared when it was made; the driver times whole calls and divides by iters.

#include <cstdint>
#include <functional>
#include <string>

namespace bench {

using RunFn = std::function<void(int64_t iters)>;

/// Keeps the compiler from discarding a value that is otherwise unused.
inline void escape(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

namespace libtorch {
/// True when ember-bench was built with -Dlibtorch_compare=enabled.
bool available();
/// e.g. "libtorch 1.13.1 (BLAS: ...)"; empty when not available.
std::string description();
/// torch::set_num_threads(n) (and OpenBLAS's own thread count when OpenBLAS is loaded).
void set_threads(int n);
/// The libtorch twin of an ember-bench workload, or an empty RunFn if there is none.
RunFn make(const std::string& name);
}  // namespace libtorch

}  // namespace bench
