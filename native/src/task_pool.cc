#include "task_pool.h"

#include <cstring>

#include "build_nudge.h"
#include "malloc_tuning.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace hlo {

namespace {

// Lowers the calling thread (never raises it). Returns what it ended up with.
ThreadPriority LowerThisThread(ThreadPriority want) {
#if defined(__linux__)
  if (want == ThreadPriority::kIdle) {
    sched_param p{};
    p.sched_priority = 0;
    // pid 0 = the calling thread: on Linux the scheduling policy belongs to the thread.
    if (sched_setscheduler(0, SCHED_IDLE, &p) == 0) return ThreadPriority::kIdle;
    want = ThreadPriority::kNice;
  }
  if (want == ThreadPriority::kNice) {
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    if (setpriority(PRIO_PROCESS, tid, 19) == 0) return ThreadPriority::kNice;
  }
  return ThreadPriority::kNormal;
#else
  (void)want;
  return ThreadPriority::kNormal;
#endif
}

const char* Name(ThreadPriority p) {
  switch (p) {
    case ThreadPriority::kIdle:
      return "idle";
    case ThreadPriority::kNice:
      return "nice";
    default:
      return "normal";
  }
}

}  // namespace

ThreadPriority ParseThreadPriority(const char* text, ThreadPriority fallback) {
  if (text == nullptr) return fallback;
  if (std::strcmp(text, "idle") == 0) return ThreadPriority::kIdle;
  if (std::strcmp(text, "nice") == 0) return ThreadPriority::kNice;
  if (std::strcmp(text, "normal") == 0) return ThreadPriority::kNormal;
  return fallback;
}

TaskPool::TaskPool(size_t threads, ThreadPriority priority, bool build)
    : priority_(priority), build_(build), applied_(priority) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  // Wait until every thread has set its priority, so applied_priority() is final.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this, threads] { return started_ == threads; });
}

TaskPool::~TaskPool() { Shutdown(); }

std::string TaskPool::applied_priority() {
  std::lock_guard<std::mutex> lock(mu_);
  return Name(applied_);
}

void TaskPool::Post(std::function<void()> task, TaskKind kind) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(std::move(task), kind);
  }
  cv_.notify_one();
}

void TaskPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void TaskPool::Loop() {
  const ThreadPriority got =
      priority_ == ThreadPriority::kNormal ? ThreadPriority::kNormal : LowerThisThread(priority_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (got < applied_) applied_ = got;
    ++started_;
  }
  cv_.notify_all();
  for (;;) {
    std::function<void()> task;
    TaskKind kind = TaskKind::kBuild;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front().first);
      kind = queue_.front().second;
      queue_.pop_front();
    }
    if (build_ && kind == TaskKind::kBuild) {
      // The malloc scope ends first, right after the task: the task has already delivered its
      // result, and the next execution should find the serving threshold back.
      BuildNudgeScope nudge;
      MallocBuildScope scope;
      task();
    } else if (build_) {
      BuildNudgeScope nudge;
      task();
    } else {
      task();
    }
  }
}

}  // namespace hlo
