#pragma once
/// einsum over any number of operands, contracted left to right (as PyTorch without
/// opt_einsum), each pair reduced to sums, permutes and one batched matmul: "ij,jk->ik",
/// "bij,bjk->bik", "i,i->", "ij->ji", "ij,jk,kl->il", "ii->i" (a repeated subscript takes the
/// diagonal), "ii" (the trace), "...ij,...jk->...ik" (an ellipsis stands for the unnamed
/// dims, broadcast from the right), with PyTorch's implicit output. A subscript of size 1 in
/// one operand broadcasts against the others'.
///
/// The letter bookkeeping lives in src/ops/einsum.cpp; this template only applies the plan.

#include <ember/ops/shape_ops.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember {

namespace detail {

/// The equation with its ellipses spelled as letters, checked against the operand ranks.
struct EinsumEquation {
  std::vector<std::string> inputs;  // one subscript string per operand
  std::vector<std::string> written;  // the same as the user wrote them, for messages
  std::string output;
  std::string ellipsis;  // the letters that stand for "..."
};
EinsumEquation parse_einsum(std::string_view eq, const std::vector<int64_t>& ranks);

/// The diagonals one operand's repeated subscripts take, in order (each `diagonal(0, d0, d1)`
/// appends the shared dim last); `subs` becomes the subscripts of the result.
struct EinsumDiagonals {
  std::vector<std::pair<int64_t, int64_t>> dims;
  std::string subs;
};
EinsumDiagonals plan_einsum_diagonals(const EinsumEquation& eq, size_t operand, const Shape& sizes);

/// Checks that every subscript has one size across the operands (or 1, which broadcasts);
/// `subs` and `sizes` are the operands' after their diagonals, `shapes` as given.
void check_einsum_sizes(const EinsumEquation& eq, const std::vector<std::string>& subs,
                        const std::vector<Shape>& sizes, const std::vector<Shape>& shapes);

/// One contraction of `a` with `b` into the subscripts `needed` still asks for (the output's
/// and the later operands'): sum what neither needs, broadcast size-1 subscripts, then
/// `a'[batch, m, k] @ b'[batch, k, n]` reshaped to `out_sizes` over `out_subs`.
struct EinsumPair {
  Shape sum_a, sum_b;              // summed first
  Shape expand_a, expand_b;        // then expanded to these sizes (empty: no expand)
  Shape perm_a, perm_b;            // then permuted ...
  Shape mat_a, mat_b;              // ... and reshaped to {batch, m, k} and {batch, k, n}
  Shape out_sizes;                 // the product's shape over out_subs
  std::string out_subs;
};
EinsumPair plan_einsum_pair(const std::string& sa, const Shape& a_sizes, const std::string& sb, const Shape& b_sizes,
                            const std::string& needed);

/// The last step: sum the subscripts the output lacks, permute to the output's order.
struct EinsumFinish {
  Shape sum, perm;
};
EinsumFinish plan_einsum_finish(const std::string& subs, const std::string& output);

template <class P>
BasicTensor<P> einsum_impl(std::string_view equation, TensorSpan<P> operands) {
  EMBER_CHECK(!operands.empty(), "[einsum] expects at least one operand");
  std::vector<int64_t> ranks;
  for (const auto& t : operands) ranks.push_back(t.dim());
  const EinsumEquation eq = parse_einsum(equation, ranks);
  std::vector<BasicTensor<P>> ops;
  std::vector<std::string> subs;
  std::vector<Shape> sizes, shapes;
  for (size_t k = 0; k < operands.size(); ++k) {
    BasicTensor<P> t = operands[k];
    shapes.push_back(t.sizes());
    EinsumDiagonals diag = plan_einsum_diagonals(eq, k, t.sizes());
    for (auto [d0, d1] : diag.dims) t = t.diagonal(0, d0, d1);
    ops.push_back(t);
    subs.push_back(std::move(diag.subs));
    sizes.push_back(t.sizes());
  }
  check_einsum_sizes(eq, subs, sizes, shapes);
  BasicTensor<P> acc = ops[0];
  std::string acc_subs = subs[0];
  for (size_t k = 1; k < ops.size(); ++k) {
    std::string needed = eq.output;
    for (size_t later = k + 1; later < ops.size(); ++later) needed += subs[later];
    const EinsumPair pair = plan_einsum_pair(acc_subs, acc.sizes(), subs[k], ops[k].sizes(), needed);
    auto prepare = [](BasicTensor<P> t, const Shape& sum, const Shape& expand, const Shape& perm, const Shape& mat) {
      if (!sum.empty()) t = t.sum(sum);
      if (!expand.empty()) t = t.expand(expand);
      return (perm.empty() ? t : t.permute(perm)).reshape(mat);
    };
    BasicTensor<P> a = prepare(acc, pair.sum_a, pair.expand_a, pair.perm_a, pair.mat_a);
    BasicTensor<P> b = prepare(ops[k], pair.sum_b, pair.expand_b, pair.perm_b, pair.mat_b);
    acc = a.bmm(b).reshape(pair.out_sizes);
    acc_subs = pair.out_subs;
  }
  const EinsumFinish finish = plan_einsum_finish(acc_subs, eq.output);
  if (!finish.sum.empty()) acc = acc.sum(finish.sum);
  return eq.output.empty() ? acc : acc.permute(finish.perm);
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
