#include <ember/core/error.hpp>
#include <ember/profiler/profile.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "atomic_file.hpp"

namespace ember::profiler {
namespace detail {

std::atomic<int> g_active_profiles{0};

namespace {
std::mutex g_mutex;
std::vector<Event> g_events;
}  // namespace

void record(Event&& e) {
  std::lock_guard<std::mutex> l(g_mutex);
  g_events.push_back(std::move(e));
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t thread_id() {
  // Numbered in order of first use: hashes of thread ids could collide in the trace.
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

namespace {
/// Per thread: for each op being recorded, the time of the ops nested in it so far.
thread_local std::vector<int64_t> t_nested_ns;
}  // namespace

uint32_t enter() {
  t_nested_ns.push_back(0);
  return static_cast<uint32_t>(t_nested_ns.size() - 1);
}

int64_t nested_ns() { return t_nested_ns.back(); }

void leave(int64_t elapsed_ns) {
  t_nested_ns.pop_back();
  if (!t_nested_ns.empty()) t_nested_ns.back() += elapsed_ns;
}

}  // namespace detail

Profile::Profile() {
  std::lock_guard<std::mutex> l(detail::g_mutex);
  first_event_ = detail::g_events.size();
  detail::g_active_profiles.fetch_add(1);
}

Profile::~Profile() {
  std::lock_guard<std::mutex> l(detail::g_mutex);
  // The last scope frees the events' memory too (clear() would keep the capacity).
  if (detail::g_active_profiles.fetch_sub(1) == 1) std::vector<Event>().swap(detail::g_events);
}

std::vector<Event> Profile::events() const {
  std::lock_guard<std::mutex> l(detail::g_mutex);
  return std::vector<Event>(detail::g_events.begin() + static_cast<std::ptrdiff_t>(first_event_),
                            detail::g_events.end());
}

std::string Profile::summary() const {
  struct Row {
    int64_t calls = 0, self = 0, total = 0;
  };
  std::map<std::string, Row> rows;
  int64_t all = 0;
  size_t width = 2;
  for (const Event& e : events()) {
    Row& r = rows[e.name];
    ++r.calls;
    r.self += e.self_ns;
    r.total += e.duration_ns;
    all += e.self_ns;
    width = std::max(width, std::char_traits<char>::length(e.name));
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.self > b.second.self; });
  std::string s = fmt::format("{:<{}} {:>8} {:>12} {:>12} {:>12} {:>7}\n", "op", width, "calls", "self ms", "total ms",
                              "mean us", "share");
  for (const auto& [name, r] : sorted)
    s += fmt::format("{:<{}} {:>8} {:>12.3f} {:>12.3f} {:>12.3f} {:>6.1f}%\n", name, width, r.calls, r.self / 1e6,
                     r.total / 1e6, r.self / 1e3 / static_cast<double>(r.calls), all ? 100.0 * r.self / all : 0.0);
  return s;
}

void Profile::write_chrome_trace(const std::string& path) const {
  std::string json = "{\"traceEvents\": [\n";
  bool first = true;
  for (const Event& e : events()) {
    if (!first) json += ",\n";
    first = false;
    json += fmt::format(
        "{{\"name\": \"{}\", \"ph\": \"X\", \"ts\": {:.3f}, \"dur\": {:.3f}, \"pid\": 0, \"tid\": {}, "
        "\"args\": {{\"shapes\": \"{}\", \"dtype\": \"{}\", \"device\": \"{}\"{}}}}}",
        e.name, e.start_ns / 1e3, e.duration_ns / 1e3, e.thread, e.shapes, dtype_name(e.dtype), e.device.str(),
        e.failed ? ", \"failed\": true" : "");
  }
  json += "\n]}\n";
  ember::detail::write_file_atomic(path, json.data(), json.size(), "write_chrome_trace");
}

}  // namespace ember::profiler
