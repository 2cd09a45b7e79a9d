// Module entry: the exports of src/gpu/native-types.ts (NativeAddon). Loading the addon loads no CUDA library;
// libcuda and NVRTC are opened on first use.
#include <napi.h>

#include "api.h"
#include "constant_memory.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  struct Entry {
    const char* name;
    Napi::Value (*fn)(const Napi::CallbackInfo&);
  };
  const Entry entries[] = {
      {"status", kt::Status},
      {"driverVersion", kt::DriverVersion},
      {"nvrtcVersion", kt::NvrtcVersion},
      {"deviceCount", kt::DeviceCount},
      {"deviceInfo", kt::DeviceInfo},
      {"compile", kt::Compile},
      {"contextCreate", kt::ContextCreate},
      {"contextDestroy", kt::ContextDestroy},
      {"synchronize", kt::Synchronize},
      {"memInfo", kt::MemInfo},
      {"moduleLoad", kt::ModuleLoad},
      {"moduleUnload", kt::ModuleUnload},
      {"moduleGetFunction", kt::ModuleGetFunction},
      {"functionAttributes", kt::FunctionAttributes},
      {"functionOccupancy", kt::FunctionOccupancy},
      {"functionSetMaxDynamicShared", kt::FunctionSetMaxDynamicShared},
      {"memAlloc", kt::MemAlloc},
      {"memFree", kt::MemFree},
      {"memUpload", kt::MemUpload},
      {"memDownload", kt::MemDownload},
      {"memFill", kt::MemFill},
      {"memCopy", kt::MemCopy},
      {"moduleCopyToGlobal", kt::ModuleCopyToGlobal},
      {"memCopyBenchmark", kt::MemCopyBenchmark},
      {"launch", kt::Launch},
      {"benchmark", kt::Benchmark},
      {"energyBenchmark", kt::EnergyBenchmark},
      {"nvmlSnapshot", kt::NvmlSnapshot},
  };
  for (const Entry& e : entries) exports.Set(e.name, Napi::Function::New(env, e.fn, e.name));
  // A worker_thread (or an embedder) that ends without contextDestroy still gives its device memory back.
  env.AddCleanupHook([env] { kt::ReleaseContextAtExit(env); });
  return exports;
}

}  // namespace

NODE_API_MODULE(kernel_tuner_native, Init)
