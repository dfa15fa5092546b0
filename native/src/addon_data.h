// Per-environment state: each Node environment (main thread or worker_thread) has its own
// constructors, task pool and completion channel; plugins are process-wide (plugin.h).
#pragma once

#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "status.h"
#include "task_pool.h"

namespace hlo {

class ClientState;

struct AddonData {
  Napi::FunctionReference pjrt_error_ctor;
  Napi::FunctionReference disposed_error_ctor;
  Napi::FunctionReference client_ctor;
  Napi::FunctionReference buffer_ctor;
  Napi::FunctionReference executable_ctor;
  Napi::FunctionReference arena_ctor;
  Napi::ThreadSafeFunction completions;
  std::unique_ptr<TaskPool> pool;
  // Compiles, deserializes, serializes and warmup executions: threads at background priority
  // (task_pool.h), so building a model never takes CPU time from the executions serving.
  std::unique_ptr<TaskPool> background;
  int inflight = 0;  // JS thread only
  bool tearing_down = false;
  bool nudging = false;  // this instance started (or joined) the build nudger
  std::mutex clients_mu;
  std::set<std::shared_ptr<ClientState>> clients;

  static AddonData* Get(Napi::Env env) { return env.GetInstanceData<AddonData>(); }
};

// Builds the JS error for `s`: PjrtError for PJRT failures, DisposedError for use after dispose,
// TypeError for arguments the addon refused.
Napi::Error MakeError(Napi::Env env, const Status& s);

// Throws a JS exception for a non-ok status (sync paths on the JS thread).
void ThrowStatus(Napi::Env env, const Status& s);

// One asynchronous operation. `work` runs on a pool thread and must not touch napi values;
// `finish` runs on the JS thread after successful work and builds the resolved value.
struct AsyncOp {
  std::function<Status()> work;
  std::function<Napi::Value(Napi::Env)> finish;
};

// Which pool runs an operation: serving, or the background threads for a build (kBackground) or
// for an execution (kBackgroundRun: a warmup; see TaskKind).
enum class Lane { kServing, kBackground, kBackgroundRun };

// Posts `op` and returns its promise. Each promise is settled exactly once, on the JS thread.
Napi::Promise RunAsync(Napi::Env env, AsyncOp op, Lane lane = Lane::kServing);

// The lane named by an options object's `background` flag (absent or not an object: serving).
Lane LaneOf(const Napi::Value& options);

// An options object's `besideOthers` flag: the program may run beside the client's other
// executions (it never waits on the client's pool from inside it). Absent: false.
bool BesideOthersOf(const Napi::Value& options);

}  // namespace hlo
