// JS host arrays <-> plain structs. Conversion happens once, on the JS thread; worker code sees
// only HostArg. Everything that would make XLA CHECK-fail (unknown type, a dims/length mismatch)
// is refused here with a TypeError naming the field.
#pragma once

#include <napi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hlo {

// Byte size of a PJRT_Buffer_Type we support, 0 for any other.
size_t ElementSize(int pjrt_type);

struct HostArg {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  int type = 0;
  std::vector<int64_t> dims;
};

// Keeps JS memory referenced while worker threads read it. Created and destroyed on the JS thread.
using KeepAlive = std::shared_ptr<std::vector<Napi::ObjectReference>>;

// Reads an ArrayBufferView (TypedArray, Buffer or DataView) into ptr/length and pins its buffer.
void ReadBytes(const Napi::Value& v, const std::string& field, const uint8_t** data, size_t* length, KeepAlive& keep);

// Reads and checks dims (non-negative safe integers) and that prod(dims) * size(type) == bytes.
std::vector<int64_t> ReadDims(const Napi::Value& v, const std::string& field);
void CheckShape(Napi::Env env, int type, const std::vector<int64_t>& dims, size_t bytes, const std::string& field);
int ReadType(const Napi::Value& v, const std::string& field);

// {data, type, dims} -> HostArg.
HostArg ReadHostArg(const Napi::Object& o, const std::string& field, KeepAlive& keep);

Napi::Array DimsToJs(Napi::Env env, const std::vector<int64_t>& dims);

// Host memory the worker filled, handed to JS without a copy.
struct HostBlock {
  HostBlock() = default;
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;
  HostBlock(HostBlock&& o) noexcept : data(o.data), bytes(o.bytes) { o.data = nullptr; }
  HostBlock& operator=(HostBlock&& o) noexcept {
    if (this != &o) {
      Free();
      data = o.data;
      bytes = o.bytes;
      o.data = nullptr;
    }
    return *this;
  }
  ~HostBlock() { Free(); }
  uint8_t* data = nullptr;
  size_t bytes = 0;
  static HostBlock Allocate(size_t bytes);
  Napi::Buffer<uint8_t> ToJs(Napi::Env env);  // transfers ownership
  void Free();
};

}  // namespace hlo
