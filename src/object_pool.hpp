#pragma once
// Per-thread free lists of fixed-size objects (TensorImpl, Storage), so that a warm loop of
// ops performs no operator new. An object freed on another thread joins that thread's
// list; each list frees its memory when its thread exits. After that (a static or
// thread_local Tensor destroyed at exit) objects come from and go to operator new/delete.

#include <cstddef>
#include <new>
#include <utility>

namespace ember::detail {

template <class T>
class ObjectPool {
 public:
  template <class... Args>
  static T* create(Args&&... args) {
    void* mem;
    Local* l = ended ? nullptr : &local();
    if (l && l->head) {
      mem = l->head;
      l->head = l->head->next;
      --l->count;
    } else {
      mem = ::operator new(sizeof(Slot));
    }
    // Default-initialise when there are no arguments: `T()` would zero the whole object first
    // (a 200-byte memset per TensorImpl) before the member initialisers run anyway.
    if constexpr (sizeof...(Args) == 0)
      return new (mem) T;
    else
      return new (mem) T(std::forward<Args>(args)...);
  }
  static void destroy(T* p) noexcept {
    p->~T();
    if (ended) {
      ::operator delete(static_cast<void*>(p));
      return;
    }
    Local& l = local();
    if (l.count >= kMaxCached) {
      ::operator delete(static_cast<void*>(p));
      return;
    }
    auto* node = reinterpret_cast<Node*>(p);
    node->next = l.head;
    l.head = node;
    ++l.count;
  }

 private:
  struct Node {
    Node* next;
  };
  union Slot {
    Node node;
    alignas(T) unsigned char bytes[sizeof(T)];
  };
  static constexpr size_t kMaxCached = 1 << 16;
  struct Local {
    Node* head = nullptr;
    size_t count = 0;
    ~Local() {
      while (head) {
        Node* n = head->next;
        ::operator delete(static_cast<void*>(head));
        head = n;
      }
      ended = true;
    }
  };
  /// This thread's list has been destroyed (trivially destructible: readable at exit).
  static inline thread_local bool ended = false;
  static Local& local() {
    static thread_local Local l;
    return l;
  }
};

}  // namespace ember::detail
