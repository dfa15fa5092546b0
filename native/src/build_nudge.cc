#include "build_nudge.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cstdlib>
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
  // Bumped by each stop: a thread serves only the generation it was started in, so a start that
  // follows a stop at once (worker threads' addon instances coming and going) cannot keep alive
  // the threads that stop is joining.
  uint64_t generation = 0;
  int64_t period_ns = 0;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> nudges{0};
#if defined(__linux__)
  // Confinement (see build_nudge.h): the process's CPUs, the one kept for serving (the first), and
  // whether the SCHED_IDLE threads are now held off it.
  cpu_set_t all;
  int serving_cpu = -1;
  bool confined = false;
#endif
  std::atomic<uint64_t> confinements{0};
};
State& st = *new State();

// When serving work was last issued (steady_clock ns); read by the nudge threads without a lock.
std::atomic<int64_t> last_serving_ns{0};
// Nudge at full rate while serving work was issued this recently; check this often otherwise.
constexpr int64_t kServingRecentNs = 20'000'000;
constexpr int64_t kQuietCheckNs = 5'000'000;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if defined(__linux__)
// Sets the CPU affinity of every SCHED_IDLE thread of the process: the background pool and the
// compile helpers XLA starts from it (they inherit its policy), found by policy because XLA's own
// threads are not ours to name. Runs only when confinement turns on or off.
void SetIdleThreadsAffinity(const cpu_set_t& set) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return;
  while (dirent* e = readdir(dir)) {
    const pid_t tid = static_cast<pid_t>(std::atol(e->d_name));
    if (tid <= 0 || sched_getscheduler(tid) != SCHED_IDLE) continue;
    sched_setaffinity(tid, sizeof(set), &set);
  }
  closedir(dir);
}

// Confinement on or off; the caller holds st.mu (so a stop cannot race a change).
void Confine(bool on) {
  if (st.confined == on || st.serving_cpu < 0) return;
  cpu_set_t set = st.all;
  if (on) CPU_CLR(st.serving_cpu, &set);
  SetIdleThreadsAffinity(set);
  st.confined = on;
  if (on) st.confinements.fetch_add(1, std::memory_order_relaxed);
}
#endif

void Nudge(uint64_t generation, int cpu) {
#if defined(__linux__)
  // The serving CPU's thread also turns confinement on and off, and does not nudge while it is on:
  // no build thread runs there then.
  const bool controller = cpu == st.serving_cpu;
  for (;;) {
    bool nudging = false;
    {
      std::unique_lock<std::mutex> lock(st.mu);
      st.cv.wait(lock, [generation, controller] {
        return st.builds > 0 || st.generation != generation || (controller && st.confined);
      });
      if (st.generation != generation) {
        if (controller) Confine(false);
        return;
      }
      const bool serving = SteadyNs() - last_serving_ns.load(std::memory_order_relaxed) < kServingRecentNs;
      if (controller) {
        Confine(st.builds > 0 && serving);
        if (st.builds == 0) continue;
      }
      nudging = serving && !(controller && st.confined);
    }
    const int64_t ns = nudging ? st.period_ns : kQuietCheckNs;
    const timespec d{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &d, nullptr);
    st.nudges.fetch_add(1, std::memory_order_relaxed);
  }
#else
  (void)generation;
  (void)cpu;
#endif
}

}  // namespace

int StartBuildNudger(int64_t period_us, bool confine) {
#if defined(__linux__)
  if (period_us <= 0) return 0;
  std::lock_guard<std::mutex> lock(st.mu);
  ++st.users;
  if (!st.threads.empty()) return static_cast<int>(st.threads.size());
  st.period_ns = period_us * 1000;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 0;
  st.all = allowed;
  st.serving_cpu = -1;
  if (confine && CPU_COUNT(&allowed) >= 2) {
    for (int cpu = 0; cpu < CPU_SETSIZE && st.serving_cpu < 0; ++cpu)
      if (CPU_ISSET(cpu, &allowed)) st.serving_cpu = cpu;
  }
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    st.threads.emplace_back(Nudge, st.generation, cpu);
    // Set here, not by the thread itself, so both hold once this returns. Pinned: each CPU must see
    // its own wake-ups; a free thread would be placed wherever is idlest.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(st.threads.back().native_handle(), sizeof(one), &one);
    pthread_setname_np(st.threads.back().native_handle(), "hlo-nudge");
    // SCHED_BATCH: a waking batch thread preempts a SCHED_IDLE one but never a normal one, so a
    // nudge that lands on a CPU running a serving thread waits for it instead of switching it out
    // (at SCHED_OTHER, A's median rose 20 % during reloads, bench/RESULTS.md session 12).
    sched_param batch{};
    batch.sched_priority = 0;
    pthread_setschedparam(st.threads.back().native_handle(), SCHED_BATCH, &batch);
  }
  return static_cast<int>(st.threads.size());
#else
  (void)period_us;
  (void)confine;
  return 0;
#endif
}

void StopBuildNudger() {
  std::vector<std::thread> joining;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.users == 0 || --st.users > 0) return;
    ++st.generation;
    joining.swap(st.threads);
  }
  st.cv.notify_all();
  for (auto& t : joining) {
    if (t.joinable()) t.join();
  }
}

void NoteServingActivity() { last_serving_ns.store(SteadyNs(), std::memory_order_relaxed); }

uint64_t BuildNudges() { return st.nudges.load(std::memory_order_relaxed); }

uint64_t BuildConfinements() { return st.confinements.load(std::memory_order_relaxed); }

int BuildServingCpu() {
#if defined(__linux__)
  std::lock_guard<std::mutex> lock(st.mu);
  return st.threads.empty() ? -1 : st.serving_cpu;
#else
  return -1;
#endif
}

BuildNudgeScope::BuildNudgeScope() {
  {
    std::lock_guard<std::mutex> lock(st.mu);
    ++st.builds;
  }
  st.cv.notify_all();
}

BuildNudgeScope::~BuildNudgeScope() {
  {
    std::lock_guard<std::mutex> lock(st.mu);
    --st.builds;
  }
  // The serving CPU's thread lifts a confinement once the last build ends.
  st.cv.notify_all();
}

}  // namespace hlo
