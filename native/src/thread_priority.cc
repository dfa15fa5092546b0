// hloserve_thread: lowers the CPU priority of the thread that calls it. A separate addon from
// hloserve_pjrt because it is loaded on a JS worker thread (the HTTP JSON parser, under
// HLOSERVE_PARSER_PRIORITY=idle), where loading the PJRT addon would start its task pools for
// nothing.
#include <node_api.h>

#if defined(__linux__)
#include <sched.h>
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

}  // namespace

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "idleThisThread", NAPI_AUTO_LENGTH, IdleThisThread, nullptr, &fn) != napi_ok)
    return nullptr;
  if (napi_set_named_property(env, exports, "idleThisThread", fn) != napi_ok) return nullptr;
  return exports;
}
