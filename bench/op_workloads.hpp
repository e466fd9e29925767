#pragma once
/// Single ops outside the issue workloads (us per call, forward only, under no-grad): indexing,
/// scans, elementwise ops that are not plain arithmetic, and a strided operand. Each input is
/// made once; libtorch's twins (libtorch_op_workloads.cpp) use the same shapes and values'
/// distributions.

#include <ember/ember.hpp>
#include <ember/linalg.hpp>

#include "workloads.hpp"

#include <memory>
#include <string>
#include <vector>

namespace bench::op_workloads {

using namespace ember;

/// The op workloads' names, in table order. 64x1024 and 256x256 tensors: 65536 elements.
inline const std::vector<std::string>& names() {
  static const std::vector<std::string> n = {
      "op_gather_64x1024",  "op_scatter_add_64x1024", "op_cumsum_64x1024", "op_cumsum_dim0_64x1024",
      "op_add_transposed_256", "op_fmod_256",         "op_remainder_256",  "op_div_floor_256",
      "op_atan2_256",       "op_hypot_256",           "op_logical_and_256", "op_gelu_256",
      "op_sort_64x1024",    "op_topk40_64x1024",      "op_index_rows_256", "op_masked_select_512",
      "op_nonzero_512",     "op_u8_to_f32_64x3x64x64", "op_f32_to_u8_64x3x64x64", "op_transpose_copy_1024",
      "op_merge_heads_16x4x64x32", "op_index_put_rows_256", "op_matmul_i32_128",
      // torch::special's: log-space sums (HMMs, CTC), entropy terms, a scaled Bessel function
      // and the normal's log-CDF (probit models).
      "op_logaddexp_256", "op_xlogy_256", "op_i0e_256", "op_log_ndtr_256",
      // linalg: a robot's small systems (a 6x6 inverse, 256 batched 6x6 solves), a 64x64
      // covariance's Cholesky factor, 1024 3x3 SVDs (point-set alignment), 256 3x3 eigh.
      "op_inv_6x6", "op_solve_256x6x6", "op_cholesky_64", "op_svd_1024x3x3", "op_eigh_256x3x3"};
  return n;
}

/// The workload called `name` (see names()).
inline RunFn make(const std::string& name) {
  manual_seed(7);
  std::function<Tensor()> op;
  Tensor big = randn({64, 1024}), idx = randint(0, 1024, {64, 1024}), zero = zeros({64, 1024});
  Tensor x = randn({256, 256}), y = randn({256, 256}), p = rand({256, 256}) + 0.5;
  if (name == "op_gather_64x1024") op = [=] { return gather(big, 1, idx); };
  else if (name == "op_scatter_add_64x1024") op = [=] { return scatter_add(zero, 1, idx, big); };
  else if (name == "op_cumsum_64x1024") op = [=] { return big.cumsum(1); };
  else if (name == "op_cumsum_dim0_64x1024") op = [=] { return big.cumsum(0); };
  else if (name == "op_add_transposed_256") op = [=] { return x.t() + y; };
  else if (name == "op_fmod_256") op = [=] { return fmod(x, p); };
  else if (name == "op_remainder_256") op = [=] { return remainder(x, p); };
  else if (name == "op_div_floor_256") op = [=] { return x.div(p, "floor"); };
  else if (name == "op_atan2_256") op = [=] { return atan2(x, y); };
  else if (name == "op_hypot_256") op = [=] { return hypot(x, y); };
  else if (name == "op_logical_and_256") op = [=] { return logical_and(x, y); };
  else if (name == "op_gelu_256") op = [=] { return x.gelu(); };
  else if (name == "op_logaddexp_256") op = [=] { return logaddexp(x, y); };
  else if (name == "op_xlogy_256") op = [=] { return xlogy(x, p); };
  else if (name == "op_i0e_256") op = [=] { return special::i0e(x); };
  else if (name == "op_log_ndtr_256") op = [=] { return special::log_ndtr(x); };
  else if (name == "op_sort_64x1024") op = [=] { return sort(big, 1).first; };
  else if (name == "op_topk40_64x1024") op = [=] { return topk(big, 40, 1).first; };
  else if (name == "op_index_rows_256") {  // a replay buffer's batch: 256 rows of 64 from 100000
    Tensor buffer = randn({100000, 64}), rows = randint(0, 100000, {256});
    op = [=] { return index(buffer, std::vector<Tensor>{rows}); };
  } else if (name == "op_masked_select_512" || name == "op_nonzero_512") {  // ~31% of 512x512 set
    Tensor m = randn({512, 512}), mask = m.gt(0.5);
    if (name == "op_nonzero_512") op = [=] { return nonzero(mask); };
    else op = [=] { return masked_select(m, mask); };
  } else if (name == "op_u8_to_f32_64x3x64x64" || name == "op_f32_to_u8_64x3x64x64") {  // a batch of images
    Tensor img = randint(0, 256, {64, 3, 64, 64}).to(DType::U8), f = img.to(DType::F32);
    if (name == "op_u8_to_f32_64x3x64x64") op = [=] { return img.to(DType::F32); };
    else op = [=] { return f.to(DType::U8); };
  } else if (name == "op_transpose_copy_1024") {
    Tensor m = randn({1024, 1024});
    op = [=] { return m.t().contiguous(); };
  } else if (name == "op_merge_heads_16x4x64x32") {  // attention heads back to (batch, seq, heads, dim)
    Tensor heads = randn({16, 4, 64, 32});
    op = [=] { return heads.transpose(1, 2).contiguous(); };
  } else if (name == "op_index_put_rows_256") {  // 256 rows of 64 written into a replay buffer of 100000
    Tensor buffer = zeros({100000, 64}), rows = randint(0, 100000, {256}), batch = randn({256, 64});
    op = [=]() mutable { return buffer.index_put_({rows}, batch); };
  } else if (name == "op_matmul_i32_128") {
    Tensor a = randint(-100, 100, {128, 128}).to(DType::I32), b = randint(-100, 100, {128, 128}).to(DType::I32);
    op = [=] { return a.matmul(b); };
  } else if (name == "op_inv_6x6") {
    Tensor a = randn({6, 6}) + eye(6) * 6.0;
    op = [=] { return linalg::inv(a); };
  } else if (name == "op_solve_256x6x6") {
    Tensor a = randn({256, 6, 6}) + eye(6) * 6.0, b = randn({256, 6, 1});
    op = [=] { return linalg::solve(a, b); };
  } else if (name == "op_cholesky_64") {
    Tensor r = randn({64, 64}), a = r.matmul(r.t()) + eye(64) * 64.0;
    op = [=] { return linalg::cholesky(a); };
  } else if (name == "op_svd_1024x3x3") {
    Tensor a = randn({1024, 3, 3});
    op = [=] { return std::get<0>(linalg::svd(a, false)); };
  } else if (name == "op_eigh_256x3x3") {
    Tensor r = randn({256, 3, 3}), a = r + r.mT();
    op = [=] { return std::get<1>(linalg::eigh(a)); };
  }
  else return {};
  return [op](int64_t iters) {
    autograd::NoGradGuard no_grad;
    for (int64_t i = 0; i < iters; ++i) {
      Tensor r = op();
      escape(r.raw_data());
    }
  };
}

}  // namespace bench::op_workloads
