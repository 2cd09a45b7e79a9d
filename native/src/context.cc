#include "context.h"

#include <climits>

#include "api.h"
#include "args.h"
#include "errors.h"
#include "loader.h"

namespace kt {
namespace {

// Enough for a benchmark of 32 iterations without growing; more are created on demand.
constexpr size_t kInitialEvents = 64;

}  // namespace

Context& Context::instance() {
  static Context* context = new Context();  // never destroyed: must outlive env cleanup hooks at exit
  return *context;
}

void Context::reset() {
  context_ = nullptr;
  device_ = 0;
  ordinal_ = -1;
  stream_ = nullptr;
  owner_thread_ = std::thread::id();
  owner_env_ = nullptr;
  events_.clear();
  allocations_.clear();
  modules_.clear();
  functions_.clear();
}

void Context::create(Napi::Env env, const CudaApi& api, int ordinal) {
  if (active()) {
    if (ordinal != ordinal_) {
      throwInvalidArgument(env, "contextCreate: a context for device " + std::to_string(ordinal_) +
                                    " exists; one process drives one device, call contextDestroy() first");
    }
    checkCuda(env, api, api.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    return;
  }
  checkCuda(env, api, api.cuInit(0), "cuInit");
  CUdevice device = 0;
  checkCuda(env, api, api.cuDeviceGet(&device, ordinal), "cuDeviceGet");
  CUcontext context = nullptr;
  checkCuda(env, api, api.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");

  CUstream stream = nullptr;
  std::vector<CUevent> events;
  // Undo the partial setup before reporting the failure.
  auto fail = [&](CUresult result, const char* call) {
    for (CUevent e : events) api.cuEventDestroy(e);
    if (stream != nullptr) api.cuStreamDestroy(stream);
    api.cuCtxSetCurrent(nullptr);
    api.cuDevicePrimaryCtxRelease(device);
    throwError(env, cudaErrorInfo(api, result, call));
  };
  CUresult r = api.cuCtxSetCurrent(context);
  if (r != CUDA_SUCCESS) fail(r, "cuCtxSetCurrent");
  r = api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) fail(r, "cuStreamCreate");
  events.reserve(kInitialEvents);
  for (size_t i = 0; i < kInitialEvents; ++i) {
    CUevent e = nullptr;
    r = api.cuEventCreate(&e, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) fail(r, "cuEventCreate");
    events.push_back(e);
  }

  context_ = context;
  device_ = device;
  ordinal_ = ordinal;
  stream_ = stream;
  owner_thread_ = std::this_thread::get_id();
  owner_env_ = env;
  events_ = std::move(events);
}

void Context::destroy(const CudaApi& api) {
  if (!active()) return;
  // Errors are ignored on purpose: after a sticky fault every call fails, and the handles must be dropped regardless.
  api.cuCtxSetCurrent(context_);
  api.cuStreamSynchronize(stream_);
  for (CUmodule m : modules_) api.cuModuleUnload(m);
  for (const auto& a : allocations_) api.cuMemFree(a.first);
  for (CUevent e : events_) api.cuEventDestroy(e);
  api.cuStreamDestroy(stream_);
  api.cuCtxSetCurrent(nullptr);
  api.cuDevicePrimaryCtxRelease(device_);
  reset();
}

void Context::destroyIfOwnedBy(napi_env env, const CudaApi& api) {
  if (active() && owner_env_ == env) destroy(api);
}

void Context::require(Napi::Env env, const CudaApi& api, const char* call) {
  if (!active()) throwError(env, noContextInfo(call));
  // The context is current only on the thread that created it; another thread (a worker_thread) must bind it.
  if (std::this_thread::get_id() != owner_thread_) {
    checkCuda(env, api, api.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  }
}

void Context::syncStream(Napi::Env env, const CudaApi& api) const {
  checkCuda(env, api, api.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void Context::checkRange(Napi::Env env, const char* fn, const std::string& name, CUdeviceptr ptr,
                         uint64_t bytes) const {
  auto it = allocations_.upper_bound(ptr);
  if (it == allocations_.begin()) {
    throwInvalidArgument(env, std::string(fn) + ": " + name + " " + hex(ptr) + " is not inside a live allocation",
                         ErrorInfo::Kind::RangeError);
  }
  --it;
  const uint64_t offset = ptr - it->first;
  const uint64_t size = it->second;
  if (offset > size || (offset == size && bytes > 0)) {
    throwInvalidArgument(env, std::string(fn) + ": " + name + " " + hex(ptr) + " is not inside a live allocation",
                         ErrorInfo::Kind::RangeError);
  }
  if (bytes > size - offset) {
    throwInvalidArgument(env,
                         std::string(fn) + ": " + std::to_string(bytes) + " bytes at " + name + " " + hex(ptr) +
                             " run past the end of its allocation (" + std::to_string(size) + " bytes at " +
                             hex(it->first) + ", " + std::to_string(size - offset) + " bytes left)",
                         ErrorInfo::Kind::RangeError);
  }
}

void Context::removeModule(CUmodule module) {
  modules_.erase(module);
  for (auto it = functions_.begin(); it != functions_.end();) {
    it = it->second.module == module ? functions_.erase(it) : std::next(it);
  }
}

void Context::addFunction(CUfunction fn, CUmodule module) {
  FunctionInfo& info = functions_[fn];
  if (info.module != module) info = FunctionInfo{module, false, false, {}};
}

void Context::requireModule(Napi::Env env, const char* fn, CUmodule module) const {
  if (!isModule(module)) {
    throwInvalidArgument(env, std::string(fn) + ": module " + hex(reinterpret_cast<uintptr_t>(module)) +
                                  " is not a loaded module (already unloaded?)");
  }
}

FunctionInfo& Context::function(Napi::Env env, const char* fn, const std::string& name, CUfunction function) {
  auto it = functions_.find(function);
  if (it == functions_.end()) {
    throwInvalidArgument(env, std::string(fn) + ": " + name + " " + hex(reinterpret_cast<uint64_t>(function)) +
                                  " is not a function of a loaded module (moduleGetFunction)");
  }
  return it->second;
}

const std::vector<CUevent>& Context::events(Napi::Env env, const CudaApi& api, size_t count) {
  while (events_.size() < count) {
    CUevent e = nullptr;
    checkCuda(env, api, api.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    events_.push_back(e);
  }
  return events_;
}

// ---- entry points ----------------------------------------------------------------------------------------------

Napi::Value ContextCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int ordinal = static_cast<int>(toInteger(info[0], "contextCreate", "ordinal", 0, INT_MAX));
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.create(env, api, ordinal);
  return env.Undefined();
}

Napi::Value ContextDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.destroy(api);
  return env.Undefined();
}

Napi::Value Synchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "synchronize");
  checkCuda(env, api, api.cuCtxSynchronize(), "cuCtxSynchronize");
  return env.Undefined();
}

Napi::Value MemInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "memInfo");
  size_t freeBytes = 0;
  size_t totalBytes = 0;
  checkCuda(env, api, api.cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::Number::New(env, static_cast<double>(freeBytes)));
  out.Set(1u, Napi::Number::New(env, static_cast<double>(totalBytes)));
  return out;
}

void ReleaseContextAtExit(Napi::Env env) {
  const CudaApi* api = cudaApi();
  if (api == nullptr) return;
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.destroyIfOwnedBy(env, *api);
}

}  // namespace kt
