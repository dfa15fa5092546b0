// Device memory owned by the addon, for devices whose memory is host memory (the XLA CPU plugin).
//
// Why: every load through the plugin (CopyToMemory or BufferFromHostBuffer) allocates fresh
// memory, takes first-touch page faults on it and runs the plugin's copy machinery, and every free
// returns the memory to the allocator. For a weight cache that loads and evicts all the time that
// was 2-4x the cost of the bytes themselves (bench/RESULTS.md, "Session 5: the device arena").
// Here the memory is mapped in chunks and kept, so each page faults in once; a load is one memcpy
// into a free range plus a PJRT view of it (PJRT_Client_CreateViewOfDeviceBuffer), and PJRT's
// on-delete callback hands the range back when the last user of the view is gone, on whatever
// thread that happens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace hlo {

class DeviceArena {
 public:
  // Ranges start on this boundary (XLA's CPU runtime refuses views of less aligned data).
  static constexpr size_t kAlign = 128;

  // `limit_bytes`: the most memory the arena maps; `chunk_bytes`: how much it maps at a time
  // (a larger request gets a chunk of its own size).
  DeviceArena(size_t limit_bytes, size_t chunk_bytes);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // A free range of at least `bytes`, or nullptr when none fits under the limit. Thread-safe.
  uint8_t* Allocate(size_t bytes);
  // Returns a range from Allocate(). Thread-safe; PJRT calls it from its own threads.
  void Free(uint8_t* p);
  // True when `p` starts a live range of this arena of at least `bytes`.
  bool Holds(const uint8_t* p, size_t bytes);
  // A lower limit unmaps chunks that are empty until the mapped total fits it again.
  void SetLimit(size_t limit_bytes);

  struct Stats {
    size_t limit_bytes = 0;
    size_t mapped_bytes = 0;
    size_t used_bytes = 0;
    size_t largest_free_bytes = 0;
    size_t ranges = 0;
    size_t chunks = 0;
    size_t failed_allocations = 0;
  };
  Stats GetStats();

 private:
  struct Chunk {
    uint8_t* base = nullptr;
    size_t size = 0;
    size_t used = 0;
    std::map<size_t, size_t> free;  // offset -> length, coalesced
  };
  uint8_t* TakeLocked(Chunk& c, size_t bytes);
  Chunk* MapChunkLocked(size_t bytes);
  void UnmapEmptyChunksLocked();

  std::mutex mu_;
  size_t limit_;
  size_t chunk_bytes_;
  size_t mapped_ = 0;
  size_t failed_ = 0;
  std::map<uint8_t*, Chunk> chunks_;                                // by base address
  std::unordered_map<uint8_t*, std::pair<uint8_t*, size_t>> live_;  // range -> (chunk base, length)
};

}  // namespace hlo
