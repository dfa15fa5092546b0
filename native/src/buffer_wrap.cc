#include "addon_data.h"
#include "tensor_helper.h"
#include "wraps.h"

namespace hlo {

Napi::Function BufferWrap::Init(Napi::Env env) {
  return DefineClass(
      env, "PjrtBuffer",
      {InstanceMethod<&BufferWrap::Describe>("describe"), InstanceMethod<&BufferWrap::ToHost>("toHost"),
       InstanceMethod<&BufferWrap::CopyToMemory>("copyToMemory"), InstanceMethod<&BufferWrap::IsDeleted>("isDeleted"),
       InstanceMethod<&BufferWrap::Dispose>("dispose")});
}

Napi::Object BufferWrap::NewInstance(Napi::Env env, std::shared_ptr<BufferResource> res) {
  auto* holder = new std::shared_ptr<BufferResource>(std::move(res));
  auto ext = Napi::External<std::shared_ptr<BufferResource>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<BufferResource>* h) { delete h; });
  return AddonData::Get(env)->buffer_ctor.New({ext});
}

namespace {
// Marks the objects this addon wrapped as PjrtBuffer (a random 128-bit tag, fixed per build).
constexpr napi_type_tag kBufferTag = {0x8f3a61c2d94b4e07ULL, 0xb25e0c7a19d3f648ULL};
}  // namespace

BufferWrap::BufferWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BufferWrap>(info) {
  if (info.Length() != 1 || !info[0].IsExternal())
    throw Napi::TypeError::New(info.Env(), "PjrtBuffer is created by upload() or execute()");
  res_ = *info[0].As<Napi::External<std::shared_ptr<BufferResource>>>().Data();
  info.This().As<Napi::Object>().TypeTag(&kBufferTag);
}

BufferWrap* BufferWrap::Tagged(const Napi::Value& v) {
  if (!v.IsObject()) return nullptr;
  Napi::Object o = v.As<Napi::Object>();
  if (!o.CheckTypeTag(&kBufferTag)) return nullptr;
  return Napi::ObjectWrap<BufferWrap>::Unwrap(o);
}

// GC backstop: an undisposed buffer is freed when its wrapper is collected.
BufferWrap::~BufferWrap() {
  if (res_) res_->Release();
}

std::shared_ptr<BufferResource> BufferWrap::Live(Napi::Env env) {
  if (!res_ || res_->released() || res_->client()->closed())
    ThrowStatus(env, Status::Disposed("the device buffer has been disposed"));
  return res_;
}

std::shared_ptr<BufferResource> BufferWrap::FromValue(const Napi::Value& v, const std::string& field) {
  Napi::Env env = v.Env();
  BufferWrap* w = Tagged(v);
  if (w == nullptr) throw Napi::TypeError::New(env, field + " must be a PjrtBuffer");
  return w->Live(env);
}

Napi::Value BufferWrap::Describe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto b = Live(env);
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", Napi::Number::New(env, b->type));
  o.Set("dims", DimsToJs(env, b->dims));
  o.Set("onDeviceBytes", Napi::Number::New(env, static_cast<double>(b->on_device_bytes)));
  o.Set("memoryKind", Napi::String::New(env, b->memory_kind));
  o.Set("deviceIndex", Napi::Number::New(env, b->device_index()));
  return o;
}

Napi::Value BufferWrap::ToHost(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto b = Live(env);
  auto cs = b->client();
  size_t logical = ElementSize(b->type);
  for (int64_t d : b->dims) logical *= static_cast<size_t>(d);
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  uint8_t* dst = nullptr;
  bool into_js = !info[0].IsUndefined() && !info[0].IsNull();
  if (into_js) {
    const uint8_t* p = nullptr;
    size_t n = 0;
    ReadBytes(info[0], "destination", &p, &n, keep);
    if (n != logical)
      throw Napi::RangeError::New(
          env, "destination has " + std::to_string(n) + " bytes, the buffer holds " + std::to_string(logical));
    dst = const_cast<uint8_t*>(p);
  }
  if (!cs->Begin() || !b->Pin()) {
    ThrowStatus(env, Status::Disposed("the device buffer has been disposed"));
  }
  auto block = std::make_shared<HostBlock>();
  AsyncOp op;
  op.work = [b, cs, dst, logical, block]() -> Status {
    const auto* api = cs->api();
    uint8_t* target = dst;
    if (target == nullptr) {
      *block = HostBlock::Allocate(logical);
      target = block->data;
    }
    hloabi::PJRT_Buffer_ToHostBuffer_Args t{};
    t.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_ToHostBuffer_Args, event);
    t.src = b->buffer();
    t.dst = target;
    t.dst_size = logical;
    Status s = TakeError(api, api->PJRT_Buffer_ToHostBuffer(&t));
    if (s.ok()) s = AwaitAndDestroy(api, t.event);
    b->Unpin();
    cs->End();
    return s;
  };
  op.finish = [block, keep, into_js](Napi::Env env) -> Napi::Value {
    if (into_js) return env.Undefined();
    return block->ToJs(env);
  };
  // A failed download frees its block when the last reference to it goes (on the JS thread).
  return RunAsync(env, std::move(op));
}

Napi::Value BufferWrap::CopyToMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto b = Live(env);
  auto cs = b->client();
  if (!info[0].IsNumber()) throw Napi::TypeError::New(env, "memory index must be a number");
  int mem = info[0].As<Napi::Number>().Int32Value();
  const DeviceInfo& dev = cs->devices[b->device_index()];
  if (mem < 0 || mem >= static_cast<int>(dev.memories.size()))
    throw Napi::RangeError::New(env, "memory index out of range");
  if (!cs->Begin()) ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
  if (!b->Pin()) {
    cs->End();
    ThrowStatus(env, Status::Disposed("the device buffer has been disposed"));
  }
  auto out = std::make_shared<std::shared_ptr<BufferResource>>();
  hloabi::PJRT_Memory* target = dev.memories[mem];
  AsyncOp op;
  op.work = [b, cs, target, out]() -> Status {
    std::shared_ptr<BufferResource> res;
    // Resolve when the copy has landed, so callers can time it and free the source safely.
    Status s = StartCopy(b.get(), target, &res);
    if (s.ok()) s = FinishCopy(res.get());
    if (s.ok())
      *out = res;
    else if (res)
      res->Release();
    b->Unpin();
    cs->End();
    return s;
  };
  op.finish = [out](Napi::Env env) -> Napi::Value { return BufferWrap::NewInstance(env, *out); };
  return RunAsync(env, std::move(op));
}

Napi::Value BufferWrap::IsDeleted(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto b = Live(env);
  hloabi::PJRT_Buffer_IsDeleted_Args a{};
  a.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_IsDeleted_Args, is_deleted);
  a.buffer = b->buffer();
  Status s = TakeError(b->client()->api(), b->client()->api()->PJRT_Buffer_IsDeleted(&a));
  if (!s.ok()) ThrowStatus(env, s);
  return Napi::Boolean::New(env, a.is_deleted);
}

Napi::Value BufferWrap::Dispose(const Napi::CallbackInfo& info) {
  if (res_) res_->Release();
  return info.Env().Undefined();
}

}  // namespace hlo
