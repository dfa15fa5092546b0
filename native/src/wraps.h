// The three JS classes over PJRT objects. Each holds a shared_ptr to its Resource (or client
// state); dispose() releases it deterministically, GC is only a backstop.
#pragma once

#include <napi.h>

#include <memory>

#include "device_arena.h"
#include "handles.h"

namespace hlo {

class ClientWrap : public Napi::ObjectWrap<ClientWrap> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, std::shared_ptr<ClientState> state);
  explicit ClientWrap(const Napi::CallbackInfo& info);
  ~ClientWrap() override;

 private:
  std::shared_ptr<ClientState> Live(Napi::Env env);
  Napi::Value PlatformName(const Napi::CallbackInfo& info);
  Napi::Value PlatformVersion(const Napi::CallbackInfo& info);
  Napi::Value Devices(const Napi::CallbackInfo& info);
  Napi::Value MemoryStats(const Napi::CallbackInfo& info);
  Napi::Value Ledger(const Napi::CallbackInfo& info);
  Napi::Value Compile(const Napi::CallbackInfo& info);
  Napi::Value DeserializeAndLoad(const Napi::CallbackInfo& info);
  Napi::Value Upload(const Napi::CallbackInfo& info);
  Napi::Value CopyBuffers(const Napi::CallbackInfo& info);
  Napi::Value CreateArena(const Napi::CallbackInfo& info);
  Napi::Value DisposeInBackground(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value IsDisposed(const Napi::CallbackInfo& info);
  std::shared_ptr<ClientState> state_;
};

class BufferWrap : public Napi::ObjectWrap<BufferWrap> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, std::shared_ptr<BufferResource> res);
  explicit BufferWrap(const Napi::CallbackInfo& info);
  ~BufferWrap() override;
  // The live resource behind a JS value, or a thrown DisposedError / TypeError.
  static std::shared_ptr<BufferResource> FromValue(const Napi::Value& v, const std::string& field);
  // The wrapper behind a JS value, or nullptr when it is not a PjrtBuffer. A type-tag check: the
  // two InstanceOf calls (JS instanceof semantics) it replaced cost about 0.7 us per buffer
  // argument of every execute (measured: 13-15 us -> 9 us to convert mlp's seven arguments).
  static BufferWrap* Tagged(const Napi::Value& v);
  // The live resource, or a thrown DisposedError.
  std::shared_ptr<BufferResource> LiveResource(Napi::Env env) { return Live(env); }
  // The resource, disposed or not (null only for a wrapper never bound).
  const std::shared_ptr<BufferResource>& Resource() const { return res_; }

 private:
  std::shared_ptr<BufferResource> Live(Napi::Env env);
  Napi::Value Describe(const Napi::CallbackInfo& info);
  Napi::Value ToHost(const Napi::CallbackInfo& info);
  Napi::Value CopyToMemory(const Napi::CallbackInfo& info);
  Napi::Value IsDeleted(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  std::shared_ptr<BufferResource> res_;
};

class ExecutableWrap : public Napi::ObjectWrap<ExecutableWrap> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, std::shared_ptr<ExecutableResource> res);
  explicit ExecutableWrap(const Napi::CallbackInfo& info);
  ~ExecutableWrap() override;

 private:
  std::shared_ptr<ExecutableResource> Live(Napi::Env env);
  Napi::Value Describe(const Napi::CallbackInfo& info);
  Napi::Value Execute(const Napi::CallbackInfo& info);
  Napi::Value ExecuteInline(const Napi::CallbackInfo& info);
  Napi::Value Serialize(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value DisposeInBackground(const Napi::CallbackInfo& info);
  std::shared_ptr<ExecutableResource> res_;
};

// bindArguments(buffers) -> a handle execute() and executeInline() append to their arguments
// (executable_wrap.cc).
Napi::Value BindArguments(const Napi::CallbackInfo& info);

class ArenaWrap : public Napi::ObjectWrap<ArenaWrap> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::Object NewInstance(Napi::Env env, std::shared_ptr<ClientState> cs, int device, int memory,
                                  std::shared_ptr<DeviceArena> arena);
  explicit ArenaWrap(const Napi::CallbackInfo& info);

 private:
  std::shared_ptr<DeviceArena> Live(Napi::Env env);
  Napi::Value Place(const Napi::CallbackInfo& info);
  Napi::Value Refill(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value SetLimit(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  std::shared_ptr<ClientState> cs_;
  std::shared_ptr<DeviceArena> arena_;
  int device_ = 0;
  int memory_ = 0;
};

// The serialized CompileOptionsProto every compile() and deserializeAndLoad() uses; part of the
// key of a compiled executable (ExecutableCache).
std::string CompileOptionsBytes();

// createClient(pluginPath, options) -> Promise<ClientWrap>
Napi::Value CreateClient(const Napi::CallbackInfo& info);

// shmRead / shmWrite: shared-memory copies on the addon's threads (shm_io.cc).
void RegisterShmIo(Napi::Env env, Napi::Object exports);

}  // namespace hlo
