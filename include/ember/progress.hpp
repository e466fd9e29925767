#pragma once
/// A progress bar for long loops: steps, percentage, elapsed time and ETA, throughput, and the
/// running mean of any named metric (the loss, an accuracy).
///
///   ProgressBar bar(loader.size(), "train");
///   for (auto& batch : loader) bar.update(train_step(batch));   // the loss of this step
///   // train  42% [=======>          ] 42/100 00:12<00:16 3.51it/s loss=0.4321
///
/// It draws on stderr, redrawing one line at most every min_interval seconds, and only when
/// stderr is a terminal: piped or redirected to a file it prints nothing, not even the summary
/// line it ends with on a terminal. When a log sink is installed (ember::set_log_sink,
/// enable_default_logging) it also logs a progress line every log_interval seconds and the
/// summary, whether or not stderr is a terminal, so batch jobs keep a record.
///
/// Lives here rather than under data/ because it serves any long loop (training, evaluation,
/// conversion), depends on nothing but the log facility, and includes no tensor header.
/// A ProgressBar is used from one thread.

#include <ember/nn/options.hpp>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember {

/// When to draw: on a terminal only (Auto), or always / never (tests, forced output).
enum class ProgressMode { Auto, Always, Never };

/// Seconds on a monotonic clock; replaceable for tests.
using ProgressClock = double (*)();
/// Where a bar draws.
using ProgressStream = std::FILE*;

/// ProgressBar settings, with fluent setters.
struct ProgressOptions {
  /// Least time between two redraws, in seconds (the last step always draws).
  EMBER_ARG(double, min_interval) = 0.1;
  /// Columns of the line; 0 asks the terminal (else $COLUMNS, else 80).
  EMBER_ARG(int, width) = 0;
  /// What one step is called in the throughput ("it" gives it/s).
  EMBER_ARG(std::string, unit) = "it";
  /// Least time between two logged progress lines, in seconds, when a log sink is installed.
  EMBER_ARG(double, log_interval) = 30.0;
  EMBER_ARG(ProgressMode, mode) = ProgressMode::Auto;
  /// Where to draw; null means stderr.
  EMBER_ARG(ProgressStream, stream) = nullptr;
  /// The time source; null means std::chrono::steady_clock.
  EMBER_ARG(ProgressClock, clock) = nullptr;
};

/// A named metric and the value shown for it.
struct ProgressMetric {
  std::string name;
  double value = 0;
};

/// Everything one progress line shows.
struct ProgressState {
  std::string_view desc;
  int64_t step = 0;
  int64_t total = 0;  ///< <= 0: unknown (no bar, percentage or ETA)
  double elapsed = 0;  ///< seconds since the start
  std::span<const ProgressMetric> metrics;
  std::string_view unit = "it";
};

/// Renders the progress line of `s`, at most `width` columns, e.g.
/// "train  42% [=======>          ] 42/100 00:12<00:16 3.51it/s loss=0.4321". The bar takes
/// the columns the rest leaves (at least 10, else it is left out). A pure function.
std::string format_progress(const ProgressState& s, int width);
/// Renders the summary line: "train 100/100 done in 00:28, 3.57it/s, loss=0.3012".
std::string format_progress_summary(const ProgressState& s);
/// Seconds as MM:SS, or H:MM:SS from an hour up.
std::string format_duration(double seconds);

class ProgressBar {
 public:
  /// A bar for `total` steps (<= 0 if unknown) named `desc`.
  explicit ProgressBar(int64_t total, std::string desc = "", ProgressOptions options = {});
  /// Ends the bar (finish()).
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// One step whose loss was `loss` (shown as the running mean "loss").
  void update(double loss);
  /// One step with these metric values: bar.update({{"loss", l}, {"acc", a}}).
  void update(std::initializer_list<std::pair<std::string_view, double>> metrics);
  /// `n` steps with no metric.
  void step(int64_t n = 1);
  /// Records a metric value without a step.
  void set_metric(std::string_view name, double value);
  /// Draws the final line and, on a terminal, the summary line (once; later calls do nothing).
  void finish();

  int64_t count() const { return step_; }
  int64_t total() const { return total_; }
  /// Whether this bar draws (a terminal, or mode Always).
  bool drawing() const { return draw_; }
  /// The running mean of each metric, in the order first seen.
  std::vector<ProgressMetric> metrics() const;

 private:
  struct Running {
    std::string name;
    double sum = 0;
    int64_t count = 0;
  };
  void record(std::string_view name, double value);
  void advance(int64_t n);
  double now() const;
  ProgressState state(double t, std::vector<ProgressMetric>& scratch) const;

  int64_t total_;
  std::string desc_;
  ProgressOptions options_;
  std::FILE* stream_;
  bool draw_ = false;
  bool finished_ = false;
  int width_ = 80;
  int64_t step_ = 0;
  double start_ = 0, last_draw_ = -1e300, last_log_ = 0;
  std::vector<Running> metrics_;
};

}  // namespace ember
