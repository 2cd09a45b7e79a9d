// Library status, versions and the device inventory. None of these needs a context.
#include <climits>

#include "api.h"
#include "args.h"
#include "errors.h"
#include "loader.h"

namespace kt {
namespace {

Napi::Object libraryStatus(Napi::Env env, const LibraryStatus& s) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("loaded", Napi::Boolean::New(env, s.loaded));
  if (!s.path.empty()) out.Set("path", Napi::String::New(env, s.path));
  if (!s.loaded && !s.error.empty()) out.Set("error", Napi::String::New(env, s.error));
  return out;
}

int attribute(Napi::Env env, const CudaApi& api, CUdevice device, CUdevice_attribute attr) {
  int value = 0;
  checkCuda(env, api, api.cuDeviceGetAttribute(&value, attr, device), "cuDeviceGetAttribute");
  return value;
}

/** The clock attributes are deprecated in CUDA 13's runtime (cudaDeviceProp lost them); a driver that drops them
 *  reports an error, and 0 then means "not reported" rather than failing the whole inventory. */
int optionalAttribute(const CudaApi& api, CUdevice device, CUdevice_attribute attr) {
  int value = 0;
  return api.cuDeviceGetAttribute(&value, attr, device) == CUDA_SUCCESS ? value : 0;
}

Napi::Array numbers(Napi::Env env, std::initializer_list<double> values) {
  Napi::Array out = Napi::Array::New(env, values.size());
  uint32_t i = 0;
  for (double v : values) out.Set(i++, Napi::Number::New(env, v));
  return out;
}

}  // namespace

Napi::Value Status(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  cudaApi();  // trigger the (cached) load attempts
  nvrtcApi();
  nvmlApi();
  out.Set("cuda", libraryStatus(env, cudaStatus()));
  out.Set("nvrtc", libraryStatus(env, nvrtcStatus()));
  out.Set("nvml", libraryStatus(env, nvmlStatus()));
  return out;
}

Napi::Value DriverVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CudaApi& api = requireCuda(env);
  int version = 0;
  checkCuda(env, api, api.cuDriverGetVersion(&version), "cuDriverGetVersion");
  return Napi::Number::New(env, version);
}

Napi::Value NvrtcVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const NvrtcApi& api = requireNvrtc(env);
  int major = 0;
  int minor = 0;
  const nvrtcResult r = api.nvrtcVersion(&major, &minor);
  if (r != NVRTC_SUCCESS) throwError(env, nvrtcErrorInfo(api, r, "nvrtcVersion"));
  return numbers(env, {static_cast<double>(major), static_cast<double>(minor)});
}

Napi::Value DeviceCount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CudaApi& api = requireCuda(env);
  const CUresult init = api.cuInit(0);
  // A driver without any GPU fails cuInit with NO_DEVICE: that is a count of zero, not an error.
  if (init == CUDA_ERROR_NO_DEVICE) return Napi::Number::New(env, 0);
  checkCuda(env, api, init, "cuInit");
  int count = 0;
  checkCuda(env, api, api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  return Napi::Number::New(env, count);
}

Napi::Value DeviceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int ordinal = static_cast<int>(toInteger(info[0], "deviceInfo", "ordinal", 0, INT_MAX));
  const CudaApi& api = requireCuda(env);
  checkCuda(env, api, api.cuInit(0), "cuInit");
  CUdevice dev = 0;
  checkCuda(env, api, api.cuDeviceGet(&dev, ordinal), "cuDeviceGet");

  char name[256] = {};
  checkCuda(env, api, api.cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  size_t totalMem = 0;
  checkCuda(env, api, api.cuDeviceTotalMem(&totalMem, dev), "cuDeviceTotalMem");
  char pciBusId[64] = {};
  checkCuda(env, api, api.cuDeviceGetPCIBusId(pciBusId, sizeof pciBusId - 1, dev), "cuDeviceGetPCIBusId");
  auto attr = [&](CUdevice_attribute a) { return static_cast<double>(attribute(env, api, dev, a)); };

  Napi::Object out = Napi::Object::New(env);
  out.Set("ordinal", Napi::Number::New(env, ordinal));
  out.Set("name", Napi::String::New(env, name));
  out.Set("computeCapability", numbers(env, {attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                             attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)}));
  out.Set("multiprocessors", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)));
  out.Set("globalMemoryBytes", Napi::Number::New(env, static_cast<double>(totalMem)));
  out.Set("l2CacheBytes", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)));
  out.Set("maxThreadsPerBlock", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)));
  out.Set("maxBlockDim", numbers(env, {attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                                       attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)}));
  out.Set("maxGridDim", numbers(env, {attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                                      attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)}));
  out.Set("maxSharedMemoryPerBlock", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)));
  out.Set("maxSharedMemoryPerBlockOptin",
          Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)));
  out.Set("maxRegistersPerBlock", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)));
  out.Set("maxThreadsPerMultiprocessor", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)));
  out.Set("maxBlocksPerMultiprocessor", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)));
  out.Set("maxRegistersPerMultiprocessor",
          Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)));
  out.Set("maxSharedMemoryPerMultiprocessor",
          Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)));
  out.Set("reservedSharedMemoryPerBlock",
          Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)));
  out.Set("warpSize", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE)));
  out.Set("clockRateKHz", Napi::Number::New(env, optionalAttribute(api, dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)));
  out.Set("memoryClockRateKHz",
          Napi::Number::New(env, optionalAttribute(api, dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)));
  out.Set("memoryBusWidthBits", Napi::Number::New(env, attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)));
  out.Set("pciBusId", Napi::String::New(env, pciBusId));
  return out;
}

}  // namespace kt
