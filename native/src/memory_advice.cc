#include "memory_advice.h"

#include <cstdint>

#include "tensor_helper.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace hlo {

Napi::Value AdviseHugePages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  const uint8_t* data = nullptr;
  size_t length = 0;
  ReadBytes(info[0], "view", &data, &length, keep);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return Napi::Boolean::New(env, false);
  const uintptr_t mask = static_cast<uintptr_t>(page) - 1;
  const uintptr_t start = (reinterpret_cast<uintptr_t>(data) + mask) & ~mask;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + length) & ~mask;
  if (end <= start) return Napi::Boolean::New(env, false);
  return Napi::Boolean::New(env, madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE) == 0);
#else
  return Napi::Boolean::New(env, false);
#endif
}

}  // namespace hlo
