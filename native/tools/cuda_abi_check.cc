// Compile-time proof that src/cuda_api.h matches the real cuda.h: every function pointer type has the signature of the
// exported symbol that loader.cc resolves, and every constant has the header's value. Built (never linked into the
// addon) wherever cuda.h exists; the CUDA 13.0 headers on the build machine are the reference.
#include <cuda.h>

#include "abi_same.h"
#include "cuda_api.h"

#if CUDA_VERSION < 11000
#error "the ABI check needs the headers of CUDA 11 or newer (the versioned symbols loader.cc resolves)"
#endif

namespace {

#define KT_CUDA_SAME(pfn, symbol) KT_SAME(pfn, symbol, "cuda.h")

KT_CUDA_SAME(PFN_cuGetErrorName, cuGetErrorName);
KT_CUDA_SAME(PFN_cuGetErrorString, cuGetErrorString);
KT_CUDA_SAME(PFN_cuInit, cuInit);
KT_CUDA_SAME(PFN_cuDriverGetVersion, cuDriverGetVersion);
KT_CUDA_SAME(PFN_cuDeviceGet, cuDeviceGet);
KT_CUDA_SAME(PFN_cuDeviceGetCount, cuDeviceGetCount);
KT_CUDA_SAME(PFN_cuDeviceGetName, cuDeviceGetName);
KT_CUDA_SAME(PFN_cuDeviceTotalMem, cuDeviceTotalMem_v2);
KT_CUDA_SAME(PFN_cuDeviceGetAttribute, cuDeviceGetAttribute);
KT_CUDA_SAME(PFN_cuDeviceGetPCIBusId, cuDeviceGetPCIBusId);
KT_CUDA_SAME(PFN_cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
KT_CUDA_SAME(PFN_cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
KT_CUDA_SAME(PFN_cuCtxSetCurrent, cuCtxSetCurrent);
KT_CUDA_SAME(PFN_cuCtxSynchronize, cuCtxSynchronize);
KT_CUDA_SAME(PFN_cuMemGetInfo, cuMemGetInfo_v2);
KT_CUDA_SAME(PFN_cuMemAlloc, cuMemAlloc_v2);
KT_CUDA_SAME(PFN_cuMemFree, cuMemFree_v2);
KT_CUDA_SAME(PFN_cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2);
KT_CUDA_SAME(PFN_cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2);
KT_CUDA_SAME(PFN_cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2);
KT_CUDA_SAME(PFN_cuMemsetD8Async, cuMemsetD8Async);
KT_CUDA_SAME(PFN_cuMemsetD16Async, cuMemsetD16Async);
KT_CUDA_SAME(PFN_cuMemsetD32Async, cuMemsetD32Async);
KT_CUDA_SAME(PFN_cuMemsetD2D32Async, cuMemsetD2D32Async);
KT_CUDA_SAME(PFN_cuModuleLoadData, cuModuleLoadData);
KT_CUDA_SAME(PFN_cuModuleUnload, cuModuleUnload);
KT_CUDA_SAME(PFN_cuModuleGetFunction, cuModuleGetFunction);
KT_CUDA_SAME(PFN_cuFuncGetAttribute, cuFuncGetAttribute);
KT_CUDA_SAME(PFN_cuFuncSetAttribute, cuFuncSetAttribute);
#if CUDA_VERSION >= 12040  // cuFuncGetParamInfo appeared in 12.4 (optional at run time)
KT_CUDA_SAME(PFN_cuFuncGetParamInfo, cuFuncGetParamInfo);
#endif
KT_CUDA_SAME(PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor);
KT_CUDA_SAME(PFN_cuLaunchKernel, cuLaunchKernel);
KT_CUDA_SAME(PFN_cuStreamCreate, cuStreamCreate);
KT_CUDA_SAME(PFN_cuStreamDestroy, cuStreamDestroy_v2);
KT_CUDA_SAME(PFN_cuStreamSynchronize, cuStreamSynchronize);
KT_CUDA_SAME(PFN_cuEventCreate, cuEventCreate);
KT_CUDA_SAME(PFN_cuEventRecord, cuEventRecord);
#if CUDA_VERSION >= 12080  // _v2 appeared in 12.8 with the same signature; loader.cc falls back to the plain name
KT_CUDA_SAME(PFN_cuEventElapsedTime, cuEventElapsedTime_v2);
#else
KT_CUDA_SAME(PFN_cuEventElapsedTime, cuEventElapsedTime);
#endif
KT_CUDA_SAME(PFN_cuEventDestroy, cuEventDestroy_v2);

static_assert(std::is_same_v<kt::CUdeviceptr, ::CUdeviceptr>, "CUdeviceptr differs");
static_assert(std::is_same_v<kt::CUdevice, ::CUdevice>, "CUdevice differs");
static_assert(sizeof(::CUresult) == sizeof(kt::CUresult), "CUresult size differs");

KT_VALUE(CUDA_SUCCESS);
KT_VALUE(CUDA_ERROR_INVALID_VALUE);
KT_VALUE(CUDA_ERROR_NO_DEVICE);
KT_VALUE(CUDA_ERROR_INVALID_CONTEXT);
KT_VALUE(CU_STREAM_NON_BLOCKING);
KT_VALUE(CU_EVENT_DEFAULT);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
KT_VALUE(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
KT_VALUE(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
KT_VALUE(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
KT_VALUE(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
KT_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
KT_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
KT_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
KT_VALUE(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
KT_VALUE(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
KT_VALUE(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
KT_VALUE(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
KT_VALUE(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
KT_VALUE(CU_FUNC_ATTRIBUTE_NUM_REGS);
KT_VALUE(CU_FUNC_ATTRIBUTE_PTX_VERSION);
KT_VALUE(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
KT_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);

// A deliberately wrong declaration must fail the same check (guards against a vacuous Norm).
static_assert(!kt_abi::same<CUresult (*)(size_t*, CUdevice), decltype(&::cuDeviceGetAttribute)>, "Norm is vacuous");
static_assert(!kt_abi::same<CUresult (*)(unsigned int*, size_t), decltype(&::cuMemAlloc_v2)>, "Norm is vacuous");

}  // namespace
