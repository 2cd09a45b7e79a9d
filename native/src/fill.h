// Filling device memory with a bit pattern, shared by MemFill (one fill, waited for) and Benchmark (the outputs reset
// before every timed launch, enqueued on the stream outside the launch's events).
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

#include "cuda_api.h"

namespace kt {

/** The element width of a fill: 1, 2, 4 or 8 bytes. */
uint64_t toFillElementBytes(const Napi::Value& value, const char* fn, const std::string& name);

/** A fill pattern: a BigInt of the element's width, unsigned or (two's complement) signed, e.g. 0xffffn or -1n for 2. */
uint64_t toFillPattern(const Napi::Value& value, uint64_t elementBytes, const char* fn, const std::string& name);

/** Refuses a pointer the driver's memsets cannot fill with elements of this width (cuMemsetD16/D32 need alignment). */
void checkFillAlignment(Napi::Env env, const char* fn, const std::string& name, CUdeviceptr ptr, uint64_t elementBytes);

/** Enqueues the fill of `count` elements on `stream`; on failure returns the result and sets `call` to the failed call. */
CUresult enqueueFill(const CudaApi& api, CUstream stream, CUdeviceptr ptr, uint64_t elementBytes, uint64_t pattern,
                     uint64_t count, const char*& call);

}  // namespace kt
