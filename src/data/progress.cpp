// ProgressBar (include/ember/progress.hpp).

#include <ember/progress.hpp>
#include <ember/runtime/log.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/ioctl.h>
#include <unistd.h>
#define EMBER_PROGRESS_POSIX 1
#endif

namespace ember {
namespace {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

bool is_terminal(std::FILE* f) {
#ifdef EMBER_PROGRESS_POSIX
  return isatty(fileno(f)) == 1;
#else
  (void)f;
  return false;  // no portable test: stay quiet
#endif
}

int terminal_width(std::FILE* f) {
#ifdef EMBER_PROGRESS_POSIX
  winsize ws{};
  if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
#else
  (void)f;
#endif
  if (const char* c = std::getenv("COLUMNS")) {
    int v = std::atoi(c);
    if (v > 0) return v;
  }
  return 80;
}

std::string rate_text(const ProgressState& s) {
  if (s.step <= 0 || !(s.elapsed > 0)) return fmt::format("?{}/s", s.unit);
  double r = static_cast<double>(s.step) / s.elapsed;
  // Slow loops read better as seconds per step.
  return r >= 1.0 ? fmt::format("{:.2f}{}/s", r, s.unit) : fmt::format("{:.2f}s/{}", 1.0 / r, s.unit);
}

std::string metrics_text(const ProgressState& s, const char* sep) {
  std::string out;
  for (const auto& m : s.metrics) out += fmt::format("{}{}={:.4g}", sep, m.name, m.value);
  return out;
}

std::string counts_text(const ProgressState& s) {
  return s.total > 0 ? fmt::format("{}/{}", s.step, s.total) : fmt::format("{}{}", s.step, s.unit);
}

}  // namespace

std::string format_duration(double seconds) {
  // Beyond ~3000 years (and past int64's range) a clock has nothing useful to show.
  if (!std::isfinite(seconds) || seconds < 0 || seconds >= 1e11) return "--:--";
  auto t = static_cast<int64_t>(seconds);  // whole seconds elapsed, as a clock shows them
  int64_t h = t / 3600, m = t / 60 % 60, sec = t % 60;
  return h > 0 ? fmt::format("{}:{:02}:{:02}", h, m, sec) : fmt::format("{:02}:{:02}", m, sec);
}

std::string format_progress(const ProgressState& s, int width) {
  std::string prefix(s.desc);
  std::string time = format_duration(s.elapsed);
  double frac = 0;
  if (s.total > 0) {
    frac = std::clamp(static_cast<double>(s.step) / static_cast<double>(s.total), 0.0, 1.0);
    prefix += fmt::format("{}{:3d}%", prefix.empty() ? "" : " ", static_cast<int>(std::floor(frac * 100.0)));
    // ETA from the mean time per step so far; unknown before the first step.
    double eta = s.step > 0 ? s.elapsed / static_cast<double>(s.step) * static_cast<double>(s.total - s.step) : -1;
    time += '<';  // appends, not "<" + temporary: GCC 12's false -Wrestrict at -O2
    time += format_duration(s.step >= s.total ? 0.0 : eta);
  }
  std::string suffix = " ";
  suffix += counts_text(s);
  suffix += ' ';
  suffix += time;
  suffix += ' ';
  suffix += rate_text(s);
  suffix += metrics_text(s, " ");
  if (s.total > 0 && width > 0) {
    auto bar_width = static_cast<int64_t>(width) - static_cast<int64_t>(prefix.size() + suffix.size()) - 3;
    if (bar_width >= 10) {
      auto filled = static_cast<int64_t>(std::floor(frac * static_cast<double>(bar_width)));
      std::string bar(static_cast<size_t>(filled), '=');
      if (filled < bar_width) {
        bar += '>';
        bar.append(static_cast<size_t>(bar_width - filled - 1), ' ');
      }
      return prefix + " [" + bar + "]" + suffix;
    }
  }
  std::string line = prefix.empty() ? suffix.substr(1) : prefix + suffix;
  if (width > 0 && line.size() > static_cast<size_t>(width)) line.resize(static_cast<size_t>(width));
  return line;
}

std::string format_progress_summary(const ProgressState& s) {
  std::string head = s.desc.empty() ? std::string() : std::string(s.desc) + " ";
  return head + counts_text(s) + " done in " + format_duration(s.elapsed) + ", " + rate_text(s) +
         metrics_text(s, ", ");
}

ProgressBar::ProgressBar(int64_t total, std::string desc, ProgressOptions options)
    : total_(total), desc_(std::move(desc)), options_(std::move(options)) {
  stream_ = options_.stream() ? options_.stream() : stderr;
  switch (options_.mode()) {
    case ProgressMode::Always: draw_ = true; break;
    case ProgressMode::Never: draw_ = false; break;
    default: draw_ = is_terminal(stream_); break;
  }
  width_ = options_.width() > 0 ? options_.width() : (draw_ ? terminal_width(stream_) : 80);
  start_ = now();
  last_log_ = start_;
  advance(0);  // the empty bar, so that a slow first step shows something
}

ProgressBar::~ProgressBar() { finish(); }

double ProgressBar::now() const { return options_.clock() ? options_.clock()() : steady_seconds(); }

void ProgressBar::record(std::string_view name, double value) {
  for (auto& m : metrics_)
    if (m.name == name) {
      m.sum += value;
      ++m.count;
      return;
    }
  metrics_.push_back({std::string(name), value, 1});
}

void ProgressBar::set_metric(std::string_view name, double value) { record(name, value); }

void ProgressBar::update(double loss) {
  record("loss", loss);
  advance(1);
}

void ProgressBar::update(std::initializer_list<std::pair<std::string_view, double>> metrics) {
  for (const auto& [name, value] : metrics) record(name, value);
  advance(1);
}

void ProgressBar::step(int64_t n) { advance(n); }

std::vector<ProgressMetric> ProgressBar::metrics() const {
  std::vector<ProgressMetric> out;
  out.reserve(metrics_.size());
  for (const auto& m : metrics_) out.push_back({m.name, m.sum / static_cast<double>(m.count)});
  return out;
}

ProgressState ProgressBar::state(double t, std::vector<ProgressMetric>& scratch) const {
  scratch = metrics();
  ProgressState s;
  s.desc = desc_;
  s.step = step_;
  s.total = total_;
  s.elapsed = t - start_;
  s.metrics = scratch;
  s.unit = options_.unit();
  return s;
}

void ProgressBar::advance(int64_t n) {
  if (finished_) return;
  step_ += n;
  bool logging = detail::log_enabled(LogLevel::Info);
  if (!draw_ && !logging) return;  // nothing to show: skip even the clock
  double t = now();
  std::vector<ProgressMetric> scratch;
  bool last = total_ > 0 && step_ >= total_ && step_ - n < total_;  // this call reached the end
  if (draw_ && (t - last_draw_ >= options_.min_interval() || last)) {
    std::string line = format_progress(state(t, scratch), width_);
    // \r returns to the line's start; ESC[K clears what a longer previous line left.
    std::fprintf(stream_, "\r%s\x1b[K", line.c_str());
    std::fflush(stream_);
    last_draw_ = t;
  }
  if (logging && n > 0 && t - last_log_ >= options_.log_interval()) {
    detail::log(LogLevel::Info, format_progress(state(t, scratch), 0).c_str());
    last_log_ = t;
  }
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  bool logging = detail::log_enabled(LogLevel::Info);
  if (!draw_ && !logging) return;
  std::vector<ProgressMetric> scratch;
  std::string summary = format_progress_summary(state(now(), scratch));
  if (draw_) {
    // The summary replaces the bar, so each finished loop leaves one line.
    std::fprintf(stream_, "\r%s\x1b[K\n", summary.c_str());
    std::fflush(stream_);
  }
  if (logging) detail::log(LogLevel::Info, summary.c_str());
}

}  // namespace ember
