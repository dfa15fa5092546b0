// Threads the addon owns for blocking PJRT work (compile, transfers, execute + await).
//
// Why not the libuv pool: it is shared with fs, dns, zlib and crypto and has four threads by
// default, so long device waits there would stall unrelated I/O. Results come back to the JS
// thread through one ThreadSafeFunction (see addon_data.h).
//
// Two pools: serving (executions, transfers) at the process's priority, and background (compile,
// deserialize, serialize, warmup) whose threads lower their own CPU priority when they start, so
// that a model being built beside the ones serving takes only CPU time that serving leaves idle.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hlo {

// How a background thread ranks against the serving threads of the same process (Linux
// scheduling is per thread): kIdle = SCHED_IDLE (runs when no normal thread wants the CPU), kNice
// = nice 19 under SCHED_OTHER, kNormal = no change. An unprivileged thread cannot raise its
// priority back (RLIMIT_NICE is 0 by default), which is why background work has threads of its
// own instead of lowering a serving thread for the duration of a compile.
enum class ThreadPriority { kNormal, kNice, kIdle };

// What a task on the background pool is. A build (compile, deserialize, serialize) lowers the
// process's malloc thresholds while it runs (MallocBuildScope); a run (an execution on the
// background lane: a warmup) does not, since its scratch is the serving executions' kind of
// allocation and the threshold is process-wide: a warmup at SCHED_IDLE that starves under load
// (it does on the synchronous CPU client, where the launching thread computes) would otherwise
// hold every serving execution's multi-MiB scratch on mmap, faulted in and zeroed on each run.
// Both keep the build nudger on: both compute on a lowered thread.
enum class TaskKind { kBuild, kRun };

// Parses "idle" | "nice" | "normal"; anything else is `fallback`.
ThreadPriority ParseThreadPriority(const char* text, ThreadPriority fallback);

class TaskPool {
 public:
  // `build`: every task runs inside a MallocBuildScope (the background pool's model builds).
  explicit TaskPool(size_t threads, ThreadPriority priority = ThreadPriority::kNormal, bool build = false);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // `kind` matters only on a pool made with `build`.
  void Post(std::function<void()> task, TaskKind kind = TaskKind::kBuild);
  // Stops accepting work, runs what is queued, joins the threads.
  void Shutdown();
  // What the threads got: "idle", "nice" or "normal" (lower than asked when the system refused).
  std::string applied_priority();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::function<void()>, TaskKind>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
  const ThreadPriority priority_;
  const bool build_;
  ThreadPriority applied_;
  size_t started_ = 0;
};

}  // namespace hlo
