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
  // With serving confinement (two-way): builds on `build_cpus` (the last CPU), the process's
  // normal-policy threads on `serving_cpus` (the rest); `saved` holds each moved serving thread's
  // affinity from before, restored when confinement lifts.
  bool confine_serving = false;
  cpu_set_t build_cpus;
  cpu_set_t serving_cpus;
  std::vector<std::pair<pid_t, cpu_set_t>> saved;
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
// Moves the process's threads for confinement (on) or back (off), found by policy in
// /proc/self/task because XLA's and Node's own threads are not ours to name. SCHED_IDLE threads (the
// background pool, the compile helpers XLA starts from it, which inherit its policy, and an idle
// HTTP parser) go to `build_cpus` or back to every CPU. With serving confinement, SCHED_OTHER threads
// (the JS thread, V8's and libuv's pools, the addon's serving pool, the PJRT client's threads, hook
// threads, the parser at nice 10) go to `serving_cpus`; a thread created meanwhile inherits its
// creator's set, so the two sides stay apart until this runs again. SCHED_BATCH (the nudge threads,
// each pinned to its CPU) is left alone. Runs only when confinement turns on or off.
void MoveThreads(bool on) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return;
  if (on) st.saved.clear();
  while (dirent* e = readdir(dir)) {
    const pid_t tid = static_cast<pid_t>(std::atol(e->d_name));
    if (tid <= 0) continue;
    const int policy = sched_getscheduler(tid);
    if (policy == SCHED_IDLE) {
      sched_setaffinity(tid, sizeof(cpu_set_t), on ? &st.build_cpus : &st.all);
    } else if (policy == SCHED_OTHER && st.confine_serving) {
      cpu_set_t now;
      if (sched_getaffinity(tid, sizeof(now), &now) != 0) continue;
      if (on) {
        cpu_set_t to;
        CPU_AND(&to, &now, &st.serving_cpus);
        // A thread someone pinned off the serving CPUs keeps its pin.
        if (CPU_COUNT(&to) == 0 || CPU_EQUAL(&to, &now)) continue;
        st.saved.emplace_back(tid, now);
        sched_setaffinity(tid, sizeof(to), &to);
      } else if (CPU_EQUAL(&now, &st.serving_cpus)) {
        // One moved (its own set back) or started while confined (every CPU, as the process has).
        const cpu_set_t* back = &st.all;
        for (const auto& [t, set] : st.saved)
          if (t == tid) back = &set;
        sched_setaffinity(tid, sizeof(cpu_set_t), back);
      }
    }
  }
  closedir(dir);
  if (!on) st.saved.clear();
}

// Confinement on or off; the caller holds st.mu (so a stop cannot race a change).
void Confine(bool on) {
  if (st.confined == on || st.serving_cpu < 0) return;
  MoveThreads(on);
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
      // Serving confined too: no serving thread can wake behind a build, so no CPU needs nudging.
      nudging = serving && !(controller && st.confined) && !(st.confined && st.confine_serving);
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

int StartBuildNudger(int64_t period_us, int64_t confined_period_us, bool confine, bool confine_serving) {
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
  st.confine_serving = false;
  if (confine && CPU_COUNT(&allowed) >= 2) {
    int last = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) continue;
      if (st.serving_cpu < 0) st.serving_cpu = cpu;
      last = cpu;
    }
    st.confine_serving = confine_serving;
    if (confined_period_us > 0) st.period_ns = confined_period_us * 1000;
    st.serving_cpus = allowed;
    CPU_ZERO(&st.build_cpus);
    if (confine_serving) {
      // The build keeps one CPU (the last), serving the rest: on two CPUs, one each.
      CPU_CLR(last, &st.serving_cpus);
      CPU_SET(last, &st.build_cpus);
    } else {
      // Builds leave the first CPU to serving and keep the rest; serving threads go anywhere.
      st.build_cpus = allowed;
      CPU_CLR(st.serving_cpu, &st.build_cpus);
    }
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
  (void)confined_period_us;
  (void)confine;
  (void)confine_serving;
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

int64_t BuildNudgeMicros() {
  std::lock_guard<std::mutex> lock(st.mu);
  return st.threads.empty() ? 0 : st.period_ns / 1000;
}

uint64_t BuildConfinements() { return st.confinements.load(std::memory_order_relaxed); }

bool BuildConfinesServing() {
#if defined(__linux__)
  std::lock_guard<std::mutex> lock(st.mu);
  return !st.threads.empty() && st.serving_cpu >= 0 && st.confine_serving;
#else
  return false;
#endif
}

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
