// TensorDataset (include/ember/data/dataset.hpp) and the DataLoader's repeat numbers.

#include <ember/data/dataloader.hpp>
#include <ember/data/dataset.hpp>

#include <algorithm>
#include <unordered_map>

namespace ember::data {

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  EMBER_CHECK(!tensors_.empty(), "[TensorDataset] needs at least one tensor");
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    EMBER_CHECK(t.defined(), "[TensorDataset] tensor {} is undefined", k);
    EMBER_CHECK(t.dim() >= 1, "[TensorDataset] tensor {} is 0-d; each tensor needs a first dim of examples", k);
    EMBER_CHECK(t.size(0) == tensors_[0].size(0),
                "[TensorDataset] tensor {} has {} rows (shape {}) but tensor 0 has {} (shape {}); all must share dim 0",
                k, t.size(0), t.sizes(), tensors_[0].size(0), tensors_[0].sizes());
  }
  size_ = tensors_[0].size(0);
}

std::vector<Tensor> TensorDataset::get(int64_t index) const {
  EMBER_CHECK(index >= 0 && index < size_, "[TensorDataset] index {} is out of range for {} examples", index, size_);
  std::vector<Tensor> row;
  row.reserve(tensors_.size());
  for (const Tensor& t : tensors_) row.push_back(t.select(0, index));
  return row;
}

std::vector<uint32_t> detail::repeat_numbers(const std::vector<int64_t>& indices, int64_t size) {
  std::vector<uint32_t> out;
  const size_t n = indices.size();
  auto note = [&](size_t p, uint32_t repeat) {
    if (repeat == 0) return;
    if (out.empty()) out.assign(n, 0);
    out[p] = repeat;
  };
  if (n < 2) return out;
  if (size <= 4 * static_cast<int64_t>(n) + 4096) {
    // A count per dataset index when the dataset is not much larger than the list.
    std::vector<uint32_t> seen(static_cast<size_t>(std::max<int64_t>(size, 0)), 0);
    for (size_t p = 0; p < n; ++p) {
      int64_t i = indices[p];
      if (i >= 0 && i < size) note(p, seen[static_cast<size_t>(i)]++);
    }
  } else {
    std::unordered_map<int64_t, uint32_t> seen;
    seen.reserve(n);
    for (size_t p = 0; p < n; ++p) note(p, seen[indices[p]]++);
  }
  return out;
}

}  // namespace ember::data
