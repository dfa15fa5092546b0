// Registration only: the classes live in *_wrap.cc, the plugin loader in plugin.cc.
#include <napi.h>

#include <cstdlib>
#include <string>

#include "addon_data.h"
#include "build_nudge.h"
#include "handles.h"
#include "malloc_tuning.h"
#include "memory_advice.h"
#include "plugin.h"
#include "wraps.h"

namespace hlo {
namespace {

// How often each CPU a build may use is nudged while it runs (see build_nudge.h): 1 ms on every CPU
// in session 12; 500 µs once builds are confined off the serving CPU, which then takes no nudges
// (session 13); 100 µs on the confined build's CPUs, where a serving thread woken behind the build
// still waited up to a period (session 16: A's p99 during/alone 1.78 against 2.58 at 500 µs). A
// process that cannot confine (one CPU) nudges the CPU it serves on, so it keeps 500 µs there.
constexpr int64_t kBuildNudgeMicros = 500;
constexpr int64_t kConfinedBuildNudgeMicros = 100;

Napi::Value AttributeToJs(Napi::Env env, const AttributeValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) return Napi::String::New(env, *s);
  if (auto* i = std::get_if<int64_t>(&v)) return Napi::Number::New(env, static_cast<double>(*i));
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    Napi::Array a = Napi::Array::New(env, l->size());
    for (size_t k = 0; k < l->size(); ++k)
      a.Set(static_cast<uint32_t>(k), Napi::Number::New(env, static_cast<double>((*l)[k])));
    return a;
  }
  if (auto* d = std::get_if<double>(&v)) return Napi::Number::New(env, *d);
  return Napi::Boolean::New(env, std::get<bool>(v));
}

// init(PjrtError, DisposedError): the TS layer hands over its error classes so native code throws
// the real types.
Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsFunction() || !info[1].IsFunction())
    throw Napi::TypeError::New(env, "init(PjrtError, DisposedError) expects two classes");
  AddonData* data = AddonData::Get(env);
  data->pjrt_error_ctor = Napi::Persistent(info[0].As<Napi::Function>());
  data->disposed_error_ctor = Napi::Persistent(info[1].As<Napi::Function>());
  return env.Undefined();
}

Napi::Object PluginInfoToJs(Napi::Env env, const Plugin* p) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("path", Napi::String::New(env, p->path));
  Napi::Array version = Napi::Array::New(env, 2);
  version.Set(0u, Napi::Number::New(env, p->major));
  version.Set(1u, Napi::Number::New(env, p->minor));
  o.Set("apiVersion", version);
  o.Set("apiStructSize", Napi::Number::New(env, static_cast<double>(p->api_struct_size)));
  o.Set("declaredMinor", Napi::Number::New(env, hloabi::kDeclaredMinor));
  Napi::Object attrs = Napi::Object::New(env);
  for (const auto& [k, v] : p->attributes) attrs.Set(k, AttributeToJs(env, v));
  o.Set("attributes", attrs);
  return o;
}

// loadPlugin(path) -> {path, apiVersion: [major, minor], apiStructSize, attributes}. Synchronous:
// dlopen happens once per process (a second call for the same path returns the loaded plugin).
Napi::Value LoadPluginJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "pluginPath must be a string");
  Status s;
  const Plugin* p = LoadPlugin(info[0].As<Napi::String>(), &s);
  if (p == nullptr) ThrowStatus(env, s);
  return PluginInfoToJs(env, p);
}

// loadPluginAsync(path) -> Promise of what loadPlugin returns. The dlopen (relocating a plugin of
// hundreds of MiB: tens of ms) and PJRT_Plugin_Initialize run on a serving pool thread, so the JS
// thread goes on with a start's other work (reading the repository, importing the listeners).
Napi::Value LoadPluginAsyncJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "pluginPath must be a string");
  std::string path = info[0].As<Napi::String>();
  auto loaded = std::make_shared<const Plugin*>(nullptr);
  AsyncOp op;
  op.work = [path, loaded]() -> Status {
    Status s;
    *loaded = LoadPlugin(path, &s);
    return *loaded == nullptr ? s : Status::Ok();
  };
  op.finish = [loaded](Napi::Env env) -> Napi::Value { return PluginInfoToJs(env, *loaded); };
  return RunAsync(env, std::move(op));
}

void Teardown(AddonData* data) {
  data->tearing_down = true;
  // Join the workers first so no task touches a client while it is destroyed.
  if (data->pool) data->pool->Shutdown();
  if (data->background) data->background->Shutdown();
  if (data->nudging) StopBuildNudger();
  std::set<std::shared_ptr<ClientState>> clients;
  {
    std::lock_guard<std::mutex> lock(data->clients_mu);
    clients.swap(data->clients);
  }
  for (const auto& c : clients) c->Close();
}

}  // namespace

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  const size_t mmap_threshold = FixMmapThreshold();
  auto* data = new AddonData();
  size_t threads = 4;
  if (const char* t = std::getenv("HLOSERVE_NATIVE_THREADS")) {
    long n = std::strtol(t, nullptr, 10);
    if (n >= 1 && n <= 256) threads = static_cast<size_t>(n);
  }
  data->pool = std::make_unique<TaskPool>(threads);
  // Two threads: a model's modules compile one after another (XLA parallelises inside a compile),
  // and a second model's build need not wait behind the first. XLA starts its compile helper
  // threads lazily from the first thread that compiles and they inherit that thread's priority,
  // which is why every compile goes through this pool.
  const ThreadPriority priority =
      ParseThreadPriority(std::getenv("HLOSERVE_BACKGROUND_PRIORITY"), ThreadPriority::kIdle);
  data->background = std::make_unique<TaskPool>(2, priority, /*build=*/true);
  // Only where builds run lowered: at normal priority they compete openly and a nudge adds nothing.
  int64_t nudge_us = kBuildNudgeMicros;
  int64_t confined_nudge_us = kConfinedBuildNudgeMicros;
  if (const char* t = std::getenv("HLOSERVE_BUILD_NUDGE_US")) {
    long n = std::strtol(t, nullptr, 10);
    if (n >= 0 && n <= 1000000) nudge_us = confined_nudge_us = n;
  }
  // Confinement finds the build's threads by SCHED_IDLE, so only builds at that priority get it.
  const char* confine_env = std::getenv("HLOSERVE_BUILD_CONFINE");
  const bool confine =
      data->background->applied_priority() == "idle" && !(confine_env != nullptr && std::string(confine_env) == "0");
  const char* serving_env = std::getenv("HLOSERVE_BUILD_CONFINE_SERVING");
  // Two-way confinement is opt-in: on two CPUs it halves serving's CPUs for the reload
  // (bench/RESULTS.md session 16).
  const bool confine_serving = serving_env != nullptr && std::string(serving_env) == "1";
  const int nudgers = data->background->applied_priority() == "normal"
                          ? 0
                          : StartBuildNudger(nudge_us, confined_nudge_us, confine, confine_serving);
  data->nudging = nudgers > 0;
  data->completions = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}),
                                                    "hloserve-pjrt", 0, 1);
  data->completions.Unref(env);
  data->client_ctor = Napi::Persistent(ClientWrap::Init(env));
  data->buffer_ctor = Napi::Persistent(BufferWrap::Init(env));
  data->executable_ctor = Napi::Persistent(ExecutableWrap::Init(env));
  data->arena_ctor = Napi::Persistent(ArenaWrap::Init(env));
  env.SetInstanceData<AddonData>(data);
  // Runs before the instance data finalizer, while napi calls are still allowed.
  env.AddCleanupHook([data]() {
    Teardown(data);
    data->completions.Release();
  });
  exports.Set("init", Napi::Function::New(env, Init));
  exports.Set("loadPlugin", Napi::Function::New(env, LoadPluginJs));
  exports.Set("loadPluginAsync", Napi::Function::New(env, LoadPluginAsyncJs));
  exports.Set("createClient", Napi::Function::New(env, CreateClient));
  exports.Set("adviseHugePages", Napi::Function::New(env, AdviseHugePages));
  exports.Set("bindArguments", Napi::Function::New(env, BindArguments));
  std::string opts = CompileOptionsBytes();
  exports.Set("compileOptions", Napi::Buffer<char>::Copy(env, opts.data(), opts.size()));
  exports.Set("workerThreads", Napi::Number::New(env, static_cast<double>(threads)));
  exports.Set("mallocMmapThreshold", Napi::Number::New(env, static_cast<double>(mmap_threshold)));
  exports.Set("mallocMmapThresholdNow", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                return Napi::Number::New(info.Env(), static_cast<double>(MmapThresholdNow()));
              }));
  exports.Set("buildNudgeMicros", Napi::Number::New(env, nudgers > 0 ? static_cast<double>(BuildNudgeMicros()) : 0));
  exports.Set("buildNudges", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                return Napi::Number::New(info.Env(), static_cast<double>(BuildNudges()));
              }));
  exports.Set("buildConfinements", Napi::Function::New(env, [](const Napi::CallbackInfo& info) {
                return Napi::Number::New(info.Env(), static_cast<double>(BuildConfinements()));
              }));
  exports.Set("buildServingCpu", Napi::Number::New(env, nudgers > 0 ? BuildServingCpu() : -1));
  exports.Set("buildConfinesServing", Napi::Boolean::New(env, nudgers > 0 && BuildConfinesServing()));
  exports.Set("backgroundPriority", Napi::String::New(env, data->background->applied_priority()));
  exports.Set("PjrtClient", data->client_ctor.Value());
  exports.Set("PjrtBuffer", data->buffer_ctor.Value());
  exports.Set("PjrtExecutable", data->executable_ctor.Value());
  exports.Set("PjrtArena", data->arena_ctor.Value());
  RegisterShmIo(env, exports);
  return exports;
}

}  // namespace hlo

static Napi::Object InitAll(Napi::Env env, Napi::Object exports) { return hlo::InitModule(env, exports); }

NODE_API_MODULE(hloserve_pjrt, InitAll)
