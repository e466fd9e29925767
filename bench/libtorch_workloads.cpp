// libtorch's side of ember-bench: the same workloads as ember_bench.cpp, through the libtorch
// C++ API. Built only with -Dlibtorch_compare=enabled, as its own translation unit (C++17,
// libtorch's headers), so that libtorch is never needed to build Ember.

#include "workloads.hpp"

#include <torch/torch.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <memory>

namespace bench::libtorch {

bool available() { return true; }

namespace {
// Which library provides the BLAS sgemm_ that libtorch's CPU mm calls.
std::string blas_library() {
  void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (!sym || !dladdr(sym, &info) || !info.dli_fname) return "unknown";
  char buf[PATH_MAX];
  const char* real = realpath(info.dli_fname, buf);
  return real ? std::string(real) : std::string(info.dli_fname);
}
}  // namespace

std::string description() {
#ifdef PIP_TORCH_VERSION
  const char* version = PIP_TORCH_VERSION " (PyPI wheel)";
#else
  const char* version = TORCH_VERSION " (Debian libtorch-dev)";
#endif
  const std::string blas = blas_library();
  std::string d = std::string("libtorch ") + version + ", sgemm_ from " + blas;
  // OpenBLAS picks its kernels by CPU model; one it does not know gets a generic SSE3 kernel
  // ("Prescott", 5x slower on AVX-512 machines): Debian 12's 0.3.21 does not know Sapphire or
  // Emerald Rapids. Name the core so that such a run cannot pass for a fair comparison.
  using CoreFn = char* (*)();
  if (auto f = reinterpret_cast<CoreFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"))) {
    std::string core = f();
    d += " (OpenBLAS core " + core + ")";
    if (core == "Prescott" || core == "prescott")
      d += "\nwarning: OpenBLAS did not recognise this CPU; rerun with OPENBLAS_CORETYPE=SkylakeX (AVX-512) or "
           "Haswell (AVX2) for libtorch's real speed";
  }
  if (blas.find("/blas/libblas.so") != std::string::npos)
    // Debian's alternatives fall back to the reference BLAS when no optimised one is installed:
    // libtorch's products then run at ~5 GFLOP/s and every ratio is meaningless.
    d += "\nwarning: libtorch calls the reference BLAS; apt-get install libopenblas0-pthread for its real speed";
  return d;
}

void set_threads(int n) {
  torch::set_num_threads(n);
  // OpenBLAS (pthreads build) keeps its own pool that torch::set_num_threads does not size.
  using SetFn = void (*)(int);
  if (auto f = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
}

RunFn make_nn(const std::string& name);     // libtorch_nn_workloads.cpp
RunFn make_layer(const std::string& name);  // libtorch_layer_workloads.cpp
RunFn make_op(const std::string& name);     // libtorch_op_workloads.cpp

RunFn make(const std::string& name) {
  if (RunFn f = make_nn(name)) return f;
  if (RunFn f = make_layer(name)) return f;
  if (RunFn f = make_op(name)) return f;
  torch::manual_seed(0);
  if (name == "op_overhead_add_4") {
    auto a = std::make_shared<torch::Tensor>(torch::randn({4}));
    auto b = std::make_shared<torch::Tensor>(torch::randn({4}));
    return [a, b](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        torch::Tensor c = *a + *b;
        escape(c.unsafeGetTensorImpl());
      }
    };
  }
  if (name == "op_overhead_add_inplace_4") {
    auto a = std::make_shared<torch::Tensor>(torch::randn({4}));
    auto b = std::make_shared<torch::Tensor>(torch::randn({4}));
    return [a, b](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) a->add_(*b);
      escape(a->unsafeGetTensorImpl());
    };
  }
  if (name == "op_overhead_view_4") {
    auto a = std::make_shared<torch::Tensor>(torch::randn({4}));
    return [a](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        torch::Tensor v = a->view({2, 2});
        escape(v.unsafeGetTensorImpl());
      }
    };
  }
  if (name == "backward_overhead_mul_sum_4") {
    auto x = std::make_shared<torch::Tensor>(torch::randn({4}, torch::requires_grad()));
    auto w = std::make_shared<torch::Tensor>(torch::randn({4}));
    return [x, w](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        torch::Tensor y = (*x * *w).sum();
        y.backward();
        x->mutable_grad().reset();
      }
    };
  }
  if (name == "mlp_fwd_bwd_b32") {
    auto p = std::make_shared<std::vector<torch::Tensor>>();
    for (auto shape : std::vector<std::vector<int64_t>>{{256, 64}, {256}, {256, 256}, {256}, {8, 256}, {8}})
      p->push_back((torch::randn(shape) * 0.05).requires_grad_());
    auto x = std::make_shared<torch::Tensor>(torch::randn({32, 64}));
    auto t = std::make_shared<torch::Tensor>(torch::randn({32, 8}));
    return [p, x, t](int64_t iters) {
      auto& q = *p;
      for (int64_t i = 0; i < iters; ++i) {
        torch::Tensor h = torch::addmm(q[1], *x, q[0].t()).relu();
        h = torch::addmm(q[3], h, q[2].t()).relu();
        torch::Tensor loss = (torch::addmm(q[5], h, q[4].t()) - *t).pow(2).mean();
        loss.backward();
        for (auto& w : q) w.mutable_grad().reset();
      }
    };
  }
  if (name == "adam_step_1M") {
    // One Adam step over 4 parameters of 512 x 512 f32 (1M floats), gradients present.
    struct State {
      std::vector<torch::Tensor> params;
      std::unique_ptr<torch::optim::Adam> opt;
    };
    auto s = std::make_shared<State>();
    for (int i = 0; i < 4; ++i) {
      torch::Tensor p = torch::randn({512, 512}).requires_grad_();
      p.mutable_grad() = torch::randn({512, 512}) * 1e-3;
      s->params.push_back(p);
    }
    s->opt = std::make_unique<torch::optim::Adam>(s->params, torch::optim::AdamOptions(1e-3));
    return [s](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) s->opt->step();
      escape(s->params[0].data_ptr());
    };
  }
  if (name.rfind("sgemm_", 0) == 0 || name.rfind("bf16_gemm_", 0) == 0) {
    const bool bf16 = name[0] == 'b';
    int64_t n = std::atoll(name.c_str() + (bf16 ? 10 : 6));
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    auto a = std::make_shared<torch::Tensor>(torch::randn({n, n}).to(dtype));
    auto b = std::make_shared<torch::Tensor>(torch::randn({n, n}).to(dtype));
    return [a, b](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        torch::Tensor c = torch::mm(*a, *b);
        escape(c.data_ptr());
      }
    };
  }
  if (name == "softmax_4096x1024") {
    auto x = std::make_shared<torch::Tensor>(torch::randn({4096, 1024}));
    return [x](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        torch::Tensor y = torch::softmax(*x, 1);
        escape(y.data_ptr());
      }
    };
  }
  if (name == "sum_16M") {
    auto x = std::make_shared<torch::Tensor>(torch::randn({int64_t(1) << 24}));
    return [x](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        torch::Tensor s = x->sum();
        escape(s.data_ptr());
      }
    };
  }
  return {};
}

}  // namespace bench::libtorch
