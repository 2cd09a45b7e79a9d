#include "loader.h"

#include <dlfcn.h>

#include <mutex>

namespace kt {
namespace {

struct Loaded {
  LibraryStatus status;
  CudaApi cuda{};
  NvrtcApi nvrtc{};
  NvmlApi nvml{};
};

const char* lastDlError(const char* fallback) {
  const char* e = dlerror();
  return e != nullptr ? e : fallback;
}

/** Resolves `name` into `slot`; on failure records which symbol is missing. */
template <typename Fn>
bool resolve(void* handle, const char* name, Fn& slot, std::string& missing) {
  dlerror();
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    if (missing.empty()) missing = name;
    return false;
  }
  slot = reinterpret_cast<Fn>(sym);
  return true;
}

template <typename Fn>
void resolveOptional(void* handle, const char* name, Fn& slot) {
  dlerror();
  void* sym = dlsym(handle, name);
  slot = sym != nullptr ? reinterpret_cast<Fn>(sym) : nullptr;
}

// Versioned names: cuda.h #defines the plain names to these, and the plain (v1) exports keep their old ABI.
bool resolveCuda(void* h, CudaApi& a, std::string& missing) {
  bool ok = true;
  ok &= resolve(h, "cuGetErrorName", a.cuGetErrorName, missing);
  ok &= resolve(h, "cuGetErrorString", a.cuGetErrorString, missing);
  ok &= resolve(h, "cuInit", a.cuInit, missing);
  ok &= resolve(h, "cuDriverGetVersion", a.cuDriverGetVersion, missing);
  ok &= resolve(h, "cuDeviceGet", a.cuDeviceGet, missing);
  ok &= resolve(h, "cuDeviceGetCount", a.cuDeviceGetCount, missing);
  ok &= resolve(h, "cuDeviceGetName", a.cuDeviceGetName, missing);
  ok &= resolve(h, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem, missing);
  ok &= resolve(h, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, missing);
  ok &= resolve(h, "cuDeviceGetPCIBusId", a.cuDeviceGetPCIBusId, missing);
  ok &= resolve(h, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, missing);
  ok &= resolve(h, "cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease, missing);
  ok &= resolve(h, "cuCtxSetCurrent", a.cuCtxSetCurrent, missing);
  ok &= resolve(h, "cuCtxSynchronize", a.cuCtxSynchronize, missing);
  ok &= resolve(h, "cuMemGetInfo_v2", a.cuMemGetInfo, missing);
  ok &= resolve(h, "cuMemAlloc_v2", a.cuMemAlloc, missing);
  ok &= resolve(h, "cuMemFree_v2", a.cuMemFree, missing);
  ok &= resolve(h, "cuMemcpyHtoDAsync_v2", a.cuMemcpyHtoDAsync, missing);
  ok &= resolve(h, "cuMemcpyDtoHAsync_v2", a.cuMemcpyDtoHAsync, missing);
  ok &= resolve(h, "cuMemcpyDtoDAsync_v2", a.cuMemcpyDtoDAsync, missing);
  ok &= resolve(h, "cuMemsetD8Async", a.cuMemsetD8Async, missing);
  ok &= resolve(h, "cuMemsetD16Async", a.cuMemsetD16Async, missing);
  ok &= resolve(h, "cuMemsetD32Async", a.cuMemsetD32Async, missing);
  ok &= resolve(h, "cuMemsetD2D32Async", a.cuMemsetD2D32Async, missing);
  ok &= resolve(h, "cuModuleLoadData", a.cuModuleLoadData, missing);
  ok &= resolve(h, "cuModuleUnload", a.cuModuleUnload, missing);
  ok &= resolve(h, "cuModuleGetFunction", a.cuModuleGetFunction, missing);
  ok &= resolve(h, "cuFuncGetAttribute", a.cuFuncGetAttribute, missing);
  ok &= resolve(h, "cuFuncSetAttribute", a.cuFuncSetAttribute, missing);
  resolveOptional(h, "cuFuncGetParamInfo", a.cuFuncGetParamInfo);
  ok &= resolve(h, "cuOccupancyMaxActiveBlocksPerMultiprocessor", a.cuOccupancyMaxActiveBlocksPerMultiprocessor, missing);
  ok &= resolve(h, "cuLaunchKernel", a.cuLaunchKernel, missing);
  ok &= resolve(h, "cuStreamCreate", a.cuStreamCreate, missing);
  ok &= resolve(h, "cuStreamDestroy_v2", a.cuStreamDestroy, missing);
  ok &= resolve(h, "cuStreamSynchronize", a.cuStreamSynchronize, missing);
  ok &= resolve(h, "cuEventCreate", a.cuEventCreate, missing);
  ok &= resolve(h, "cuEventRecord", a.cuEventRecord, missing);
  resolveOptional(h, "cuEventElapsedTime_v2", a.cuEventElapsedTime);
  if (a.cuEventElapsedTime == nullptr) ok &= resolve(h, "cuEventElapsedTime", a.cuEventElapsedTime, missing);
  ok &= resolve(h, "cuEventDestroy_v2", a.cuEventDestroy, missing);
  return ok;
}

bool resolveNvrtc(void* h, NvrtcApi& a, std::string& missing) {
  bool ok = true;
  ok &= resolve(h, "nvrtcGetErrorString", a.nvrtcGetErrorString, missing);
  ok &= resolve(h, "nvrtcVersion", a.nvrtcVersion, missing);
  ok &= resolve(h, "nvrtcCreateProgram", a.nvrtcCreateProgram, missing);
  ok &= resolve(h, "nvrtcDestroyProgram", a.nvrtcDestroyProgram, missing);
  ok &= resolve(h, "nvrtcCompileProgram", a.nvrtcCompileProgram, missing);
  ok &= resolve(h, "nvrtcAddNameExpression", a.nvrtcAddNameExpression, missing);
  ok &= resolve(h, "nvrtcGetLoweredName", a.nvrtcGetLoweredName, missing);
  ok &= resolve(h, "nvrtcGetCUBINSize", a.nvrtcGetCUBINSize, missing);
  ok &= resolve(h, "nvrtcGetCUBIN", a.nvrtcGetCUBIN, missing);
  ok &= resolve(h, "nvrtcGetPTXSize", a.nvrtcGetPTXSize, missing);
  ok &= resolve(h, "nvrtcGetPTX", a.nvrtcGetPTX, missing);
  ok &= resolve(h, "nvrtcGetProgramLogSize", a.nvrtcGetProgramLogSize, missing);
  ok &= resolve(h, "nvrtcGetProgramLog", a.nvrtcGetProgramLog, missing);
  return ok;
}

bool resolveNvml(void* h, NvmlApi& a, std::string& missing) {
  bool ok = true;
  ok &= resolve(h, "nvmlInit_v2", a.nvmlInit, missing);
  ok &= resolve(h, "nvmlErrorString", a.nvmlErrorString, missing);
  ok &= resolve(h, "nvmlDeviceGetHandleByPciBusId_v2", a.nvmlDeviceGetHandleByPciBusId, missing);
  ok &= resolve(h, "nvmlDeviceGetName", a.nvmlDeviceGetName, missing);
  ok &= resolve(h, "nvmlDeviceGetTotalEnergyConsumption", a.nvmlDeviceGetTotalEnergyConsumption, missing);
  ok &= resolve(h, "nvmlDeviceGetPowerUsage", a.nvmlDeviceGetPowerUsage, missing);
  ok &= resolve(h, "nvmlDeviceGetEnforcedPowerLimit", a.nvmlDeviceGetEnforcedPowerLimit, missing);
  ok &= resolve(h, "nvmlDeviceGetClockInfo", a.nvmlDeviceGetClockInfo, missing);
  resolveOptional(h, "nvmlDeviceGetTemperature", a.nvmlDeviceGetTemperature);
  return ok;
}

/**
 * Tries each candidate; the first that opens and has every symbol wins. Handles are never closed: the driver must
 * outlive every CUDA object, and the process ends soon after it stops needing the library anyway.
 */
template <typename Api, typename Resolver>
void load(const std::vector<std::string>& candidates, Loaded& out, Api& api, Resolver resolver, const char* tooOld) {
  std::string errors;
  for (const std::string& file : candidates) {
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      if (!errors.empty()) errors += "; ";
      errors += lastDlError((file + ": cannot be opened").c_str());
      continue;
    }
    Api resolved{};
    std::string missing;
    if (resolver(handle, resolved, missing)) {
      api = resolved;
      out.status.loaded = true;
      out.status.path = file;
      out.status.error.clear();
      return;
    }
    if (!errors.empty()) errors += "; ";
    errors += file + " lacks the symbol " + missing + " (" + tooOld + ")";
    if (out.status.path.empty()) out.status.path = file;
  }
  out.status.loaded = false;
  out.status.error = errors;
}

Loaded& cudaLoaded() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    load(cudaCandidates(), loaded, loaded.cuda, resolveCuda, "the NVIDIA driver is too old: CUDA 11 or newer needed");
  });
  return loaded;
}

Loaded& nvrtcLoaded() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    load(nvrtcCandidates(), loaded, loaded.nvrtc, resolveNvrtc, "NVRTC older than CUDA 11.1");
  });
  return loaded;
}

Loaded& nvmlLoaded() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    load(nvmlCandidates(), loaded, loaded.nvml, resolveNvml, "an NVIDIA driver older than Volta's (R384)");
  });
  return loaded;
}

}  // namespace

const std::vector<std::string>& cudaCandidates() {
  static const std::vector<std::string> files{"libcuda.so.1"};
  return files;
}

const std::vector<std::string>& nvrtcCandidates() {
  static const std::vector<std::string> files{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  return files;
}

const CudaApi* cudaApi() {
  Loaded& l = cudaLoaded();
  return l.status.loaded ? &l.cuda : nullptr;
}

const LibraryStatus& cudaStatus() { return cudaLoaded().status; }

const std::vector<std::string>& nvmlCandidates() {
  static const std::vector<std::string> files{"libnvidia-ml.so.1"};
  return files;
}

const NvrtcApi* nvrtcApi() {
  Loaded& l = nvrtcLoaded();
  return l.status.loaded ? &l.nvrtc : nullptr;
}

const LibraryStatus& nvrtcStatus() { return nvrtcLoaded().status; }

const NvmlApi* nvmlApi() {
  Loaded& l = nvmlLoaded();
  return l.status.loaded ? &l.nvml : nullptr;
}

const LibraryStatus& nvmlStatus() { return nvmlLoaded().status; }

}  // namespace kt
