// PjrtArena: a DeviceArena bound to one device of one client. place() copies host arrays into
// arena ranges on a pool thread and returns PJRT views of them; disposing a view (or PJRT letting
// go of it after its last execution) returns the range.
#include <cstring>

#include "addon_data.h"
#include "tensor_helper.h"
#include "wraps.h"

namespace hlo {
namespace {

// What PJRT's on-delete callback needs: the range lives in `arena`, which stays mapped while any
// view of it exists.
struct ViewRelease {
  std::shared_ptr<DeviceArena> arena;
};

void OnViewDeleted(void* device_buffer_ptr, void* user_arg) {
  auto* r = static_cast<ViewRelease*>(user_arg);
  r->arena->Free(static_cast<uint8_t*>(device_buffer_ptr));
  delete r;
}

struct Placement {
  HostArg src;
  uint8_t* dst = nullptr;
};

Status CreateView(const std::shared_ptr<ClientState>& cs, const std::shared_ptr<DeviceArena>& arena, int device,
                  hloabi::PJRT_Memory* memory, Placement& p, std::shared_ptr<BufferResource>* out) {
  const auto* api = cs->api();
  hloabi::PJRT_Client_CreateViewOfDeviceBuffer_Args v{};
  v.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_CreateViewOfDeviceBuffer_Args, memory);
  v.client = cs->client();
  v.device_buffer_ptr = p.dst;
  v.dims = p.src.dims.data();
  v.num_dims = p.src.dims.size();
  v.element_type = p.src.type;
  v.device = cs->devices[device].device;
  v.memory = memory;
  auto* release = new ViewRelease{arena};
  v.on_delete_callback = OnViewDeleted;
  v.on_delete_callback_arg = release;
  Status s = TakeError(api, api->PJRT_Client_CreateViewOfDeviceBuffer(&v));
  if (!s.ok()) {
    delete release;  // PJRT drops the callback unrun when it creates no buffer
    return s;
  }
  auto res = std::make_shared<BufferResource>(cs, v.buffer, device);
  res->view_data = p.dst;
  p.dst = nullptr;  // the view owns the range now
  cs->Adopt(res);
  s = DescribeBuffer(res.get());
  if (!s.ok()) {
    res->Release();
    return s;
  }
  *out = std::move(res);
  return s;
}

using Lanes = std::vector<std::vector<uint32_t>>;

// Moves each lane's items (named by index) into a vector of its own, for that lane's task.
template <typename T>
std::vector<std::shared_ptr<std::vector<T>>> SplitByLane(std::vector<T>& items, const Lanes& lanes) {
  std::vector<std::shared_ptr<std::vector<T>>> out;
  out.reserve(lanes.size());
  for (const auto& lane : lanes) {
    auto mine = std::make_shared<std::vector<T>>();
    mine->reserve(lane.size());
    for (uint32_t i : lane) mine->push_back(std::move(items[i]));
    out.push_back(std::move(mine));
  }
  return out;
}

// Takes the client's in-flight hold once per lane (each lane's task ends one), all before any task
// is posted, so that a disposed client is refused with nothing started; false when refused.
bool BeginLanes(ClientState& cs, size_t lanes) {
  for (size_t l = 0; l < lanes; ++l) {
    if (cs.Begin()) continue;
    while (l-- > 0) cs.End();
    return false;
  }
  return true;
}

}  // namespace

Napi::Function ArenaWrap::Init(Napi::Env env) {
  return DefineClass(env, "PjrtArena",
                     {InstanceMethod<&ArenaWrap::Place>("place"), InstanceMethod<&ArenaWrap::Refill>("refill"),
                      InstanceMethod<&ArenaWrap::Stats>("stats"), InstanceMethod<&ArenaWrap::SetLimit>("setLimit"),
                      InstanceMethod<&ArenaWrap::Dispose>("dispose")});
}

Napi::Object ArenaWrap::NewInstance(Napi::Env env, std::shared_ptr<ClientState> cs, int device, int memory,
                                    std::shared_ptr<DeviceArena> arena) {
  Napi::Object o = AddonData::Get(env)->arena_ctor.New({});
  ArenaWrap* w = Napi::ObjectWrap<ArenaWrap>::Unwrap(o);
  w->cs_ = std::move(cs);
  w->device_ = device;
  w->memory_ = memory;
  w->arena_ = std::move(arena);
  return o;
}

ArenaWrap::ArenaWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ArenaWrap>(info) {}

std::shared_ptr<DeviceArena> ArenaWrap::Live(Napi::Env env) {
  if (!arena_ || !cs_ || cs_->closed()) ThrowStatus(env, Status::Disposed("the arena has been disposed"));
  return arena_;
}

// Reads `lanes`, an array of arrays of indices below `count` that together name each index once.
static Lanes ReadLanes(const Napi::Value& v, uint32_t count) {
  Napi::Env env = v.Env();
  if (!v.IsArray()) throw Napi::TypeError::New(env, "lanes must be an array of index arrays");
  Napi::Array a = v.As<Napi::Array>();
  Lanes lanes(a.Length());
  std::vector<bool> seen(count, false);
  uint32_t total = 0;
  for (uint32_t l = 0; l < a.Length(); l++) {
    Napi::Value lane = a.Get(l);
    if (!lane.IsArray()) throw Napi::TypeError::New(env, "lanes must be an array of index arrays");
    Napi::Array la = lane.As<Napi::Array>();
    for (uint32_t j = 0; j < la.Length(); j++) {
      Napi::Value x = la.Get(j);
      uint32_t i = x.IsNumber() ? x.As<Napi::Number>().Uint32Value() : count;
      if (i >= count || seen[i]) throw Napi::TypeError::New(env, "lanes must name every index once");
      seen[i] = true;
      lanes[l].push_back(i);
      ++total;
    }
  }
  if (total != count) throw Napi::TypeError::New(env, "lanes must name every index once");
  return lanes;
}

// place(arrays, lanes) -> one Promise<PjrtBuffer[]> per lane (its buffers in lane order), or null
// when the arrays do not fit under the limit. Every range is reserved here, on the JS thread, before
// any copy starts: a set that does not fit costs no copying, and a caller that frees views and
// places new ones in one turn sees the freed room at once. Each lane copies on its own thread.
Napi::Value ArenaWrap::Place(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto arena = Live(env);
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "place expects an array of {data, type, dims}");
  Napi::Array arr = info[0].As<Napi::Array>();
  const auto lanes = ReadLanes(info[1], arr.Length());
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  std::vector<Placement> placements(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value e = arr.Get(i);
    std::string field = "arrays[" + std::to_string(i) + "]";
    if (!e.IsObject()) throw Napi::TypeError::New(env, field + " must be {data, type, dims}");
    placements[i].src = ReadHostArg(e.As<Napi::Object>(), field, keep);
  }
  for (auto& p : placements) {
    p.dst = arena->Allocate(p.src.bytes);
    if (p.dst == nullptr) {
      for (auto& q : placements)
        if (q.dst != nullptr) arena->Free(q.dst);
      return env.Null();
    }
  }
  auto cs = cs_;
  const int device = device_;
  hloabi::PJRT_Memory* memory = cs->devices[device].memories[memory_];
  if (!BeginLanes(*cs, lanes.size())) {
    for (auto& p : placements) arena->Free(p.dst);
    ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
  }
  const auto byLane = SplitByLane(placements, lanes);
  Napi::Array promises = Napi::Array::New(env, lanes.size());
  for (size_t l = 0; l < lanes.size(); l++) {
    const auto& mine = byLane[l];
    auto outs = std::make_shared<std::vector<std::shared_ptr<BufferResource>>>(mine->size());
    AsyncOp op;
    op.work = [cs, arena, device, memory, mine, outs]() -> Status {
      for (auto& p : *mine) std::memcpy(p.dst, p.src.data, p.src.bytes);
      Status s;
      for (size_t i = 0; i < mine->size() && s.ok(); i++)
        s = CreateView(cs, arena, device, memory, (*mine)[i], &(*outs)[i]);
      if (!s.ok()) {
        for (auto& res : *outs)
          if (res) res->Release();
        for (auto& p : *mine)
          if (p.dst != nullptr) arena->Free(p.dst);
      }
      cs->End();
      return s;
    };
    op.finish = [outs, keep](Napi::Env env) -> Napi::Value {
      Napi::Array a = Napi::Array::New(env, outs->size());
      for (size_t i = 0; i < outs->size(); i++)
        a.Set(static_cast<uint32_t>(i), BufferWrap::NewInstance(env, (*outs)[i]));
      return a;
    };
    promises.Set(static_cast<uint32_t>(l), RunAsync(env, std::move(op)));
  }
  return promises;
}

// refill(buffers, arrays, lanes) -> one Promise<void> per lane: copies arrays[i] over the memory of
// buffers[i], views this arena made, of the same type and shape. The caller guarantees that nothing
// reads the buffers meanwhile (the weight cache refills only views of evicted models, whose
// executions have all completed): PJRT does not track writes made here.
Napi::Value ArenaWrap::Refill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto arena = Live(env);
  if (!info[0].IsArray() || !info[1].IsArray())
    throw Napi::TypeError::New(env, "refill expects (buffers, arrays, lanes)");
  Napi::Array bufs = info[0].As<Napi::Array>();
  Napi::Array arrs = info[1].As<Napi::Array>();
  if (bufs.Length() != arrs.Length()) throw Napi::TypeError::New(env, "refill needs as many arrays as buffers");
  const auto lanes = ReadLanes(info[2], arrs.Length());
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  struct Copy {
    std::shared_ptr<BufferResource> dst;
    HostArg src;
  };
  std::vector<Copy> copies(bufs.Length());
  for (uint32_t i = 0; i < bufs.Length(); i++) {
    std::string field = "arrays[" + std::to_string(i) + "]";
    Copy& c = copies[i];
    c.dst = BufferWrap::FromValue(bufs.Get(i), "buffers[" + std::to_string(i) + "]");
    Napi::Value a = arrs.Get(i);
    if (!a.IsObject()) throw Napi::TypeError::New(env, field + " must be {data, type, dims}");
    c.src = ReadHostArg(a.As<Napi::Object>(), field, keep);
    if (c.dst->client() != cs_ || c.dst->view_data == nullptr || !arena->Holds(c.dst->view_data, c.src.bytes)) {
      throw Napi::TypeError::New(env, "buffers[" + std::to_string(i) + "] is not a view of this arena");
    }
    if (c.dst->type != c.src.type || c.dst->dims != c.src.dims) {
      throw Napi::TypeError::New(env, field + " differs in type or shape from buffers[" + std::to_string(i) + "]");
    }
  }
  // Pinned so that a dispose() meanwhile defers the destroy, and the range stays taken, until the
  // copy is done.
  auto cs = cs_;
  size_t pinned = 0;
  while (pinned < copies.size() && copies[pinned].dst->Pin()) ++pinned;
  if (pinned < copies.size()) {
    for (size_t i = 0; i < pinned; ++i) copies[i].dst->Unpin();
    ThrowStatus(env, Status::Disposed("a buffer has been disposed"));
  }
  if (!BeginLanes(*cs, lanes.size())) {
    for (auto& c : copies) c.dst->Unpin();
    ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
  }
  const auto byLane = SplitByLane(copies, lanes);
  Napi::Array promises = Napi::Array::New(env, lanes.size());
  for (size_t l = 0; l < lanes.size(); l++) {
    const auto& mine = byLane[l];
    AsyncOp op;
    op.work = [cs, mine]() -> Status {
      for (auto& c : *mine) std::memcpy(c.dst->view_data, c.src.data, c.src.bytes);
      for (auto& c : *mine) c.dst->Unpin();
      cs->End();
      return Status::Ok();
    };
    op.finish = [keep](Napi::Env env) -> Napi::Value { return env.Undefined(); };
    promises.Set(static_cast<uint32_t>(l), RunAsync(env, std::move(op)));
  }
  return promises;
}

Napi::Value ArenaWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DeviceArena::Stats s = Live(env)->GetStats();
  Napi::Object o = Napi::Object::New(env);
  o.Set("limitBytes", Napi::Number::New(env, static_cast<double>(s.limit_bytes)));
  o.Set("mappedBytes", Napi::Number::New(env, static_cast<double>(s.mapped_bytes)));
  o.Set("usedBytes", Napi::Number::New(env, static_cast<double>(s.used_bytes)));
  o.Set("largestFreeBytes", Napi::Number::New(env, static_cast<double>(s.largest_free_bytes)));
  o.Set("ranges", Napi::Number::New(env, static_cast<double>(s.ranges)));
  o.Set("chunks", Napi::Number::New(env, static_cast<double>(s.chunks)));
  o.Set("failedPlacements", Napi::Number::New(env, static_cast<double>(s.failed_allocations)));
  return o;
}

Napi::Value ArenaWrap::SetLimit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto arena = Live(env);
  if (!info[0].IsNumber() || info[0].As<Napi::Number>().DoubleValue() < 0)
    throw Napi::TypeError::New(env, "limit must be a non-negative number");
  arena->SetLimit(static_cast<size_t>(info[0].As<Napi::Number>().DoubleValue()));
  return env.Undefined();
}

// The memory is unmapped once the last view of it is gone too.
Napi::Value ArenaWrap::Dispose(const Napi::CallbackInfo& info) {
  arena_.reset();
  cs_.reset();
  return info.Env().Undefined();
}

}  // namespace hlo
