// ember-bench: fixed CPU workloads timed through Ember and, when built with
// -Dlibtorch_compare=enabled, through libtorch in the same process run, side by side.
//
//   ember-bench                  readable table
//   ember-bench --json           one JSON object per line:
//                                {"bench": ..., "threads": T, "value": V, "unit": ..., "libtorch": V|null}
//   ember-bench --json-out F     table on stdout, and the JSON lines into file F
//   ember-bench --filter sgemm   only workloads whose name contains "sgemm"
//                                (a comma-separated list matches any of them)
//   ember-bench --quick          short time budget (smoke test; noisy figures)
//   ember-bench --threads 1,2    thread counts (default 1,2)
//   ember-bench --no-libtorch    skip the libtorch side even when it is built in
//   ember-bench --budget 0.3     seconds of timed samples per (workload, threads, library)
//
// Timing: each (workload, threads) is warmed up, then Ember and libtorch are sampled in
// alternating rounds (so that a burst of load from elsewhere hits both), each until its share
// of the budget has elapsed. A sample runs the op `iters` times (iters chosen so that a sample
// lasts >= 2 ms, or >= 0.2 ms for op_overhead) and yields time per op. op_overhead_* reports the MEDIAN sample (ns per op);
// throughput workloads report the BEST sample (GFLOP/s, GB/s), the usual choice on a shared
// machine where noise only ever slows a run down; the table also shows their median.

#include "layer_workloads.hpp"
#include "overhead_workloads.hpp"
#include "op_workloads.hpp"
#include "nn_workloads.hpp"
#include "workloads.hpp"

#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/optim.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using bench::RunFn;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double time_call(const RunFn& f, int64_t iters) {
  auto t0 = Clock::now();
  f(iters);
  return seconds_since(t0);
}

struct Options {
  bool json = false, quick = false, libtorch = true;
  std::string filter, json_out;
  std::vector<int> threads{1, 2};
  double budget = 0.3;       // seconds of samples per (workload, threads, library)
  double min_sample = 2e-3;  // a sample lasts at least this long (throughput workloads)
  // op_overhead samples are short so that most fit inside one scheduler time slice: on a
  // loaded machine the few that span a preemption are outliers that the median ignores.
  double min_sample_overhead = 2e-4;
  int rounds = 2;            // Ember/libtorch alternations
  int min_samples = 3;
};

// One library's timer for one (workload, threads): calibrated once, sampled in rounds.
struct Sampler {
  explicit Sampler(RunFn f) : fn(std::move(f)) {}
  RunFn fn;
  int64_t iters = 1;
  std::vector<double> per_op;  // seconds per op, one entry per sample

  // Warm-up, and picks iters so that one sample lasts >= min_sample.
  void calibrate(const Options& o, double min_sample) {
    double t = time_call(fn, 1);  // first call: page faults, lazy init, thread start-up
    int64_t it = 1;
    auto t0 = Clock::now();
    for (;;) {
      t = time_call(fn, it);
      if (t >= min_sample || it >= (int64_t(1) << 26)) break;
      double grow = t > 0 ? std::ceil(min_sample / t * 1.25) : 100.0;
      it *= static_cast<int64_t>(std::clamp(grow, 2.0, 100.0));
    }
    iters = it;
    // Warm-up proper: keep running for a short while (caches, clocks, allocator pools).
    double warm = std::min(0.05, o.budget / 4);
    while (seconds_since(t0) < warm) time_call(fn, iters);
  }
  void sample_for(double seconds) {
    auto t0 = Clock::now();
    do per_op.push_back(time_call(fn, iters) / static_cast<double>(iters));
    while (seconds_since(t0) < seconds);
  }
  double median() const {
    std::vector<double> v = per_op;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  double best() const { return *std::min_element(per_op.begin(), per_op.end()); }
};

enum class Kind { Overhead, Throughput };

struct Workload {
  std::string name;
  Kind kind;
  std::string unit;   // "ns", "GFLOP/s", "GB/s"
  double work;        // FLOPs or bytes per op (throughput workloads)
  bool has_libtorch;  // memcpy is a reference line only
  std::function<RunFn(int threads)> make_ember;
};

// ---- Ember's workloads ------------------------------------------------------------------------

RunFn ember_gemm(int64_t n, ember::DType dtype) {
  auto a = std::make_shared<ember::Tensor>(ember::randn({n, n}).to(dtype));
  auto b = std::make_shared<ember::Tensor>(ember::randn({n, n}).to(dtype));
  return [a, b](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::Tensor c = ember::mm(*a, *b);
      bench::escape(c.raw_data());
    }
  };
}

RunFn ember_softmax(int) {
  auto x = std::make_shared<ember::Tensor>(ember::randn({4096, 1024}));
  return [x](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::Tensor y = ember::softmax(*x, 1);
      bench::escape(y.raw_data());
    }
  };
}

RunFn ember_sum(int) {
  auto x = std::make_shared<ember::Tensor>(ember::randn({int64_t(1) << 24}));
  return [x](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::Tensor s = x->sum();
      bench::escape(s.raw_data());
    }
  };
}

// Autograd's fixed cost: record two ops on 4 floats, run backward, drop the gradient.
RunFn ember_backward_overhead(int) {
  auto x = std::make_shared<ember::Tensor>(ember::randn({4}).requires_grad_());
  auto w = std::make_shared<ember::Tensor>(ember::randn({4}));
  return [x, w](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::Tensor y = (*x * *w).sum();
      y.backward();
      x->zero_grad();
    }
  };
}

// Forward and backward of a 64-256-256-8 ReLU MLP, batch 32, MSE loss (no optimiser step).
RunFn ember_mlp_fwd_bwd(int) {
  struct State {
    ember::Tensor w1, b1, w2, b2, w3, b3, x, t;
  };
  ember::manual_seed(1);
  auto s = std::make_shared<State>();
  auto param = [](ember::Shape shape) { return (ember::randn(shape) * 0.05).requires_grad_(); };
  s->w1 = param({256, 64}), s->b1 = param({256});
  s->w2 = param({256, 256}), s->b2 = param({256});
  s->w3 = param({8, 256}), s->b3 = param({8});
  s->x = ember::randn({32, 64}), s->t = ember::randn({32, 8});
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::Tensor h = ember::linear(s->x, s->w1, s->b1).relu();
      h = ember::linear(h, s->w2, s->b2).relu();
      ember::Tensor loss = (ember::linear(h, s->w3, s->b3) - s->t).square().mean();
      loss.backward();
      for (ember::Tensor* p : {&s->w1, &s->b1, &s->w2, &s->b2, &s->w3, &s->b3}) p->zero_grad();
    }
  };
}

// One Adam step over a group of 4 f32 parameters of 512 x 512 (1M floats), gradients present:
// the fused update, one kernel call for the group.
RunFn ember_adam_step(int) {
  struct State {
    std::vector<ember::Tensor> params;
    std::unique_ptr<ember::optim::Adam> opt;
  };
  ember::manual_seed(2);
  auto s = std::make_shared<State>();
  for (int i = 0; i < 4; ++i) {
    ember::Tensor p = ember::randn({512, 512}).requires_grad_();
    p.set_grad(ember::randn({512, 512}) * 1e-3);
    s->params.push_back(p);
  }
  s->opt = std::make_unique<ember::optim::Adam>(s->params, ember::optim::AdamOptions(1e-3));
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) s->opt->step();
    bench::escape(s->params[0].raw_data());
  };
}

// The reference line for sum_16M: std::memcpy of 16M floats, split across `threads` threads.
RunFn memcpy_ref(int threads) {
  constexpr size_t n = size_t(1) << 24;
  auto src = std::make_shared<std::vector<float>>(n, 1.0f);
  auto dst = std::make_shared<std::vector<float>>(n, 0.0f);
  return [src, dst, threads](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      size_t part = n / static_cast<size_t>(threads);
      std::vector<std::thread> ts;
      for (int t = 1; t < threads; ++t)
        ts.emplace_back([&, t] {
          std::memcpy(dst->data() + t * part, src->data() + t * part,
                      (t == threads - 1 ? n - t * part : part) * sizeof(float));
        });
      std::memcpy(dst->data(), src->data(), (threads == 1 ? n : part) * sizeof(float));
      for (auto& t : ts) t.join();
      bench::escape(dst->data());
    }
  };
}

// ---- model files: a 100 MB safetensors file in /tmp, written once per run ----------------------

// 100 tensors of 2^18 f32 (1 MiB each): 104,857,600 bytes of data plus the header. The file
// stays in the page cache after it is written, so these are warm-cache figures.
struct BenchFile {
  std::string path = "/tmp/ember-bench-100MB.safetensors";
  BenchFile() {
    ember::io::TensorDict d;
    for (int i = 0; i < 100; ++i) d.insert("layer" + std::to_string(i) + ".weight", ember::randn({512, 512}));
    ember::io::save_safetensors(path, d);
  }
  ~BenchFile() { std::remove(path.c_str()); }
};
const std::string& bench_file() {
  static BenchFile f;
  return f.path;
}

uint64_t sum_bytes(const uint8_t* p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

// Load (map + parse + 100 tensors viewing the mapping) and read one element of one tensor.
RunFn ember_safetensors_load(int) {
  std::string path = bench_file();
  return [path](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      ember::io::TensorDict d = ember::io::load_safetensors(path);
      float v = d.at("layer50.weight").data_ptr<float>()[0];
      bench::escape(&v);
    }
  };
}

// Load, then read every byte of every tensor (page faults on the mapping included).
RunFn ember_safetensors_read_all(int) {
  std::string path = bench_file();
  return [path](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      uint64_t s = 0;
      for (const auto& [name, t] : ember::io::load_safetensors(path))
        s += sum_bytes(static_cast<const uint8_t*>(t.raw_data()), static_cast<size_t>(t.nbytes()));
      bench::escape(&s);
    }
  };
}

// The reference for both: fread of the whole file into a buffer allocated once.
RunFn fread_ref(int) {
  std::string path = bench_file();
  auto buf = std::make_shared<std::vector<char>>(static_cast<size_t>(std::ifstream(path, std::ios::ate).tellg()));
  return [path, buf](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      FILE* f = std::fopen(path.c_str(), "rb");
      size_t n = f ? std::fread(buf->data(), 1, buf->size(), f) : 0;
      if (f) std::fclose(f);
      if (n != buf->size()) std::abort();
      bench::escape(buf->data());
    }
  };
}

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  w.push_back({"op_overhead_add_4", Kind::Overhead, "ns", 0, true, bench::overhead::add4});
  w.push_back({"op_overhead_add_inplace_4", Kind::Overhead, "ns", 0, true, bench::overhead::add4_inplace});
  w.push_back({"op_overhead_view_4", Kind::Overhead, "ns", 0, true, bench::overhead::view4});
  for (int64_t n : {64, 256, 1024, 2048})
    w.push_back({"sgemm_" + std::to_string(n), Kind::Throughput, "GFLOP/s", 2.0 * n * n * n, true,
                 [n](int) { return ember_gemm(n, ember::DType::F32); }});
  // bf16 products (the AVX512_BF16 kernel where the CPU has it): f32 sums, bf16 result.
  for (int64_t n : {256, 1024})
    w.push_back({"bf16_gemm_" + std::to_string(n), Kind::Throughput, "GFLOP/s", 2.0 * n * n * n, true,
                 [n](int) { return ember_gemm(n, ember::DType::BF16); }});
  // softmax: reads and writes 4096 x 1024 floats.
  w.push_back({"softmax_4096x1024", Kind::Throughput, "GB/s", 2.0 * 4096 * 1024 * 4, true, ember_softmax});
  // sum: reads 16M floats.
  w.push_back({"sum_16M", Kind::Throughput, "GB/s", double(int64_t(1) << 24) * 4, true, ember_sum});
  w.push_back({"backward_overhead_mul_sum_4", Kind::Overhead, "ns", 0, true, ember_backward_overhead});
  w.push_back({"mlp_fwd_bwd_b32", Kind::Overhead, "us", 0, true, ember_mlp_fwd_bwd});
  // Training steps (steps/s: one step of work per sample) and batch-1 inference, issue "nn, optim and data".
  for (auto [name, fn] : {std::pair{"mlp_robotics_step", &bench::nn_workloads::mlp_robotics_step},
                          std::pair{"mlp_mnist_step", &bench::nn_workloads::mlp_mnist_step},
                          std::pair{"cnn_small_step", &bench::nn_workloads::cnn_small_step},
                          std::pair{"transformer_small_step", &bench::nn_workloads::transformer_small_step}})
    w.push_back({name, Kind::Throughput, "steps/s", 1e9, true, fn});
  w.push_back({"mlp_infer_b1", Kind::Overhead, "us", 0, true, bench::nn_workloads::mlp_infer_b1});
  w.push_back({"mlp_infer_b1_inference_policy", Kind::Overhead, "us", 0, true,
               bench::nn_workloads::mlp_infer_b1_inference_policy});
  // The same two under bf16 autocast (libtorch: at::autocast with the CPU dtype bf16).
  w.push_back({"transformer_small_step_bf16", Kind::Throughput, "steps/s", 1e9, true,
               bench::nn_workloads::transformer_small_step_bf16});
  w.push_back({"mlp_infer_b1_bf16", Kind::Overhead, "us", 0, true, bench::nn_workloads::mlp_infer_b1_bf16});
  w.push_back({"adam_step_1M", Kind::Overhead, "us", 0, true, ember_adam_step});
  // Single layers, forward + backward (bench/layer_workloads.hpp).
  for (const std::string& name : bench::layer_workloads::names())
    w.push_back({name, Kind::Overhead, "ms", 0, true, [name](int) { return bench::layer_workloads::make(name); }});
  // Single ops, forward only under no-grad (bench/op_workloads.hpp).
  for (const std::string& name : bench::op_workloads::names())
    w.push_back({name, Kind::Overhead, "us", 0, true, [name](int) { return bench::op_workloads::make(name); }});
  // memcpy: counts bytes read + bytes written, like softmax (bus traffic, comparable to sum's reads).
  w.push_back({"memcpy_16M", Kind::Throughput, "GB/s", 2.0 * double(int64_t(1) << 24) * 4, false, memcpy_ref});
  // Model files (single-threaded; the thread count does not apply): ms per load of a 100 MB file.
  w.push_back({"safetensors_load_100MB", Kind::Overhead, "ms", 0, false, ember_safetensors_load});
  w.push_back({"safetensors_load_read_all_100MB", Kind::Overhead, "ms", 0, false, ember_safetensors_read_all});
  w.push_back({"fread_100MB", Kind::Overhead, "ms", 0, false, fread_ref});
  return w;
}

// ---- driver -----------------------------------------------------------------------------------

struct Result {
  double value = 0, median = 0;  // value: the reported statistic, in `unit`
  int samples = 0;
};

Result summarize(const Workload& w, const Sampler& s) {
  Result r;
  r.samples = static_cast<int>(s.per_op.size());
  if (w.kind == Kind::Overhead) {
    r.value = r.median = s.median() * (w.unit == "ms" ? 1e3 : w.unit == "us" ? 1e6 : 1e9);
  } else {
    r.value = w.work / s.best() / 1e9;
    r.median = w.work / s.median() / 1e9;
  }
  return r;
}

std::string read_first_line(const char* path, const char* key = nullptr) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (!key || line.rfind(key, 0) == 0) return line;
  return {};
}

std::string cpu_model() {
  std::string l = read_first_line("/proc/cpuinfo", "model name");
  auto p = l.find(':');
  return p == std::string::npos ? "unknown CPU" : l.substr(p + 2);
}

std::string loadavg() {
  std::string l = read_first_line("/proc/loadavg");
  auto p = l.find(' ', l.find(' ', l.find(' ') + 1) + 1);
  return l.substr(0, p);
}

std::string fmt_value(double v) {
  char buf[32];
  if (v >= 100)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (v >= 10)
    std::snprintf(buf, sizeof buf, "%.1f", v);
  else
    std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string json_number(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", *v);
  return buf;
}

// True when `name` contains one of the comma-separated substrings of `filter` (or it is empty).
bool matches(const std::string& filter, const std::string& name) {
  if (filter.empty()) return true;
  for (size_t p = 0; p <= filter.size();) {
    size_t q = filter.find(',', p);
    if (q == std::string::npos) q = filter.size();
    std::string part = filter.substr(p, q - p);
    if (!part.empty() && name.find(part) != std::string::npos) return true;
    p = q + 1;
  }
  return false;
}

[[noreturn]] void usage(int rc) {
  std::fprintf(rc ? stderr : stdout,
               "usage: ember-bench [--json] [--quick] [--filter NAME] [--threads 1,2] [--no-libtorch] "
               "[--budget SECONDS] [--json-out FILE] [--list]\n");
  std::exit(rc);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "--json") o.json = true;
    else if (a == "--quick") o.quick = true;
    else if (a == "--no-libtorch") o.libtorch = false;
    else if (a == "--list") list = true;
    else if (a == "--filter") o.filter = next();
    else if (a == "--json-out") o.json_out = next();
    else if (a == "--budget") o.budget = std::atof(next().c_str());
    else if (a == "--threads") {
      o.threads.clear();
      std::string s = next();
      for (size_t p = 0; p < s.size();) {
        size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        o.threads.push_back(std::atoi(s.substr(p, q - p).c_str()));
        p = q + 1;
      }
    } else if (a == "-h" || a == "--help") usage(0);
    else usage(2);
  }
  if (o.quick) {
    o.budget = 0.05;
    o.rounds = 1;
    o.min_samples = 2;
    o.min_sample = 1e-3;
  }
  const bool with_torch = o.libtorch && bench::libtorch::available();

  std::vector<Workload> ws;
  for (auto& w : workloads())
    if (matches(o.filter, w.name)) ws.push_back(std::move(w));
  if (list) {
    for (auto& w : ws) std::printf("%s\n", w.name.c_str());
    return 0;
  }

  FILE* json_file = nullptr;
  if (!o.json_out.empty() && !(json_file = std::fopen(o.json_out.c_str(), "w"))) {
    std::fprintf(stderr, "ember-bench: cannot write %s\n", o.json_out.c_str());
    return 2;
  }
  FILE* info = o.json ? stderr : stdout;
  std::fprintf(info, "ember-bench: Ember %d.%d.%d on %s, %u hardware threads, load average %s\n",
               ember::kVersion / 10000, ember::kVersion / 100 % 100, ember::kVersion % 100, cpu_model().c_str(),
               std::thread::hardware_concurrency(), loadavg().c_str());
  std::fprintf(info, "libtorch: %s\n",
               with_torch ? bench::libtorch::description().c_str()
                          : (bench::libtorch::available() ? "skipped (--no-libtorch)"
                                                          : "not built in (-Dlibtorch_compare=enabled to add it)"));
  std::fprintf(info, "timing: %.2f s of samples per library in %d round(s); op_overhead = MEDIAN ns/op, "
               "throughput = BEST sample (median in brackets)\n\n", o.budget, o.rounds);
  if (!o.json) {
    std::printf("%-31s %3s  %16s  %16s  %-8s %s\n", "bench", "thr", "ember", "libtorch", "unit",
                "ember vs libtorch");
    std::fflush(stdout);
  }

  for (const auto& w : ws) {
    for (int t : o.threads) {
      ember::set_num_threads(t);
      if (with_torch) bench::libtorch::set_threads(t);
      Sampler es(w.make_ember(t));
      std::optional<Sampler> ts;
      if (with_torch && w.has_libtorch) {
        if (RunFn f = bench::libtorch::make(w.name)) ts.emplace(std::move(f));
      }
      double min_sample = w.kind == Kind::Overhead ? o.min_sample_overhead : o.min_sample;
      es.calibrate(o, min_sample);
      if (ts) ts->calibrate(o, min_sample);
      for (int r = 0; r < o.rounds; ++r) {
        es.sample_for(o.budget / o.rounds);
        if (ts) ts->sample_for(o.budget / o.rounds);
      }
      while (static_cast<int>(es.per_op.size()) < o.min_samples) es.sample_for(0);
      while (ts && static_cast<int>(ts->per_op.size()) < o.min_samples) ts->sample_for(0);

      Result er = summarize(w, es);
      std::optional<Result> tr;
      if (ts) tr = summarize(w, *ts);
      char line[256];
      std::snprintf(line, sizeof line,
                    "{\"bench\": \"%s\", \"threads\": %d, \"value\": %s, \"unit\": \"%s\", \"libtorch\": %s}\n",
                    w.name.c_str(), t, json_number(er.value).c_str(), w.unit.c_str(),
                    json_number(tr ? std::optional<double>(tr->value) : std::nullopt).c_str());
      if (json_file) {
        std::fputs(line, json_file);
        std::fflush(json_file);
      }
      if (o.json) {
        std::fputs(line, stdout);
      } else {
        auto cell = [&](const Result& r) {
          return w.kind == Kind::Overhead ? fmt_value(r.value)
                                          : fmt_value(r.value) + " [" + fmt_value(r.median) + "]";
        };
        std::string cmp = "-";
        if (tr) {
          double ratio = w.kind == Kind::Overhead ? tr->value / er.value : er.value / tr->value;
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.2fx %s", ratio >= 1 ? ratio : 1 / ratio,
                        ratio >= 1 ? "faster" : "slower");
          cmp = buf;
        }
        std::printf("%-31s %3d  %16s  %16s  %-8s %s\n", w.name.c_str(), t, cell(er).c_str(),
                    tr ? cell(*tr).c_str() : "-", w.unit.c_str(), cmp.c_str());
      }
      std::fflush(stdout);
    }
  }
  std::fprintf(info, "\nload average at end: %s\n", loadavg().c_str());
  if (json_file) std::fclose(json_file);
  return 0;
}
