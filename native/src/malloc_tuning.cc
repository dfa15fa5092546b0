#include "malloc_tuning.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

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
// While a build runs: a compile's multi-MiB blocks are mapped and unmapped on their own rather
// than left in the heap, where they fragment (RSS +10-14 % over 50 reloads at 8-32 MiB against
// +4.3-4.7 % at 1-2 MiB, bench/RESULTS.md session 11).
constexpr size_t kBuildMmapThreshold = size_t{1} << 20;

std::mutex build_mu;
int builds = 0;
bool owned = false;  // FixMmapThreshold set the thresholds (so the scope may move them)

void SetThresholds(size_t mmap_threshold) {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_threshold));
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * mmap_threshold));
#else
  (void)mmap_threshold;
#endif
}
}  // namespace

MallocBuildScope::MallocBuildScope() {
  std::lock_guard<std::mutex> lock(build_mu);
  if (owned && builds++ == 0) SetThresholds(kBuildMmapThreshold);
}

MallocBuildScope::~MallocBuildScope() {
  std::lock_guard<std::mutex> lock(build_mu);
  if (owned && --builds == 0) SetThresholds(kMmapThreshold);
}

size_t MmapThresholdNow() {
  std::lock_guard<std::mutex> lock(build_mu);
  if (!owned) return 0;
  return builds > 0 ? kBuildMmapThreshold : kMmapThreshold;
}

size_t FixMmapThreshold() {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) return 0;
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t != nullptr && std::strstr(t, "mmap_threshold") != nullptr)
    return 0;
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold)) != 1) return 0;
  // Fixing the mmap threshold also stops glibc moving the trim threshold with it (twice the mmap
  // threshold when dynamic); kept there, so that the top of the heap is not handed back and
  // faulted in again between requests.
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * kMmapThreshold));
  {
    std::lock_guard<std::mutex> lock(build_mu);
    owned = true;
  }
  return kMmapThreshold;
#else
  return 0;
#endif
}

}  // namespace hlo
