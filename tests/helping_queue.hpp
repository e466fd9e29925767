// A one-thread executor for tests (ember::set_executor) that, while waiting for its own tasks,
// runs any queued task first in first out, as work-stealing pools (TBB, a game engine's job
// system) do: a task can start inside another task's kernel, on the same thread. Kernels
// must not keep per-thread state across their own wait.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

namespace ember::test {

struct HelpingQueue {
  struct Job {
    void (*task)(void*, int64_t);
    void* ctx;
    int64_t remaining;
  };
  std::deque<std::pair<Job*, int64_t>> queue;
  static void run(void* self, void (*task)(void*, int64_t), void* task_ctx, int64_t n) {
    auto& q = static_cast<HelpingQueue*>(self)->queue;
    Job job{task, task_ctx, n};
    for (int64_t i = 0; i < n; ++i) q.push_back({&job, i});
    while (job.remaining > 0) {
      auto [j, i] = q.front();
      q.pop_front();
      j->task(j->ctx, i);
      --j->remaining;
    }
  }
};

}  // namespace ember::test
