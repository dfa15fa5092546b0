#include "malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hlo {

namespace {
// Above the tensors of a small model's request (an MLP batch of 16 is 50 KB, an image 600 KB), so
// those keep coming from the arenas without a system call; below the blocks a compile churns.
constexpr size_t kMmapThreshold = 1 << 20;
}  // namespace

size_t FixMmapThreshold() {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) return 0;
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t != nullptr && std::strstr(t, "mmap_threshold") != nullptr) return 0;
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold)) != 1) return 0;
  // Fixing the mmap threshold also stops glibc moving the trim threshold with it (twice the mmap
  // threshold when dynamic); kept there, so that the top of the heap is not handed back and
  // faulted in again between requests.
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * kMmapThreshold));
  return kMmapThreshold;
#else
  return 0;
#endif
}

}  // namespace hlo
