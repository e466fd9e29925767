// Ember without exceptions or RTTI (built with -fno-exceptions -fno-rtti, see .ci/run).
// A failed check cannot throw here: it calls the handler installed with
// ember::set_error_handler, which must not return. This one prints the message and exits
// with code 3; CI checks both the exit code and the message.
#include <ember/ember.hpp>
#include <ember/linalg.hpp>

#include <cstdio>
#include <cstdlib>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(__GXX_RTTI) || defined(__cpp_rtti)
#error "tests/noexcept must be compiled with -fno-exceptions -fno-rtti"
#endif

namespace {
[[noreturn]] void on_error(const char* message) {
  std::printf("ember error handler: %s\n", message);
  std::fflush(stdout);
  std::exit(3);
}
}  // namespace

int main() {
  ember::set_error_handler(&on_error);

  // The tensor core works as usual: factories, views, broadcasting ops, reductions, printing.
  ember::manual_seed(1);
  ember::Tensor a = ember::arange(6).to(ember::DType::F32).reshape({2, 3});
  ember::Tensor b = ember::ones({3});
  ember::Tensor c = (a * 2 + b).t();  // [3, 2]
  ember::Tensor r = ember::randn({2, 2}).matmul(ember::eye(2));
  std::printf("c = %s\nsum = %g\nr = %s\n", ember::to_string(c).c_str(), c.sum().item<double>(),
              ember::to_string(r).c_str());
  if (c.sum().item<float>() != 36.0f) {
    std::printf("wrong sum\n");
    return 1;
  }

  // linalg's autograd functions (std::any without RTTI) and its Eigen kernels.
  ember::Tensor m = ember::eye(3) * 2.0;
  m.requires_grad_();
  ember::Tensor det = ember::linalg::det(m);
  det.backward();
  if (det.item<float>() != 8.0f || m.grad().sum().item<float>() != 12.0f) {
    std::printf("wrong det %g or its gradient\n", det.item<double>());
    return 1;
  }

  // A shape error: [2, 3] and [4] cannot broadcast. The handler exits with code 3.
  ember::Tensor bad = a + ember::ones({4});
  std::printf("unreachable: the error handler returned (%s)\n", ember::to_string(bad).c_str());
  return 1;
}
