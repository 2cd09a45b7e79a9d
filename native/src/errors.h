// Errors as the contract describes them (NativeErrorFields): JS Errors created at the call site, carrying the CUDA or
// NVRTC enum name, the numeric status, the failing call and a plain explanation. ErrorInfo is a plain struct so that
// the compile worker can build one off the JS thread and turn it into a JS Error later.
#pragma once

#include <napi.h>

#include <string>

#include "cuda_api.h"

namespace kt {

struct ErrorInfo {
  enum class Kind { Error, TypeError, RangeError };
  Kind kind = Kind::Error;
  std::string message;
  std::string code;
  std::string explanation;
  std::string call;     // empty: not set on the JS object
  std::string library;  // "libcuda" / "libnvrtc", empty: not set
  std::string log;      // compile log, empty: not set
  bool hasStatus = false;
  int status = 0;
  bool hasLog = false;  // set `log` even when empty (compile failures always carry it)
};

Napi::Error toJsError(Napi::Env env, const ErrorInfo& info);
[[noreturn]] void throwError(Napi::Env env, const ErrorInfo& info);

ErrorInfo cudaErrorInfo(const CudaApi& api, CUresult result, const std::string& call);
/** Safe on any thread (used by the compile worker). */
ErrorInfo nvrtcErrorInfo(const NvrtcApi& api, nvrtcResult result, const std::string& call);
ErrorInfo libraryNotFoundInfo(bool cuda);
/** An argument that fails validation: code INVALID_ARGUMENT, a TypeError unless a RangeError is asked for. */
ErrorInfo invalidArgumentInfo(const std::string& message, ErrorInfo::Kind kind = ErrorInfo::Kind::TypeError);
/** A CUDA call attempted without a context: CUDA's own CUDA_ERROR_INVALID_CONTEXT, explained. */
ErrorInfo noContextInfo(const std::string& call);

/** The loaded driver API, or throws LIBRARY_NOT_FOUND. */
const CudaApi& requireCuda(Napi::Env env);
/** The loaded NVRTC, or throws LIBRARY_NOT_FOUND. */
const NvrtcApi& requireNvrtc(Napi::Env env);

inline void checkCuda(Napi::Env env, const CudaApi& api, CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) throwError(env, cudaErrorInfo(api, result, call));
}

[[noreturn]] inline void throwInvalidArgument(Napi::Env env, const std::string& message,
                                              ErrorInfo::Kind kind = ErrorInfo::Kind::TypeError) {
  throwError(env, invalidArgumentInfo(message, kind));
}

}  // namespace kt
