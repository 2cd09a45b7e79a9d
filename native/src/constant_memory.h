// __constant__ memory (Kernel Tuner's cmem_args), in a file of its own: a module's global symbol filled from a device
// buffer before a run. cuModuleGetGlobal is resolved here, from the libcuda the loader opened (loader.cc).
#pragma once

#include <napi.h>

namespace kt {

/**
 * moduleCopyToGlobal(module, name, src, bytes): copies `bytes` from the device pointer `src` (within a live
 * allocation) into the module's global `name` (cuModuleGetGlobal + cuMemcpyDtoDAsync, waited for). Returns the
 * symbol's size in bytes. A name the module lacks is CUDA_ERROR_NOT_FOUND; more bytes than the symbol holds a RangeError.
 */
Napi::Value ModuleCopyToGlobal(const Napi::CallbackInfo& info);

}  // namespace kt
