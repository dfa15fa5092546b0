// Lifetimes of PJRT objects shared between JS wrappers and in-flight work.
//
// Each PJRT object is owned by one Resource. JS dispose() (or GC) calls Release(); work on a worker
// thread Pin()s what it uses, so a release during that work only takes effect at the last Unpin().
// The ClientState outlives every Resource it made: disposing a client releases all of them and
// destroys the PJRT client once no work is in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pjrt_abi.h"
#include "plugin.h"
#include "status.h"

namespace hlo {

class Resource {
 public:
  virtual ~Resource() = default;
  // Frees the PJRT object now, or at the last Unpin() if work is using it. Idempotent.
  void Release();
  // Marks the object in use by a task. False when it was already released.
  bool Pin();
  void Unpin();
  bool released() const;

 protected:
  virtual void Destroy() = 0;  // called once, with no pins held

 private:
  mutable std::mutex mu_;
  int pins_ = 0;
  bool released_ = false;
  bool destroyed_ = false;
};

struct DeviceInfo {
  hloabi::PJRT_Device* device = nullptr;
  int id = 0;
  int local_hardware_id = 0;
  std::string kind;
  std::string debug_string;
  std::vector<hloabi::PJRT_Memory*> memories;
  std::vector<std::string> memory_kinds;
  std::vector<int> memory_ids;
  int default_memory = -1;  // index into memories, -1 when the plugin reports none
};

class ClientState {
 public:
  ClientState(const Plugin* plugin, hloabi::PJRT_Client* client);
  ~ClientState();

  const hloabi::PJRT_Api* api() const { return plugin_->api; }
  const Plugin* plugin() const { return plugin_; }
  hloabi::PJRT_Client* client() const { return client_; }

  // Call on the JS thread before posting work; false once the client is disposed.
  bool Begin();
  // Call on the worker thread after the work (and its Unpin()s).
  void End();
  // Registers a new Resource so that disposing the client frees it too.
  void Adopt(const std::shared_ptr<Resource>& r);
  void Close();
  bool closed() const;

  std::vector<DeviceInfo> devices;
  std::string platform_name;
  std::string platform_version;
  std::atomic<int64_t> live_buffers{0};
  std::atomic<int64_t> live_buffer_bytes{0};
  std::atomic<int64_t> live_executables{0};
  // Read outputs that live in host memory with a plain memcpy instead of an async transfer
  // (HLOSERVE_DIRECT_HOST_COPY=0 turns it off, for comparison).
  bool direct_host_copy = true;
  // Set when the client was created with the CPU plugin's `asynchronous: false`: that client runs
  // each execution on the thread that launches it, and does not order executions one after
  // another as its asynchronous mode does (one stream per device). Then every execution of this
  // client holds `execute_mu` from launch to completion. Why: the plugin's FFT (ducc) splits its
  // work over the client's Eigen pool and blocks its thread until the pieces are done, also when
  // that thread is one of the pool's own (a thunk continued there). Two executions of an FFT
  // program at once could leave both Eigen threads, and the launching threads, waiting on pieces
  // that no free thread remained to run: the whole client stopped (bench/RESULTS.md, session 14).
  bool serialize_executions = false;
  std::mutex execute_mu;

 private:
  void DestroyLocked();
  const Plugin* plugin_;
  hloabi::PJRT_Client* client_;
  mutable std::mutex mu_;
  bool closed_ = false;
  bool destroyed_ = false;
  int inflight_ = 0;
  std::vector<std::weak_ptr<Resource>> children_;
};

class BufferResource : public Resource {
 public:
  BufferResource(std::shared_ptr<ClientState> cs, hloabi::PJRT_Buffer* buffer, int device_index);
  ~BufferResource() override;
  hloabi::PJRT_Buffer* buffer() const { return buffer_; }
  const std::shared_ptr<ClientState>& client() const { return cs_; }
  int device_index() const { return device_index_; }
  int type = 0;
  std::vector<int64_t> dims;
  size_t on_device_bytes = 0;
  std::string memory_kind;
  // The memory a view made by a DeviceArena looks at; null for buffers PJRT allocated.
  uint8_t* view_data = nullptr;

 protected:
  void Destroy() override;

 private:
  std::shared_ptr<ClientState> cs_;
  hloabi::PJRT_Buffer* buffer_;
  int device_index_;
};

class ExecutableResource : public Resource {
 public:
  ExecutableResource(std::shared_ptr<ClientState> cs, hloabi::PJRT_LoadedExecutable* exe);
  ~ExecutableResource() override;
  hloabi::PJRT_LoadedExecutable* executable() const { return exe_; }
  const std::shared_ptr<ClientState>& client() const { return cs_; }
  size_t num_outputs = 0;
  std::vector<int> output_types;
  std::vector<std::vector<int64_t>> output_dims;
  bool has_memory_stats = false;
  hloabi::PJRT_Executable_GetCompiledMemoryStats_Args memory_stats{};

 protected:
  void Destroy() override;

 private:
  std::shared_ptr<ClientState> cs_;
  hloabi::PJRT_LoadedExecutable* exe_;
};

// Fills type, dims, size and memory kind of a freshly created buffer.
Status DescribeBuffer(BufferResource* b);

// Issues a copy of `src` into `target` without waiting for it; on success *out is the new buffer,
// adopted by the client. Copies that are started together overlap.
Status StartCopy(BufferResource* src, hloabi::PJRT_Memory* target, std::shared_ptr<BufferResource>* out);

// Waits until a started copy has landed (so its source may be freed), then describes it.
Status FinishCopy(BufferResource* dst);

}  // namespace hlo
