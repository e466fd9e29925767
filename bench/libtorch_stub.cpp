// Stands in for libtorch_workloads.cpp when ember-bench is built without libtorch
// (-Dlibtorch_compare=disabled, the default): every libtorch figure is reported as null.

#include "workloads.hpp"

namespace bench::libtorch {
bool available() { return false; }
std::string description() { return {}; }
void set_threads(int) {}
RunFn make(const std::string&) { return {}; }
}  // namespace bench::libtorch
