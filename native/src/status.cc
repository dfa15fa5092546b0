#include "status.h"

namespace hlo {

Status TakeError(const hloabi::PJRT_Api* api, hloabi::PJRT_Error* err) {
  if (err == nullptr) return Status::Ok();
  hloabi::PJRT_Error_Message_Args m{};
  m.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Error_Message_Args, message_size);
  m.error = err;
  api->PJRT_Error_Message(&m);
  Status s;
  s.message.assign(m.message != nullptr ? m.message : "", m.message_size);
  hloabi::PJRT_Error_GetCode_Args c{};
  c.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Error_GetCode_Args, code);
  c.error = err;
  hloabi::PJRT_Error* code_err = api->PJRT_Error_GetCode(&c);
  // A failing GetCode must not leave the outer error looking like success.
  s.code = code_err == nullptr && c.code != 0 ? static_cast<int>(c.code) : 2 /* UNKNOWN */;
  if (code_err != nullptr) {
    hloabi::PJRT_Error_Destroy_Args d{};
    d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Error_Destroy_Args, error);
    d.error = code_err;
    api->PJRT_Error_Destroy(&d);
  }
  hloabi::PJRT_Error_Destroy_Args d{};
  d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Error_Destroy_Args, error);
  d.error = err;
  api->PJRT_Error_Destroy(&d);
  return s;
}

Status AwaitAndDestroy(const hloabi::PJRT_Api* api, hloabi::PJRT_Event* event) {
  if (event == nullptr) return Status::Ok();
  hloabi::PJRT_Event_Await_Args a{};
  a.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Event_Await_Args, event);
  a.event = event;
  Status s = TakeError(api, api->PJRT_Event_Await(&a));
  hloabi::PJRT_Event_Destroy_Args d{};
  d.struct_size = HLO_STRUCT_SIZE(hloabi::PJRT_Event_Destroy_Args, event);
  d.event = event;
  Status ds = TakeError(api, api->PJRT_Event_Destroy(&d));
  return s.ok() ? ds : s;
}

const char* PjrtCodeName(int code) {
  static const char* names[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  if (code >= 0 && code <= 16) return names[code];
  if (code == kStatusDisposed) return "DISPOSED";
  if (code == kStatusInvalid) return "INVALID_ARGUMENT";
  return "UNKNOWN";
}

}  // namespace hlo
