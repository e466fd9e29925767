// detail::repeat_numbers (include/ember/data/dataloader.hpp): which samples of an epoch repeat,
// so that each copy draws its own augmentation (Note [Per-sample seeds] in data/generator.hpp).

#include <ember/data/dataloader.hpp>

#include <algorithm>
#include <unordered_map>

namespace ember::data {

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
    for (size_t p = 0; p < n; ++p) {
      int64_t i = indices[p];
      if (i >= 0 && i < size) note(p, seen[i]++);
    }
  }
  return out;
}

}  // namespace ember::data
