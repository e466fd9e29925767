#pragma once
/// Ember prints nothing unless asked. Install a sink to receive its log lines (which kernel
/// build was chosen, thread-pool changes, slow fallbacks), or enable the default spdlog sink.

namespace ember {

enum class LogLevel : int { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

/// Receives each message at or above the threshold; called on the thread that logs.
using LogSink = void (*)(LogLevel level, const char* message);

/// Installs `sink` (nullptr: silence) for messages at `min_level` and above.
void set_log_sink(LogSink sink, LogLevel min_level = LogLevel::Info);

/// Routes Ember's messages to spdlog's default logger.
void enable_default_logging(LogLevel min_level = LogLevel::Info);

namespace detail {
bool log_enabled(LogLevel level);
void log(LogLevel level, const char* message);
}  // namespace detail

}  // namespace ember
