// The per-op overhead workloads (op_overhead_*), in a translation unit of their own: their
// loops are a few dozen nanoseconds, and when they shared ember_bench.cpp with the other
// workloads, adding one workload there (op_overhead_view_4) moved op_overhead_add_4 from
// 43-44 to 52-55 ns with the library unchanged (code placement and inlining decisions in the
// shared unit; -falign-functions/-falign-loops did not undo it). Here only these three share
// a unit.

#include "overhead_workloads.hpp"

#include <ember/ember.hpp>

#include <memory>

namespace bench::overhead {

RunFn add4(int) {
  auto a = std::make_shared<ember::Tensor>(ember::randn({4}));
  auto b = std::make_shared<ember::Tensor>(ember::randn({4}));
  return [a, b](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::Tensor c = *a + *b;
      escape(c.raw_data());
    }
  };
}

/// In place: no allocation, so what remains is dispatch, checks and the version counter.
RunFn add4_inplace(int) {
  auto a = std::make_shared<ember::Tensor>(ember::randn({4}));
  auto b = std::make_shared<ember::Tensor>(ember::randn({4}));
  return [a, b](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) a->add_(*b);
    escape(a->raw_data());
  };
}

/// A view: no data, no allocation beyond the view's own record (pooled).
RunFn view4(int) {
  auto a = std::make_shared<ember::Tensor>(ember::randn({4}));
  return [a](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::Tensor v = a->view({2, 2});
      escape(v.raw_data());
    }
  };
}

}  // namespace bench::overhead
