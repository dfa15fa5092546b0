#include "malloc_tuning.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <pthread.h>
#endif

namespace hlo {

namespace {
// glibc's own ceiling for its dynamic threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit), held
// there from the start instead of reached by wandering. Lower costs the executions dearly: a CNN's
// activations and scratch (several MiB at batch 1) then come from mmap on every run and are
// faulted in and zeroed page by page, 1.75x the CPU of its batch-1 program at 1 MiB
// (bench/RESULTS.md, session 11). Fixed rather than dynamic, the trim threshold stays at twice it
// and RSS over 50 reloads stays within the lifecycle target.
constexpr size_t kMmapThreshold = size_t{32} << 20;
// While a build runs: a compile's multi-MiB blocks are mapped and unmapped on their own rather
// than left in the heap, where they fragment (RSS +10-14 % over 50 reloads at 8-32 MiB against
// +4.3-4.7 % at 1-2 MiB, bench/RESULTS.md session 11).
constexpr size_t kBuildMmapThreshold = size_t{1} << 20;

// Never destroyed: the applier thread waits on these until the process exits.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  int builds = 0;
  bool owned = false;  // FixMmapThreshold set the thresholds (so builds may move them)
  bool started = false;
  size_t applied = kMmapThreshold;
  std::chrono::steady_clock::time_point last_end{};
};
State& st = *new State();

// The serving values come back only once no build has run for this long: a model's modules
// compile one after another, and each switch costs a mallopt (below), so a reload pays one
// lowering and one return instead of one of each per module.
constexpr auto kServingAfter = std::chrono::milliseconds(20);

void SetThresholds(size_t mmap_threshold) {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold));
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * mmap_threshold));
#else
  (void)mmap_threshold;
#endif
}

// The thresholds are switched by this thread, at the priority of the thread that loaded the addon
// (normal), never by a build thread. Why: glibc's mallopt holds the main arena's lock while it
// consolidates that arena (100-350 µs after a compile's worth of serving), and the JS thread
// allocates from the main arena when its thread cache misses. Called from a SCHED_IDLE build
// thread, the lock was held by a thread the scheduler keeps preempting (up to 84 ms at a reload's
// first compile on a loaded machine), and the JS thread waited on it up to 0.36 ms at 3-5 of a
// reload's 5 module ends (perf uprobes on mallopt, bench/RESULTS.md session 17).
void Apply() {
  std::unique_lock<std::mutex> lock(st.mu);
  for (;;) {
    st.cv.wait(lock, [] { return st.builds > 0 ? st.applied != kBuildMmapThreshold : st.applied != kMmapThreshold; });
    if (st.builds == 0) {
      // Linger: a build that starts meanwhile keeps the builds' values.
      if (st.cv.wait_until(lock, st.last_end + kServingAfter, [] { return st.builds > 0; })) continue;
    }
    const size_t want = st.builds > 0 ? kBuildMmapThreshold : kMmapThreshold;
    SetThresholds(want);
    st.applied = want;
  }
}
}  // namespace

MallocBuildScope::MallocBuildScope() {
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.owned) return;
    ++st.builds;
  }
  st.cv.notify_all();
}

MallocBuildScope::~MallocBuildScope() {
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.owned) return;
    if (--st.builds == 0) st.last_end = std::chrono::steady_clock::now();
  }
  st.cv.notify_all();
}

size_t MmapThresholdNow() {
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.owned) return 0;
  return st.applied;
}

size_t FixMmapThreshold() {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) return 0;
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t != nullptr && std::strstr(t, "mmap_threshold") != nullptr)
    return 0;
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold)) != 1) return 0;
  // Fixing the mmap threshold also stops glibc moving the trim threshold with it (twice the mmap
  // threshold when dynamic); kept there, so that the top of the heap is not handed back and
  // faulted in again between requests.
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * kMmapThreshold));
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.owned = true;
    if (!st.started) {
      st.started = true;
      std::thread applier(Apply);
#if defined(__linux__)
      pthread_setname_np(applier.native_handle(), "hlo-malloc");
#endif
      applier.detach();
    }
  }
  return kMmapThreshold;
#else
  return 0;
#endif
}

}  // namespace hlo
