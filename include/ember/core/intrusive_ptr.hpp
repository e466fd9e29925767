#pragma once
/// A minimal intrusive reference-counted pointer. T has an atomic `refcount_` member and
/// a free function `release(T*)` (found by ADL) that destroys it when the count hits 0.

#include <atomic>
#include <utility>

namespace ember::detail {

template <class T>
class Ref {
 public:
  Ref() = default;
  /// Adopts a pointer whose count already includes this reference.
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  /// Takes a new reference to p.
  static Ref share(T* p) {
    if (p) p->refcount_.fetch_add(1, std::memory_order_relaxed);
    return adopt(p);
  }
  Ref(const Ref& o) : p_(o.p_) {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(const Ref& o) {
    Ref(o).swap(*this);
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    Ref(std::move(o)).swap(*this);
    return *this;
  }
  ~Ref() { reset(); }

  void reset() {
    // A count of 1 is this reference alone: no other thread holds one it could copy, so the
    // object goes without the locked decrement (a small op's result drops two such counts,
    // its tensor's and its storage's). The acquire load pairs with the release half of other
    // owners' earlier decrements, as the fetch_sub would.
    if (p_ && (p_->refcount_.load(std::memory_order_acquire) == 1 ||
               p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1))
      release(p_);
    p_ = nullptr;
  }
  void swap(Ref& o) noexcept { std::swap(p_, o.p_); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  int use_count() const { return p_ ? p_->refcount_.load(std::memory_order_relaxed) : 0; }
  /// Gives up ownership without decrementing.
  T* leak() { return std::exchange(p_, nullptr); }

 private:
  T* p_ = nullptr;
};

}  // namespace ember::detail
