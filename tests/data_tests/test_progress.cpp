// ProgressBar: the line formatting (a pure function, checked against hand-written lines),
// silence when stderr is not a terminal, rate-limited redraws, the summary, and logging.

#include "data_test_util.hpp"

#include <ember/progress.hpp>
#include <ember/runtime/log.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace test_progress {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

double g_fake_now = 0;
double fake_clock() { return g_fake_now; }

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  int c;
  while ((c = std::fgetc(f)) != EOF) s += static_cast<char>(c);
  return s;
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

std::vector<std::string> g_logged;
void capture_sink(LogLevel, const char* message) { g_logged.emplace_back(message); }

}  // namespace

TEST_CASE("progress: format_progress renders counts, bar, times, rate and metrics") {
  std::vector<ProgressMetric> m{{"loss", 0.43214}, {"acc", 0.9}};
  ProgressState s;
  s.desc = "train";
  s.step = 42;
  s.total = 100;
  s.elapsed = 12.0;
  s.metrics = m;
  // prefix "train  42%" (10) + " [" + bar + "]" + suffix (49): bar = 80 - 59 - 3 = 18 cells,
  // floor(0.42 * 18) = 7 filled. ETA = 12 / 42 * 58 = 16.6 s -> 00:16; rate 3.50it/s.
  std::string expect = "train  42% [=======>           ] 42/100 00:12<00:16 3.50it/s loss=0.4321 acc=0.9";
  CHECK(format_progress(s, 80) == expect);
  CHECK(format_progress(s, 80).size() == 80);
  // Too narrow for a 10-cell bar: no bar, cut to the width.
  std::string unbarred = "train  42% 42/100 00:12<00:16 3.50it/s loss=0.4321 acc=0.9";
  CHECK(format_progress(s, 50) == unbarred.substr(0, 50));
  // Width 0: no bar, no limit (the form that is logged).
  CHECK(format_progress(s, 0) == "train  42% 42/100 00:12<00:16 3.50it/s loss=0.4321 acc=0.9");

  // Start: no rate, no ETA; the end: a full bar, ETA 0.
  ProgressState z;
  z.total = 10;
  z.elapsed = 0;
  CHECK(format_progress(z, 0) == "  0% 0/10 00:00<--:-- ?it/s");
  CHECK(format_progress(z, 40) == "  0% [>         ] 0/10 00:00<--:-- ?it/s");
  z.step = 10;
  z.elapsed = 3725;
  CHECK(format_progress(z, 50) == "100% [============] 10/10 1:02:05<00:00 372.50s/it");
  CHECK(format_progress(z, 40) == "100% 10/10 1:02:05<00:00 372.50s/it");  // no room for 10 cells
  // Unknown total: a count; slow loops show seconds per step.
  ProgressState u;
  u.desc = "eval";
  u.step = 3;
  u.elapsed = 7.5;
  u.unit = "batch";
  CHECK(format_progress(u, 80) == "eval 3batch 00:07 2.50s/batch");

  s.step = 100;
  s.elapsed = 28.0;
  CHECK(format_progress_summary(s) == "train 100/100 done in 00:28, 3.57it/s, loss=0.4321, acc=0.9");
  CHECK(format_duration(59.99) == "00:59");
  CHECK(format_duration(3600) == "1:00:00");
  CHECK(format_duration(-1) == "--:--");
}

TEST_CASE("progress: prints nothing when stderr is not a terminal") {
  data_test::TempDir dir;
  std::string path = dir.file("stderr.txt");
  std::fflush(stderr);
  int saved = dup(2);
  REQUIRE(saved >= 0);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(dup2(fd, 2) == 2);
  close(fd);
  bool drew;
  {
    ProgressBar bar(5, "quiet");
    drew = bar.drawing();
    for (int i = 0; i < 5; ++i) bar.update(0.5);
    bar.finish();
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  CHECK_FALSE(drew);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  CHECK(read_all(f).empty());
  std::fclose(f);

  // And Never stays silent even when forced onto a stream.
  std::FILE* t = std::tmpfile();
  {
    ProgressBar bar(3, "never", ProgressOptions().mode(ProgressMode::Never).stream(t));
    bar.step(3);
  }
  CHECK(read_all(t).empty());
  std::fclose(t);
}

TEST_CASE("progress: drawing is rate-limited and ends with the summary line") {
  std::FILE* t = std::tmpfile();
  REQUIRE(t != nullptr);
  g_fake_now = 100.0;
  {
    auto opts = ProgressOptions().mode(ProgressMode::Always).stream(t).clock(&fake_clock).width(70).min_interval(1.0);
    ProgressBar bar(10, "fit", opts);
    CHECK(bar.drawing());
    // 9 updates 0.25 s apart: the start draws, then only every 4th update (1 s) draws.
    for (int i = 0; i < 9; ++i) {
      g_fake_now += 0.25;
      bar.update({{"loss", static_cast<double>(i)}, {"lr", 0.1}});
    }
    // The last step draws at once, whatever the interval.
    g_fake_now += 0.01;
    bar.update({{"loss", 9.0}});
    CHECK(bar.count() == 10);
    auto means = bar.metrics();
    REQUIRE(means.size() == 2);
    CHECK(means[0].name == "loss");
    CHECK(means[0].value == doctest::Approx(4.5));
    CHECK(means[1].value == doctest::Approx(0.1));
    bar.finish();
    bar.finish();  // once only
  }
  std::string out = read_all(t);
  std::fclose(t);
  // Draws: start, steps 4 and 8 (1 s each), step 10 (the end): 4, plus the summary.
  CHECK_MESSAGE(count(out, "\r") == 5, out);
  CHECK(count(out, "\n") == 1);
  CHECK(out.find("\rfit 100% [") != std::string::npos);
  // The summary replaces the bar: \r, the line, clear to the end of the line, newline.
  std::string tail = "\rfit 10/10 done in 00:02, 4.42it/s, loss=4.5, lr=0.1\x1b[K\n";
  REQUIRE(out.size() >= tail.size());
  CHECK(out.substr(out.size() - tail.size()) == tail);
}

TEST_CASE("progress: logs through the installed sink, also when not drawing") {
  g_logged.clear();
  set_log_sink(&capture_sink, LogLevel::Info);
  g_fake_now = 0;
  {
    ProgressBar bar(100, "job", ProgressOptions().mode(ProgressMode::Never).clock(&fake_clock).log_interval(10));
    for (int i = 0; i < 100; ++i) {
      g_fake_now += 1.0;
      bar.update(1.0);
    }
  }  // the destructor finishes
  set_log_sink(nullptr);
  // Every 10 s of 100 s: 10 progress lines, then the summary.
  REQUIRE(g_logged.size() == 11);
  CHECK(g_logged[0] == "job  10% 10/100 00:10<01:30 1.00it/s loss=1");
  CHECK(g_logged.back() == "job 100/100 done in 01:40, 1.00it/s, loss=1");
  // No sink: nothing is logged.
  g_logged.clear();
  {
    ProgressBar bar(3, "x", ProgressOptions().mode(ProgressMode::Never));
    bar.step(3);
  }
  CHECK(g_logged.empty());
}

}  // namespace test_progress
