// A short tour of Ember's tensor core: factories, views, broadcasting, reductions, printing.
// Build and run:  ./scripts/demo   (or: ninja -C build && build/examples/tensor_tour)
#include <ember/ember.hpp>

#include "cli.hpp"

#include <cstdio>
#include <string>

using namespace ember;

static void show(const char* what, const Tensor& t) {
  std::printf("%s  (shape %s, %s)\n%s\n\n", what, fmt::format("{}", t.sizes()).c_str(),
              t.is_contiguous() ? "contiguous" : "a strided view", to_string(t).c_str());
}

int main(int argc, char** argv) {
  ember_examples::Cli("tensor_tour", "Prints a tour of Ember's tensors: factories, views, broadcasting, reductions.")
      .parse(argc, argv);
  std::printf("Ember %d.%d.%d: a tour of the tensor core\n\n", kVersion / 10000, kVersion / 100 % 100, kVersion % 100);

  // 1. Factories.
  Tensor a = arange(12).to(DType::F32).reshape({3, 4});
  show("a = arange(12).reshape({3, 4})", a);
  show("zeros({2, 2}) + eye(2)", zeros({2, 2}) + eye(2));
  show("tensor({{1.f, 2.f}, {3.f, 4.f}})", tensor({{1.f, 2.f}, {3.f, 4.f}}));
  manual_seed(42);
  show("randn({2, 3}) with manual_seed(42)", randn({2, 3}));

  // 2. Views share storage with their base: no copy is made.
  Tensor at = a.t();
  show("a.t(): a transposed view", at);
  show("a.narrow(1, 1, 2): columns 1 and 2", a.narrow(1, 1, 2));
  show("a.index({Slice(), 0}): the first column, like a[:, 0]", a.index({Slice(), 0}));
  show("a.index({Slice(None, None, 2)}): every other row, like a[::2]", a.index({Slice(None, None, 2)}));
  a.select(0, 0).fill_(-1);  // writes through the view into a
  show("after a.select(0, 0).fill_(-1), a is", a);
  std::printf("a.t() shares a's storage: %s\n\n", at.raw_data() == a.raw_data() ? "yes" : "no");

  // 3. Broadcasting: shapes are aligned from the right; size-1 dims stretch.
  Tensor row = arange(4).to(DType::F32);             // [4]
  Tensor col = arange(3).to(DType::F32).unsqueeze(1);  // [3, 1]
  show("row [4] + col [3, 1] -> [3, 4]", row + col);
  show("a * 10 + 0.5 (a scalar broadcasts too)", a * 10 + 0.5);

  // 4. Reductions and matrix products.
  show("a.sum()", a.sum());
  show("a.sum({1}): per-row sums", a.sum({1}));
  show("a.mean({0}, true): column means, keepdim", a.mean({0}, true));
  show("a.matmul(a.t()): [3, 4] x [4, 3]", a.matmul(a.t()));
  show("softmax over each row of a", a.softmax(-1));

  // 5. Errors name the op and the shapes instead of corrupting memory.
#if EMBER_HAS_EXCEPTIONS
  try {
    Tensor bad = a + arange(5).to(DType::F32);
    std::printf("unexpected: %s\n", to_string(bad).c_str());
    return 1;
  } catch (const Error& e) {
    std::printf("a + arange(5) fails as it should:\n  %s\n", e.what());
  }
#endif  // without exceptions a failed check calls the handler from ember::set_error_handler
  std::printf("tour=done version=%d.%d.%d\n", kVersion / 10000, kVersion / 100 % 100, kVersion % 100);
  return 0;
}
