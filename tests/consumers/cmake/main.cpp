// A program outside Ember's build that uses an installed Ember: CI builds it with Meson
// (dependency('ember'), via pkg-config) and with CMake (find_package(Ember)), then runs it.
#include <ember/ember.hpp>

#include <cstdio>

int main() {
  ember::Tensor a = ember::arange(6).to(ember::DType::F32).reshape({2, 3});
  ember::Tensor b = ember::ones({3});
  ember::Tensor c = (a + b).sum();  // (0+1+...+5) + 6 = 21
  std::printf("ember %d: %s\n", ember::kVersion, ember::to_string(c).c_str());
  return c.item<float>() == 21.0f ? 0 : 1;
}
