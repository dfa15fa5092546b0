// hloserve_thread: what a JS worker thread sets for itself: a lower CPU priority (the HTTP JSON
// parser, under HLOSERVE_PARSER_PRIORITY=idle) and a bound on the buffers its isolate holds (the
// hook threads). A separate addon from hloserve_pjrt because it is loaded on JS worker threads,
// where loading the PJRT addon would start its task pools for nothing.
#include <node_api.h>
#include <v8.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>

#if defined(__linux__)
#include <sched.h>
#include <sys/prctl.h>
#endif

namespace {

// idleThisThread(): true when the calling thread now runs at SCHED_IDLE. Linux keeps the policy
// per thread and pid 0 names the caller, so the rest of the process keeps its policy; the thread
// then runs only on a core no normal thread wants. An unprivileged thread cannot leave SCHED_IDLE
// again, which is why only a thread that does nothing else calls this.
napi_value IdleThisThread(napi_env env, napi_callback_info info) {
  bool ok = false;
#if defined(__linux__) && defined(SCHED_IDLE)
  sched_param p{};
  p.sched_priority = 0;
  ok = sched_setscheduler(0, SCHED_IDLE, &p) == 0;
#endif
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

// setTimerSlack(ns): sets the calling thread's timer slack (Linux keeps it per thread); true when
// it took. A timed wait ends up to the slack late: 50 µs by default, which is longer than the
// margin a hook thread keeps when it wakes itself just before a call it expects.
napi_value SetTimerSlack(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  int64_t ns = 0;
  bool ok = false;
  if (napi_get_cb_info(env, info, &argc, &arg, nullptr, nullptr) == napi_ok && argc == 1 &&
      napi_get_value_int64(env, arg, &ns) == napi_ok && ns > 0) {
#if defined(__linux__) && defined(PR_SET_TIMERSLACK)
    ok = prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(ns), 0, 0, 0) == 0;
#endif
  }
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

// timerSlack(): the calling thread's timer slack in nanoseconds (-1 where unknown).
napi_value TimerSlack(napi_env env, napi_callback_info) {
  int64_t ns = -1;
#if defined(__linux__) && defined(PR_GET_TIMERSLACK)
  int got = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (got >= 0) ns = got;
#endif
  napi_value result;
  napi_create_int64(env, ns, &result);
  return result;
}

// The buffer guard. A worker's resourceLimits bound its JS heap, but ArrayBuffers (typed arrays,
// Buffers) live outside it: a hook that keeps allocating them grows the process until the OS
// kills all of it. V8 collects garbage under external-memory pressure as they grow, so a GC
// epilogue callback sees the isolate's external memory soon after each large allocation. Past
// the limit it tells the thread's owner (a thread-safe function into the main thread, which
// terminates the worker: only Node's own terminate stops a worker safely, with its pending I/O)
// and holds the thread inside the callback, so that it allocates no more, until the owner says
// it has terminated it (or a few seconds pass, should the owner not answer).
struct BufferGuard {
  v8::Isolate* isolate;
  size_t limit_bytes;
  int64_t thread_id;
  bool fired;
  bool told;  // its owner was told: hold the thread until released
};

std::mutex guard_mutex;
std::condition_variable guard_released;
std::set<int64_t> fired_threads;     // fired, not yet asked about by buffersGuardFired()
std::set<int64_t> released_threads;  // their owner has terminated them
napi_threadsafe_function owner = nullptr;

constexpr auto kHoldLimit = std::chrono::seconds(5);

void OnGcEpilogue(v8::Isolate* isolate, v8::GCType, v8::GCCallbackFlags, void* data) {
  auto* guard = static_cast<BufferGuard*>(data);
  if (!guard->fired) {
    v8::HeapStatistics stats;
    isolate->GetHeapStatistics(&stats);
    if (stats.external_memory() <= guard->limit_bytes) return;
    guard->fired = true;
    std::lock_guard<std::mutex> lock(guard_mutex);
    fired_threads.insert(guard->thread_id);
    // Nobody to tell: run on (the guard only records).
    guard->told = owner != nullptr &&
                  napi_call_threadsafe_function(owner, reinterpret_cast<void*>(static_cast<intptr_t>(guard->thread_id)),
                                                napi_tsfn_nonblocking) == napi_ok;
  }
  if (!guard->told) return;
  std::unique_lock<std::mutex> lock(guard_mutex);
  guard_released.wait_for(lock, kHoldLimit, [&] { return released_threads.count(guard->thread_id) > 0; });
}

void RemoveGuard(void* data) {
  auto* guard = static_cast<BufferGuard*>(data);
  guard->isolate->RemoveGCEpilogueCallback(OnGcEpilogue, guard);
  {
    std::lock_guard<std::mutex> lock(guard_mutex);
    released_threads.erase(guard->thread_id);
  }
  delete guard;
}

// guardBuffers(limitBytes, threadId): true once the calling thread's isolate is guarded.
napi_value GuardBuffers(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  double limit = 0;
  double thread_id = 0;
  bool ok = napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) == napi_ok && argc == 2 &&
            napi_get_value_double(env, argv[0], &limit) == napi_ok &&
            napi_get_value_double(env, argv[1], &thread_id) == napi_ok && limit > 0;
  v8::Isolate* isolate = ok ? v8::Isolate::GetCurrent() : nullptr;
  if (isolate != nullptr) {
    auto* guard = new BufferGuard{isolate, static_cast<size_t>(limit), static_cast<int64_t>(thread_id), false, false};
    isolate->AddGCEpilogueCallback(OnGcEpilogue, guard);
    ok = napi_add_env_cleanup_hook(env, RemoveGuard, guard) == napi_ok;
  }
  napi_value result;
  napi_get_boolean(env, ok && isolate != nullptr, &result);
  return result;
}

void CallOwner(napi_env env, napi_value js_cb, void*, void* data) {
  if (env == nullptr || js_cb == nullptr) return;
  napi_value id;
  napi_value undefined;
  napi_create_double(env, static_cast<double>(reinterpret_cast<intptr_t>(data)), &id);
  napi_get_undefined(env, &undefined);
  napi_call_function(env, undefined, js_cb, 1, &id, nullptr);
}

// watchBufferGuards(onFired): on the owner's thread (the main one), once per process: onFired(threadId)
// is called there when a guarded thread passes its limit. It keeps no event loop alive.
napi_value WatchBufferGuards(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_value name;
  bool ok = napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) == napi_ok && argc == 1;
  std::lock_guard<std::mutex> lock(guard_mutex);
  if (ok && owner == nullptr) {
    napi_create_string_utf8(env, "hloserve buffer guard", NAPI_AUTO_LENGTH, &name);
    ok = napi_create_threadsafe_function(env, argv[0], nullptr, name, 0, 1, nullptr, nullptr, nullptr, CallOwner,
                                         &owner) == napi_ok &&
         napi_unref_threadsafe_function(env, owner) == napi_ok;
  }
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

// The one argument of releaseBufferGuard / buffersGuardFired: a thread id, or -1 (no thread) if absent.
int64_t ThreadIdArg(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  double thread_id = -1;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) == napi_ok && argc == 1)
    napi_get_value_double(env, argv[0], &thread_id);
  return static_cast<int64_t>(thread_id);
}

// releaseBufferGuard(threadId): the owner has terminated that thread; it may leave the callback.
napi_value ReleaseBufferGuard(napi_env env, napi_callback_info info) {
  int64_t thread_id = ThreadIdArg(env, info);
  {
    std::lock_guard<std::mutex> lock(guard_mutex);
    released_threads.insert(thread_id);
  }
  guard_released.notify_all();
  napi_value undefined;
  napi_get_undefined(env, &undefined);
  return undefined;
}

// buffersGuardFired(threadId): true once, after the guard of that thread fired.
napi_value BuffersGuardFired(napi_env env, napi_callback_info info) {
  int64_t thread_id = ThreadIdArg(env, info);
  bool fired;
  {
    std::lock_guard<std::mutex> lock(guard_mutex);
    fired = fired_threads.erase(thread_id) > 0;
  }
  napi_value result;
  napi_get_boolean(env, fired, &result);
  return result;
}

bool Export(napi_env env, napi_value exports, const char* name, napi_callback cb) {
  napi_value fn;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, nullptr, &fn) == napi_ok &&
         napi_set_named_property(env, exports, name, fn) == napi_ok;
}

}  // namespace

NAPI_MODULE_INIT() {
  if (!Export(env, exports, "idleThisThread", IdleThisThread) || !Export(env, exports, "guardBuffers", GuardBuffers) ||
      !Export(env, exports, "watchBufferGuards", WatchBufferGuards) ||
      !Export(env, exports, "releaseBufferGuard", ReleaseBufferGuard) ||
      !Export(env, exports, "buffersGuardFired", BuffersGuardFired) ||
      !Export(env, exports, "setTimerSlack", SetTimerSlack) || !Export(env, exports, "timerSlack", TimerSlack))
    return nullptr;
  return exports;
}
