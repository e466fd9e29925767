// View ops: new geometry over the same storage.

#include <ember/core/indexing.hpp>
#include <ember/ops/view_ops.hpp>

#include <vector>

namespace ember::ops {

Shape infer_shape(IntArrayRef shape, int64_t numel, const char* op) {
  Shape out(shape);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      EMBER_CHECK(infer < 0, "[{}] only one dimension can be inferred in shape {}", op, out);
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK(out[i] >= 0, "[{}] invalid dimension {} in shape {}", op, out[i], out);
      EMBER_CHECK(!__builtin_mul_overflow(known, out[i], &known), "[{}] shape {} overflows", op, out);
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, "[{}] shape {} is invalid for input of size {}", op, out, numel);
    out[infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, "[{}] shape {} is invalid for input of size {}", op, out, numel);
  }
  return out;
}

// Can x be viewed as `shape`? Walks chunks of x's dims that are contiguous among themselves
// (as PyTorch's computeStride does) and assigns strides to the new dims within each chunk.
bool view_strides(const TensorImpl& x, IntArrayRef shape, Shape& strides) {
  if (x.numel == 0 || x.contiguous) {
    set_contiguous_strides(strides, shape);  // in place: no temporary, no zero fill
    return true;
  }
  strides.resize_for_overwrite(shape.size());  // every entry is written when this returns true
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = x.ndim() ? x.strides.back() : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = x.ndim() - 1; td >= 0; --td) {
    tensor_numel *= x.sizes[td];
    if (td == 0 || (x.sizes[td - 1] != 1 && x.strides[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) {
        strides.resize_for_overwrite(0);  // not half-written strides
        return false;
      }
      if (td > 0) {
        chunk_base_stride = x.strides[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) strides.resize_for_overwrite(0);
  return view_d == -1;
}

void check_as_strided(const TensorImpl& x, const Shape& sizes, const Shape& strides, int64_t start, const char* op) {
  EMBER_CHECK(sizes.size() == strides.size(), "[{}] sizes {} and strides {} must have one length", op, sizes,
              strides);
  EMBER_CHECK(start >= 0, "[{}] the storage offset must be >= 0, got {}", op, start);
  int64_t last = start;  // the last element the view reaches; -1 when it has none
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0 && strides[i] >= 0, "[{}] sizes {} and strides {} must be >= 0", op, sizes, strides);
    if (sizes[i] == 0) last = -1;
    if (last < 0) continue;
    int64_t reach;
    EMBER_CHECK(!__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) && !__builtin_add_overflow(last, reach, &last),
                "[{}] sizes {} and strides {} at offset {}: the last element's index overflows", op, sizes, strides,
                start);
  }
  const int64_t elements = static_cast<int64_t>(x.storage->nbytes / itemsize(x.dtype));
  EMBER_CHECK(last < elements, "[{}] sizes {}, strides {} at offset {} reach element {} of a storage of {}", op, sizes,
              strides, start, last, elements);
  checked_numel(sizes, op);  // zero strides reach few elements but may count past int64
}

namespace {
/// The view of x with this geometry; it records the tensor it views (x's root) for autograd.
TensorRef view_of_root(const TensorImpl& x, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  TensorRef out = detail::make_view(x.storage, x.dtype, sizes, strides, offset);
  out->view_of = x.view_of ? x.view_of : TensorRef::share(const_cast<TensorImpl*>(&x));
  return out;
}
}  // namespace

TensorRef ViewOp::make(const TensorImpl& x) const {
  const char* op = name();
  if (kind == ViewKind::View) {  // the commonest: its geometry is new, not x's edited
    const Shape sizes = infer_shape(shape, x.numel, op);
    Shape st;
    EMBER_CHECK(view_strides(x, sizes, st),
                "[view] shape {} is incompatible with the input's size {} and strides {}; use reshape", sizes,
                x.sizes, x.strides);
    return view_of_root(x, sizes, st, x.offset);
  }
  int64_t n = x.ndim();
  Shape sizes = x.sizes, st = x.strides;
  int64_t offset = x.offset;
  switch (kind) {
    case ViewKind::View:
      break;  // above
    case ViewKind::Permute: {
      EMBER_CHECK(shape.ndim() == n, "[permute] {} dims given for a tensor of rank {}", shape.size(), n);
      uint64_t seen = 0;
      for (int64_t i = 0; i < n; ++i) {
        int64_t d = wrap_dim(shape[i], n, op);
        EMBER_CHECK(!(seen >> d & 1), "[permute] dim {} repeated in {}", d, shape);
        seen |= uint64_t{1} << d;
        sizes[i] = x.sizes[d];
        st[i] = x.strides[d];
      }
      break;
    }
    case ViewKind::Expand: {
      EMBER_CHECK(shape.ndim() >= n, "[expand] cannot expand shape {} to fewer dims {}", x.sizes, shape);
      size_t lead = shape.size() - n;
      sizes = shape;
      st.resize_for_overwrite(shape.size());  // every entry written below
      for (size_t i = 0; i < shape.size(); ++i) {
        if (i < lead) {
          EMBER_CHECK(shape[i] >= 0, "[expand] new leading dim {} must be given, got {}", i, shape[i]);
          st[i] = 0;
          continue;
        }
        int64_t d = x.sizes[i - lead];
        if (shape[i] == -1) sizes[i] = d;
        EMBER_CHECK(sizes[i] >= 0, "[expand] size {} of dim {} is negative (shape {} to {}); only -1 keeps a size",
                    shape[i], i, x.sizes, shape);
        EMBER_CHECK(sizes[i] == d || d == 1, "[expand] size {} of dim {} cannot expand to {} (shape {} to {})", d, i,
                    shape[i], x.sizes, shape);
        st[i] = sizes[i] == d ? x.strides[i - lead] : 0;
      }
      checked_numel(sizes, "expand");  // stride-0 dims can name more elements than int64 counts
      break;
    }
    case ViewKind::AsStrided: {
      check_as_strided(x, shape, strides, start, "as_strided");
      sizes = shape;
      st = strides;
      offset = start;
      break;
    }
    case ViewKind::Narrow:
    case ViewKind::Select:
    case ViewKind::Slice: {
      EMBER_CHECK(n > 0, "[{}] cannot index a 0-d tensor", op);
      int64_t d = wrap_dim(dim, n, op);
      int64_t size = x.sizes[d];
      if (kind == ViewKind::Select) {
        EMBER_CHECK(start >= -size && start < size, "[select] index {} is out of range for dim {} of size {}", start,
                    d, size);
        int64_t i = start < 0 ? start + size : start;
        offset += i * x.strides[d];
        sizes.erase(d);
        st.erase(d);
      } else if (kind == ViewKind::Narrow) {
        int64_t s = start < 0 ? start + size : start;
        EMBER_CHECK(s >= 0 && s <= size && length >= 0 && length <= size - s,
                    "[narrow] start {} and length {} are out of range for dim {} of size {}", start, length, d, size);
        offset += s * x.strides[d];
        sizes[d] = length;
      } else {
        EMBER_CHECK(step > 0, "[slice] step must be positive, got {}", step);
        auto clampi = [&](int64_t v, int64_t dflt) {
          if (v == Slice::kNone) return dflt;
          if (v < 0) v += size;
          return std::min(std::max<int64_t>(v, 0), size);
        };
        int64_t s = clampi(start, 0), e = clampi(length, size);
        int64_t len = e > s ? 1 + (e - s - 1) / step : 0;  // not (e - s + step - 1) / step: overflows
        offset += s * x.strides[d];
        sizes[d] = len;
        st[d] = x.strides[d] * step;
      }
      break;
    }
    case ViewKind::Squeeze: {
      if (all_dims) {
        Shape s2, t2;
        for (int64_t i = 0; i < n; ++i)
          if (x.sizes[i] != 1) s2.push_back(x.sizes[i]), t2.push_back(x.strides[i]);
        sizes = s2;
        st = t2;
      } else if (n > 0) {
        int64_t d = wrap_dim(dim, n, op);
        if (x.sizes[d] == 1) sizes.erase(d), st.erase(d);
      }
      break;
    }
    case ViewKind::Unsqueeze: {
      int64_t d = wrap_dim(dim, n + 1, op);
      int64_t s = d < n ? x.sizes[d] * x.strides[d] : 1;
      sizes.insert(d, 1);
      st.insert(d, s);
      break;
    }
    case ViewKind::Diagonal: {
      EMBER_CHECK(n >= 2, "[diagonal] needs at least 2 dims, got shape {}", x.sizes);
      int64_t d0 = wrap_dim(dim, n, op), d1 = wrap_dim(length, n, op);
      EMBER_CHECK(d0 != d1, "[diagonal] dims must differ, got {} twice", d0);
      int64_t off = start;
      int64_t len;
      if (off >= 0) {
        len = std::max<int64_t>(0, std::min(x.sizes[d0], x.sizes[d1] - off));
        if (len > 0) offset += off * x.strides[d1];
      } else {
        len = std::max<int64_t>(0, std::min(x.sizes[d0] + off, x.sizes[d1]));
        if (len > 0) offset -= off * x.strides[d0];
      }
      int64_t dstride = x.strides[d0] + x.strides[d1];
      Shape s2, t2;
      for (int64_t i = 0; i < n; ++i)
        if (i != d0 && i != d1) s2.push_back(x.sizes[i]), t2.push_back(x.strides[i]);
      s2.push_back(len);
      t2.push_back(dstride);
      sizes = s2;
      st = t2;
      break;
    }
    case ViewKind::Alias:
      break;
  }
  return view_of_root(x, sizes, st, offset);
}

}  // namespace ember::ops

namespace ember::detail {

Shape apply_index(const TensorImpl& x, std::span<const TensorIndex> idx, std::vector<ops::ViewOp>& steps) {
  int64_t consumed = 0, ellipses = 0;
  for (const auto& i : idx) {
    if (i.kind == TensorIndex::Kind::Integer || i.kind == TensorIndex::Kind::Slice) ++consumed;
    if (i.kind == TensorIndex::Kind::Ellipsis) ++ellipses;
  }
  EMBER_CHECK(ellipses <= 1, "[index] at most one Ellipsis is allowed");
  EMBER_CHECK(consumed <= x.ndim(), "[index] too many indices ({}) for a tensor of rank {}", consumed, x.ndim());
  int64_t d = 0;  // current dim in the result being built
  for (const auto& i : idx) {
    switch (i.kind) {
      case TensorIndex::Kind::Integer: {
        ops::ViewOp v{ops::ViewKind::Select};
        v.dim = d, v.start = i.integer;
        steps.push_back(v);
        break;
      }
      case TensorIndex::Kind::Slice: {
        ops::ViewOp v{ops::ViewKind::Slice};
        v.dim = d, v.start = i.slice.start, v.length = i.slice.stop, v.step = i.slice.step;
        steps.push_back(v);
        ++d;
        break;
      }
      case TensorIndex::Kind::None: {
        ops::ViewOp v{ops::ViewKind::Unsqueeze};
        v.dim = d;
        steps.push_back(v);
        ++d;
        break;
      }
      case TensorIndex::Kind::Ellipsis:
        d += x.ndim() - consumed;
        break;
      case TensorIndex::Kind::Tensor:  // ops/mixed_index.hpp replaces them by full slices first
        EMBER_FAIL("[index] internal: an index tensor reached basic indexing");
    }
  }
  return {};
}

}  // namespace ember::detail
