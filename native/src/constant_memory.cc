#include "constant_memory.h"

#include <dlfcn.h>

#include <string>

#include "args.h"
#include "context.h"
#include "errors.h"
#include "loader.h"

namespace kt {
namespace {

// cuda.h maps cuModuleGetGlobal to cuModuleGetGlobal_v2 (the size_t ABI); dlsym sees no macros.
using PFN_cuModuleGetGlobal = CUresult (*)(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name);

/** cuModuleGetGlobal_v2 of the libcuda already loaded (RTLD_NOLOAD: never a second copy), or nullptr. */
PFN_cuModuleGetGlobal moduleGetGlobal() {
  static const PFN_cuModuleGetGlobal fn = [] {
    const LibraryStatus& status = cudaStatus();
    void* handle = status.loaded ? dlopen(status.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) : nullptr;
    return handle != nullptr ? reinterpret_cast<PFN_cuModuleGetGlobal>(dlsym(handle, "cuModuleGetGlobal_v2")) : nullptr;
  }();
  return fn;
}

}  // namespace

Napi::Value ModuleCopyToGlobal(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "moduleCopyToGlobal";
  const auto module = reinterpret_cast<CUmodule>(static_cast<uintptr_t>(toUint64BigInt(info[0], fn, "module")));
  const std::string name = toString(info[1], fn, "name");
  if (name.empty() || name.find('\0') != std::string::npos) {
    throwExpected(info[1], fn, "name", "a non-empty symbol name without NUL characters");
  }
  const auto src = static_cast<CUdeviceptr>(toUint64BigInt(info[2], fn, "src"));
  const uint64_t bytes = toInteger(info[3], fn, "bytes", 1);
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, fn);
  ctx.requireModule(env, fn, module);
  ctx.checkRange(env, fn, "src", src, bytes);
  const PFN_cuModuleGetGlobal getGlobal = moduleGetGlobal();
  if (getGlobal == nullptr) {
    ErrorInfo e = libraryNotFoundInfo(true);
    e.message = std::string(fn) + ": " + cudaStatus().path + " lacks cuModuleGetGlobal_v2 (the NVIDIA driver is too old)";
    throwError(env, e);
  }
  CUdeviceptr symbol = 0;
  size_t size = 0;
  const CUresult r = getGlobal(&symbol, &size, module, name.c_str());
  if (r != CUDA_SUCCESS) {
    ErrorInfo e = cudaErrorInfo(api, r, "cuModuleGetGlobal");
    e.message = "cuModuleGetGlobal(\"" + name + "\") failed: " + e.code + ". " + e.explanation;
    throwError(env, e);
  }
  if (bytes > size) {
    throwInvalidArgument(env, std::string(fn) + ": " + std::to_string(bytes) + " bytes do not fit the symbol " + name + " of " +
                                  std::to_string(size) + " bytes", ErrorInfo::Kind::RangeError);
  }
  checkCuda(env, api, api.cuMemcpyDtoDAsync(symbol, src, static_cast<size_t>(bytes), ctx.stream()), "cuMemcpyDtoDAsync");
  ctx.syncStream(env, api);
  return Napi::Number::New(env, static_cast<double>(size));
}

}  // namespace kt
