#include "tensor_helper.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace hlo {

size_t ElementSize(int t) {
  switch (t) {
    case 1:
    case 2:
    case 6:
      return 1;  // PRED S8 U8
    case 3:
    case 7:
    case 10:
    case 13:
      return 2;  // S16 U16 F16 BF16
    case 4:
    case 8:
    case 11:
      return 4;  // S32 U32 F32
    case 5:
    case 9:
    case 12:
      return 8;  // S64 U64 F64
    default:
      return 0;
  }
}

void ReadBytes(const Napi::Value& v, const std::string& field, const uint8_t** data, size_t* length, KeepAlive& keep) {
  Napi::Env env = v.Env();
  if (!v.IsTypedArray() && !v.IsDataView())
    throw Napi::TypeError::New(env, field + " must be a TypedArray, Buffer or DataView");
  // The view's own data pointer, not its buffer's: napi_get_arraybuffer_info refuses a
  // SharedArrayBuffer ("Invalid argument"), and a view over one is as good an input as any.
  void* p = nullptr;
  napi_value buffer = nullptr;
  size_t offset = 0;
  napi_status st;
  if (v.IsTypedArray()) {
    napi_typedarray_type type;
    size_t count = 0;
    st = napi_get_typedarray_info(env, v, &type, &count, &p, &buffer, &offset);
    *length = v.As<Napi::TypedArray>().ByteLength();
  } else {
    st = napi_get_dataview_info(env, v, length, &p, &buffer, &offset);
  }
  NAPI_THROW_IF_FAILED_VOID(env, st);
  bool detached = false;
  NAPI_THROW_IF_FAILED_VOID(env, napi_is_detached_arraybuffer(env, buffer, &detached));
  if (detached) throw Napi::TypeError::New(env, field + " is backed by a detached ArrayBuffer");
  *data = static_cast<const uint8_t*>(p);
  keep->push_back(Napi::Persistent(Napi::Object(env, buffer)));
}

int ReadType(const Napi::Value& v, const std::string& field) {
  Napi::Env env = v.Env();
  if (!v.IsNumber()) throw Napi::TypeError::New(env, field + " must be a PJRT element type number");
  int t = v.As<Napi::Number>().Int32Value();
  if (ElementSize(t) == 0) throw Napi::TypeError::New(env, field + ": unsupported element type " + std::to_string(t));
  return t;
}

std::vector<int64_t> ReadDims(const Napi::Value& v, const std::string& field) {
  Napi::Env env = v.Env();
  if (!v.IsArray()) throw Napi::TypeError::New(env, field + " must be an array of dimensions");
  auto a = v.As<Napi::Array>();
  if (a.Length() > 64) throw Napi::TypeError::New(env, field + ": rank above 64 is not supported");
  std::vector<int64_t> dims(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value d = a.Get(i);
    double x = d.IsNumber() ? d.As<Napi::Number>().DoubleValue() : -1;
    if (!(x >= 0) || x != std::floor(x) || x > 9007199254740991.0) {
      throw Napi::TypeError::New(env, field + "[" + std::to_string(i) + "] must be a non-negative integer");
    }
    dims[i] = static_cast<int64_t>(x);
  }
  return dims;
}

void CheckShape(Napi::Env env, int type, const std::vector<int64_t>& dims, size_t bytes, const std::string& field) {
  unsigned __int128 n = ElementSize(type);
  for (int64_t d : dims) {
    n *= static_cast<uint64_t>(d);
    if (n > std::numeric_limits<uint64_t>::max()) throw Napi::TypeError::New(env, field + ": shape is too large");
  }
  if (n != bytes) {
    throw Napi::TypeError::New(env, field + ": data has " + std::to_string(bytes) + " bytes but shape and type need " +
                                        std::to_string(static_cast<uint64_t>(n)));
  }
}

HostArg ReadHostArg(const Napi::Object& o, const std::string& field, KeepAlive& keep) {
  HostArg h;
  h.type = ReadType(o.Get("type"), field + ".type");
  h.dims = ReadDims(o.Get("dims"), field + ".dims");
  ReadBytes(o.Get("data"), field + ".data", &h.data, &h.bytes, keep);
  CheckShape(o.Env(), h.type, h.dims, h.bytes, field);
  return h;
}

Napi::Array DimsToJs(Napi::Env env, const std::vector<int64_t>& dims) {
  Napi::Array a = Napi::Array::New(env, dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    a.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(dims[i])));
  return a;
}

HostBlock HostBlock::Allocate(size_t bytes) {
  HostBlock b;
  b.bytes = bytes;
  // 64-byte alignment lets the CPU plugin and SIMD code use the memory directly.
  size_t rounded = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
  b.data = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
  if (b.data == nullptr) throw std::bad_alloc();
  return b;
}

Napi::Buffer<uint8_t> HostBlock::ToJs(Napi::Env env) {
  uint8_t* d = data;
  data = nullptr;
  return Napi::Buffer<uint8_t>::New(env, d, bytes, [](Napi::Env, uint8_t* p) { std::free(p); });
}

void HostBlock::Free() {
  std::free(data);
  data = nullptr;
}

}  // namespace hlo
