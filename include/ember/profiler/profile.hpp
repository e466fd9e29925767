#pragma once
/// The Profile layer: inside an `ember::profiler::Profile` scope every op that goes through the
/// dispatcher records its name, input shapes, dtype, device and duration; the scope prints a
/// summary table sorted by self time and writes a Chrome-trace JSON file (open it in Perfetto
/// or chrome://tracing). Outside a scope the layer costs one predictable branch per op.
///
/// Ops may run ops (an in-place op on a tensor with a history runs its out-of-place form and
/// a copy): each event has its nesting depth and its self time (its duration less its nested
/// ops'), so the summary's self times add up to the profiled time once. A CUDA op's duration is
/// its launch, not its kernel (nothing synchronises). Factories that fill new memory without an
/// op (randn, rand, arange) are not recorded. Events take ~100 bytes each while any scope is
/// open; the last scope to close frees them.
///
///   {
///     ember::profiler::Profile prof;
///     model_step();
///     fmt::print("{}", prof.summary());
///     prof.write_chrome_trace("step.json");
///   }

#include <ember/core/tensor_impl.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ember::profiler {

/// One recorded op call.
struct Event {
  const char* name;
  std::string shapes;  ///< input shapes, e.g. "[2, 3], [3]"
  DType dtype;
  Device device;
  int64_t start_ns;
  int64_t duration_ns;
  uint64_t thread;       ///< small numbers, one per thread, in order of first use
  int64_t self_ns = 0;   ///< duration_ns less that of the ops run inside this one
  uint32_t depth = 0;    ///< ops of this thread this one ran inside
  bool failed = false;   ///< the op threw
};

namespace detail {
extern std::atomic<int> g_active_profiles;
void record(Event&& e);
int64_t now_ns();
uint64_t thread_id();
/// Opens an op's record on this thread; returns its depth.
uint32_t enter();
/// The time of the ops nested so far in the innermost open record.
int64_t nested_ns();
/// Closes it, `elapsed_ns` after it opened (its bookkeeping included): the parent's nested
/// time grows by that.
void leave(int64_t elapsed_ns);

inline void describe(std::string& s, DType& t, Device& d, bool& first, const ember::detail::TensorImpl& x) {
  if (!s.empty()) s += ", ";
  s += x.sizes.str();
  if (first) t = x.dtype, d = x.device(), first = false;
}
inline void describe(std::string& s, DType& t, Device& d, bool& first, const ember::detail::TensorImpl* x) {
  if (x) describe(s, t, d, first, *x);
}
// Optional operands come as `&tensor.impl()`, a non-const pointer: without this overload the
// catch-all below is the better match and they went unlisted (as in the autograd layer).
inline void describe(std::string& s, DType& t, Device& d, bool& first, ember::detail::TensorImpl* x) {
  if (x) describe(s, t, d, first, *x);
}
inline void describe(std::string& s, DType& t, Device& d, bool& first,
                     std::span<const ember::detail::TensorImpl* const> xs) {
  for (const auto* x : xs) describe(s, t, d, first, x);
}
template <class T>
inline void describe(std::string&, DType&, Device&, bool&, const T&) {}
}  // namespace detail

/// A profiling scope; scopes may nest and may be open on several threads.
class Profile {
 public:
  Profile();
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  /// Events recorded since this scope opened (all threads).
  std::vector<Event> events() const;
  /// A table: op, calls, self ms, total ms, mean (self) us, share of self time; sorted by
  /// self time. Total counts nested calls of the same op twice (an op inside itself).
  std::string summary() const;
  /// Writes the events as Chrome-trace JSON, atomically (temporary file, then rename).
  void write_chrome_trace(const std::string& path) const;

 private:
  size_t first_event_;
};

/// The layer itself. It sits first in DefaultPolicy's chain.
struct ProfileLayer {
  template <class P, class Next>
  struct Impl {
    template <class Op, class... A>
    static decltype(auto) call(const Op& op, A&&... a) {
      if (EMBER_LIKELY(detail::g_active_profiles.load(std::memory_order_relaxed) == 0))
        return Next::call(op, std::forward<A>(a)...);
      const int64_t opened = detail::now_ns();
      Event e{op.name(), {}, DType::F32, kCPU, 0, 0, detail::thread_id()};
      bool first = true;
      (detail::describe(e.shapes, e.dtype, e.device, first, a), ...);
      e.depth = detail::enter();
      struct Finish {
        Event& e;
        int64_t opened;
        int uncaught;
        ~Finish() {
          e.duration_ns = detail::now_ns() - e.start_ns;
          e.self_ns = e.duration_ns - detail::nested_ns();
          e.failed = std::uncaught_exceptions() > uncaught;
          detail::record(std::move(e));
          // The parent's self time also loses this op's bookkeeping: from `opened`, through
          // the shapes' formatting, to the record just stored.
          detail::leave(detail::now_ns() - opened);
        }
      } finish{e, opened, std::uncaught_exceptions()};
      e.start_ns = detail::now_ns();  // after the shapes are formatted
      return Next::call(op, std::forward<A>(a)...);
    }
  };
};

}  // namespace ember::profiler
