#include <ember/runtime/log.hpp>

#include <spdlog/spdlog.h>

#include <atomic>

namespace ember {
namespace {
std::atomic<LogSink> g_sink{nullptr};
std::atomic<int> g_level{static_cast<int>(LogLevel::Off)};

void spdlog_sink(LogLevel level, const char* message) {
  switch (level) {
    case LogLevel::Debug: spdlog::debug("ember: {}", message); break;
    case LogLevel::Info: spdlog::info("ember: {}", message); break;
    case LogLevel::Warn: spdlog::warn("ember: {}", message); break;
    default: spdlog::error("ember: {}", message); break;
  }
}
}  // namespace

void set_log_sink(LogSink sink, LogLevel min_level) {
  g_sink = sink;
  g_level = sink ? static_cast<int>(min_level) : static_cast<int>(LogLevel::Off);
}

void enable_default_logging(LogLevel min_level) {
  if (min_level == LogLevel::Debug) spdlog::set_level(spdlog::level::debug);
  set_log_sink(&spdlog_sink, min_level);
}

namespace detail {
bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }
void log(LogLevel level, const char* message) {
  LogSink s = g_sink.load();
  if (s && log_enabled(level)) s(level, message);
}
}  // namespace detail

}  // namespace ember
