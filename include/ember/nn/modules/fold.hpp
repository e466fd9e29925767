#pragma once
/// Unfold and Fold: an image's sliding blocks as columns and back (F::unfold, F::fold).

#include <ember/nn/functional_fold.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/modules/conv.hpp>
#include <ember/nn/options.hpp>

#include <string>

namespace ember::nn {

struct UnfoldOptions {
  UnfoldOptions(IntArgs kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT: implicit, as libtorch's
  UnfoldOptions(std::initializer_list<int64_t> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, dilation) = {1};
  EMBER_ARG(IntArgs, padding) = {0};
  EMBER_ARG(IntArgs, stride) = {1};
};

struct FoldOptions {
  FoldOptions(IntArgs output_size, IntArgs kernel_size)
      : output_size_(std::move(output_size)), kernel_size_(std::move(kernel_size)) {}
  EMBER_ARG(IntArgs, output_size);
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, dilation) = {1};
  EMBER_ARG(IntArgs, padding) = {0};
  EMBER_ARG(IntArgs, stride) = {1};
};

namespace detail {
/// PyTorch's repr of a fold argument: a number stays a number, a pair is a tuple.
inline std::string fold_arg_repr(const IntArgs& v) {
  return v.size() == 1 ? EMBER_FORMAT("{}", v[0]) : repr_args(v, static_cast<int>(v.size()));
}
}  // namespace detail

template <class P = DefaultPolicy>
class BasicUnfoldImpl : public Cloneable<BasicUnfoldImpl<P>, P> {
 public:
  explicit BasicUnfoldImpl(const UnfoldOptions& o) : Cloneable<BasicUnfoldImpl<P>, P>("Unfold"), options(o) {
    (void)F::detail::block_geometry(o.kernel_size(), o.dilation(), o.padding(), o.stride(), "Unfold");
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    return F::unfold(x, options.kernel_size(), options.dilation(), options.padding(), options.stride());
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("kernel_size={}, dilation={}, padding={}, stride={}", detail::fold_arg_repr(options.kernel_size()),
                       detail::fold_arg_repr(options.dilation()), detail::fold_arg_repr(options.padding()),
                       detail::fold_arg_repr(options.stride()));
  }
  UnfoldOptions options;
};
using UnfoldImpl = BasicUnfoldImpl<>;
EMBER_MODULE(Unfold);
template <class P = DefaultPolicy>
using BasicUnfold = detail::PolicyHolder<P, Unfold, BasicUnfoldImpl<P>>;

template <class P = DefaultPolicy>
class BasicFoldImpl : public Cloneable<BasicFoldImpl<P>, P> {
 public:
  explicit BasicFoldImpl(const FoldOptions& o) : Cloneable<BasicFoldImpl<P>, P>("Fold"), options(o) {
    (void)F::detail::block_geometry(o.kernel_size(), o.dilation(), o.padding(), o.stride(), "Fold");
    (void)F::detail::expand_arg(o.output_size(), 2, "Fold", "output_size");
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    return F::fold(x, options.output_size(), options.kernel_size(), options.dilation(), options.padding(),
                   options.stride());
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("output_size={}, kernel_size={}, dilation={}, padding={}, stride={}",
                       detail::fold_arg_repr(options.output_size()), detail::fold_arg_repr(options.kernel_size()),
                       detail::fold_arg_repr(options.dilation()), detail::fold_arg_repr(options.padding()),
                       detail::fold_arg_repr(options.stride()));
  }
  FoldOptions options;
};
using FoldImpl = BasicFoldImpl<>;
EMBER_MODULE(Fold);
template <class P = DefaultPolicy>
using BasicFold = detail::PolicyHolder<P, Fold, BasicFoldImpl<P>>;

}  // namespace ember::nn
