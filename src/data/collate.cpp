// Batch memory of its own for collated batches: see Note [Batches cross threads] in
// include/ember/data/collate.hpp.

#include <ember/data/collate.hpp>

#include <cstdlib>
#include <cstring>

namespace ember::data::detail {
namespace {

void free_owned(void*, void* data) { std::free(data); }

/// A contiguous CPU tensor of `shape` whose memory is released with std::free, never cached.
Tensor empty_owned(const Shape& shape, DType dtype) {
  int64_t n = checked_numel(shape, "collate");
  // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
  size_t bytes = static_cast<size_t>(n * itemsize(dtype));
  size_t rounded = (bytes + EMBER_ALIGNMENT - 1) / EMBER_ALIGNMENT * EMBER_ALIGNMENT;
  void* p = std::aligned_alloc(EMBER_ALIGNMENT, rounded == 0 ? EMBER_ALIGNMENT : rounded);
  EMBER_CHECK(p != nullptr, "[collate] out of memory allocating a batch of {} bytes (shape {})", bytes, shape);
  Tensor t = from_blob(p, shape, TensorOptions(dtype), &free_owned, nullptr);
  t.impl().storage->movable = true;  // Ember's own memory: resize_ may move it
  return t;
}

bool is_owned(const Tensor& t) { return t.impl().storage->deleter == &free_owned; }

}  // namespace

Tensor stack_owned(const std::vector<Tensor>& rows, const std::string& what) {
  EMBER_CHECK(!rows.empty(), "[collate] {}: no examples to stack", what);
  const Tensor& first = rows[0];
  for (size_t i = 1; i < rows.size(); ++i) {
    EMBER_CHECK(rows[i].sizes() == first.sizes(),
                "[collate] {}: example {} of the batch has shape {}, example 0 has {}; stacking needs one shape (pass "
                "a collate function for ragged examples)",
                what, i, rows[i].sizes(), first.sizes());
    EMBER_CHECK(rows[i].dtype() == first.dtype(), "[collate] {}: example {} of the batch is {}, example 0 is {}", what,
                i, rows[i].dtype(), first.dtype());
    EMBER_CHECK(rows[i].device() == first.device(), "[collate] {}: example {} of the batch is on {}, example 0 on {}",
                what, i, rows[i].device(), first.device());
  }
  if (!first.is_cpu()) return stack(rows, 0);  // device memory is not the per-thread CPU cache
  Shape shape;
  shape.push_back(static_cast<int64_t>(rows.size()));
  for (int64_t d : first.sizes()) shape.push_back(d);
  Tensor out = empty_owned(shape, first.dtype());
  auto row_bytes = static_cast<size_t>(first.nbytes());
  auto* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Tensor& r = rows[i];
    if (r.is_contiguous())
      std::memcpy(dst + i * row_bytes, r.raw_data(), row_bytes);
    else
      out.select(0, static_cast<int64_t>(i)).copy_(r);
  }
  return out;
}

namespace {
/// A [B] tensor of dtype `dtype` in memory of its own, holding `values`' bytes.
template <class T>
Tensor vector_owned(const std::vector<T>& values, DType dtype) {
  Tensor out = empty_owned({static_cast<int64_t>(values.size())}, dtype);
  if (!values.empty()) std::memcpy(out.raw_data(), values.data(), values.size() * sizeof(T));
  return out;
}
}  // namespace

Tensor numbers_owned(const std::vector<int64_t>& values) { return vector_owned(values, DType::I64); }
Tensor numbers_owned(const std::vector<double>& values) { return vector_owned(values, DType::F64); }
Tensor bools_owned(const std::vector<uint8_t>& values) { return vector_owned(values, DType::Bool); }

Tensor own_memory(const Tensor& t) {
  if (!t.defined() || !t.is_cpu() || is_owned(t)) return t;
  // Memory the user supplied through from_blob is not the cache either; leave it alone.
  if (t.impl().storage->capacity == 0) return t;
  Tensor out = empty_owned(t.sizes(), t.dtype());
  out.copy_(t);
  return out;
}

}  // namespace ember::data::detail
