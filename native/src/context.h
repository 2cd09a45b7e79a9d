// The process's single CUDA context (one process = one device): the retained primary context, the non-blocking stream
// that all work goes on, a pool of timing events, and every module, function and allocation handed to JavaScript.
// Tracking them lets contextDestroy free everything, and lets each entry point reject a handle the addon did not
// create before it reaches the driver, where a stale or invented pointer could crash the process.
#pragma once

#include <napi.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda_api.h"

namespace kt {

struct FunctionInfo {
  CUmodule module = nullptr;
  bool paramsQueried = false;
  bool paramsKnown = false;          // false when the driver cannot describe parameters (cuFuncGetParamInfo absent)
  std::vector<size_t> paramSizes;    // bytes of each kernel parameter, when known
};

class Context {
 public:
  static Context& instance();

  /** Entry points hold this for their whole call: state and the stream are shared by every thread of the process. */
  std::mutex mutex;

  bool active() const { return context_ != nullptr; }
  int ordinal() const { return ordinal_; }
  CUstream stream() const { return stream_; }

  void create(Napi::Env env, const CudaApi& api, int ordinal);
  /** Best effort: frees everything even on a poisoned context, ignoring the driver's errors. */
  void destroy(const CudaApi& api);
  /** Destroys only if `env` created the context. */
  void destroyIfOwnedBy(napi_env env, const CudaApi& api);

  /** Throws CUDA_ERROR_INVALID_CONTEXT without a context; makes it current on a thread other than the creator's. */
  void require(Napi::Env env, const CudaApi& api, const char* call);

  /** cuStreamSynchronize, throwing the CUDA error (of the sync or of earlier work on the stream). */
  void syncStream(Napi::Env env, const CudaApi& api) const;

  // ---- allocations ----
  void addAllocation(CUdeviceptr ptr, uint64_t bytes) { allocations_[ptr] = bytes; }
  bool isAllocation(CUdeviceptr ptr) const { return allocations_.count(ptr) != 0; }
  void removeAllocation(CUdeviceptr ptr) { allocations_.erase(ptr); }
  /** Throws a RangeError unless [ptr, ptr + bytes) lies within one live allocation. */
  void checkRange(Napi::Env env, const char* fn, const std::string& name, CUdeviceptr ptr, uint64_t bytes) const;

  // ---- modules and functions ----
  void addModule(CUmodule module) { modules_.insert(module); }
  bool isModule(CUmodule module) const { return modules_.count(module) != 0; }
  // Throws INVALID_ARGUMENT, naming the caller, unless `module` is loaded (an unloaded one must not reach the driver).
  void requireModule(Napi::Env env, const char* fn, CUmodule module) const;
  /** Forgets the module and every function obtained from it. */
  void removeModule(CUmodule module);
  void addFunction(CUfunction fn, CUmodule module);
  /** The tracked function, or throws INVALID_ARGUMENT naming `fn`/`name`. */
  FunctionInfo& function(Napi::Env env, const char* fn, const std::string& name, CUfunction function);

  /** At least `count` timing events, creating more when needed; returns the pool. */
  const std::vector<CUevent>& events(Napi::Env env, const CudaApi& api, size_t count);

 private:
  Context() = default;
  void reset();

  CUcontext context_ = nullptr;
  CUdevice device_ = 0;
  int ordinal_ = -1;
  CUstream stream_ = nullptr;
  std::thread::id owner_thread_;
  napi_env owner_env_ = nullptr;
  std::vector<CUevent> events_;
  std::map<CUdeviceptr, uint64_t> allocations_;  // ordered: range lookups find the allocation below a pointer
  std::unordered_set<CUmodule> modules_;
  std::unordered_map<CUfunction, FunctionInfo> functions_;
};

}  // namespace kt
