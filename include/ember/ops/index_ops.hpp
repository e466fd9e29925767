#pragma once
/// Shape and indexing ops that move data by index: cat, index_select, gather, scatter,
/// index_add/copy, masked_select, nonzero, sort, topk, unique. Their outputs often have
/// data-dependent shapes, so these kernels allocate their own outputs.

#include <ember/ops/descriptors.hpp>

#include <vector>

namespace ember::detail {

enum class ScatterReduce : uint8_t { None, Sum, Prod, Mean, Amax, Amin };

template <class Backend>
struct IndexKernels;

/// CPU implementations (kernels_cpu/indexing.cpp). Inputs are checked by the callers in
/// ops::*::run; kernels check only what needs the data (index ranges).
template <>
struct IndexKernels<Cpu> {
  static Ref<TensorImpl> cat(std::span<const TensorImpl* const> xs, int64_t dim);
  static Ref<TensorImpl> index_select(const TensorImpl& x, int64_t dim, const TensorImpl& index);
  static Ref<TensorImpl> gather(const TensorImpl& x, int64_t dim, const TensorImpl& index);
  /// out = x with src scattered along dim at index (reduce: None = assign).
  static Ref<TensorImpl> scatter(const TensorImpl& x, int64_t dim, const TensorImpl& index, const TensorImpl& src,
                                 ScatterReduce reduce, bool include_self);
  /// out = x; out.index_{add,copy}_(dim, index, src * alpha) with a 1-d index.
  static Ref<TensorImpl> index_add(const TensorImpl& x, int64_t dim, const TensorImpl& index, const TensorImpl& src,
                                   double alpha, bool copy);
  static Ref<TensorImpl> masked_select(const TensorImpl& x, const TensorImpl& mask);
  static Ref<TensorImpl> nonzero(const TensorImpl& x);
  static std::pair<Ref<TensorImpl>, Ref<TensorImpl>> sort(const TensorImpl& x, int64_t dim, bool descending,
                                                          bool stable);
  static std::pair<Ref<TensorImpl>, Ref<TensorImpl>> topk(const TensorImpl& x, int64_t k, int64_t dim, bool largest,
                                                          bool sorted);
  /// unique values (sorted), inverse indices (x's shape) and counts.
  static std::vector<Ref<TensorImpl>> unique(const TensorImpl& x, bool return_inverse, bool return_counts);
  /// out = x with values written at the positions given by one i64 index tensor per
  /// leading dim (all broadcast together); accumulate adds instead of assigning.
  static Ref<TensorImpl> index_put(const TensorImpl& x, std::span<const TensorImpl* const> indices,
                                   const TensorImpl& values, bool accumulate, const char* op);
  /// The same, written into x itself (x.index_put_(...)); `op` names it in errors.
  static void index_put_into(TensorImpl& x, std::span<const TensorImpl* const> indices, const TensorImpl& values,
                             bool accumulate, const char* op);
  /// x[indices...] for one i64 index tensor per leading dim (advanced indexing).
  static Ref<TensorImpl> index_tensor(const TensorImpl& x, std::span<const TensorImpl* const> indices);
};

/// Index kernels are CPU-only for now: device tensors fail clearly rather than copy silently.
template <>
struct IndexKernels<Cuda> {
  template <class... A>
  [[noreturn]] static Ref<TensorImpl> fail(const char* op) {
    EMBER_FAIL("[{}] is not implemented for CUDA tensors yet; move the tensor to the CPU with .cpu()", op);
  }
};

}  // namespace ember::detail

namespace ember::ops {

/// Runs `cpu_fn` (an IndexKernels<Cpu> call) when `device` is the CPU, else fails naming `op`.
template <class BL, class F>
decltype(auto) index_backend(Device device, const char* op, F&& cpu_fn) {
  using R = decltype(cpu_fn());
  if (device.is_cpu()) return cpu_fn();
  if constexpr (BL::has(DeviceType::Cuda)) detail::IndexKernels<Cuda>::fail(op);
  EMBER_FAIL("[{}] device {} is not served by this policy's backends", op, device);
  return R(cpu_fn());
}

#define EMBER_INDEX_RUN(device, ...) \
  return index_backend<BL>(device, name(), [&] { return detail::IndexKernels<Cpu>::__VA_ARGS__; })

struct Cat {
  int64_t dim;
  const char* name() const { return "cat"; }
  template <class BL>
  TensorRef run(std::span<const TensorImpl* const> xs) const {
    EMBER_CHECK(!xs.empty(), "[cat] expects a non-empty list of tensors");
    EMBER_INDEX_RUN(xs[0]->device(), cat(xs, dim));
  }
};
struct IndexSelect {
  int64_t dim;
  const char* name() const { return "index_select"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& index) const {
    EMBER_INDEX_RUN(x.device(), index_select(x, dim, index));
  }
};
struct Gather {
  int64_t dim;
  const char* name() const { return "gather"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& index) const {
    EMBER_INDEX_RUN(x.device(), gather(x, dim, index));
  }
};
struct Scatter {
  explicit Scatter(int64_t d, detail::ScatterReduce r = detail::ScatterReduce::None, bool self = true)
      : dim(d), reduce(r), include_self(self) {}
  int64_t dim;
  detail::ScatterReduce reduce = detail::ScatterReduce::None;
  bool include_self = true;
  const char* name() const { return reduce == detail::ScatterReduce::None ? "scatter" : "scatter_reduce"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& index, const TensorImpl& src) const {
    EMBER_INDEX_RUN(x.device(), scatter(x, dim, index, src, reduce, include_self));
  }
};
struct IndexAdd {
  int64_t dim;
  double alpha = 1;
  bool copy = false;
  const char* name() const { return copy ? "index_copy" : "index_add"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& index, const TensorImpl& src) const {
    EMBER_INDEX_RUN(x.device(), index_add(x, dim, index, src, alpha, copy));
  }
};
struct MaskedSelect {
  const char* name() const { return "masked_select"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& mask) const {
    EMBER_INDEX_RUN(x.device(), masked_select(x, mask));
  }
};
struct Nonzero {
  const char* name() const { return "nonzero"; }
  template <class BL>
  TensorRef run(const TensorImpl& x) const {
    EMBER_INDEX_RUN(x.device(), nonzero(x));
  }
};
struct Sort {
  int64_t dim = -1;
  bool descending = false, stable = true;
  const char* name() const { return "sort"; }
  template <class BL>
  std::pair<TensorRef, TensorRef> run(const TensorImpl& x) const {
    EMBER_INDEX_RUN(x.device(), sort(x, dim, descending, stable));
  }
};
struct Topk {
  int64_t k, dim = -1;
  bool largest = true, sorted = true;
  const char* name() const { return "topk"; }
  template <class BL>
  std::pair<TensorRef, TensorRef> run(const TensorImpl& x) const {
    EMBER_INDEX_RUN(x.device(), topk(x, k, dim, largest, sorted));
  }
};
struct Unique {
  bool return_inverse = false, return_counts = false;
  const char* name() const { return "unique"; }
  template <class BL>
  std::vector<TensorRef> run(const TensorImpl& x) const {
    EMBER_INDEX_RUN(x.device(), unique(x, return_inverse, return_counts));
  }
};
struct IndexPut {
  bool accumulate = false;
  const char* label = "index_put";  ///< "index_put_" when it computes an in-place call's value
  const char* name() const { return label; }
  template <class BL>
  TensorRef run(const TensorImpl& x, std::span<const TensorImpl* const> indices, const TensorImpl& values) const {
    EMBER_INDEX_RUN(x.device(), index_put(x, indices, values, accumulate, label));
  }
};
/// x.index_put_(indices, values): index_put written into x, without a copy of x.
struct IndexPutInto {
  bool accumulate = false;
  const char* name() const { return "index_put_"; }
  template <class BL>
  void run(TensorImpl& x, std::span<const TensorImpl* const> indices, const TensorImpl& values) const {
    check_writable(x, name());
    index_backend<BL>(x.device(), name(),
                      [&] { detail::IndexKernels<Cpu>::index_put_into(x, indices, values, accumulate, name()); });
    // After the kernel: bad indices (checked before any write) leave x and its version as
    // they were, so tensors saved for backward stay usable.
    detail::bump_version(*x.storage);
  }
};
struct IndexTensor {
  const char* name() const { return "index"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, std::span<const TensorImpl* const> indices) const {
    EMBER_INDEX_RUN(x.device(), index_tensor(x, indices));
  }
};
#undef EMBER_INDEX_RUN

}  // namespace ember::ops
