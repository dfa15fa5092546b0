#include "handles.h"

namespace hlo {

void Resource::Release() {
  bool destroy = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (released_) return;
    released_ = true;
    destroy = pins_ == 0 && !destroyed_;
    if (destroy) destroyed_ = true;
  }
  if (destroy) Destroy();
}

bool Resource::Pin() {
  std::lock_guard<std::mutex> lock(mu_);
  if (released_) return false;
  ++pins_;
  return true;
}

void Resource::Unpin() {
  bool destroy = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --pins_;
    destroy = pins_ == 0 && released_ && !destroyed_;
    if (destroy) destroyed_ = true;
  }
  if (destroy) Destroy();
}

bool Resource::released() const {
  std::lock_guard<std::mutex> lock(mu_);
  return released_;
}

ClientState::ClientState(const Plugin* plugin, hloabi::PJRT_Client* client) : plugin_(plugin), client_(client) {}

ClientState::~ClientState() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  if (inflight_ == 0) DestroyLocked();
}

bool ClientState::Begin() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  ++inflight_;
  return true;
}

void ClientState::End() {
  std::vector<std::shared_ptr<Resource>> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --inflight_;
    if (!closed_ || inflight_ != 0 || destroyed_) return;
    // Resources adopted by the work that just ended were not seen by Close().
    for (auto& w : children_) {
      if (auto r = w.lock()) release.push_back(std::move(r));
    }
    children_.clear();
  }
  for (auto& r : release) r->Release();
  std::lock_guard<std::mutex> lock(mu_);
  if (inflight_ == 0) DestroyLocked();
}

void ClientState::Adopt(const std::shared_ptr<Resource>& r) {
  bool release_now = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (destroyed_) {
      release_now = true;
    } else {
      // Drop expired entries now and then so the list tracks live objects only.
      if (children_.size() >= 64 && (children_.size() & (children_.size() - 1)) == 0) {
        std::vector<std::weak_ptr<Resource>> live;
        for (auto& w : children_)
          if (!w.expired()) live.push_back(w);
        children_.swap(live);
      }
      children_.push_back(r);
    }
  }
  if (release_now) r->Release();
}

void ClientState::Close() {
  std::vector<std::shared_ptr<Resource>> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    for (auto& w : children_) {
      if (auto r = w.lock()) release.push_back(std::move(r));
    }
    children_.clear();
  }
  for (auto& r : release) r->Release();
  std::lock_guard<std::mutex> lock(mu_);
  if (inflight_ == 0) DestroyLocked();
}

bool ClientState::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

void ClientState::DestroyLocked() {
  if (destroyed_ || client_ == nullptr) {
    destroyed_ = true;
    return;
  }
  destroyed_ = true;
  hloabi::PJRT_Client_Destroy_Args d{};
  d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_Destroy_Args, client);
  d.client = client_;
  TakeError(api(), api()->PJRT_Client_Destroy(&d));
  client_ = nullptr;
}

BufferResource::BufferResource(std::shared_ptr<ClientState> cs, hloabi::PJRT_Buffer* buffer, int device_index)
    : cs_(std::move(cs)), buffer_(buffer), device_index_(device_index) {
  cs_->live_buffers.fetch_add(1);
}

BufferResource::~BufferResource() { Release(); }

void BufferResource::Destroy() {
  if (buffer_ == nullptr) return;
  hloabi::PJRT_Buffer_Destroy_Args d{};
  d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_Destroy_Args, buffer);
  d.buffer = buffer_;
  TakeError(cs_->api(), cs_->api()->PJRT_Buffer_Destroy(&d));
  buffer_ = nullptr;
  cs_->live_buffers.fetch_sub(1);
  cs_->live_buffer_bytes.fetch_sub(static_cast<int64_t>(on_device_bytes));
}

ExecutableResource::ExecutableResource(std::shared_ptr<ClientState> cs, hloabi::PJRT_LoadedExecutable* exe)
    : cs_(std::move(cs)), exe_(exe) {
  cs_->live_executables.fetch_add(1);
}

ExecutableResource::~ExecutableResource() { Release(); }

void ExecutableResource::Destroy() {
  if (exe_ == nullptr) return;
  hloabi::PJRT_LoadedExecutable_Destroy_Args d{};
  d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_LoadedExecutable_Destroy_Args, executable);
  d.executable = exe_;
  TakeError(cs_->api(), cs_->api()->PJRT_LoadedExecutable_Destroy(&d));
  exe_ = nullptr;
  cs_->live_executables.fetch_sub(1);
}

Status StartCopy(BufferResource* src, hloabi::PJRT_Memory* target, std::shared_ptr<BufferResource>* out) {
  const auto& cs = src->client();
  const auto* api = cs->api();
  hloabi::PJRT_Buffer_CopyToMemory_Args c{};
  c.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_CopyToMemory_Args, dst_buffer);
  c.buffer = src->buffer();
  c.dst_memory = target;
  Status s = TakeError(api, api->PJRT_Buffer_CopyToMemory(&c));
  if (!s.ok()) return s;
  *out = std::make_shared<BufferResource>(cs, c.dst_buffer, src->device_index());
  cs->Adopt(*out);
  return s;
}

Status FinishCopy(BufferResource* dst) {
  const auto* api = dst->client()->api();
  hloabi::PJRT_Buffer_ReadyEvent_Args r{};
  r.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_ReadyEvent_Args, event);
  r.buffer = dst->buffer();
  Status s = TakeError(api, api->PJRT_Buffer_ReadyEvent(&r));
  if (s.ok()) s = AwaitAndDestroy(api, r.event);
  if (s.ok()) s = DescribeBuffer(dst);
  return s;
}

Status DescribeBuffer(BufferResource* b) {
  const auto* api = b->client()->api();
  hloabi::PJRT_Buffer_ElementType_Args t{};
  t.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_ElementType_Args, type);
  t.buffer = b->buffer();
  Status s = TakeError(api, api->PJRT_Buffer_ElementType(&t));
  if (!s.ok()) return s;
  b->type = t.type;
  hloabi::PJRT_Buffer_Dimensions_Args d{};
  d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_Dimensions_Args, num_dims);
  d.buffer = b->buffer();
  s = TakeError(api, api->PJRT_Buffer_Dimensions(&d));
  if (!s.ok()) return s;
  b->dims.assign(d.dims, d.dims + d.num_dims);
  hloabi::PJRT_Buffer_OnDeviceSizeInBytes_Args z{};
  z.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
  z.buffer = b->buffer();
  s = TakeError(api, api->PJRT_Buffer_OnDeviceSizeInBytes(&z));
  if (!s.ok()) return s;
  b->on_device_bytes = z.on_device_size_in_bytes;
  b->client()->live_buffer_bytes.fetch_add(static_cast<int64_t>(z.on_device_size_in_bytes));
  hloabi::PJRT_Buffer_Memory_Args m{};
  m.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_Memory_Args, memory);
  m.buffer = b->buffer();
  if (TakeError(api, api->PJRT_Buffer_Memory(&m)).ok() && m.memory != nullptr) {
    hloabi::PJRT_Memory_Kind_Args k{};
    k.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Memory_Kind_Args, kind_size);
    k.memory = m.memory;
    if (TakeError(api, api->PJRT_Memory_Kind(&k)).ok()) b->memory_kind.assign(k.kind, k.kind_size);
  }
  return Status::Ok();
}

}  // namespace hlo
