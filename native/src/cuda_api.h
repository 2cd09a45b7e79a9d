// The subset of the CUDA driver API and NVRTC that the addon uses, declared here so that nothing includes or links
// CUDA at build time. Types and signatures follow cuda.h / nvrtc.h of CUDA 13.0 (ABI checked against cuda.h by
// tools/cuda_abi_check.cc wherever the header exists). The functions are resolved with dlsym (loader.cc) under their
// exported, versioned names: cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2 with macros, dlsym sees no macros.
#pragma once

#include <cstddef>

namespace kt {

// ---- driver API -------------------------------------------------------------------------------------------------
using CUresult = int;  // enum cudaError_enum; enums are int-sized and returned in the same register
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUdevice_attribute = int;
using CUfunction_attribute = int;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;

constexpr unsigned int CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned int CU_EVENT_DEFAULT = 0x0;

constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111;

constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_PTX_VERSION = 5;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

extern "C" {
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char** pStr);
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char** pStr);
using PFN_cuInit = CUresult (*)(unsigned int Flags);
using PFN_cuDriverGetVersion = CUresult (*)(int* driverVersion);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int len, CUdevice dev);
using PFN_cuDeviceTotalMem = CUresult (*)(size_t* bytes, CUdevice dev);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* pi, CUdevice_attribute attrib, CUdevice dev);
using PFN_cuDeviceGetPCIBusId = CUresult (*)(char* pciBusId, int len, CUdevice dev);
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* pctx, CUdevice dev);
using PFN_cuDevicePrimaryCtxRelease = CUresult (*)(CUdevice dev);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext ctx);
using PFN_cuCtxSynchronize = CUresult (*)();
using PFN_cuMemGetInfo = CUresult (*)(size_t* free, size_t* total);
using PFN_cuMemAlloc = CUresult (*)(CUdeviceptr* dptr, size_t bytesize);
using PFN_cuMemFree = CUresult (*)(CUdeviceptr dptr);
using PFN_cuMemcpyHtoDAsync = CUresult (*)(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream);
using PFN_cuMemcpyDtoHAsync = CUresult (*)(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
using PFN_cuMemcpyDtoDAsync = CUresult (*)(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
using PFN_cuMemsetD8Async = CUresult (*)(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
using PFN_cuMemsetD16Async = CUresult (*)(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
using PFN_cuMemsetD32Async = CUresult (*)(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
using PFN_cuMemsetD2D32Async = CUresult (*)(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                            size_t Height, CUstream hStream);
using PFN_cuModuleLoadData = CUresult (*)(CUmodule* module, const void* image);
using PFN_cuModuleUnload = CUresult (*)(CUmodule hmod);
using PFN_cuModuleGetFunction = CUresult (*)(CUfunction* hfunc, CUmodule hmod, const char* name);
using PFN_cuFuncGetAttribute = CUresult (*)(int* pi, CUfunction_attribute attrib, CUfunction hfunc);
using PFN_cuFuncSetAttribute = CUresult (*)(CUfunction hfunc, CUfunction_attribute attrib, int value);
using PFN_cuFuncGetParamInfo = CUresult (*)(CUfunction func, size_t paramIndex, size_t* paramOffset, size_t* paramSize);
using PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor = CUresult (*)(int* numBlocks, CUfunction func, int blockSize,
                                                                     size_t dynamicSMemSize);
using PFN_cuLaunchKernel = CUresult (*)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
using PFN_cuStreamCreate = CUresult (*)(CUstream* phStream, unsigned int Flags);
using PFN_cuStreamDestroy = CUresult (*)(CUstream hStream);
using PFN_cuStreamSynchronize = CUresult (*)(CUstream hStream);
using PFN_cuEventCreate = CUresult (*)(CUevent* phEvent, unsigned int Flags);
using PFN_cuEventRecord = CUresult (*)(CUevent hEvent, CUstream hStream);
using PFN_cuEventElapsedTime = CUresult (*)(float* pMilliseconds, CUevent hStart, CUevent hEnd);
using PFN_cuEventDestroy = CUresult (*)(CUevent hEvent);
}

/** Resolved driver entry points; every pointer is non-null except the ones marked optional. */
struct CudaApi {
  PFN_cuGetErrorName cuGetErrorName;
  PFN_cuGetErrorString cuGetErrorString;
  PFN_cuInit cuInit;
  PFN_cuDriverGetVersion cuDriverGetVersion;
  PFN_cuDeviceGet cuDeviceGet;
  PFN_cuDeviceGetCount cuDeviceGetCount;
  PFN_cuDeviceGetName cuDeviceGetName;
  PFN_cuDeviceTotalMem cuDeviceTotalMem;            // cuDeviceTotalMem_v2
  PFN_cuDeviceGetAttribute cuDeviceGetAttribute;
  PFN_cuDeviceGetPCIBusId cuDeviceGetPCIBusId;
  PFN_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain;
  PFN_cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease;  // cuDevicePrimaryCtxRelease_v2
  PFN_cuCtxSetCurrent cuCtxSetCurrent;
  PFN_cuCtxSynchronize cuCtxSynchronize;
  PFN_cuMemGetInfo cuMemGetInfo;                    // cuMemGetInfo_v2
  PFN_cuMemAlloc cuMemAlloc;                        // cuMemAlloc_v2
  PFN_cuMemFree cuMemFree;                          // cuMemFree_v2
  PFN_cuMemcpyHtoDAsync cuMemcpyHtoDAsync;          // cuMemcpyHtoDAsync_v2
  PFN_cuMemcpyDtoHAsync cuMemcpyDtoHAsync;          // cuMemcpyDtoHAsync_v2
  PFN_cuMemcpyDtoDAsync cuMemcpyDtoDAsync;          // cuMemcpyDtoDAsync_v2
  PFN_cuMemsetD8Async cuMemsetD8Async;
  PFN_cuMemsetD16Async cuMemsetD16Async;
  PFN_cuMemsetD32Async cuMemsetD32Async;
  PFN_cuMemsetD2D32Async cuMemsetD2D32Async;
  PFN_cuModuleLoadData cuModuleLoadData;
  PFN_cuModuleUnload cuModuleUnload;
  PFN_cuModuleGetFunction cuModuleGetFunction;
  PFN_cuFuncGetAttribute cuFuncGetAttribute;
  PFN_cuFuncSetAttribute cuFuncSetAttribute;
  PFN_cuFuncGetParamInfo cuFuncGetParamInfo;        // optional: drivers >= 12.4 only
  PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor cuOccupancyMaxActiveBlocksPerMultiprocessor;
  PFN_cuLaunchKernel cuLaunchKernel;
  PFN_cuStreamCreate cuStreamCreate;
  PFN_cuStreamDestroy cuStreamDestroy;              // cuStreamDestroy_v2
  PFN_cuStreamSynchronize cuStreamSynchronize;
  PFN_cuEventCreate cuEventCreate;
  PFN_cuEventRecord cuEventRecord;
  PFN_cuEventElapsedTime cuEventElapsedTime;        // cuEventElapsedTime_v2 (12.8+), else cuEventElapsedTime
  PFN_cuEventDestroy cuEventDestroy;                // cuEventDestroy_v2
};

// ---- NVRTC ------------------------------------------------------------------------------------------------------
using nvrtcResult = int;  // enum nvrtcResult
using nvrtcProgram = struct _nvrtcProgram*;

constexpr nvrtcResult NVRTC_SUCCESS = 0;

extern "C" {
using PFN_nvrtcGetErrorString = const char* (*)(nvrtcResult result);
using PFN_nvrtcVersion = nvrtcResult (*)(int* major, int* minor);
using PFN_nvrtcCreateProgram = nvrtcResult (*)(nvrtcProgram* prog, const char* src, const char* name, int numHeaders,
                                               const char* const* headers, const char* const* includeNames);
using PFN_nvrtcDestroyProgram = nvrtcResult (*)(nvrtcProgram* prog);
using PFN_nvrtcCompileProgram = nvrtcResult (*)(nvrtcProgram prog, int numOptions, const char* const* options);
using PFN_nvrtcAddNameExpression = nvrtcResult (*)(nvrtcProgram prog, const char* const name_expression);
using PFN_nvrtcGetLoweredName = nvrtcResult (*)(nvrtcProgram prog, const char* const name_expression,
                                                const char** lowered_name);
using PFN_nvrtcGetSize = nvrtcResult (*)(nvrtcProgram prog, size_t* sizeRet);
using PFN_nvrtcGetBytes = nvrtcResult (*)(nvrtcProgram prog, char* out);
}

struct NvrtcApi {
  PFN_nvrtcGetErrorString nvrtcGetErrorString;
  PFN_nvrtcVersion nvrtcVersion;
  PFN_nvrtcCreateProgram nvrtcCreateProgram;
  PFN_nvrtcDestroyProgram nvrtcDestroyProgram;
  PFN_nvrtcCompileProgram nvrtcCompileProgram;
  PFN_nvrtcAddNameExpression nvrtcAddNameExpression;
  PFN_nvrtcGetLoweredName nvrtcGetLoweredName;
  PFN_nvrtcGetSize nvrtcGetCUBINSize;
  PFN_nvrtcGetBytes nvrtcGetCUBIN;
  PFN_nvrtcGetSize nvrtcGetPTXSize;
  PFN_nvrtcGetBytes nvrtcGetPTX;
  PFN_nvrtcGetSize nvrtcGetProgramLogSize;
  PFN_nvrtcGetBytes nvrtcGetProgramLog;
};

}  // namespace kt
