// libtorch's side of the single-op workloads (see op_workloads.hpp for the definitions): the
// same ops on tensors of the same shapes and distributions. Built only with
// -Dlibtorch_compare=enabled.

#include <torch/torch.h>

#include "workloads.hpp"

#include <functional>
#include <string>

namespace bench::libtorch {

RunFn make_op(const std::string& name) {
  torch::manual_seed(7);
  std::function<torch::Tensor()> op;
  torch::Tensor big = torch::randn({64, 1024}), idx = torch::randint(0, 1024, {64, 1024}),
                zero = torch::zeros({64, 1024});
  torch::Tensor x = torch::randn({256, 256}), y = torch::randn({256, 256}), p = torch::rand({256, 256}) + 0.5;
  if (name == "op_gather_64x1024") op = [=] { return big.gather(1, idx); };
  else if (name == "op_scatter_add_64x1024") op = [=] { return zero.scatter_add(1, idx, big); };
  else if (name == "op_cumsum_64x1024") op = [=] { return big.cumsum(1); };
  else if (name == "op_cumsum_dim0_64x1024") op = [=] { return big.cumsum(0); };
  else if (name == "op_add_transposed_256") op = [=] { return x.t() + y; };
  else if (name == "op_fmod_256") op = [=] { return torch::fmod(x, p); };
  else if (name == "op_remainder_256") op = [=] { return torch::remainder(x, p); };
  else if (name == "op_div_floor_256") op = [=] { return x.div(p, "floor"); };
  else if (name == "op_atan2_256") op = [=] { return torch::atan2(x, y); };
  else if (name == "op_hypot_256") op = [=] { return torch::hypot(x, y); };
  else if (name == "op_logical_and_256") op = [=] { return torch::logical_and(x, y); };
  else if (name == "op_gelu_256") op = [=] { return torch::gelu(x); };
  else if (name == "op_logaddexp_256") op = [=] { return torch::logaddexp(x, y); };
  else if (name == "op_xlogy_256") op = [=] { return torch::xlogy(x, p); };
  else if (name == "op_i0e_256") op = [=] { return torch::special::i0e(x); };
  else if (name == "op_log_ndtr_256") op = [=] { return torch::special::log_ndtr(x); };
  else if (name == "op_sort_64x1024") op = [=] { return std::get<0>(big.sort(1)); };
  else if (name == "op_topk40_64x1024") op = [=] { return std::get<0>(big.topk(40, 1)); };
  else if (name == "op_index_rows_256") {
    torch::Tensor buffer = torch::randn({100000, 64}), rows = torch::randint(0, 100000, {256});
    op = [=] { return buffer.index({rows}); };
  } else if (name == "op_masked_select_512" || name == "op_nonzero_512") {
    torch::Tensor m = torch::randn({512, 512}), mask = m.gt(0.5);
    if (name == "op_nonzero_512") op = [=] { return torch::nonzero(mask); };
    else op = [=] { return torch::masked_select(m, mask); };
  } else if (name == "op_u8_to_f32_64x3x64x64" || name == "op_f32_to_u8_64x3x64x64") {
    torch::Tensor img = torch::randint(0, 256, {64, 3, 64, 64}).to(torch::kUInt8), f = img.to(torch::kFloat);
    if (name == "op_u8_to_f32_64x3x64x64") op = [=] { return img.to(torch::kFloat); };
    else op = [=] { return f.to(torch::kUInt8); };
  } else if (name == "op_transpose_copy_1024") {
    torch::Tensor m = torch::randn({1024, 1024});
    op = [=] { return m.t().contiguous(); };
  } else if (name == "op_merge_heads_16x4x64x32") {
    torch::Tensor heads = torch::randn({16, 4, 64, 32});
    op = [=] { return heads.transpose(1, 2).contiguous(); };
  } else if (name == "op_index_put_rows_256") {
    torch::Tensor buffer = torch::zeros({100000, 64}), rows = torch::randint(0, 100000, {256}),
                  batch = torch::randn({256, 64});
    op = [=]() mutable { return buffer.index_put_({rows}, batch); };
  } else if (name == "op_matmul_i32_128") {
    torch::Tensor a = torch::randint(-100, 100, {128, 128}).to(torch::kInt32),
                  b = torch::randint(-100, 100, {128, 128}).to(torch::kInt32);
    op = [=] { return a.matmul(b); };
  } else if (name == "op_inv_6x6") {  // at::linalg_*: torch::linalg is not in 2.x's torch.h
    torch::Tensor a = torch::randn({6, 6}) + torch::eye(6) * 6.0;
    op = [=] { return at::linalg_inv(a); };
  } else if (name == "op_solve_256x6x6") {
    torch::Tensor a = torch::randn({256, 6, 6}) + torch::eye(6) * 6.0, b = torch::randn({256, 6, 1});
    op = [=] { return at::linalg_solve(a, b, true); };
  } else if (name == "op_cholesky_64") {
    torch::Tensor r = torch::randn({64, 64}), a = r.matmul(r.t()) + torch::eye(64) * 64.0;
    op = [=] { return at::linalg_cholesky(a); };
  } else if (name == "op_svd_1024x3x3") {
    torch::Tensor a = torch::randn({1024, 3, 3});
    op = [=] { return std::get<0>(at::linalg_svd(a, false)); };
  } else if (name == "op_eigh_256x3x3") {
    torch::Tensor r = torch::randn({256, 3, 3}), a = r + r.mT();
    op = [=] { return std::get<1>(at::linalg_eigh(a, "L")); };
  }
  else return {};
  return [op](int64_t iters) {
    torch::NoGradGuard no_grad;
    for (int64_t i = 0; i < iters; ++i) {
      torch::Tensor r = op();
      escape(r.data_ptr());
    }
  };
}

}  // namespace bench::libtorch
