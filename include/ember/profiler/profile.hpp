#pragma once
/// The Profile layer: inside an `ember::profiler::Profile` scope every op records its name,
/// input shapes, dtype, device and duration; the scope prints a summary table sorted by total
/// time and writes a Chrome-trace JSON file (open it in Perfetto or chrome://tracing).
/// Outside a scope the layer costs one predictable branch per op.
///
///   {
///     ember::profiler::Profile prof;
///     model_step();
///     fmt::print("{}", prof.summary());
///     prof.write_chrome_trace("step.json");
///   }

#include <ember/core/tensor_impl.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
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
  uint64_t thread;
};

namespace detail {
extern std::atomic<int> g_active_profiles;
void record(Event&& e);
int64_t now_ns();
uint64_t thread_id();

inline void describe(std::string& s, DType& t, Device& d, bool& first, const ember::detail::TensorImpl& x) {
  if (!s.empty()) s += ", ";
  s += x.sizes.str();
  if (first) t = x.dtype, d = x.device(), first = false;
}
inline void describe(std::string& s, DType& t, Device& d, bool& first, const ember::detail::TensorImpl* x) {
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
  /// A table: op, calls, total ms, mean us, share; sorted by total time.
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
      Event e{op.name(), {}, DType::F32, kCPU, detail::now_ns(), 0, detail::thread_id()};
      bool first = true;
      (detail::describe(e.shapes, e.dtype, e.device, first, a), ...);
      struct Finish {
        Event& e;
        ~Finish() {
          e.duration_ns = detail::now_ns() - e.start_ns;
          detail::record(std::move(e));
        }
      } finish{e};
      return Next::call(op, std::forward<A>(a)...);
    }
  };
};

}  // namespace ember::profiler
