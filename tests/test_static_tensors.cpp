// Tensors and modules with static or thread_local storage duration outlive the per-thread
// allocator caches and object pools, which are destroyed when their thread exits (for the
// main thread: before static destructors run). Their destruction at exit must free memory
// without touching those caches. The test is the process exiting cleanly (under the
// sanitizer builds of CI: without a use after free, double free or leak report), so it is a
// program of its own rather than a doctest case.

#include <ember/ember.hpp>
#include <ember/nn.hpp>

#include <cstdio>
#include <thread>

namespace {
// Namespace scope: constructed before main, destroyed after the main thread's caches.
ember::Tensor g_table = ember::randn({100, 10});
}  // namespace

int main() {
  using namespace ember;
  static nn::Conv2d conv(nn::Conv2dOptions(4, 8, 3).stride(2).padding(1));  // after main returns
  static thread_local Tensor t_scratch = zeros({64});
  Tensor x = randn({2, 4, 9, 9}).requires_grad_(true);
  static Tensor grad;  // assigned here, destroyed at exit
  Tensor y = conv(x);
  grad = randn_like(y);
  y.backward(grad);
  t_scratch.add_(1.0);
  // A worker thread whose tensors die after its caches: a thread_local tensor, and one it
  // hands to the main thread.
  Tensor handed;
  std::thread worker([&] {
    static thread_local Tensor mine = ones({1000});
    handed = mine * 2.0;
  });
  worker.join();
  const double total = g_table.abs().sum().item<double>() + handed.sum().item<double>() + t_scratch.sum().item<double>();
  std::printf("static tensors: %s\n", total > 2000 ? "ok" : "bad");
  return total > 2000 ? 0 : 1;
}
