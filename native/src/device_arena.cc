#include "device_arena.h"

#include <sys/mman.h>

#include <algorithm>

namespace hlo {
namespace {

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }
size_t RoundDown(size_t n, size_t to) { return n / to * to; }

}  // namespace

DeviceArena::DeviceArena(size_t limit_bytes, size_t chunk_bytes)
    : limit_(limit_bytes), chunk_bytes_(RoundUp(std::max<size_t>(chunk_bytes, kAlign), kAlign)) {}

DeviceArena::~DeviceArena() {
  // Every view holds the arena (ViewRelease in arena_wrap.cc), so nothing points here any more.
  for (auto& [base, c] : chunks_) munmap(base, c.size);
}

DeviceArena::Chunk* DeviceArena::MapChunkLocked(size_t bytes) {
  // Not populated here: this runs on the JS thread, and a large chunk would take milliseconds to
  // fault in. Each page faults in once, at its first copy on an addon thread, and stays mapped.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* base = static_cast<uint8_t*>(p);
  Chunk& c = chunks_[base];
  c.base = base;
  c.size = bytes;
  c.free.emplace(0, bytes);
  mapped_ += bytes;
  return &c;
}

uint8_t* DeviceArena::TakeLocked(Chunk& c, size_t bytes) {
  // First fit: a model's tensors are placed and freed together, so its holes suit the next model.
  for (auto it = c.free.begin(); it != c.free.end(); ++it) {
    if (it->second < bytes) continue;
    const size_t off = it->first;
    const size_t len = it->second;
    c.free.erase(it);
    if (len > bytes) c.free.emplace(off + bytes, len - bytes);
    c.used += bytes;
    uint8_t* p = c.base + off;
    live_.emplace(p, std::make_pair(c.base, bytes));
    return p;
  }
  return nullptr;
}

uint8_t* DeviceArena::Allocate(size_t bytes) {
  const size_t need = RoundUp(std::max<size_t>(bytes, 1), kAlign);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [base, c] : chunks_) {
    if (c.size - c.used < need) continue;
    if (uint8_t* p = TakeLocked(c, need)) return p;
  }
  // A new chunk: chunk_bytes, or what the limit still allows, but never less than the request.
  const size_t room = limit_ > mapped_ ? RoundDown(limit_ - mapped_, kAlign) : 0;
  const size_t size = std::max(need, std::min(chunk_bytes_, room));
  Chunk* c = size <= room ? MapChunkLocked(size) : nullptr;
  if (c == nullptr) {
    ++failed_;
    return nullptr;
  }
  return TakeLocked(*c, need);
}

void DeviceArena::Free(uint8_t* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto live = live_.find(p);
  if (live == live_.end()) return;
  auto [base, len] = live->second;
  live_.erase(live);
  Chunk& c = chunks_.at(base);
  c.used -= len;
  size_t off = static_cast<size_t>(p - base);
  // Coalesce with the free neighbours on both sides.
  auto next = c.free.lower_bound(off);
  if (next != c.free.end() && off + len == next->first) {
    len += next->second;
    next = c.free.erase(next);
  }
  if (next != c.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      if (limit_ < mapped_) UnmapEmptyChunksLocked();
      return;
    }
  }
  c.free.emplace(off, len);
  if (limit_ < mapped_) UnmapEmptyChunksLocked();
}

bool DeviceArena::Holds(const uint8_t* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto live = live_.find(const_cast<uint8_t*>(p));
  return live != live_.end() && live->second.second >= bytes;
}

void DeviceArena::SetLimit(size_t limit_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = limit_bytes;
  UnmapEmptyChunksLocked();
}

void DeviceArena::UnmapEmptyChunksLocked() {
  for (auto it = chunks_.begin(); it != chunks_.end() && mapped_ > limit_;) {
    if (it->second.used != 0) {
      ++it;
      continue;
    }
    munmap(it->first, it->second.size);
    mapped_ -= it->second.size;
    it = chunks_.erase(it);
  }
}

DeviceArena::Stats DeviceArena::GetStats() {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.limit_bytes = limit_;
  s.mapped_bytes = mapped_;
  s.ranges = live_.size();
  s.chunks = chunks_.size();
  s.failed_allocations = failed_;
  for (auto& [base, c] : chunks_) {
    s.used_bytes += c.used;
    for (auto& [off, len] : c.free) s.largest_free_bytes = std::max(s.largest_free_bytes, len);
  }
  return s;
}

}  // namespace hlo
