#include "errors.h"

#include <iterator>

#include "loader.h"

namespace kt {
namespace {

constexpr const char* kPoisoned =
    " The CUDA context is now unusable (a sticky error): every later call in this process fails the same way, so the "
    "worker process must be restarted.";

struct Explanation {
  const char* code;
  const char* text;
};

// What the common failures usually mean and what to do; anything else falls back to the driver's own description.
const Explanation kCudaExplanations[] = {
    {"CUDA_ERROR_INVALID_VALUE", "An argument of this call is out of the range the driver accepts."},
    {"CUDA_ERROR_OUT_OF_MEMORY",
     "Not enough free device memory for this request. Other processes may hold memory (see nvidia-smi); free buffers "
     "that are no longer needed or use a smaller problem size."},
    {"CUDA_ERROR_NOT_INITIALIZED", "cuInit has not been called or failed; this is a bug in the addon."},
    {"CUDA_ERROR_DEINITIALIZED", "The CUDA driver is shutting down (the process is exiting)."},
    {"CUDA_ERROR_STUB_LIBRARY",
     "libcuda.so.1 is the CUDA toolkit's stub library, not the real driver: install the NVIDIA driver and make sure the "
     "toolkit's stubs directory is not on LD_LIBRARY_PATH."},
    {"CUDA_ERROR_NO_DEVICE",
     "The NVIDIA driver is installed but sees no CUDA-capable GPU. Check nvidia-smi, CUDA_VISIBLE_DEVICES and, in a "
     "container, that it was started with GPU access (e.g. --gpus all)."},
    {"CUDA_ERROR_INVALID_DEVICE", "There is no device with this ordinal: see deviceCount()."},
    {"CUDA_ERROR_DEVICE_UNAVAILABLE",
     "The GPU is busy or unavailable, e.g. in exclusive-process compute mode and used by another process."},
    {"CUDA_ERROR_INSUFFICIENT_DRIVER",
     "The NVIDIA driver is older than this code needs: update the driver."},
    {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "The user-space driver library (libcuda) and the kernel module have different versions: reboot or reinstall the "
     "NVIDIA driver."},
    {"CUDA_ERROR_INVALID_IMAGE", "The module image is not a valid cubin or PTX for this driver."},
    {"CUDA_ERROR_INVALID_CONTEXT", "No CUDA context is current: call contextCreate(ordinal) first."},
    {"CUDA_ERROR_NO_BINARY_FOR_GPU",
     "The cubin was compiled for a different GPU architecture: compile with --gpu-architecture=sm_XY where XY is this "
     "device's compute capability (deviceInfo().computeCapability)."},
    {"CUDA_ERROR_INVALID_PTX",
     "The driver could not compile the PTX, most often because it was produced by a newer NVRTC/nvcc than the driver "
     "supports: update the NVIDIA driver, or compile to cubin (sm_XY) with a compiler no newer than the driver."},
    {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "The PTX (or cubin) was produced by a newer compiler than this driver supports (NVRTC newer than the driver): "
     "update the NVIDIA driver, or use the NVRTC that matches driverVersion()."},
    {"CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "The driver's PTX JIT compiler is missing: reinstall the NVIDIA driver."},
    {"CUDA_ERROR_INVALID_HANDLE",
     "A module, function, stream or event handle is invalid, e.g. used after it was unloaded or destroyed."},
    {"CUDA_ERROR_NOT_FOUND",
     "No kernel with this name in the module: pass the lowered (mangled) name from compile()'s loweredNames, or "
     "declare the kernel extern \"C\"."},
    {"CUDA_ERROR_NOT_READY", "Asynchronous work has not completed yet; this is a bug in the addon."},
    {"CUDA_ERROR_ILLEGAL_ADDRESS",
     "The kernel read or wrote memory outside every allocation: an index out of bounds, usually a missing bounds "
     "check, a grid larger than the data, or a wrong argument order or size."},
    {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "The block needs more registers than the multiprocessor has (registers per thread x threads per block): use a "
     "smaller block, __launch_bounds__, or -maxrregcount."},
    {"CUDA_ERROR_LAUNCH_TIMEOUT",
     "The kernel ran longer than the display watchdog allows and was stopped: it may loop forever, or this GPU also "
     "drives a display."},
    {"CUDA_ERROR_ASSERT", "A device-side assert() in the kernel failed."},
    {"CUDA_ERROR_HARDWARE_STACK_ERROR",
     "The kernel overflowed its call stack (deep recursion or large local arrays) or corrupted it."},
    {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "The kernel executed an illegal instruction."},
    {"CUDA_ERROR_MISALIGNED_ADDRESS",
     "The kernel accessed memory at an address not aligned to the access size, e.g. a float4 load from an offset "
     "that is not a multiple of 16 bytes, or a pointer argument passed as the wrong type."},
    {"CUDA_ERROR_INVALID_ADDRESS_SPACE",
     "The kernel used a generic address in the wrong memory space, e.g. a shared-memory operation on a global "
     "pointer."},
    {"CUDA_ERROR_INVALID_PC", "The kernel's program counter became invalid (corrupted code or stack)."},
    {"CUDA_ERROR_LAUNCH_FAILED", "The kernel faulted with an unspecified exception while running."},
    {"CUDA_ERROR_TENSOR_MEMORY_LEAK", "The kernel exited without freeing the tensor memory it allocated."},
    {"CUDA_ERROR_CONTEXT_IS_DESTROYED", "The CUDA context was destroyed: call contextCreate(ordinal) again."},
    {"CUDA_ERROR_NOT_PERMITTED", "The operation is not permitted in this state."},
    {"CUDA_ERROR_NOT_SUPPORTED", "This operation is not supported by this device or driver."},
    {"CUDA_ERROR_ECC_UNCORRECTABLE", "The GPU reported an uncorrectable ECC memory error: check nvidia-smi."},
    {"CUDA_ERROR_UNKNOWN", "The driver reported an unknown error."},
};

// Failures after which the context refuses all further work.
const char* const kStickyCodes[] = {
    "CUDA_ERROR_ILLEGAL_ADDRESS",    "CUDA_ERROR_LAUNCH_TIMEOUT",       "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",         "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_TENSOR_MEMORY_LEAK",
};

const Explanation kNvrtcExplanations[] = {
    {"NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC ran out of host memory."},
    {"NVRTC_ERROR_PROGRAM_CREATION_FAILURE", "NVRTC could not create the program (out of memory or a bad input)."},
    {"NVRTC_ERROR_INVALID_INPUT", "NVRTC was given an invalid input (an empty source or a null pointer)."},
    {"NVRTC_ERROR_INVALID_PROGRAM", "The NVRTC program handle is invalid; this is a bug in the addon."},
    {"NVRTC_ERROR_INVALID_OPTION",
     "NVRTC rejected a compiler option (the log names it): check its spelling, and that --gpu-architecture names an "
     "architecture this NVRTC knows (see nvrtcVersion())."},
    {"NVRTC_ERROR_COMPILATION",
     "The kernel source does not compile: the compiler log lists every error with its file(line)."},
    {"NVRTC_ERROR_BUILTIN_OPERATION_FAILURE", "An NVRTC built-in operation failed (its bundled headers may be missing)."},
    {"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", "A name expression was added after compiling; addon bug."},
    {"NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION", "A lowered name was asked before compiling; addon bug."},
    {"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
     "A name expression does not name a __global__ function of the source: check the kernel name and, for a "
     "template, its arguments (e.g. \"matmul<float, 16>\")."},
    {"NVRTC_ERROR_INTERNAL_ERROR", "NVRTC failed internally."},
};

std::string cudaName(const CudaApi& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return "CUDA_ERROR_" + std::to_string(result);
}

std::string cudaDescription(const CudaApi& api, CUresult result) {
  const char* text = nullptr;
  if (api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text != nullptr) return text;
  return "unrecognized CUresult " + std::to_string(result);
}

const char* lookup(const Explanation* begin, const Explanation* end, const std::string& code) {
  for (const Explanation* e = begin; e != end; ++e) {
    if (code == e->code) return e->text;
  }
  return nullptr;
}

bool isSticky(const std::string& code) {
  for (const char* c : kStickyCodes) {
    if (code == c) return true;
  }
  return false;
}

std::string explainCuda(const std::string& code, const std::string& call, const std::string& description) {
  // The same code means different things for different calls.
  if (call == "cuLaunchKernel" && code == "CUDA_ERROR_INVALID_VALUE") {
    return "The launch configuration exceeds a limit: threads per block above the device's or the kernel's "
           "maxThreadsPerBlock, a block or grid dimension above its maximum, dynamic shared memory above the "
           "function's limit (above 48 KiB needs functionSetMaxDynamicShared first), or a zero dimension.";
  }
  if (call == "cuFuncSetAttribute" && code == "CUDA_ERROR_INVALID_VALUE") {
    return "The requested dynamic shared memory exceeds the device's opt-in limit "
           "(maxSharedMemoryPerBlockOptin) minus the kernel's static shared memory.";
  }
  if (call == "cuMemAlloc" && code == "CUDA_ERROR_OUT_OF_MEMORY") {
    return "Not enough free device memory for this allocation: see memInfo(); other processes may hold memory.";
  }
  std::string text;
  if (const char* known = lookup(std::begin(kCudaExplanations), std::end(kCudaExplanations), code)) {
    text = known;
  } else {
    text = "The driver says: " + description + ".";
  }
  if (isSticky(code)) text += kPoisoned;
  return text;
}

void setString(Napi::Object& obj, const char* key, const std::string& value) {
  obj.Set(key, Napi::String::New(obj.Env(), value));
}

}  // namespace

Napi::Error toJsError(Napi::Env env, const ErrorInfo& info) {
  Napi::Error error;
  switch (info.kind) {
    case ErrorInfo::Kind::TypeError:
      error = Napi::TypeError::New(env, info.message);
      break;
    case ErrorInfo::Kind::RangeError:
      error = Napi::RangeError::New(env, info.message);
      break;
    case ErrorInfo::Kind::Error:
      error = Napi::Error::New(env, info.message);
      break;
  }
  Napi::Object obj = error.Value();
  setString(obj, "code", info.code);
  if (info.hasStatus) obj.Set("status", Napi::Number::New(env, info.status));
  setString(obj, "explanation", info.explanation);
  if (!info.call.empty()) setString(obj, "call", info.call);
  if (!info.library.empty()) setString(obj, "library", info.library);
  if (info.hasLog || !info.log.empty()) setString(obj, "log", info.log);
  return error;
}

void throwError(Napi::Env env, const ErrorInfo& info) { throw toJsError(env, info); }

ErrorInfo cudaErrorInfo(const CudaApi& api, CUresult result, const std::string& call) {
  ErrorInfo info;
  info.code = cudaName(api, result);
  info.hasStatus = true;
  info.status = result;
  info.call = call;
  const std::string description = cudaDescription(api, result);
  info.explanation = explainCuda(info.code, call, description);
  info.message = call + " failed: " + info.code + " (" + description + "). " + info.explanation;
  return info;
}

ErrorInfo nvrtcErrorInfo(const NvrtcApi& api, nvrtcResult result, const std::string& call) {
  ErrorInfo info;
  const char* name = api.nvrtcGetErrorString(result);
  info.code = name != nullptr ? name : "NVRTC_ERROR_" + std::to_string(result);
  info.hasStatus = true;
  info.status = result;
  info.call = call;
  const char* known = lookup(std::begin(kNvrtcExplanations), std::end(kNvrtcExplanations), info.code);
  info.explanation = known != nullptr ? known : "NVRTC failed with " + info.code + ".";
  info.message = call + " failed: " + info.code + ". " + info.explanation;
  return info;
}

ErrorInfo libraryNotFoundInfo(bool cuda) {
  const LibraryStatus& status = cuda ? cudaStatus() : nvrtcStatus();
  const std::vector<std::string>& tried = cuda ? cudaCandidates() : nvrtcCandidates();
  std::string files;
  for (size_t i = 0; i < tried.size(); ++i) files += (i == 0 ? "" : ", ") + tried[i];
  ErrorInfo info;
  info.code = "LIBRARY_NOT_FOUND";
  info.library = cuda ? "libcuda" : "libnvrtc";
  if (cuda) {
    info.explanation =
        "The CUDA driver library could not be loaded (tried " + files + ": " + status.error +
        "). libcuda.so.1 is installed by the NVIDIA GPU driver, not by the CUDA toolkit: install the NVIDIA driver "
        "(e.g. the nvidia-driver or cuda-drivers package) on a machine with an NVIDIA GPU, and in a container run with "
        "GPU access (NVIDIA Container Toolkit, --gpus all).";
    info.message = "libcuda is not available (" + status.error + "): install the NVIDIA GPU driver";
  } else {
    info.explanation =
        "NVRTC, the CUDA runtime compiler, could not be loaded (tried " + files + ": " + status.error +
        "). Install the CUDA toolkit's NVRTC (e.g. apt install cuda-nvrtc-13-0, or pip install nvidia-cuda-nvrtc) and "
        "put the directory that holds libnvrtc.so.* on LD_LIBRARY_PATH (e.g. /usr/local/cuda/lib64).";
    info.message = "libnvrtc is not available (" + status.error +
                   "): install the CUDA toolkit's NVRTC and put its directory on LD_LIBRARY_PATH";
  }
  return info;
}

ErrorInfo invalidArgumentInfo(const std::string& message, ErrorInfo::Kind kind) {
  ErrorInfo info;
  info.kind = kind;
  info.code = "INVALID_ARGUMENT";
  info.message = message;
  info.explanation = "The addon was called with an argument it does not accept; this is a bug in the caller.";
  return info;
}

ErrorInfo noContextInfo(const std::string& call) {
  ErrorInfo info;
  info.code = "CUDA_ERROR_INVALID_CONTEXT";
  info.hasStatus = true;
  info.status = CUDA_ERROR_INVALID_CONTEXT;
  info.call = call;
  info.explanation = "No CUDA context: call contextCreate(ordinal) first.";
  info.message = call + ": no CUDA context. " + info.explanation;
  return info;
}

const CudaApi& requireCuda(Napi::Env env) {
  const CudaApi* api = cudaApi();
  if (api == nullptr) throwError(env, libraryNotFoundInfo(true));
  return *api;
}

const NvrtcApi& requireNvrtc(Napi::Env env) {
  const NvrtcApi* api = nvrtcApi();
  if (api == nullptr) throwError(env, libraryNotFoundInfo(false));
  return *api;
}

}  // namespace kt
