#include "build_nudge.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <time.h>
#endif

namespace hlo {

namespace {

// Never destroyed: a process that exits without the addon's teardown (process.exit) must not run
// the destructors of a vector of joinable threads (std::terminate) or of a condition variable
// those threads wait on.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  int builds = 0;
  int users = 0;  // addon instances (one per Node environment) that started the nudger
  bool stopping = false;
  int64_t period_ns = 0;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> nudges{0};
};
State& st = *new State();

void Nudge() {
#if defined(__linux__)
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(st.mu);
      if (st.builds == 0 && !st.stopping) {
        st.cv.wait(lock, [] { return st.builds > 0 || st.stopping; });
        clock_gettime(CLOCK_MONOTONIC, &next);
      }
      if (st.stopping) return;
    }
    // Absolute deadlines: the period does not stretch by the time each wake-up takes.
    next.tv_nsec += st.period_ns;
    while (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      ++next.tv_sec;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    st.nudges.fetch_add(1, std::memory_order_relaxed);
  }
#endif
}

}  // namespace

int StartBuildNudger(int64_t period_us) {
#if defined(__linux__)
  if (period_us <= 0) return 0;
  std::lock_guard<std::mutex> lock(st.mu);
  ++st.users;
  if (!st.threads.empty()) return static_cast<int>(st.threads.size());
  st.period_ns = period_us * 1000;
  st.stopping = false;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    st.threads.emplace_back(Nudge);
    // Set here, not by the thread itself, so both hold once this returns. Pinned: each CPU must see
    // its own wake-ups; a free thread would be placed wherever is idlest.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(st.threads.back().native_handle(), sizeof(one), &one);
    pthread_setname_np(st.threads.back().native_handle(), "hlo-nudge");
  }
  return static_cast<int>(st.threads.size());
#else
  (void)period_us;
  return 0;
#endif
}

void StopBuildNudger() {
  std::vector<std::thread> joining;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.users == 0 || --st.users > 0) return;
    st.stopping = true;
    joining.swap(st.threads);
  }
  st.cv.notify_all();
  for (auto& t : joining) {
    if (t.joinable()) t.join();
  }
}

uint64_t BuildNudges() { return st.nudges.load(std::memory_order_relaxed); }

BuildNudgeScope::BuildNudgeScope() {
  {
    std::lock_guard<std::mutex> lock(st.mu);
    ++st.builds;
  }
  st.cv.notify_all();
}

BuildNudgeScope::~BuildNudgeScope() {
  std::lock_guard<std::mutex> lock(st.mu);
  --st.builds;
}

}  // namespace hlo
