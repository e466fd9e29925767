// The per-thread cache of parameter casts made under an AutocastGuard with grad mode off
// (include/ember/autocast/layer.hpp). A model has tens to hundreds of parameters, so a vector
// searched from the most recent entry is enough; entries hold their source, so a pointer can
// never be reused by another tensor while it is cached.

#include <ember/autocast/layer.hpp>
#include <ember/autograd/node.hpp>

#include <vector>

namespace ember::autocast::detail {
namespace {

struct Entry {
  CastRef src, cast;
  uint32_t version;
};
thread_local std::vector<Entry> t_cache;

uint32_t version_of(const TensorImpl& t) { return t.storage->version.load(std::memory_order_relaxed); }

}  // namespace

bool cacheable(const TensorImpl& src) {
  return autograd::requires_grad(src) && autograd::is_leaf(src) && src.storage && src.storage->versioned;
}

const TensorImpl* find_cast(const TensorImpl& src, DType dtype) {
  for (size_t i = t_cache.size(); i-- > 0;) {
    Entry& e = t_cache[i];
    if (e.src.get() != &src || e.cast->dtype != dtype) continue;
    if (e.version == version_of(src)) return e.cast.get();
    t_cache.erase(t_cache.begin() + static_cast<std::ptrdiff_t>(i));  // written in place since
    return nullptr;
  }
  return nullptr;
}

void keep_cast(const TensorImpl& src, const CastRef& cast) {
  t_cache.push_back({CastRef::share(const_cast<TensorImpl*>(&src)), cast, version_of(src)});
}

void clear_cache() { t_cache.clear(); }

}  // namespace ember::autocast::detail
