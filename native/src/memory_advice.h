#pragma once

#include <napi.h>

namespace hlo {

// adviseHugePages(view) -> boolean: asks the kernel to back the pages wholly inside `view` with
// transparent huge pages (madvise MADV_HUGEPAGE). For large buffers about to be filled for the
// first time: each 4 KiB page first touched is a fault, and on a VM a fault costs microseconds (a
// 2.7 GB weights file read into fresh buffers took twice as long as with huge pages). Where the
// system's THP mode is `madvise` this is what turns them on; under `always` it changes nothing,
// under `never` the kernel ignores it. False where it was not applied.
Napi::Value AdviseHugePages(const Napi::CallbackInfo& info);

}  // namespace hlo
