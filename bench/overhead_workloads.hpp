#pragma once
/// Ember's per-op overhead workloads (overhead_workloads.cpp); libtorch's twins are in
/// libtorch_workloads.cpp.

#include "workloads.hpp"

namespace bench::overhead {

RunFn add4(int);          ///< op_overhead_add_4: c = a + b, 4 floats
RunFn add4_inplace(int);  ///< op_overhead_add_inplace_4: a.add_(b), 4 floats
RunFn view4(int);         ///< op_overhead_view_4: a.view({2, 2}), 4 floats

}  // namespace bench::overhead
