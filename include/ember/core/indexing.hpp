#pragma once
/// Index expressions for `t.index({Slice(0, 10, 2), 3, None, Ellipsis})` and, with index
/// tensors among them, `t.index({Slice(), idx})`, as in libtorch.

#include <ember/core/intrusive_ptr.hpp>
#include <ember/core/tensor_impl.hpp>

#include <cstdint>
#include <limits>

namespace ember {

struct NoneIndex {};
struct EllipsisIndex {};

/// A slice bound: an integer or None (omitted).
struct SliceBound {
  int64_t value;
  constexpr SliceBound(int64_t v) : value(v) {}  // NOLINT: implicit
  constexpr SliceBound(int v) : value(v) {}      // NOLINT
  constexpr SliceBound(NoneIndex);                // NOLINT
};

/// A Python-style slice start:stop:step; omitted bounds are Slice::kNone (or None).
struct Slice {
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  int64_t start = kNone, stop = kNone, step = 1;
  constexpr Slice() = default;
  constexpr Slice(SliceBound start_, SliceBound stop_ = SliceBound(kNone), int64_t step_ = 1)
      : start(start_.value), stop(stop_.value), step(step_) {}
};
constexpr SliceBound::SliceBound(NoneIndex) : value(Slice::kNone) {}
/// Inserts a new dim of size 1 (numpy's newaxis).
inline constexpr NoneIndex None{};
/// Stands for as many full slices as needed.
inline constexpr EllipsisIndex Ellipsis{};

template <class P>
class BasicTensor;

/// One entry of an index expression. A tensor entry (an i64 index or a bool mask) makes the
/// expression advanced indexing, as in libtorch: x.index({Slice(), idx}) picks along dim 1.
struct TensorIndex {
  enum class Kind : uint8_t { Integer, Slice, None, Ellipsis, Tensor };
  Kind kind;
  int64_t integer = 0;
  Slice slice{};
  detail::Ref<detail::TensorImpl> tensor;  ///< Kind::Tensor only
  TensorIndex(int64_t i) : kind(Kind::Integer), integer(i) {}  // NOLINT: implicit
  TensorIndex(int i) : kind(Kind::Integer), integer(i) {}      // NOLINT
  // PyTorch's x[True] adds a dim; Ember does not offer it, and `true` must not select index 1.
  TensorIndex(bool) = delete;
  TensorIndex(Slice s) : kind(Kind::Slice), slice(s) {}        // NOLINT
  TensorIndex(NoneIndex) : kind(Kind::None) {}                 // NOLINT
  TensorIndex(EllipsisIndex) : kind(Kind::Ellipsis) {}         // NOLINT
  template <class P>
  TensorIndex(const BasicTensor<P>& t) : kind(Kind::Tensor), tensor(t.impl_ref()) {}  // NOLINT
};

/// `using namespace ember::indexing;` brings the index-expression names, as
/// `using namespace torch::indexing;` does.
namespace indexing {
using ember::Ellipsis;
using ember::None;
using ember::Slice;
using ember::TensorIndex;
}  // namespace indexing

}  // namespace ember
