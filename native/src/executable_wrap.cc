#include <cstring>
#include <numeric>

#include "addon_data.h"
#include "build_nudge.h"
#include "shm_io.h"
#include "tensor_helper.h"
#include "wraps.h"

namespace hlo {
namespace {

struct OutputArray {
  int type = 0;
  std::vector<int64_t> dims;
  HostBlock block;
};

struct ExecuteJob {
  std::shared_ptr<ExecutableResource> exe;
  std::shared_ptr<ClientState> cs;
  int device = 0;
  bool download = false;
  // One entry per argument: either an existing device buffer or host data to upload first.
  std::vector<std::shared_ptr<BufferResource>> buffers;
  std::vector<HostArg> host;
  std::vector<bool> is_host;
  // executeInline on a client that serializes its executions: run only if no other execution of
  // the client is under way; otherwise set `busy` and do nothing (the caller runs it pooled).
  bool only_if_free = false;
  bool busy = false;
  // A background execution of a program that never waits on the client's pool from inside it:
  // runs beside the others without the gate (see Execute).
  bool beside = false;
  // Results.
  std::vector<std::shared_ptr<BufferResource>> outputs;
  std::vector<OutputArray> arrays;
};

void DestroyBuffer(const hloabi::PJRT_Api* api, hloabi::PJRT_Buffer* b) {
  if (b == nullptr) return;
  hloabi::PJRT_Buffer_Destroy_Args d{};
  d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_Destroy_Args, buffer);
  d.buffer = b;
  TakeError(api, api->PJRT_Buffer_Destroy(&d));
}

// When the output already lives in host memory (the CPU plugin) and is ready, one memcpy on this
// thread replaces an asynchronous transfer whose completion costs two cross-thread wakeups.
// Layout is the buffer's own (row-major by default), the same one ToHostBuffer(host_layout=NULL)
// would produce.
bool CopyIfOnCpu(const hloabi::PJRT_Api* api, hloabi::PJRT_Buffer* b, uint8_t* dst, size_t bytes) {
  if (!HLO_HAS(api, PJRT_Buffer_IsOnCpu) || !HLO_HAS(api, PJRT_Buffer_UnsafePointer)) return false;
  hloabi::PJRT_Buffer_IsOnCpu_Args c{};
  c.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_IsOnCpu_Args, is_on_cpu);
  c.buffer = b;
  if (!TakeError(api, api->PJRT_Buffer_IsOnCpu(&c)).ok() || !c.is_on_cpu) return false;
  hloabi::PJRT_Buffer_OnDeviceSizeInBytes_Args z{};
  z.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
  z.buffer = b;
  if (!TakeError(api, api->PJRT_Buffer_OnDeviceSizeInBytes(&z)).ok() || z.on_device_size_in_bytes != bytes)
    return false;
  hloabi::PJRT_Buffer_UnsafePointer_Args p{};
  p.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_UnsafePointer_Args, buffer_pointer);
  p.buffer = b;
  if (!TakeError(api, api->PJRT_Buffer_UnsafePointer(&p)).ok() || p.buffer_pointer == 0) return false;
  if (bytes > 0) std::memcpy(dst, reinterpret_cast<const void*>(p.buffer_pointer), bytes);
  return true;
}

Status RunExecute(ExecuteJob& job) {
  // See ClientState::serialize_executions. Taken before the uploads: on the synchronous client
  // they are part of the execution's own work.
  std::unique_lock<std::mutex> gate(job.cs->execute_mu, std::defer_lock);
  if (job.cs->serialize_executions && !job.beside) {
    if (!job.only_if_free) {
      gate.lock();
    } else if (!gate.try_lock()) {
      job.busy = true;
      return Status::Ok();
    }
  }
  const auto* api = job.cs->api();
  hloabi::PJRT_Device* device = job.cs->devices[job.device].device;
  const size_t n = job.is_host.size();
  std::vector<hloabi::PJRT_Buffer*> args(n, nullptr);
  std::vector<hloabi::PJRT_Buffer*> transient;
  std::vector<hloabi::PJRT_Event*> uploads;
  Status s;
  size_t host_at = 0, buf_at = 0;
  for (size_t i = 0; i < n && s.ok(); ++i) {
    if (!job.is_host[i]) {
      args[i] = job.buffers[buf_at++]->buffer();
      continue;
    }
    const HostArg& h = job.host[host_at++];
    hloabi::PJRT_Client_BufferFromHostBuffer_Args b{};
    b.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Client_BufferFromHostBuffer_Args, buffer);
    b.client = job.cs->client();
    b.data = h.data;
    b.type = h.type;
    b.dims = h.dims.data();
    b.num_dims = h.dims.size();
    // A shared-memory input on the CPU plugin is aliased, not copied: a 64 MB copy inside the
    // execution would hold the device slot (and every other model's requests) for its length.
    // The view stays referenced until this job finishes, after the buffer is destroyed.
    b.host_buffer_semantics = job.cs->platform_name == "cpu" && InSharedMapping(h.data, h.bytes)
                                  ? hloabi::kImmutableZeroCopy
                                  : hloabi::kImmutableUntilTransferCompletes;
    b.device = device;
    s = TakeError(api, api->PJRT_Client_BufferFromHostBuffer(&b));
    if (s.ok()) {
      args[i] = b.buffer;
      transient.push_back(b.buffer);
      uploads.push_back(b.done_with_host_buffer);
    }
  }
  // Execute does not wait for the uploads here: PJRT orders it after them itself. Their events are
  // awaited (and destroyed) after the transient buffers are gone, before JS memory is let go.
  auto await_uploads = [&]() {
    for (auto* e : uploads) {
      Status es = AwaitAndDestroy(api, e);
      if (s.ok()) s = es;
    }
    uploads.clear();
  };
  const size_t num_out = job.exe->num_outputs;
  std::vector<hloabi::PJRT_Buffer*> outs(num_out, nullptr);
  if (s.ok()) {
    std::vector<int64_t> non_donatable(n);
    std::iota(non_donatable.begin(), non_donatable.end(), 0);
    hloabi::PJRT_ExecuteOptions opts{};
    opts.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_ExecuteOptions, num_hlo_output_callbacks);
    opts.non_donatable_input_indices = non_donatable.data();
    opts.num_non_donatable_input_indices = n;
    hloabi::PJRT_Buffer* const* arg_list = args.data();
    hloabi::PJRT_Buffer** out_list = outs.data();
    hloabi::PJRT_Event* done = nullptr;
    hloabi::PJRT_LoadedExecutable_Execute_Args e{};
    e.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_LoadedExecutable_Execute_Args, execute_device);
    e.executable = job.exe->executable();
    e.options = &opts;
    e.argument_lists = &arg_list;
    e.num_devices = 1;
    e.num_args = n;
    e.output_lists = &out_list;
    e.device_complete_events = &done;
    e.execute_device = device;
    s = TakeError(api, api->PJRT_LoadedExecutable_Execute(&e));
    // On GPU an execution error arrives through the event, after the outputs exist.
    if (s.ok()) s = AwaitAndDestroy(api, done);
  }
  if (gate.owns_lock()) gate.unlock();
  for (auto* b : transient) DestroyBuffer(api, b);
  await_uploads();
  if (!s.ok()) {
    for (auto* b : outs) DestroyBuffer(api, b);
    return s;
  }
  if (!job.download) {
    for (auto* b : outs) {
      auto res = std::make_shared<BufferResource>(job.cs, b, job.device);
      job.cs->Adopt(res);
      Status ds = DescribeBuffer(res.get());
      if (s.ok()) s = ds;
      job.outputs.push_back(std::move(res));
    }
    return s;
  }
  // Download every output concurrently, then free the device copies.
  job.arrays.resize(num_out);
  std::vector<hloabi::PJRT_Event*> downloads(num_out, nullptr);
  for (size_t i = 0; i < num_out && s.ok(); ++i) {
    OutputArray& a = job.arrays[i];
    hloabi::PJRT_Buffer_ElementType_Args t{};
    t.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_ElementType_Args, type);
    t.buffer = outs[i];
    s = TakeError(api, api->PJRT_Buffer_ElementType(&t));
    if (!s.ok()) break;
    a.type = t.type;
    hloabi::PJRT_Buffer_Dimensions_Args d{};
    d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_Dimensions_Args, num_dims);
    d.buffer = outs[i];
    s = TakeError(api, api->PJRT_Buffer_Dimensions(&d));
    if (!s.ok()) break;
    a.dims.assign(d.dims, d.dims + d.num_dims);
    size_t bytes = ElementSize(a.type);
    if (bytes == 0) {
      s = Status{12, "output " + std::to_string(i) + " has an element type hloserve does not support"};
      break;
    }
    for (int64_t x : a.dims) bytes *= static_cast<size_t>(x);
    a.block = HostBlock::Allocate(bytes);
    if (job.cs->direct_host_copy && CopyIfOnCpu(api, outs[i], a.block.data, bytes)) continue;
    hloabi::PJRT_Buffer_ToHostBuffer_Args th{};
    th.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Buffer_ToHostBuffer_Args, event);
    th.src = outs[i];
    th.dst = a.block.data;
    th.dst_size = bytes;
    s = TakeError(api, api->PJRT_Buffer_ToHostBuffer(&th));
    downloads[i] = th.event;
  }
  for (auto* e : downloads) {
    Status es = AwaitAndDestroy(api, e);
    if (s.ok()) s = es;
  }
  for (auto* b : outs) DestroyBuffer(api, b);
  return s;
}

}  // namespace

Napi::Function ExecutableWrap::Init(Napi::Env env) {
  return DefineClass(
      env, "PjrtExecutable",
      {InstanceMethod<&ExecutableWrap::Describe>("describe"), InstanceMethod<&ExecutableWrap::Execute>("execute"),
       InstanceMethod<&ExecutableWrap::ExecuteInline>("executeInline"),
       InstanceMethod<&ExecutableWrap::Serialize>("serialize"), InstanceMethod<&ExecutableWrap::Dispose>("dispose"),
       InstanceMethod<&ExecutableWrap::DisposeInBackground>("disposeInBackground")});
}

Napi::Object ExecutableWrap::NewInstance(Napi::Env env, std::shared_ptr<ExecutableResource> res) {
  auto* holder = new std::shared_ptr<ExecutableResource>(std::move(res));
  auto ext = Napi::External<std::shared_ptr<ExecutableResource>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<ExecutableResource>* h) { delete h; });
  return AddonData::Get(env)->executable_ctor.New({ext});
}

ExecutableWrap::ExecutableWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ExecutableWrap>(info) {
  if (info.Length() != 1 || !info[0].IsExternal())
    throw Napi::TypeError::New(info.Env(), "PjrtExecutable is created by compile()");
  res_ = *info[0].As<Napi::External<std::shared_ptr<ExecutableResource>>>().Data();
}

ExecutableWrap::~ExecutableWrap() {
  if (res_) res_->Release();
}

std::shared_ptr<ExecutableResource> ExecutableWrap::Live(Napi::Env env) {
  if (!res_ || res_->released() || res_->client()->closed())
    ThrowStatus(env, Status::Disposed("the executable has been disposed"));
  return res_;
}

Napi::Value ExecutableWrap::Describe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto e = Live(env);
  Napi::Object o = Napi::Object::New(env);
  o.Set("numOutputs", Napi::Number::New(env, static_cast<double>(e->num_outputs)));
  Napi::Array types = Napi::Array::New(env, e->output_types.size());
  for (size_t i = 0; i < e->output_types.size(); ++i)
    types.Set(static_cast<uint32_t>(i), Napi::Number::New(env, e->output_types[i]));
  o.Set("outputTypes", types);
  Napi::Array dims = Napi::Array::New(env, e->output_dims.size());
  for (size_t i = 0; i < e->output_dims.size(); ++i)
    dims.Set(static_cast<uint32_t>(i), DimsToJs(env, e->output_dims[i]));
  o.Set("outputDims", dims);
  if (e->has_memory_stats) {
    const auto& m = e->memory_stats;
    Napi::Object ms = Napi::Object::New(env);
    ms.Set("generatedCodeBytes", Napi::Number::New(env, static_cast<double>(m.generated_code_size_in_bytes)));
    ms.Set("argumentBytes", Napi::Number::New(env, static_cast<double>(m.argument_size_in_bytes)));
    ms.Set("outputBytes", Napi::Number::New(env, static_cast<double>(m.output_size_in_bytes)));
    ms.Set("aliasBytes", Napi::Number::New(env, static_cast<double>(m.alias_size_in_bytes)));
    ms.Set("tempBytes", Napi::Number::New(env, static_cast<double>(m.temp_size_in_bytes)));
    ms.Set("peakMemoryBytes", Napi::Number::New(env, static_cast<double>(m.peak_memory_in_bytes)));
    o.Set("memoryStats", ms);
  } else {
    o.Set("memoryStats", env.Null());
  }
  return o;
}

namespace {

// A list of device buffers read from JS once (bindArguments) and appended to the arguments of
// every execute that names it: a model version's weights. Reading each wrapper per call (a
// type-tag check and an unwrap, V8 private-symbol lookups, then the JS layer's checks) cost
// resnet's 32 weights about 17 us of the JS thread per execute on a core shared with the
// execution (bench/RESULTS.md, session 15).
struct BoundArguments {
  std::shared_ptr<ClientState> cs;
  int device = 0;
  std::vector<std::shared_ptr<BufferResource>> buffers;
};

constexpr napi_type_tag kBoundTag = {0x5d1c93e2a7f04b18ULL, 0x9e36b0d4c2a75f61ULL};

BoundArguments* TaggedBound(const Napi::Value& v) {
  if (!v.IsExternal()) return nullptr;
  auto e = v.As<Napi::External<BoundArguments>>();
  if (!e.CheckTypeTag(&kBoundTag)) return nullptr;
  return e.Data();
}

}  // namespace

// bindArguments(buffers: PjrtBuffer[]) -> an opaque handle execute() appends to its arguments.
// The buffers must share one client and device. It holds their resources, not their memory: a
// buffer disposed later fails the execute that names it, as it would when passed itself.
Napi::Value BindArguments(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "bindArguments expects an array of PjrtBuffer");
  auto arr = info[0].As<Napi::Array>();
  auto* bound = new BoundArguments();
  try {
    const uint32_t count = arr.Length();
    bound->buffers.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      auto b = BufferWrap::FromValue(arr.Get(i), "buffers[" + std::to_string(i) + "]");
      if (i == 0) {
        bound->cs = b->client();
        bound->device = b->device_index();
      } else if (b->client() != bound->cs || b->device_index() != bound->device) {
        throw Napi::TypeError::New(env, "buffers[" + std::to_string(i) + "] is on another client or device");
      }
      bound->buffers.push_back(std::move(b));
    }
  } catch (...) {
    delete bound;
    throw;
  }
  auto ext = Napi::External<BoundArguments>::New(env, bound, [](Napi::Env, BoundArguments* b) { delete b; });
  ext.TypeTag(&kBoundTag);
  return ext;
}

// The job for execute() and executeInline(): arguments read and checked, everything pinned and
// the client held (released by FinishJob). Throws on bad arguments or a disposed resource.
// `bound_at`: the index of the optional bindArguments handle among the call's arguments.
namespace {

std::shared_ptr<ExecuteJob> PrepareJob(const Napi::CallbackInfo& info, std::shared_ptr<ExecutableResource> exe,
                                       KeepAlive& keep, size_t bound_at) {
  Napi::Env env = info.Env();
  auto job = std::make_shared<ExecuteJob>();
  job->exe = std::move(exe);
  job->cs = job->exe->client();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "args must be an array");
  auto arr = info[0].As<Napi::Array>();
  job->device = info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : 0;
  if (job->device < 0 || job->device >= static_cast<int>(job->cs->devices.size()))
    throw Napi::RangeError::New(env, "device index out of range");
  job->download = info[2].ToBoolean();
  keep = std::make_shared<std::vector<Napi::ObjectReference>>();
  const uint32_t count = arr.Length();
  job->buffers.reserve(count);
  job->is_host.reserve(count);
  // Field names are built only for an error: this loop runs once per argument of every dispatch.
  auto field = [](uint32_t i) { return "args[" + std::to_string(i) + "]"; };
  for (uint32_t i = 0; i < count; ++i) {
    Napi::Value v = arr.Get(i);
    if (BufferWrap* w = BufferWrap::Tagged(v)) {
      auto b = w->LiveResource(env);
      if (b->client() != job->cs) throw Napi::TypeError::New(env, field(i) + " belongs to another client");
      if (b->device_index() != job->device) throw Napi::TypeError::New(env, field(i) + " lives on another device");
      job->buffers.push_back(std::move(b));
      job->is_host.push_back(false);
    } else if (v.IsObject()) {
      job->host.push_back(ReadHostArg(v.As<Napi::Object>(), field(i), keep));
      job->is_host.push_back(true);
    } else {
      throw Napi::TypeError::New(env, field(i) + " must be a PjrtBuffer or {data, type, dims}");
    }
  }
  if (info.Length() > bound_at && !info[bound_at].IsUndefined()) {
    const BoundArguments* bound = TaggedBound(info[bound_at]);
    if (bound == nullptr) throw Napi::TypeError::New(env, "bound arguments must come from bindArguments()");
    if (!bound->buffers.empty() && bound->cs != job->cs)
      throw Napi::TypeError::New(env, "the bound arguments belong to another client");
    if (!bound->buffers.empty() && bound->device != job->device)
      throw Napi::TypeError::New(env, "the bound arguments live on another device");
    job->buffers.insert(job->buffers.end(), bound->buffers.begin(), bound->buffers.end());
    job->is_host.insert(job->is_host.end(), bound->buffers.size(), false);
  }
  // Pin everything first so a concurrent dispose() cannot free what this execution reads.
  const bool exe_pinned = job->exe->Pin();
  size_t pinned = 0;
  bool ok = exe_pinned;
  while (ok && pinned < job->buffers.size()) {
    if (job->buffers[pinned]->Pin())
      ++pinned;
    else
      ok = false;
  }
  if (!ok || !job->cs->Begin()) {
    for (size_t i = 0; i < pinned; ++i) job->buffers[i]->Unpin();
    if (exe_pinned) job->exe->Unpin();
    ThrowStatus(env, Status::Disposed("an argument or the executable has been disposed"));
  }
  return job;
}

Status RunAndRelease(ExecuteJob& job) {
  Status s = RunExecute(job);
  for (auto& b : job.buffers) b->Unpin();
  job.exe->Unpin();
  job.cs->End();
  return s;
}

Napi::Value OutputsToJs(Napi::Env env, ExecuteJob& job) {
  if (!job.download) {
    Napi::Array out = Napi::Array::New(env, job.outputs.size());
    for (size_t i = 0; i < job.outputs.size(); ++i)
      out.Set(static_cast<uint32_t>(i), BufferWrap::NewInstance(env, job.outputs[i]));
    return out;
  }
  Napi::Array out = Napi::Array::New(env, job.arrays.size());
  for (size_t i = 0; i < job.arrays.size(); ++i) {
    OutputArray& a = job.arrays[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("type", Napi::Number::New(env, a.type));
    o.Set("dims", DimsToJs(env, a.dims));
    o.Set("data", a.block.ToJs(env));
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

}  // namespace

// execute(args: Array<PjrtBuffer | {data, type, dims}>, deviceIndex, download, {background}?, bound?)
// -> Promise. `bound` (bindArguments) follows `args`.
Napi::Value ExecutableWrap::Execute(const Napi::CallbackInfo& info) {
  KeepAlive keep;
  auto job = PrepareJob(info, Live(info.Env()), keep, 4);
  // A background execution (a warmup) is a run, not a build: see TaskKind. On a client that
  // serializes its executions it runs on the serving threads instead: it holds the client's
  // execution gate while it computes, and at SCHED_IDLE it could starve there under load while a
  // serving execution waits behind it (what the asynchronous client does with a warmup too: it
  // computes on the plugin's own threads, in the device's one order, at normal priority).
  //
  // Unless the caller says the program never waits on the client's pool from inside it (no FFT,
  // no custom call: `besideOthers`): then nothing can deadlock on it, and it runs on the
  // background threads without the gate. A new version's first runs take milliseconds each (the
  // plugin finishes preparing the program then), and under the gate every other model's
  // executions waited behind them (bench/RESULTS.md, session 26).
  const bool asked_background = LaneOf(info[3]) != Lane::kServing;
  job->beside = asked_background && job->cs->serialize_executions && BesideOthersOf(info[3]);
  const Lane lane =
      asked_background && (!job->cs->serialize_executions || job->beside) ? Lane::kBackgroundRun : Lane::kServing;
  if (!asked_background) NoteServingActivity();
  AsyncOp op;
  op.work = [job]() -> Status { return RunAndRelease(*job); };
  op.finish = [job, keep](Napi::Env env) -> Napi::Value { return OutputsToJs(env, *job); };
  return RunAsync(info.Env(), std::move(op), lane);
}

// executeInline(args, deviceIndex, download, bound?) -> outputs: the same execution on the calling (JS)
// thread, blocking it until the outputs are on the host. For programs that take less time than
// the two thread hops around a pooled execution cost (the scheduler decides, see
// engine/src/scheduler/inline-policy.ts): no task-pool wake-up, no completion wake-up of the event
// loop, no extra loop turn.
Napi::Value ExecutableWrap::ExecuteInline(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  KeepAlive keep;
  auto job = PrepareJob(info, Live(env), keep, 3);
  NoteServingActivity();
  job->only_if_free = true;
  Status s;
  try {
    s = RunAndRelease(*job);
  } catch (const std::exception& e) {
    s = Status{13, std::string("internal error in native work: ") + e.what()};
  }
  if (!s.ok()) ThrowStatus(env, s);
  // Another execution of this client is under way (a warmup): waiting for it here would hold the
  // event loop; the caller runs this one pooled instead.
  if (job->busy) return env.Null();
  return OutputsToJs(env, *job);
}

// serialize() -> Promise<Buffer>: the plugin's own serialization of the compiled program (object
// code included on the CPU plugin), for deserializeAndLoad() on the same plugin build.
Napi::Value ExecutableWrap::Serialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    auto exe = Live(env);
    auto cs = exe->client();
    if (!HLO_HAS(cs->api(), PJRT_Executable_Serialize))
      ThrowStatus(env, Status{12, "this PJRT plugin cannot serialize executables"});
    if (!exe->Pin()) ThrowStatus(env, Status::Disposed("the executable has been disposed"));
    if (!cs->Begin()) {
      exe->Unpin();
      ThrowStatus(env, Status::Disposed("the PJRT client has been disposed"));
    }
    auto bytes = std::make_shared<HostBlock>();
    AsyncOp op;
    op.work = [exe, cs, bytes]() -> Status {
      const auto* api = cs->api();
      hloabi::PJRT_LoadedExecutable_GetExecutable_Args ge{};
      ge.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_LoadedExecutable_GetExecutable_Args, executable);
      ge.loaded_executable = exe->executable();
      Status s = TakeError(api, api->PJRT_LoadedExecutable_GetExecutable(&ge));
      if (s.ok()) {
        hloabi::PJRT_Executable_Serialize_Args a{};
        a.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Executable_Serialize_Args, serialized_executable_deleter);
        a.executable = ge.executable;
        s = TakeError(api, api->PJRT_Executable_Serialize(&a));
        if (s.ok()) {
          if (a.serialized_bytes_size == 0) {
            s = Status{13, "the plugin serialized the executable to 0 bytes"};
          } else {
            // Caught here, not by RunAsync, so the deleter, the pin and the client hold are released.
            try {
              *bytes = HostBlock::Allocate(a.serialized_bytes_size);
              std::memcpy(bytes->data, a.serialized_bytes, a.serialized_bytes_size);
            } catch (const std::exception& e) {
              s = Status{8, std::string("cannot hold the serialized executable: ") + e.what()};
            }
          }
        }
        if (a.serialized_executable != nullptr && a.serialized_executable_deleter != nullptr)
          a.serialized_executable_deleter(a.serialized_executable);
        hloabi::PJRT_Executable_Destroy_Args ed{};
        ed.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Executable_Destroy_Args, executable);
        ed.executable = ge.executable;
        TakeError(api, api->PJRT_Executable_Destroy(&ed));
      }
      exe->Unpin();
      cs->End();
      return s;
    };
    op.finish = [bytes](Napi::Env env) -> Napi::Value { return bytes->ToJs(env); };
    return RunAsync(env, std::move(op), Lane::kBackground);
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("serialize: ") + e.what());
  }
}

Napi::Value ExecutableWrap::Dispose(const Napi::CallbackInfo& info) {
  if (res_) res_->Release();
  return info.Env().Undefined();
}

// disposeInBackground(): disposed at once, as dispose() is (no new work can use it), but the PJRT
// executable is destroyed on the background lane, behind a pin that keeps it alive until then.
// Destroying one frees its compiled code: about 0.4 ms an executable on the CPU plugin, which a
// reload retiring a model's five batch sizes spent on the JS thread, stalling every other model's
// requests for 2 ms.
Napi::Value ExecutableWrap::DisposeInBackground(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!res_) return env.Undefined();
  std::shared_ptr<ClientState> cs = res_->client();
  if (!res_->Pin()) return env.Undefined();  // already released
  res_->Release();
  if (!cs->Begin()) {  // the client is closing: destroy it here
    res_->Unpin();
    return env.Undefined();
  }
  AsyncOp op;
  op.work = [res = res_, cs]() -> Status {
    res->Unpin();
    cs->End();
    return Status::Ok();
  };
  op.finish = [](Napi::Env env) -> Napi::Value { return env.Undefined(); };
  RunAsync(env, std::move(op), Lane::kBackground);
  return env.Undefined();
}

}  // namespace hlo
