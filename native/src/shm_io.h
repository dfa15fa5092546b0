// What execute() needs to know about system shared-memory mappings (src/shm_io.cc).
#pragma once

#include <cstddef>

namespace hlo {

// Whether [p, p + n) lies inside one live mapping made by shmMap. Such memory stays mapped while
// the JS view passed to execute() is referenced, and a truncation under it reads zeros (SIGBUS
// guard), so the CPU plugin may alias it for the execution instead of copying it first.
bool InSharedMapping(const void* p, size_t n);

}  // namespace hlo
