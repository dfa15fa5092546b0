#include "plugin.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

namespace hlo {
namespace {

std::mutex g_mu;
std::map<std::string, std::unique_ptr<Plugin>>& Registry() {
  static auto* plugins = new std::map<std::string, std::unique_ptr<Plugin>>();
  return *plugins;
}

AttributeValue ConvertAttribute(const hloabi::PJRT_NamedValue& v) {
  switch (v.type) {
    case hloabi::PJRT_NamedValue_kString:
      return std::string(v.string_value, v.value_size);
    case hloabi::PJRT_NamedValue_kInt64:
      return v.int64_value;
    case hloabi::PJRT_NamedValue_kInt64List:
      return std::vector<int64_t>(v.int64_array_value, v.int64_array_value + v.value_size);
    case hloabi::PJRT_NamedValue_kFloat:
      return static_cast<double>(v.float_value);
    case hloabi::PJRT_NamedValue_kBool:
      return v.bool_value;
  }
  return std::string("<unknown attribute type>");
}

}  // namespace

const Plugin* LoadPlugin(const std::string& path, Status* status) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& reg = Registry();
  if (auto it = reg.find(path); it != reg.end()) return it->second.get();

  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    *status = Status::Invalid("cannot load PJRT plugin '" + path + "': " + (e ? e : "dlopen failed"));
    return nullptr;
  }
  using GetApiFn = const hloabi::PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApiFn>(dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    *status = Status::Invalid("'" + path + "' is not a PJRT plugin: it exports no GetPjrtApi");
    return nullptr;
  }
  const hloabi::PJRT_Api* api = get_api();
  if (api == nullptr || api->struct_size < offsetof(hloabi::PJRT_Api, PJRT_Error_Destroy)) {
    *status = Status::Invalid("'" + path + "': GetPjrtApi returned no usable API table");
    return nullptr;
  }
  const int major = api->pjrt_api_version.major_version;
  const int minor = api->pjrt_api_version.minor_version;
  if (major != hloabi::kMajor) {
    *status = Status::Invalid("'" + path + "': PJRT API major version " + std::to_string(major) +
                              " is not supported (expected " + std::to_string(hloabi::kMajor) + ")");
    return nullptr;
  }
  // Every slot the addon may call must exist in this plugin's table.
  if (!HLO_HAS(api, PJRT_Buffer_CopyToMemory) || !HLO_HAS(api, PJRT_LoadedExecutable_Execute)) {
    *status = Status::Invalid("'" + path + "': PJRT API 0." + std::to_string(minor) +
                              " is too old (its function table lacks calls hloserve needs)");
    return nullptr;
  }
  hloabi::PJRT_Plugin_Initialize_Args init{};
  init.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Plugin_Initialize_Args, extension_start);
  Status s = TakeError(api, api->PJRT_Plugin_Initialize(&init));
  if (!s.ok()) {
    s.message = "PJRT_Plugin_Initialize failed for '" + path + "': " + s.message;
    *status = s;
    return nullptr;
  }
  auto plugin = std::make_unique<Plugin>();
  plugin->path = path;
  plugin->api = api;
  plugin->major = major;
  plugin->minor = minor;
  plugin->api_struct_size = api->struct_size;
  hloabi::PJRT_Plugin_Attributes_Args attrs{};
  attrs.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Plugin_Attributes_Args, num_attributes);
  if (TakeError(api, api->PJRT_Plugin_Attributes(&attrs)).ok()) {
    for (size_t i = 0; i < attrs.num_attributes; ++i) {
      const auto& v = attrs.attributes[i];
      plugin->attributes.emplace_back(std::string(v.name, v.name_size), ConvertAttribute(v));
    }
  }
  const Plugin* out = plugin.get();
  reg.emplace(path, std::move(plugin));
  return out;
}

}  // namespace hlo
