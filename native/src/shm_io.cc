// Copies between a registered system shared-memory object and host memory on the addon's threads,
// so a 64 MB tensor never blocks the JS thread while it moves.
//
// Why pread/pwrite on a descriptor opened once, and not a mapping read in place: the object
// belongs to the client, which may ftruncate it while it is registered. Touching a mapped page
// past the new end raises SIGBUS, and catching SIGBUS safely means a process-wide handler plus
// siglongjmp out of whatever memcpy (ours, V8's or XLA's) touched the page; a mapping handed to JS
// or to PJRT could fault anywhere. pread and pwrite on the same object turn the same race into a
// short count that we report as an error, and they cost the same single copy that the mapping
// would need anyway to reach an owned host buffer. fstat before each copy catches the common cases
// (the object truncated below the registered window, or unlinked) with a clear message.
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <memory>
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
      ssize_t n = pread(a.fd, block->data + done, static_cast<size_t>(length) - done, a.position + static_cast<int64_t>(done));
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

}  // namespace

void RegisterShmIo(Napi::Env env, Napi::Object exports) {
  exports.Set("shmRead", Napi::Function::New(env, ShmRead));
  exports.Set("shmWrite", Napi::Function::New(env, ShmWrite));
}

}  // namespace hlo
