// The per-thread cache of parameter casts made under an AutocastGuard with grad mode off
// (include/ember/autocast/layer.hpp). Entries hold their source, so a pointer can never be
// reused by another tensor while it is cached; an entry is valid while its source keeps the
// same storage (Module::to swaps storages under the same TensorImpl) at the same version, with
// the same geometry and dtype (set_data and in-place view ops change those without a write).
// Entries whose source only the cache still holds (a model that was replaced inside a
// long-lived guard) are dropped whenever the cache has doubled since the last sweep.

#include <ember/autocast/layer.hpp>
#include <ember/autograd/node.hpp>

#include <unordered_map>

namespace ember::autocast::detail {
namespace {

struct Entry {
  CastRef src, cast;
  ember::detail::Ref<ember::detail::Storage> storage;  ///< held: its address cannot be reused meanwhile
  uint32_t version;
  // The source's geometry and dtype when cast: set_data (and module.to) may give it others over
  // the same storage without a version bump.
  Shape sizes, strides;
  int64_t offset;
  DType dtype;
};
struct Cache {
  std::unordered_map<const TensorImpl*, Entry> entries;
  size_t swept_at = 16;  ///< size that triggers the next sweep
};
thread_local Cache t_cache;

uint32_t version_of(const TensorImpl& t) { return t.storage->version.load(std::memory_order_relaxed); }

void sweep(Cache& c) {
  for (auto it = c.entries.begin(); it != c.entries.end();)
    it = it->second.src.use_count() == 1 ? c.entries.erase(it) : std::next(it);
  c.swept_at = std::max<size_t>(16, 2 * c.entries.size());
}

}  // namespace

bool cacheable(const TensorImpl& src) {
  return autograd::requires_grad(src) && autograd::is_leaf(src) && src.storage && src.storage->versioned;
}

const TensorImpl* find_cast(const TensorImpl& src, DType dtype) {
  auto it = t_cache.entries.find(&src);
  if (it == t_cache.entries.end()) return nullptr;
  const Entry& e = it->second;
  if (e.cast->dtype == dtype && e.storage.get() == src.storage.get() && e.version == version_of(src) &&
      e.dtype == src.dtype && e.offset == src.offset && e.sizes == src.sizes && e.strides == src.strides)
    return e.cast.get();
  t_cache.entries.erase(it);  // written in place, given new storage or geometry, or cast to another dtype
  return nullptr;
}

void keep_cast(const TensorImpl& src, const CastRef& cast) {
  if (t_cache.entries.size() >= t_cache.swept_at) sweep(t_cache);
  t_cache.entries.insert_or_assign(
      &src, Entry{CastRef::share(const_cast<TensorImpl*>(&src)), cast, src.storage, version_of(src), src.sizes,
                  src.strides, src.offset, src.dtype});
}

void clear_cache() { t_cache.entries.clear(); }

}  // namespace ember::autocast::detail
