// A PJRT outcome that can cross threads: worker code produces it, the JS thread turns it into a
// typed JS error. Code 0 is success; PJRT codes are 1..16; negative codes are hloserve's own.
#pragma once

#include <string>
#include <utility>

#include "pjrt_abi.h"

namespace hlo {

enum : int {
  kStatusOk = 0,
  kStatusDisposed = -1,  // the object (or its client) was disposed
  kStatusInvalid = -2,   // an argument the addon refused before calling PJRT
  kStatusShm = -3,       // a shared-memory object that is no longer what was registered
};

struct Status {
  int code = kStatusOk;
  std::string message;

  bool ok() const { return code == kStatusOk; }
  static Status Ok() { return {}; }
  static Status Disposed(std::string what) { return {kStatusDisposed, std::move(what)}; }
  static Status Invalid(std::string what) { return {kStatusInvalid, std::move(what)}; }
  static Status Shm(std::string what) { return {kStatusShm, std::move(what)}; }
};

// Reads code and message out of `err` and destroys it. Null means success.
Status TakeError(const hloabi::PJRT_Api* api, hloabi::PJRT_Error* err);

// Blocks on `event` (on a worker thread, never the JS thread), destroys it, returns its status.
Status AwaitAndDestroy(const hloabi::PJRT_Api* api, hloabi::PJRT_Event* event);

const char* PjrtCodeName(int code);

}  // namespace hlo
