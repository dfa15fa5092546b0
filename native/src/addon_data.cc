#include "addon_data.h"

namespace hlo {

namespace {

struct Pending {
  Napi::Promise::Deferred deferred;
  AsyncOp op;
  Status status;
};

void Settle(Napi::Env env, Pending* p) {
  AddonData* data = AddonData::Get(env);
  Napi::HandleScope scope(env);
  if (p->status.ok()) {
    Napi::Value value;
    try {
      value = p->op.finish ? p->op.finish(env) : env.Undefined();
    } catch (const Napi::Error& e) {
      p->deferred.Reject(e.Value());
      value = Napi::Value();
    } catch (const std::exception& e) {
      // Converting a result can fail to allocate; that rejects this call, never the process.
      p->deferred.Reject(
          MakeError(env, Status{13, std::string("internal error converting a native result: ") + e.what()}).Value());
      value = Napi::Value();
    }
    if (!value.IsEmpty()) p->deferred.Resolve(value);
  } else {
    p->deferred.Reject(MakeError(env, p->status).Value());
  }
  if (data != nullptr && --data->inflight == 0 && !data->tearing_down) data->completions.Unref(env);
  delete p;
}

}  // namespace

Napi::Error MakeError(Napi::Env env, const Status& s) {
  AddonData* data = AddonData::Get(env);
  if (s.code == kStatusInvalid) return Napi::TypeError::New(env, s.message);
  if (s.code == kStatusShm) {
    Napi::Error e = Napi::Error::New(env, s.message);
    e.Set("name", Napi::String::New(env, "SharedMemoryError"));
    return e;
  }
  if (s.code == kStatusDisposed && data != nullptr && !data->disposed_error_ctor.IsEmpty()) {
    Napi::Object e = data->disposed_error_ctor.New({Napi::String::New(env, s.message)});
    return Napi::Error(env, e);
  }
  if (data != nullptr && !data->pjrt_error_ctor.IsEmpty()) {
    Napi::Object e = data->pjrt_error_ctor.New({Napi::String::New(env, s.message), Napi::Number::New(env, s.code),
                                                Napi::String::New(env, PjrtCodeName(s.code))});
    return Napi::Error(env, e);
  }
  return Napi::Error::New(env, s.message);
}

void ThrowStatus(Napi::Env env, const Status& s) { throw MakeError(env, s); }

Lane LaneOf(const Napi::Value& options) {
  if (!options.IsObject()) return Lane::kServing;
  return options.As<Napi::Object>().Get("background").ToBoolean() ? Lane::kBackground : Lane::kServing;
}

bool BesideOthersOf(const Napi::Value& options) {
  return options.IsObject() && options.As<Napi::Object>().Get("besideOthers").ToBoolean();
}

Napi::Promise RunAsync(Napi::Env env, AsyncOp op, Lane lane) {
  AddonData* data = AddonData::Get(env);
  auto* p = new Pending{Napi::Promise::Deferred::New(env), std::move(op), {}};
  Napi::Promise promise = p->deferred.Promise();
  if (data->inflight++ == 0) data->completions.Ref(env);
  const bool background = lane != Lane::kServing && data->background;
  TaskPool* pool = background ? data->background.get() : data->pool.get();
  const TaskKind kind = lane == Lane::kBackgroundRun ? TaskKind::kRun : TaskKind::kBuild;
  pool->Post(
      [p, tsfn = data->completions]() mutable {
        try {
          p->status = p->op.work();
        } catch (const std::exception& e) {
          p->status = Status{13, std::string("internal error in native work: ") + e.what()};
        }
        // On teardown the call is refused; the promise can no longer be settled and is dropped.
        if (tsfn.BlockingCall(p, [](Napi::Env env, Napi::Function, Pending* p) { Settle(env, p); }) != napi_ok) {
          delete p;
        }
      },
      kind);
  return promise;
}

}  // namespace hlo
