// A PJRT plugin: dlopen'ed once per process and never unloaded (unloading tears down XLA's
// static registries while other threads may still use them).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "pjrt_abi.h"
#include "status.h"

namespace hlo {

using AttributeValue = std::variant<std::string, int64_t, std::vector<int64_t>, double, bool>;

struct Plugin {
  std::string path;
  const hloabi::PJRT_Api* api = nullptr;
  int major = 0;
  int minor = 0;
  size_t api_struct_size = 0;
  std::vector<std::pair<std::string, AttributeValue>> attributes;
};

// Loads and initialises the plugin at `path` once; later calls return the same Plugin.
// Thread-safe. On failure returns nullptr and fills `status`.
const Plugin* LoadPlugin(const std::string& path, Status* status);

}  // namespace hlo
