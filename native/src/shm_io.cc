// System shared memory on the addon's side. Inputs are read in place from a mapping made once per
// registered window (below: shmMap, with a SIGBUS guard for an owner that truncates the object
// under a copy). Outputs are written with pwrite on the addon's threads, never through the mapping:
// a truncation racing with a pwrite can at worst regrow the owner's object (the size is checked
// just before, so only inside that window), never raise a signal. shmRead (pread) is
// the fallback for a window the addon could not map. fstat before each copy catches the common
// cases (the object truncated below the registered window, or unlinked) with a clear message.
#include "shm_io.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

#include "addon_data.h"
#include "tensor_helper.h"
#include "wraps.h"

namespace hlo {
namespace {

constexpr double kMaxSafe = 9007199254740991.0;

int64_t ReadInt(const Napi::Value& v, const char* field) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(field) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= kMaxSafe) || d != static_cast<double>(static_cast<int64_t>(d))) {
    throw Napi::TypeError::New(v.Env(), std::string(field) + " must be a non-negative safe integer");
  }
  return static_cast<int64_t>(d);
}

// The object must still be linked and at least `min_size` bytes long.
Status CheckObject(int fd, int64_t min_size) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::Shm(std::string("fstat failed: ") + std::strerror(errno));
  if (st.st_nlink == 0) return Status::Shm("the shared memory object was unlinked by its owner");
  if (st.st_size < min_size) {
    return Status::Shm("the shared memory object was truncated by its owner to " + std::to_string(st.st_size) +
                       " bytes (the region needs " + std::to_string(min_size) + ")");
  }
  return Status::Ok();
}

struct ShmArgs {
  int fd;
  int64_t position;
  int64_t min_size;
};

ShmArgs ReadArgs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t fd = ReadInt(info[0], "fd");
  if (fd > std::numeric_limits<int>::max()) throw Napi::TypeError::New(env, "fd out of range");
  return ShmArgs{static_cast<int>(fd), ReadInt(info[1], "position"), ReadInt(info[3], "minSize")};
}

// shmRead(fd, position, length, minSize) -> Promise<Buffer>: `length` bytes from `position`.
Napi::Value ShmRead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ShmArgs a = ReadArgs(info);
  int64_t length = ReadInt(info[2], "length");
  if (a.position + length > a.min_size) throw Napi::RangeError::New(env, "read past minSize");
  auto block = std::make_shared<HostBlock>();
  AsyncOp op;
  op.work = [a, length, block]() -> Status {
    Status s = CheckObject(a.fd, a.min_size);
    if (!s.ok()) return s;
    *block = HostBlock::Allocate(static_cast<size_t>(length));
    size_t done = 0;
    while (done < static_cast<size_t>(length)) {
      ssize_t n =
          pread(a.fd, block->data + done, static_cast<size_t>(length) - done, a.position + static_cast<int64_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::Shm(std::string("read failed: ") + std::strerror(errno));
      if (n == 0) return Status::Shm("the shared memory object was truncated by its owner during the read");
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  };
  op.finish = [block](Napi::Env env) -> Napi::Value { return block->ToJs(env); };
  return RunAsync(env, std::move(op));
}

// shmWrite(fd, position, data, minSize) -> Promise<void>. The size check comes first because a
// pwrite past the end would silently grow an object its owner has shrunk.
Napi::Value ShmWrite(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ShmArgs a = ReadArgs(info);
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  const uint8_t* data = nullptr;
  size_t length = 0;
  ReadBytes(info[2], "data", &data, &length, keep);
  if (a.position + static_cast<int64_t>(length) > a.min_size) throw Napi::RangeError::New(env, "write past minSize");
  AsyncOp op;
  op.work = [a, data, length]() -> Status {
    Status s = CheckObject(a.fd, a.min_size);
    if (!s.ok()) return s;
    size_t done = 0;
    while (done < length) {
      ssize_t n = pwrite(a.fd, data + done, length - done, a.position + static_cast<int64_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Status::Shm(std::string("write failed: ") + (n < 0 ? std::strerror(errno) : "no progress"));
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  };
  // `keep` lives until the promise settles, on the JS thread.
  op.finish = [keep](Napi::Env env) -> Napi::Value { return env.Undefined(); };
  return RunAsync(env, std::move(op));
}

// ---- Mapped regions -------------------------------------------------------------------------
//
// A registered region is mapped once (MAP_SHARED) and handed to JS as one external Buffer; an
// input tensor is a view of it, which execute() gives to PJRT as its host buffer, so a 64 MB input
// is never copied into a fresh JS ArrayBuffer (whose external-memory accounting cost a full GC per
// request). The owner may still ftruncate the object while a copy reads the mapping: the pages past
// the new end then raise SIGBUS in whichever thread touches them (ours, XLA's, or the JS thread).
// As Wayland's wl_shm does for the same problem, a SIGBUS handler that finds the faulting address
// inside one of our mappings replaces that whole mapping with anonymous zero pages (mmap
// MAP_FIXED) and marks it faulted; the interrupted copy resumes, reads zeros, and the request that
// used it is answered with an error when it checks shmFaulted(). Any other SIGBUS is passed on to
// the previous disposition, so a real bus error still kills the process. A faulted mapping stays
// faulted: the client has to register the region again.

constexpr size_t kMaxMaps = 1024;

struct MapSlot {
  std::atomic<uintptr_t> start{0};
  std::atomic<size_t> length{0};
  std::atomic<bool> faulted{false};
};

MapSlot g_maps[kMaxMaps];
std::mutex g_maps_mu;  // serializes slot claims and releases (JS thread and GC finalizers)
struct sigaction g_prev_bus;
std::atomic<bool> g_handler_installed{false};

void OnBus(int sig, siginfo_t* info, void* ctx) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (size_t i = 0; i < kMaxMaps; ++i) {
    const uintptr_t start = g_maps[i].start.load(std::memory_order_acquire);
    const size_t length = g_maps[i].length.load(std::memory_order_acquire);
    if (start == 0 || addr < start || addr >= start + length) continue;
    // Same address range, private anonymous pages: the faulting instruction restarts and succeeds.
    void* r = mmap(reinterpret_cast<void*>(start), length, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (r == MAP_FAILED) break;
    g_maps[i].faulted.store(true, std::memory_order_release);
    return;
  }
  if (g_prev_bus.sa_flags & SA_SIGINFO) {
    if (g_prev_bus.sa_sigaction != nullptr) {
      g_prev_bus.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (g_prev_bus.sa_handler != SIG_DFL && g_prev_bus.sa_handler != SIG_IGN) {
    g_prev_bus.sa_handler(sig);
    return;
  }
  // Not ours and no handler before us: the default action, as if we were never installed.
  signal(SIGBUS, SIG_DFL);
}

void InstallBusHandler() {
  if (g_handler_installed.exchange(true)) return;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = OnBus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_prev_bus);
}

struct MapHint {
  size_t slot;
  void* base;
  size_t length;
};

void Unmap(Napi::Env, uint8_t*, MapHint* hint) {
  {
    std::lock_guard<std::mutex> lock(g_maps_mu);
    g_maps[hint->slot].start.store(0, std::memory_order_release);
    g_maps[hint->slot].length.store(0, std::memory_order_release);
    g_maps[hint->slot].faulted.store(false, std::memory_order_release);
  }
  munmap(hint->base, hint->length);
  delete hint;
}

// shmMap(fd, offset, length) -> Buffer | null: the window [offset, offset + length) of the object,
// mapped shared. null when every slot is taken or mmap refuses (the caller copies instead). The
// mapping lives until the Buffer and every view of it are collected, so nothing that still holds
// a view (a queued request, an execution in flight) can see it unmapped.
Napi::Value ShmMap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t fd = ReadInt(info[0], "fd");
  if (fd > std::numeric_limits<int>::max()) throw Napi::TypeError::New(env, "fd out of range");
  int64_t offset = ReadInt(info[1], "offset");
  int64_t length = ReadInt(info[2], "length");
  if (length <= 0) throw Napi::RangeError::New(env, "length must be positive");
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t aligned = offset - offset % page;
  const size_t map_len = static_cast<size_t>(length + (offset - aligned));
  InstallBusHandler();
  std::lock_guard<std::mutex> lock(g_maps_mu);
  size_t slot = kMaxMaps;
  for (size_t i = 0; i < kMaxMaps; ++i) {
    if (g_maps[i].start.load(std::memory_order_acquire) == 0) {
      slot = i;
      break;
    }
  }
  if (slot == kMaxMaps) return env.Null();
  void* base = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), aligned);
  if (base == MAP_FAILED) return env.Null();
  g_maps[slot].faulted.store(false, std::memory_order_release);
  g_maps[slot].length.store(map_len, std::memory_order_release);
  g_maps[slot].start.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
  auto* hint = new MapHint{slot, base, map_len};
  return Napi::Buffer<uint8_t>::New(env, static_cast<uint8_t*>(base) + (offset - aligned), static_cast<size_t>(length),
                                    Unmap, hint);
}

// shmFaulted(view) -> boolean: whether the mapping holding `view` was hit by a SIGBUS (its object
// truncated under a copy) and now holds zeros.
Napi::Value ShmFaulted(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  const uint8_t* data = nullptr;
  size_t length = 0;
  ReadBytes(info[0], "view", &data, &length, keep);
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  for (size_t i = 0; i < kMaxMaps; ++i) {
    const uintptr_t start = g_maps[i].start.load(std::memory_order_acquire);
    if (start != 0 && p >= start && p < start + g_maps[i].length.load(std::memory_order_acquire))
      return Napi::Boolean::New(env, g_maps[i].faulted.load(std::memory_order_acquire));
  }
  return Napi::Boolean::New(env, false);
}

}  // namespace

bool InSharedMapping(const void* p, size_t n) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (size_t i = 0; i < kMaxMaps; ++i) {
    const uintptr_t start = g_maps[i].start.load(std::memory_order_acquire);
    if (start != 0 && a >= start && a + n <= start + g_maps[i].length.load(std::memory_order_acquire)) return true;
  }
  return false;
}

void RegisterShmIo(Napi::Env env, Napi::Object exports) {
  exports.Set("shmRead", Napi::Function::New(env, ShmRead));
  exports.Set("shmWrite", Napi::Function::New(env, ShmWrite));
  exports.Set("shmMap", Napi::Function::New(env, ShmMap));
  exports.Set("shmFaulted", Napi::Function::New(env, ShmFaulted));
}

}  // namespace hlo
