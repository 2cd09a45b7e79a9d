// The addon's exports (see src/gpu/native-types.ts, NativeAddon), one function per JS entry point.
#pragma once

#include <napi.h>

namespace kt {

// device.cc
Napi::Value Status(const Napi::CallbackInfo& info);
Napi::Value DriverVersion(const Napi::CallbackInfo& info);
Napi::Value NvrtcVersion(const Napi::CallbackInfo& info);
Napi::Value DeviceCount(const Napi::CallbackInfo& info);
Napi::Value DeviceInfo(const Napi::CallbackInfo& info);

// compile.cc
Napi::Value Compile(const Napi::CallbackInfo& info);

// context.cc
Napi::Value ContextCreate(const Napi::CallbackInfo& info);
Napi::Value ContextDestroy(const Napi::CallbackInfo& info);
Napi::Value Synchronize(const Napi::CallbackInfo& info);
Napi::Value MemInfo(const Napi::CallbackInfo& info);

// module.cc
Napi::Value ModuleLoad(const Napi::CallbackInfo& info);
Napi::Value ModuleUnload(const Napi::CallbackInfo& info);
Napi::Value ModuleGetFunction(const Napi::CallbackInfo& info);
Napi::Value FunctionAttributes(const Napi::CallbackInfo& info);
/** cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, blockSize, dynamicSharedBytes): resident blocks per SM. */
Napi::Value FunctionOccupancy(const Napi::CallbackInfo& info);
Napi::Value FunctionSetMaxDynamicShared(const Napi::CallbackInfo& info);

// memory.cc
Napi::Value MemAlloc(const Napi::CallbackInfo& info);
Napi::Value MemFree(const Napi::CallbackInfo& info);
Napi::Value MemUpload(const Napi::CallbackInfo& info);
Napi::Value MemDownload(const Napi::CallbackInfo& info);
Napi::Value MemFill(const Napi::CallbackInfo& info);
Napi::Value MemCopy(const Napi::CallbackInfo& info);
Napi::Value MemCopyBenchmark(const Napi::CallbackInfo& info);

// launch.cc
Napi::Value Launch(const Napi::CallbackInfo& info);
Napi::Value Benchmark(const Napi::CallbackInfo& info);
/** Back-to-back launches while an NvmlSampler watches the device's energy counter, power, clocks and temperature. */
Napi::Value EnergyBenchmark(const Napi::CallbackInfo& info);

// nvml.cc
/** The device's NVML readings now (name, energy counter, power, enforced power limit, clocks, temperature). */
Napi::Value NvmlSnapshot(const Napi::CallbackInfo& info);

/** Env teardown: release the context if this environment created it (worker threads, embedders). */
void ReleaseContextAtExit(Napi::Env env);

}  // namespace kt
