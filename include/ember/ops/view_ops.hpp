#pragma once
/// View ops: they share storage and only change geometry, so they need no kernel.
/// They still travel through the layer chain (autograd records them; profilers see them).

#include <ember/ops/descriptors.hpp>

namespace ember::ops {

enum class ViewKind : uint8_t {
  View, Permute, Expand, AsStrided, Narrow, Select, Squeeze, Unsqueeze, Slice, Diagonal, Alias
};

struct ViewOp {
  explicit ViewOp(ViewKind k, Shape shape_ = {}, Shape strides_ = {})
      : kind(k), shape(std::move(shape_)), strides(std::move(strides_)) {}
  ViewKind kind;
  Shape shape;    ///< View: new shape; Permute: dims; Expand: sizes; AsStrided: sizes
  Shape strides;  ///< AsStrided: strides
  int64_t dim = 0, start = 0, length = 0, step = 1;  ///< Narrow/Select/Slice/Squeeze/Unsqueeze/AsStrided offset
  bool all_dims = false;  ///< Squeeze: every size-1 dim
  const char* name() const {
    static constexpr const char* n[] = {"view",    "permute",   "expand", "as_strided", "narrow",  "select",
                                 "squeeze", "unsqueeze", "slice",  "diagonal",   "alias"};
    return n[static_cast<int>(kind)];
  }
  template <class BL>
  TensorRef run(const TensorImpl& x) const {
    return make(x);
  }
  TensorRef make(const TensorImpl& x) const;  // src/ops/views.cpp
};

/// Checks that as_strided's geometry stays within x's storage and int64; fails naming `op`.
void check_as_strided(const TensorImpl& x, const Shape& sizes, const Shape& strides, int64_t start, const char* op);
/// The shape `view`/`reshape` resolve to (one -1 inferred); fails naming `op`.
Shape infer_shape(IntArrayRef shape, int64_t numel, const char* op);
/// Strides for viewing x as `shape` without a copy, if possible; false (and `strides` emptied)
/// when not.
bool view_strides(const TensorImpl& x, IntArrayRef shape, Shape& strides);

}  // namespace ember::ops
