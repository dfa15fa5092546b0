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

// The mmap threshold in force now (bytes): the serving value, the builds' value while builds run
// (applied a moment after the first starts, kept 20 ms after the last ends), or 0 where
// FixMmapThreshold left it to glibc or the operator.
size_t MmapThresholdNow();

// While any model build runs (compiles, deserializes, serializes and warmups on the background
// pool), the thresholds drop to 1 MiB (mmap) and 2 MiB (trim), so the multi-MiB blocks a build
// churns are mapped and handed back instead of left to fragment the heap; when the last build
// ends (and none has started for 20 ms: a model's modules compile one after another) they return
// to the serving values (32 MiB / 64 MiB), so an execution's scratch comes from the heap. The
// switch is made by a thread of the addon's own at normal priority, never by the build thread: a
// mallopt holds the main arena's lock, which the JS thread needs. No effect where
// FixMmapThreshold left the thresholds to glibc or the operator.
class MallocBuildScope {
 public:
  MallocBuildScope();
  ~MallocBuildScope();
  MallocBuildScope(const MallocBuildScope&) = delete;
  MallocBuildScope& operator=(const MallocBuildScope&) = delete;
};

}  // namespace hlo
