#pragma once

#include <cstddef>

namespace hlo {

// Fixes glibc's mmap threshold for this process unless the operator chose one
// (MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES' glibc.malloc.mmap_threshold); returns the threshold
// in bytes now in force, or 0 where it is left to glibc (another libc, or the operator's choice).
//
// Why fixed: by default glibc moves the threshold (and the trim threshold with it) as large
// mmapped blocks are freed. Why 32 MiB while serving: below it, an execution's multi-MiB scratch
// is mapped, faulted in and zeroed on every run (a CNN's batch-1 program took 1.75x the CPU at
// 1 MiB). Builds lower it for their duration (MallocBuildScope), see bench/RESULTS.md session 11.
size_t FixMmapThreshold();

// The mmap threshold in force now (bytes): the serving value, the builds' value while any
// MallocBuildScope is held, or 0 where FixMmapThreshold left it to glibc or the operator.
size_t MmapThresholdNow();

// While any model build runs (compiles, deserializes, serializes and warmups on the background
// pool), the thresholds drop to 1 MiB (mmap) and 2 MiB (trim), so the multi-MiB blocks a build
// churns are mapped and handed back instead of left to fragment the heap; when the last build
// ends they return to the serving values (32 MiB / 64 MiB), so an execution's scratch comes from
// the heap. No effect where FixMmapThreshold left the thresholds to glibc or the operator.
class MallocBuildScope {
 public:
  MallocBuildScope();
  ~MallocBuildScope();
  MallocBuildScope(const MallocBuildScope&) = delete;
  MallocBuildScope& operator=(const MallocBuildScope&) = delete;
};

}  // namespace hlo
