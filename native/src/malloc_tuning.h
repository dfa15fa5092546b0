#pragma once

#include <cstddef>

namespace hlo {

// Fixes glibc's mmap threshold for this process unless the operator chose one
// (MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES' glibc.malloc.mmap_threshold); returns the threshold
// in bytes now in force, or 0 where it is left to glibc (another libc, or the operator's choice).
//
// Why: by default glibc raises the threshold each time a large mmapped block is freed (up to
// 32 MiB), after which blocks of that size come from the heap arenas, where freed space is kept
// and fragments. A reload frees and reallocates many blocks of a few MiB (compiler buffers,
// serialized executables, weights read from disk), so RSS climbed 16-18% over 50 reloads of a
// model; with the threshold fixed, blocks from it upwards are mapped and unmapped on their own,
// and RSS stays within a few percent (bench/lifecycle.mjs, bench/RESULTS.md).
size_t FixMmapThreshold();

}  // namespace hlo
