#include "malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hlo {

namespace {
// glibc's own ceiling for its dynamic threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit), held
// there from the start instead of reached by wandering. Lower costs the executions dearly: a CNN's
// activations and scratch (several MiB at batch 1) then come from mmap on every run and are
// faulted in and zeroed page by page, 1.75x the CPU of its batch-1 program at 1 MiB
// (bench/RESULTS.md, session 11). Fixed rather than dynamic, the trim threshold stays at twice it
// and RSS over 50 reloads stays within the lifecycle target.
constexpr size_t kMmapThreshold = size_t{32} << 20;
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
