#include <cstdlib>
#include <cstring>

#include "addon_data.h"
#include "tensor_helper.h"
#include "wraps.h"

namespace hlo {
namespace {

// CompileOptionsProto{compile_portable_executable: true, executable_build_options{num_replicas: 1,
// num_partitions: 1}}. An empty proto makes XLA CHECK-fail; a portable executable is not tied to
// device 0, so every Execute names its device.
const char kPortableCompileOptions[] = {0x20, 0x01, 0x1a, 0x04, 0x20, 0x01, 0x28, 0x01};

struct NamedOption {
  std::string name;
  int kind = 0;
  std::string s;
  int64_t i = 0;
  std::vector<int64_t> list;
  double f = 0;
  bool b = false;
};

std::vector<NamedOption> ReadOptions(const Napi::Value& v) {
  Napi::Env env = v.Env();
  std::vector<NamedOption> out;
  if (v.IsUndefined() || v.IsNull()) return out;
  if (!v.IsArray()) throw Napi::TypeError::New(env, "options must be an array of {name, kind, value}");
  auto a = v.As<Napi::Array>();
  for (uint32_t k = 0; k < a.Length(); ++k) {
    std::string field = "options[" + std::to_string(k) + "]";
    Napi::Value e = a.Get(k);
    if (!e.IsObject()) throw Napi::TypeError::New(env, field + " must be an object");
    auto o = e.As<Napi::Object>();
    NamedOption opt;
    if (!o.Get("name").IsString()) throw Napi::TypeError::New(env, field + ".name must be a string");
    opt.name = o.Get("name").As<Napi::String>();
    std::string kind = o.Get("kind").IsString() ? o.Get("kind").As<Napi::String>().Utf8Value() : "";
    Napi::Value val = o.Get("value");
    if (kind == "string" && val.IsString()) {
      opt.kind = hloabi::PJRT_NamedValue_kString;
      opt.s = val.As<Napi::String>();
    } else if (kind == "int64" && val.IsNumber()) {
      opt.kind = hloabi::PJRT_NamedValue_kInt64;
      opt.i = val.As<Napi::Number>().Int64Value();
    } else if (kind == "int64list" && val.IsArray()) {
      opt.kind = hloabi::PJRT_NamedValue_kInt64List;
      opt.list = ReadDims(val, field + ".value");
    } else if (kind == "float" && val.IsNumber()) {
      opt.kind = hloabi::PJRT_NamedValue_kFloat;
      opt.f = val.As<Napi::Number>().DoubleValue();
    } else if (kind == "bool" && val.IsBoolean()) {
      opt.kind = hloabi::PJRT_NamedValue_kBool;
      opt.b = val.As<Napi::Boolean>();
    } else {
      throw Napi::TypeError::New(env, field + ": kind must be string|int64|int64list|float|bool with a matching value");
    }
    out.push_back(std::move(opt));
  }
  return out;
}

Status QueryDevices(ClientState* cs) {
  const auto* api = cs->api();
  hloabi::PJRT_Client_PlatformName_Args pn{};
  pn.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_PlatformName_Args, platform_name_size);
  pn.client = cs->client();
  Status s = TakeError(api, api->PJRT_Client_PlatformName(&pn));
  if (!s.ok()) return s;
  cs->platform_name.assign(pn.platform_name, pn.platform_name_size);
  hloabi::PJRT_Client_PlatformVersion_Args pv{};
  pv.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_PlatformVersion_Args, platform_version_size);
  pv.client = cs->client();
  if (TakeError(api, api->PJRT_Client_PlatformVersion(&pv)).ok())
    cs->platform_version.assign(pv.platform_version, pv.platform_version_size);

  hloabi::PJRT_Client_AddressableDevices_Args ad{};
  ad.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_AddressableDevices_Args, num_addressable_devices);
  ad.client = cs->client();
  s = TakeError(api, api->PJRT_Client_AddressableDevices(&ad));
  if (!s.ok()) return s;
  for (size_t i = 0; i < ad.num_addressable_devices; ++i) {
    DeviceInfo d;
    d.device = ad.addressable_devices[i];
    hloabi::PJRT_Device_GetDescription_Args gd{};
    gd.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Device_GetDescription_Args, device_description);
    gd.device = d.device;
    s = TakeError(api, api->PJRT_Device_GetDescription(&gd));
    if (!s.ok()) return s;
    hloabi::PJRT_DeviceDescription_Id_Args id{};
    id.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_DeviceDescription_Id_Args, id);
    id.device_description = gd.device_description;
    if (TakeError(api, api->PJRT_DeviceDescription_Id(&id)).ok()) d.id = id.id;
    hloabi::PJRT_DeviceDescription_Kind_Args kd{};
    kd.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_DeviceDescription_Kind_Args, device_kind_size);
    kd.device_description = gd.device_description;
    if (TakeError(api, api->PJRT_DeviceDescription_Kind(&kd)).ok()) d.kind.assign(kd.device_kind, kd.device_kind_size);
    hloabi::PJRT_DeviceDescription_DebugString_Args ds{};
    ds.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_DeviceDescription_DebugString_Args, debug_string_size);
    ds.device_description = gd.device_description;
    if (TakeError(api, api->PJRT_DeviceDescription_DebugString(&ds)).ok())
      d.debug_string.assign(ds.debug_string, ds.debug_string_size);
    hloabi::PJRT_Device_LocalHardwareId_Args lh{};
    lh.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Device_LocalHardwareId_Args, local_hardware_id);
    lh.device = d.device;
    if (TakeError(api, api->PJRT_Device_LocalHardwareId(&lh)).ok()) d.local_hardware_id = lh.local_hardware_id;

    hloabi::PJRT_Device_AddressableMemories_Args am{};
    am.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Device_AddressableMemories_Args, num_memories);
    am.device = d.device;
    if (TakeError(api, api->PJRT_Device_AddressableMemories(&am)).ok()) {
      for (size_t m = 0; m < am.num_memories; ++m) {
        hloabi::PJRT_Memory* mem = am.memories[m];
        d.memories.push_back(mem);
        hloabi::PJRT_Memory_Kind_Args mk{};
        mk.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Memory_Kind_Args, kind_size);
        mk.memory = mem;
        d.memory_kinds.push_back(TakeError(api, api->PJRT_Memory_Kind(&mk)).ok() ? std::string(mk.kind, mk.kind_size)
                                                                                 : "");
        hloabi::PJRT_Memory_Id_Args mi{};
        mi.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Memory_Id_Args, id);
        mi.memory = mem;
        d.memory_ids.push_back(TakeError(api, api->PJRT_Memory_Id(&mi)).ok() ? mi.id : -1);
      }
    }
    hloabi::PJRT_Device_DefaultMemory_Args dm{};
    dm.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Device_DefaultMemory_Args, memory);
    dm.device = d.device;
    if (TakeError(api, api->PJRT_Device_DefaultMemory(&dm)).ok()) {
      for (size_t m = 0; m < d.memories.size(); ++m)
        if (d.memories[m] == dm.memory) d.default_memory = static_cast<int>(m);
    }
    cs->devices.push_back(std::move(d));
  }
  return Status::Ok();
}

// Wraps a freshly compiled or deserialized executable: the client adopts it (so disposing the
// client frees it) and its output types, dims and memory statistics are read once, here, off the
// JS thread. On failure the executable is released and *out is left empty.
Status AdoptLoaded(const std::shared_ptr<ClientState>& cs, hloabi::PJRT_LoadedExecutable* loaded,
                   std::shared_ptr<ExecutableResource>* out) {
  const auto* api = cs->api();
  auto exe = std::make_shared<ExecutableResource>(cs, loaded);
  cs->Adopt(exe);
  hloabi::PJRT_LoadedExecutable_GetExecutable_Args ge{};
  ge.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_LoadedExecutable_GetExecutable_Args, executable);
  ge.loaded_executable = loaded;
  Status s = TakeError(api, api->PJRT_LoadedExecutable_GetExecutable(&ge));
  if (s.ok()) {
    hloabi::PJRT_Executable_NumOutputs_Args no{};
    no.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Executable_NumOutputs_Args, num_outputs);
    no.executable = ge.executable;
    s = TakeError(api, api->PJRT_Executable_NumOutputs(&no));
    exe->num_outputs = no.num_outputs;
    if (s.ok()) {
      hloabi::PJRT_Executable_OutputElementTypes_Args ot{};
      ot.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Executable_OutputElementTypes_Args, num_output_types);
      ot.executable = ge.executable;
      if (TakeError(api, api->PJRT_Executable_OutputElementTypes(&ot)).ok())
        exe->output_types.assign(ot.output_types, ot.output_types + ot.num_output_types);
      hloabi::PJRT_Executable_OutputDimensions_Args od{};
      od.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Executable_OutputDimensions_Args, dim_sizes);
      od.executable = ge.executable;
      if (TakeError(api, api->PJRT_Executable_OutputDimensions(&od)).ok()) {
        size_t at = 0;
        for (size_t i = 0; i < od.num_outputs; ++i) {
          exe->output_dims.emplace_back(od.dims + at, od.dims + at + od.dim_sizes[i]);
          at += od.dim_sizes[i];
        }
      }
      if (HLO_HAS(api, PJRT_Executable_GetCompiledMemoryStats)) {
        auto& ms = exe->memory_stats;
        ms.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Executable_GetCompiledMemoryStats_Args, peak_memory_in_bytes);
        ms.executable = ge.executable;
        exe->has_memory_stats = TakeError(api, api->PJRT_Executable_GetCompiledMemoryStats(&ms)).ok();
      }
    }
    hloabi::PJRT_Executable_Destroy_Args ed{};
    ed.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Executable_Destroy_Args, executable);
    ed.executable = ge.executable;
    TakeError(api, api->PJRT_Executable_Destroy(&ed));
  }
  if (s.ok())
    *out = exe;
  else
    exe->Release();
  return s;
}

// A program or serialized executable for work on an addon thread. A string is copied (it has no
// memory of its own to hold); a TypedArray, Buffer or DataView is read where it is, its ArrayBuffer
// referenced until the promise settles, as an upload's host data is: copying it here held the JS
// thread for the whole copy (170 ms for a 300 MB text module, bench/RESULTS.md, session 22). The
// caller leaves the bytes unchanged until the promise settles.
struct HeldBytes {
  std::shared_ptr<std::string> owned;
  const char* data = nullptr;
  size_t size = 0;
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
};

HeldBytes HoldBytes(const Napi::Value& v, const std::string& field) {
  HeldBytes held;
  if (v.IsString()) {
    held.owned = std::make_shared<std::string>(v.As<Napi::String>().Utf8Value());
    held.data = held.owned->data();
    held.size = held.owned->size();
  } else {
    const uint8_t* p = nullptr;
    ReadBytes(v, field, &p, &held.size, held.keep);
    held.data = reinterpret_cast<const char*>(p);
  }
  return held;
}

}  // namespace

std::string CompileOptionsBytes() { return std::string(kPortableCompileOptions, sizeof kPortableCompileOptions); }

Napi::Value CreateClient(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) throw Napi::TypeError::New(env, "pluginPath must be a string");
  std::string path = info[0].As<Napi::String>();
  auto options = std::make_shared<std::vector<NamedOption>>(ReadOptions(info[1]));
  auto out = std::make_shared<std::shared_ptr<ClientState>>();
  AsyncOp op;
  op.work = [path, options, out]() -> Status {
    Status s;
    const Plugin* plugin = LoadPlugin(path, &s);
    if (plugin == nullptr) return s;
    std::vector<hloabi::PJRT_NamedValue> nv(options->size());
    for (size_t i = 0; i < options->size(); ++i) {
      const NamedOption& o = (*options)[i];
      hloabi::PJRT_NamedValue& v = nv[i];
      std::memset(&v, 0, sizeof v);
      v.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_NamedValue, value_size);
      v.name = o.name.c_str();
      v.name_size = o.name.size();
      v.type = static_cast<hloabi::PJRT_NamedValue_Type>(o.kind);
      v.value_size = 1;
      switch (o.kind) {
        case hloabi::PJRT_NamedValue_kString:
          v.string_value = o.s.c_str();
          v.value_size = o.s.size();
          break;
        case hloabi::PJRT_NamedValue_kInt64:
          v.int64_value = o.i;
          break;
        case hloabi::PJRT_NamedValue_kInt64List:
          v.int64_array_value = o.list.data();
          v.value_size = o.list.size();
          break;
        case hloabi::PJRT_NamedValue_kFloat:
          v.float_value = static_cast<float>(o.f);
          break;
        case hloabi::PJRT_NamedValue_kBool:
          v.bool_value = o.b;
          break;
      }
    }
    hloabi::PJRT_Client_Create_Args c{};
    c.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_Create_Args, kv_try_get_user_arg);
    c.create_options = nv.data();
    c.num_options = nv.size();
    s = TakeError(plugin->api, plugin->api->PJRT_Client_Create(&c));
    if (!s.ok()) return s;
    auto cs = std::make_shared<ClientState>(plugin, c.client);
    for (const NamedOption& o : *options)
      if (o.name == "asynchronous" && o.kind == hloabi::PJRT_NamedValue_kBool && !o.b) cs->serialize_executions = true;
    if (const char* d = std::getenv("HLOSERVE_DIRECT_HOST_COPY")) cs->direct_host_copy = std::string(d) != "0";
    s = QueryDevices(cs.get());
    if (!s.ok()) return s;
    if (cs->devices.empty()) return Status{9, "the PJRT client reports no addressable devices"};
    *out = cs;
    return Status::Ok();
  };
  op.finish = [out](Napi::Env env) -> Napi::Value {
    AddonData* data = AddonData::Get(env);
    {
      std::lock_guard<std::mutex> lock(data->clients_mu);
      data->clients.insert(*out);
    }
    return ClientWrap::NewInstance(env, *out);
  };
  return RunAsync(env, std::move(op));
}

Napi::Function ClientWrap::Init(Napi::Env env) {
  return DefineClass(
      env, "PjrtClient",
      {InstanceMethod<&ClientWrap::PlatformName>("platformName"),
       InstanceMethod<&ClientWrap::PlatformVersion>("platformVersion"), InstanceMethod<&ClientWrap::Devices>("devices"),
       InstanceMethod<&ClientWrap::MemoryStats>("memoryStats"), InstanceMethod<&ClientWrap::Ledger>("ledger"),
       InstanceMethod<&ClientWrap::Compile>("compile"),
       InstanceMethod<&ClientWrap::DeserializeAndLoad>("deserializeAndLoad"),
       InstanceMethod<&ClientWrap::Upload>("upload"), InstanceMethod<&ClientWrap::CopyBuffers>("copyBuffers"),
       InstanceMethod<&ClientWrap::CreateArena>("createArena"),
       InstanceMethod<&ClientWrap::DisposeInBackground>("disposeInBackground"),
       InstanceMethod<&ClientWrap::Dispose>("dispose"), InstanceMethod<&ClientWrap::IsDisposed>("isDisposed")});
}

Napi::Object ClientWrap::NewInstance(Napi::Env env, std::shared_ptr<ClientState> state) {
  auto* holder = new std::shared_ptr<ClientState>(std::move(state));
  auto ext = Napi::External<std::shared_ptr<ClientState>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<ClientState>* h) { delete h; });
  return AddonData::Get(env)->client_ctor.New({ext});
}

ClientWrap::ClientWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ClientWrap>(info) {
  if (info.Length() != 1 || !info[0].IsExternal())
    throw Napi::TypeError::New(info.Env(), "PjrtClient is created by createClient()");
  state_ = *info[0].As<Napi::External<std::shared_ptr<ClientState>>>().Data();
}

ClientWrap::~ClientWrap() = default;

std::shared_ptr<ClientState> ClientWrap::Live(Napi::Env env) {
  if (!state_ || state_->closed()) ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
  return state_;
}

Napi::Value ClientWrap::PlatformName(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), Live(info.Env())->platform_name);
}
Napi::Value ClientWrap::PlatformVersion(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), Live(info.Env())->platform_version);
}

Napi::Value ClientWrap::Devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto cs = Live(env);
  Napi::Array out = Napi::Array::New(env, cs->devices.size());
  for (size_t i = 0; i < cs->devices.size(); ++i) {
    const DeviceInfo& d = cs->devices[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("index", Napi::Number::New(env, static_cast<double>(i)));
    o.Set("id", Napi::Number::New(env, d.id));
    o.Set("localHardwareId", Napi::Number::New(env, d.local_hardware_id));
    o.Set("kind", Napi::String::New(env, d.kind));
    o.Set("debugString", Napi::String::New(env, d.debug_string));
    Napi::Array mems = Napi::Array::New(env, d.memories.size());
    for (size_t m = 0; m < d.memories.size(); ++m) {
      Napi::Object mo = Napi::Object::New(env);
      mo.Set("index", Napi::Number::New(env, static_cast<double>(m)));
      mo.Set("id", Napi::Number::New(env, d.memory_ids[m]));
      mo.Set("kind", Napi::String::New(env, d.memory_kinds[m]));
      mo.Set("isDefault", Napi::Boolean::New(env, static_cast<int>(m) == d.default_memory));
      mems.Set(static_cast<uint32_t>(m), mo);
    }
    o.Set("memories", mems);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

Napi::Value ClientWrap::MemoryStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto cs = Live(env);
  uint32_t dev = info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() : 0;
  if (dev >= cs->devices.size()) throw Napi::RangeError::New(env, "device index out of range");
  hloabi::PJRT_Device_MemoryStats_Args a{};
  // The struct grew at 0.113; an older plugin would refuse the larger size, so send what it knows.
  a.struct_size = cs->plugin()->minor >= 113
                      ? HLO_STRUCT_SIZE(hloabi::PJRT_Device_MemoryStats_Args, peak_allocated_bytes_is_set)
                      : HLO_STRUCT_SIZE(hloabi::PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set);
  a.device = cs->devices[dev].device;
  Status s = TakeError(cs->api(), cs->api()->PJRT_Device_MemoryStats(&a));
  if (!s.ok()) return env.Null();  // the CPU plugin has no allocator statistics
  Napi::Object o = Napi::Object::New(env);
  o.Set("bytesInUse", Napi::Number::New(env, static_cast<double>(a.bytes_in_use)));
  auto opt = [&](const char* name, bool set, int64_t v) {
    o.Set(name, set ? Napi::Number::New(env, static_cast<double>(v)) : env.Null());
  };
  opt("peakBytesInUse", a.peak_bytes_in_use_is_set, a.peak_bytes_in_use);
  opt("numAllocs", a.num_allocs_is_set, a.num_allocs);
  opt("largestAllocSize", a.largest_alloc_size_is_set, a.largest_alloc_size);
  opt("bytesLimit", a.bytes_limit_is_set, a.bytes_limit);
  opt("bytesReserved", a.bytes_reserved_is_set, a.bytes_reserved);
  opt("peakBytesReserved", a.peak_bytes_reserved_is_set, a.peak_bytes_reserved);
  opt("bytesReservableLimit", a.bytes_reservable_limit_is_set, a.bytes_reservable_limit);
  opt("largestFreeBlockBytes", a.largest_free_block_bytes_is_set, a.largest_free_block_bytes);
  opt("poolBytes", a.pool_bytes_is_set, a.pool_bytes);
  opt("peakPoolBytes", a.peak_pool_bytes_is_set, a.peak_pool_bytes);
  return o;
}

Napi::Value ClientWrap::Ledger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("liveBuffers", Napi::Number::New(env, static_cast<double>(state_->live_buffers.load())));
  o.Set("liveBufferBytes", Napi::Number::New(env, static_cast<double>(state_->live_buffer_bytes.load())));
  o.Set("liveExecutables", Napi::Number::New(env, static_cast<double>(state_->live_executables.load())));
  return o;
}

Napi::Value ClientWrap::Compile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto cs = Live(env);
  HeldBytes code = HoldBytes(info[0], "code");
  if (code.size == 0) throw Napi::TypeError::New(env, "code: the program is empty");
  if (!cs->Begin()) ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
  auto out = std::make_shared<std::shared_ptr<ExecutableResource>>();
  AsyncOp op;
  // The plugin reads the program only during the compile call; `code` (the op's, destroyed on the
  // JS thread when the promise settles) keeps it alive until then.
  op.work = [cs, data = code.data, size = code.size, out]() -> Status {
    const auto* api = cs->api();
    hloabi::PJRT_Program prog{};
    prog.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Program, format_size);
    prog.code = const_cast<char*>(data);
    prog.code_size = size;
    prog.format = "mlir";
    prog.format_size = 4;
    hloabi::PJRT_Client_Compile_Args c{};
    c.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_Compile_Args, executable);
    c.client = cs->client();
    c.program = &prog;
    c.compile_options = kPortableCompileOptions;
    c.compile_options_size = sizeof kPortableCompileOptions;
    Status s = TakeError(api, api->PJRT_Client_Compile(&c));
    if (s.ok()) s = AdoptLoaded(cs, c.executable, out.get());
    cs->End();
    return s;
  };
  op.finish = [out, code](Napi::Env env) -> Napi::Value { return ExecutableWrap::NewInstance(env, *out); };
  return RunAsync(env, std::move(op), Lane::kBackground);
}

// deserializeAndLoad(bytes) -> Promise<PjrtExecutable>. The bytes must come from serialize() on
// the same plugin build: a plugin reads them as its own object code, so hloserve checks their
// integrity (ExecutableCache's checksum) before they get here.
Napi::Value ClientWrap::DeserializeAndLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    auto cs = Live(env);
    if (!HLO_HAS(cs->api(), PJRT_Executable_DeserializeAndLoad))
      ThrowStatus(env, Status{12, "this PJRT plugin cannot deserialize executables"});
    HeldBytes bytes = HoldBytes(info[0], "serialized");
    if (bytes.size == 0) throw Napi::TypeError::New(env, "serialized: the executable is empty");
    if (!cs->Begin()) ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
    auto out = std::make_shared<std::shared_ptr<ExecutableResource>>();
    AsyncOp op;
    op.work = [cs, data = bytes.data, size = bytes.size, out]() -> Status {
      const auto* api = cs->api();
      hloabi::PJRT_Executable_DeserializeAndLoad_Args d{};
      d.struct_size =
          HLO_STRUCT_SIZE(hloabi::PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options_size);
      d.client = cs->client();
      d.serialized_executable = data;
      d.serialized_executable_size = size;
      // The same options as compile(), so a loaded executable behaves as a compiled one (portable:
      // every execute names its device).
      d.overridden_serialized_compile_options = kPortableCompileOptions;
      d.overridden_serialized_compile_options_size = sizeof kPortableCompileOptions;
      Status s = TakeError(api, api->PJRT_Executable_DeserializeAndLoad(&d));
      if (s.ok() && d.loaded_executable == nullptr) s = Status{13, "the plugin returned no executable"};
      if (s.ok()) s = AdoptLoaded(cs, d.loaded_executable, out.get());
      cs->End();
      return s;
    };
    op.finish = [out, bytes](Napi::Env env) -> Napi::Value { return ExecutableWrap::NewInstance(env, *out); };
    return RunAsync(env, std::move(op), Lane::kBackground);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("deserializeAndLoad: ") + e.what());
  }
}

Napi::Value ClientWrap::Upload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto cs = Live(env);
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "upload expects {data, type, dims}");
  KeepAlive keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  HostArg arg = ReadHostArg(info[0].As<Napi::Object>(), "array", keep);
  uint32_t dev = info[1].IsNumber() ? info[1].As<Napi::Number>().Uint32Value() : 0;
  if (dev >= cs->devices.size()) throw Napi::RangeError::New(env, "device index out of range");
  int mem = info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : -1;
  if (mem >= static_cast<int>(cs->devices[dev].memories.size()))
    throw Napi::RangeError::New(env, "memory index out of range");
  if (!cs->Begin()) ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
  auto out = std::make_shared<std::shared_ptr<BufferResource>>();
  AsyncOp op;
  op.work = [cs, arg, dev, mem, out]() -> Status {
    const auto* api = cs->api();
    hloabi::PJRT_Client_BufferFromHostBuffer_Args b{};
    b.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_BufferFromHostBuffer_Args, buffer);
    b.client = cs->client();
    b.data = arg.data;
    b.type = arg.type;
    b.dims = arg.dims.data();
    b.num_dims = arg.dims.size();
    b.host_buffer_semantics = hloabi::kImmutableUntilTransferCompletes;
    b.device = cs->devices[dev].device;
    b.memory = mem >= 0 ? cs->devices[dev].memories[mem] : nullptr;
    Status s = TakeError(api, api->PJRT_Client_BufferFromHostBuffer(&b));
    if (s.ok()) {
      auto res = std::make_shared<BufferResource>(cs, b.buffer, static_cast<int>(dev));
      cs->Adopt(res);
      // The JS memory stays referenced until this event fires and the promise settles.
      s = AwaitAndDestroy(api, b.done_with_host_buffer);
      if (s.ok()) s = DescribeBuffer(res.get());
      if (s.ok())
        *out = res;
      else
        res->Release();
    }
    cs->End();
    return s;
  };
  op.finish = [out, keep](Napi::Env env) -> Napi::Value { return BufferWrap::NewInstance(env, *out); };
  return RunAsync(env, std::move(op));
}

// One call for many copies: every PJRT copy is issued before any is awaited, so a model's tensors
// move as one batch with one thread hop each way. Per-tensor copyToMemory() calls cost a hop and an
// event wait apiece, which dominated the cold-load time of many-tensor models (bench/RESULTS.md).
Napi::Value ClientWrap::CopyBuffers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto cs = Live(env);
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "buffers must be an array of PjrtBuffer");
  if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "memory index must be a number");
  Napi::Array arr = info[0].As<Napi::Array>();
  int mem = info[1].As<Napi::Number>().Int32Value();
  std::vector<std::shared_ptr<BufferResource>> srcs;
  srcs.reserve(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); i++) {
    auto b = BufferWrap::FromValue(arr.Get(i), "buffers[" + std::to_string(i) + "]");
    if (b->client() != cs)
      throw Napi::TypeError::New(env, "buffers[" + std::to_string(i) + "] belongs to another client");
    if (!srcs.empty() && b->device_index() != srcs[0]->device_index()) {
      throw Napi::TypeError::New(env, "buffers must all live on one device");
    }
    srcs.push_back(std::move(b));
  }
  if (srcs.empty()) {
    auto done = Napi::Promise::Deferred::New(env);
    done.Resolve(Napi::Array::New(env));
    return done.Promise();
  }
  const DeviceInfo& dev = cs->devices[srcs[0]->device_index()];
  if (mem < 0 || mem >= static_cast<int>(dev.memories.size()))
    throw Napi::RangeError::New(env, "memory index out of range");
  hloabi::PJRT_Memory* target = dev.memories[mem];
  if (!cs->Begin()) ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
  // Pin every source before the work starts, so a dispose() meanwhile cannot free what is read.
  size_t pinned = 0;
  while (pinned < srcs.size() && srcs[pinned]->Pin()) ++pinned;
  if (pinned < srcs.size()) {
    for (size_t i = 0; i < pinned; ++i) srcs[i]->Unpin();
    cs->End();
    ThrowStatus(env, Status::Disposed("a source buffer has been disposed"));
  }
  auto outs = std::make_shared<std::vector<std::shared_ptr<BufferResource>>>(srcs.size());
  AsyncOp op;
  op.work = [srcs, cs, target, outs]() -> Status {
    Status s;
    for (size_t i = 0; i < srcs.size() && s.ok(); i++) s = StartCopy(srcs[i].get(), target, &(*outs)[i]);
    // Every started copy is awaited, even after a failure, so no copy outlives its pinned source.
    for (auto& res : *outs) {
      if (!res) continue;
      Status e = FinishCopy(res.get());
      if (s.ok() && !e.ok()) s = e;
    }
    if (!s.ok()) {
      for (auto& res : *outs)
        if (res) res->Release();
    }
    for (auto& b : srcs) b->Unpin();
    cs->End();
    return s;
  };
  op.finish = [outs](Napi::Env env) -> Napi::Value {
    Napi::Array a = Napi::Array::New(env, outs->size());
    for (size_t i = 0; i < outs->size(); i++) a.Set(static_cast<uint32_t>(i), BufferWrap::NewInstance(env, (*outs)[i]));
    return a;
  };
  return RunAsync(env, std::move(op));
}

// disposeInBackground(buffers): disposes them now, as dispose() does, but their PJRT buffers are
// destroyed on one addon thread. The CPU plugin returns a large buffer's memory to the system
// there (munmap), 5-10 us a buffer that a weight cache evicting a many-tensor model would
// otherwise spend on the JS thread, in the cold call that caused the eviction.
Napi::Value ClientWrap::DisposeInBackground(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto cs = Live(env);
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "buffers must be an array of PjrtBuffer");
  Napi::Array arr = info[0].As<Napi::Array>();
  std::vector<std::shared_ptr<BufferResource>> later;
  for (uint32_t i = 0; i < arr.Length(); i++) {
    BufferWrap* w = BufferWrap::Tagged(arr.Get(i));
    if (w == nullptr) throw Napi::TypeError::New(env, "buffers[" + std::to_string(i) + "] must be a PjrtBuffer");
    auto res = w->Resource();
    if (!res || res->released()) continue;
    // Pinned, a released resource is destroyed at its last Unpin, which the task below makes.
    if (res->client() == cs && res->Pin()) later.push_back(res);
    res->Release();
  }
  if (later.empty()) return env.Undefined();
  if (!cs->Begin()) {
    for (auto& r : later) r->Unpin();
    return env.Undefined();
  }
  AddonData::Get(env)->pool->Post([later = std::move(later), cs]() {
    for (auto& r : later) r->Unpin();
    cs->End();
  });
  return env.Undefined();
}

// createArena(device, memoryIndex, limitBytes, chunkBytes) -> PjrtArena. Only where device memory
// is host memory: a view over host pointers means nothing to an accelerator's runtime.
Napi::Value ClientWrap::CreateArena(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto cs = Live(env);
  if (cs->platform_name != "cpu") {
    throw Napi::TypeError::New(
        env, "a device arena needs host-addressable device memory (the cpu platform), not '" + cs->platform_name + "'");
  }
  for (int i = 0; i < 4; i++) {
    if (!info[i].IsNumber())
      throw Napi::TypeError::New(env, "createArena(device, memoryIndex, limitBytes, chunkBytes) expects four numbers");
  }
  uint32_t dev = info[0].As<Napi::Number>().Uint32Value();
  if (dev >= cs->devices.size()) throw Napi::RangeError::New(env, "device index out of range");
  int mem = info[1].As<Napi::Number>().Int32Value();
  if (mem < 0 || mem >= static_cast<int>(cs->devices[dev].memories.size()))
    throw Napi::RangeError::New(env, "memory index out of range");
  double limit = info[2].As<Napi::Number>().DoubleValue();
  double chunk = info[3].As<Napi::Number>().DoubleValue();
  if (!(limit >= 0) || !(chunk >= 1) || limit > 9e15 || chunk > 9e15)
    throw Napi::RangeError::New(env, "limitBytes must be >= 0 and chunkBytes >= 1");
  auto arena = std::make_shared<DeviceArena>(static_cast<size_t>(limit), static_cast<size_t>(chunk));
  return ArenaWrap::NewInstance(env, cs, static_cast<int>(dev), mem, std::move(arena));
}

Napi::Value ClientWrap::Dispose(const Napi::CallbackInfo& info) {
  if (state_) {
    AddonData* data = AddonData::Get(info.Env());
    {
      std::lock_guard<std::mutex> lock(data->clients_mu);
      data->clients.erase(state_);
    }
    state_->Close();
  }
  return info.Env().Undefined();
}

Napi::Value ClientWrap::IsDisposed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !state_ || state_->closed());
}

}  // namespace hlo
