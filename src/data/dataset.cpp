// TensorDataset (include/ember/data/dataset.hpp).

#include <ember/data/dataset.hpp>

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

}  // namespace ember::data
