#include <doctest/doctest.h>
#include <ember/ember.hpp>

using namespace ember;

TEST_CASE("basic add") {
  Tensor a = ones({2, 3});
  Tensor b = arange(3).to(DType::F32);
  Tensor c = a + b;
  CHECK(c.sizes() == Shape{2, 3});
  CHECK(c.index({1, 2}).item<float>() == 3.0f);
  MESSAGE(to_string(c));
}
