#pragma once
/// einsum for one or two operands, reduced to diagonals, sums, permutes and one batched
/// matmul: "ij,jk->ik", "bij,bjk->bik", "i,i->", "ij->ji", "ii->i" (a repeated subscript
/// takes the diagonal), "ii" (the trace), "...ij,...jk->...ik" (an ellipsis stands for the
/// unnamed dims, broadcast from the right), with PyTorch's implicit output.

#include <ember/ops/shape_ops.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace ember {

namespace detail {
struct EinsumPlan {
  std::string inputs[2];
  std::string output;
  int n_inputs = 0;
};
/// Parses and validates the equation against the operand ranks (src/ops/einsum.cpp).
EinsumPlan parse_einsum(std::string_view eq, int n_inputs, const int64_t* ranks);
}  // namespace detail

namespace detail {
template <class P>
BasicTensor<P> einsum_impl(std::string_view equation, TensorSpan<P> operands) {
  EMBER_CHECK(operands.size() == 1 || operands.size() == 2, "[einsum] supports 1 or 2 operands, got {}",
              operands.size());
  int64_t ranks[2] = {operands[0].dim(), operands.size() > 1 ? operands[1].dim() : 0};
  detail::EinsumPlan plan = detail::parse_einsum(equation, static_cast<int>(operands.size()), ranks);
  // Sum away letters of an operand that appear nowhere else.
  BasicTensor<P> ops_[2];
  std::string subs[2];
  for (int k = 0; k < plan.n_inputs; ++k) {
    ops_[k] = operands[static_cast<size_t>(k)];
    subs[k] = plan.inputs[k];
    // A letter twice in one operand takes the diagonal (appended last by diagonal()).
    for (size_t i = 0; i < subs[k].size(); ++i) {
      const size_t j = subs[k].find(subs[k][i], i + 1);
      if (j == std::string::npos) continue;
      const auto di = static_cast<int64_t>(i), dj = static_cast<int64_t>(j);
      EMBER_CHECK(ops_[k].size(di) == ops_[k].size(dj),
                  "[einsum] subscript '{}' is repeated in operand {} ('{}') over dims of sizes {} and {}", subs[k][i], k,
                  plan.inputs[k], ops_[k].size(di), ops_[k].size(dj));
      const char c = subs[k][i];
      ops_[k] = ops_[k].diagonal(0, di, dj);
      subs[k].erase(j, 1);
      subs[k].erase(i, 1);
      subs[k] += c;
      i = static_cast<size_t>(-1);  // rescan: the letter may come a third time
    }
    const std::string& other = plan.n_inputs == 2 ? plan.inputs[1 - k] : std::string();
    Shape dims;
    std::string kept;
    for (size_t i = 0; i < subs[k].size(); ++i) {
      char c = subs[k][i];
      if (plan.output.find(c) == std::string::npos && other.find(c) == std::string::npos)
        dims.push_back(static_cast<int64_t>(i));
      else
        kept += c;
    }
    if (!dims.empty()) ops_[k] = ops_[k].sum(dims);
    subs[k] = kept;
  }
  if (plan.n_inputs == 1) {
    Shape perm;
    for (char c : plan.output) perm.push_back(static_cast<int64_t>(subs[0].find(c)));
    return plan.output.empty() ? ops_[0] : ops_[0].permute(perm);
  }
  std::string batch, a_only, b_only, contract;
  for (char c : subs[0]) {
    bool in_b = subs[1].find(c) != std::string::npos, in_out = plan.output.find(c) != std::string::npos;
    if (in_b && in_out) batch += c;
    else if (in_b) contract += c;
    else a_only += c;
  }
  for (char c : subs[1])
    if (subs[0].find(c) == std::string::npos) b_only += c;
  // A subscript of size 1 in one operand broadcasts against the other's (PyTorch).
  for (char c : batch + contract) {
    const auto p0 = static_cast<int64_t>(subs[0].find(c)), p1 = static_cast<int64_t>(subs[1].find(c));
    const int64_t s0 = ops_[0].size(p0), s1 = ops_[1].size(p1);
    if (s0 == s1 || (s0 != 1 && s1 != 1)) continue;
    const int k = s0 == 1 ? 0 : 1;
    Shape to = ops_[k].sizes();
    to[k == 0 ? p0 : p1] = std::max(s0, s1);
    ops_[k] = ops_[k].expand(to);
  }
  auto size_of = [&](char c) -> int64_t {
    for (int k = 0; k < plan.n_inputs; ++k) {
      auto pos = subs[k].find(c);
      if (pos != std::string::npos) return ops_[k].size(static_cast<int64_t>(pos));
    }
    return 1;
  };
  for (char c : batch + contract)
    EMBER_CHECK(ops_[0].size(static_cast<int64_t>(subs[0].find(c))) == ops_[1].size(static_cast<int64_t>(subs[1].find(c))),
                "[einsum] subscript '{}' has size {} in operand 0 but {} in operand 1", c,
                ops_[0].size(static_cast<int64_t>(subs[0].find(c))), ops_[1].size(static_cast<int64_t>(subs[1].find(c))));
  auto prod = [&](const std::string& s) {
    int64_t n = 1;
    for (char c : s) n *= size_of(c);
    return n;
  };
  auto permuted = [&](int k, const std::string& order) {
    Shape perm;
    for (char c : order) perm.push_back(static_cast<int64_t>(subs[k].find(c)));
    return perm.empty() ? ops_[k] : ops_[k].permute(perm);
  };
  int64_t nb = prod(batch), m = prod(a_only), n = prod(b_only), kk = prod(contract);
  BasicTensor<P> a = permuted(0, batch + a_only + contract).reshape({nb, m, kk});
  BasicTensor<P> b = permuted(1, batch + contract + b_only).reshape({nb, kk, n});
  BasicTensor<P> r = a.bmm(b);
  std::string have = batch + a_only + b_only;
  Shape sizes;
  for (char c : have) sizes.push_back(size_of(c));
  r = r.reshape(sizes);
  Shape perm;
  for (char c : plan.output) perm.push_back(static_cast<int64_t>(have.find(c)));
  return perm.empty() ? r : r.permute(perm);
}
}  // namespace detail

/// `einsum("ij,jk->ik", {a, b})`, or with the operands in a std::vector.
template <class P>
BasicTensor<P> einsum(std::string_view equation, const std::vector<BasicTensor<P>>& operands) {
  return detail::einsum_impl<P>(equation, operands);
}
template <class P>
BasicTensor<P> einsum(std::string_view equation, std::initializer_list<BasicTensor<P>> operands) {
  return detail::einsum_impl<P>(equation, detail::as_span(operands));
}

}  // namespace ember
