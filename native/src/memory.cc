// Device memory. Every operation is issued on the context's stream and waited for, so that its effect is visible to
// the next call whatever stream or host code comes next. Ranges are checked against the live allocations first.
#include <cstring>

#include "api.h"
#include "args.h"
#include "context.h"
#include "errors.h"
#include "fill.h"
#include "timing.h"

namespace kt {
namespace {

CUdeviceptr toPtr(const Napi::Value& v, const char* fn, const char* name) {
  return static_cast<CUdeviceptr>(toUint64BigInt(v, fn, name));
}

/** ptr + byteOffset, refusing a sum that wraps around (it could land inside an unrelated allocation). */
CUdeviceptr offsetPtr(Napi::Env env, const char* fn, CUdeviceptr ptr, uint64_t offset) {
  if (offset > ~CUdeviceptr{0} - ptr) {
    throwInvalidArgument(env, std::string(fn) + ": ptr " + hex(ptr) + " + byteOffset " + std::to_string(offset) +
                                  " overflows", ErrorInfo::Kind::RangeError);
  }
  return ptr + offset;
}

/** The bytes an ArrayBufferView (typed array, Buffer or DataView) covers. */
bool viewBytes(const Napi::Value& v, const uint8_t*& data, size_t& size) {
  if (v.IsTypedArray()) {
    const Napi::TypedArray t = v.As<Napi::TypedArray>();
    data = static_cast<const uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
    size = t.ByteLength();
    return true;
  }
  if (v.IsDataView()) {
    const Napi::DataView d = v.As<Napi::DataView>();
    data = static_cast<const uint8_t*>(d.ArrayBuffer().Data()) + d.ByteOffset();
    size = d.ByteLength();
    return true;
  }
  return false;
}

Context& lockedContext(Napi::Env env, const CudaApi& api, const char* fn, std::unique_lock<std::mutex>& lock) {
  Context& ctx = Context::instance();
  lock = std::unique_lock<std::mutex>(ctx.mutex);
  ctx.require(env, api, fn);
  return ctx;
}

/** The driver's device-to-device copy needs ranges that do not overlap (bytes > 0). */
void checkNoOverlap(Napi::Env env, const char* fn, CUdeviceptr dst, CUdeviceptr src, uint64_t bytes) {
  if (dst < src + bytes && src < dst + bytes) {
    throwInvalidArgument(env, std::string(fn) + ": the source and destination ranges overlap", ErrorInfo::Kind::RangeError);
  }
}

}  // namespace

Napi::Value MemAlloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t bytes = toInteger(info[0], "memAlloc", "bytes");
  if (bytes == 0) {
    throwInvalidArgument(env, "memAlloc: bytes must be at least 1 (CUDA has no empty allocations)",
                         ErrorInfo::Kind::RangeError);
  }
  const CudaApi& api = requireCuda(env);
  std::unique_lock<std::mutex> lock;
  Context& ctx = lockedContext(env, api, "memAlloc", lock);
  CUdeviceptr ptr = 0;
  checkCuda(env, api, api.cuMemAlloc(&ptr, static_cast<size_t>(bytes)), "cuMemAlloc");
  ctx.addAllocation(ptr, bytes);
  return Napi::BigInt::New(env, static_cast<uint64_t>(ptr));
}

Napi::Value MemFree(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CUdeviceptr ptr = toPtr(info[0], "memFree", "ptr");
  const CudaApi& api = requireCuda(env);
  std::unique_lock<std::mutex> lock;
  Context& ctx = lockedContext(env, api, "memFree", lock);
  if (!ctx.isAllocation(ptr)) {
    throwInvalidArgument(env, "memFree: ptr " + hex(ptr) + " is not the start of a live allocation (freed twice?)");
  }
  ctx.removeAllocation(ptr);  // forgotten even if the driver fails: it must not be freed twice
  checkCuda(env, api, api.cuMemFree(ptr), "cuMemFree");
  return env.Undefined();
}

Napi::Value MemUpload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CUdeviceptr ptr = toPtr(info[0], "memUpload", "ptr");
  const uint8_t* data = nullptr;
  size_t size = 0;
  if (!viewBytes(info[1], data, size)) throwExpected(info[1], "memUpload", "data", "an ArrayBufferView");
  const CUdeviceptr dst = offsetPtr(env, "memUpload", ptr, toInteger(info[2], "memUpload", "byteOffset"));
  const CudaApi& api = requireCuda(env);
  std::unique_lock<std::mutex> lock;
  Context& ctx = lockedContext(env, api, "memUpload", lock);
  ctx.checkRange(env, "memUpload", "ptr + byteOffset", dst, size);
  if (size == 0) return env.Undefined();
  // The view's memory stays valid: no JavaScript (hence no GC or detach) runs before the stream is synchronized.
  checkCuda(env, api, api.cuMemcpyHtoDAsync(dst, data, size, ctx.stream()), "cuMemcpyHtoDAsync");
  ctx.syncStream(env, api);
  return env.Undefined();
}

Napi::Value MemDownload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CUdeviceptr ptr = toPtr(info[0], "memDownload", "ptr");
  const uint64_t bytes = toInteger(info[1], "memDownload", "bytes");
  const CUdeviceptr src = offsetPtr(env, "memDownload", ptr, toInteger(info[2], "memDownload", "byteOffset"));
  const CudaApi& api = requireCuda(env);
  std::unique_lock<std::mutex> lock;
  Context& ctx = lockedContext(env, api, "memDownload", lock);
  ctx.checkRange(env, "memDownload", "ptr + byteOffset", src, bytes);
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(bytes));
  if (bytes == 0) return out;
  checkCuda(env, api, api.cuMemcpyDtoHAsync(out.Data(), src, static_cast<size_t>(bytes), ctx.stream()),
            "cuMemcpyDtoHAsync");
  ctx.syncStream(env, api);
  return out;
}

uint64_t toFillElementBytes(const Napi::Value& value, const char* fn, const std::string& name) {
  const uint64_t elementBytes = toInteger(value, fn, name, 1, 8);
  if (elementBytes != 1 && elementBytes != 2 && elementBytes != 4 && elementBytes != 8) {
    throwExpected(value, fn, name, "1, 2, 4 or 8");
  }
  return elementBytes;
}

uint64_t toFillPattern(const Napi::Value& value, uint64_t elementBytes, const char* fn, const std::string& name) {
  if (value.IsBigInt()) {
    const unsigned bits = static_cast<unsigned>(elementBytes * 8);
    bool lossless = false;
    const Napi::BigInt b = value.As<Napi::BigInt>();
    const uint64_t u = b.Uint64Value(&lossless);
    if (lossless) {
      if (bits == 64 || u < (uint64_t{1} << bits)) return u;
    } else {
      const int64_t s = b.Int64Value(&lossless);
      if (lossless && s < 0 && (bits == 64 || s >= -(int64_t{1} << (bits - 1)))) {
        return bits == 64 ? static_cast<uint64_t>(s) : static_cast<uint64_t>(s) & ((uint64_t{1} << bits) - 1);
      }
    }
  }
  const std::string what = "a bigint that fits " + std::to_string(elementBytes) + " byte(s)";
  throwExpected(value, fn, name, what.c_str());
}

void checkFillAlignment(Napi::Env env, const char* fn, const std::string& name, CUdeviceptr ptr, uint64_t elementBytes) {
  const uint64_t alignment = elementBytes < 4 ? elementBytes : 4;  // what cuMemsetD16/D32/D2D32 require
  if (ptr % alignment != 0) {
    throwInvalidArgument(env, std::string(fn) + ": " + name + " " + hex(ptr) + " is not aligned to " +
                                  std::to_string(alignment) + " bytes, as " + std::to_string(elementBytes) +
                                  "-byte elements need");
  }
}

CUresult enqueueFill(const CudaApi& api, CUstream stream, CUdeviceptr ptr, uint64_t elementBytes, uint64_t pattern,
                     uint64_t count, const char*& call) {
  switch (elementBytes) {
    case 1:
      call = "cuMemsetD8Async";
      return api.cuMemsetD8Async(ptr, static_cast<unsigned char>(pattern), count, stream);
    case 2:
      call = "cuMemsetD16Async";
      return api.cuMemsetD16Async(ptr, static_cast<unsigned short>(pattern), count, stream);
    case 4:
      call = "cuMemsetD32Async";
      return api.cuMemsetD32Async(ptr, static_cast<unsigned int>(pattern), count, stream);
    default: {
      const auto low = static_cast<unsigned int>(pattern & 0xffffffffULL);
      const auto high = static_cast<unsigned int>(pattern >> 32);
      if (low == high) {
        call = "cuMemsetD32Async";
        return api.cuMemsetD32Async(ptr, low, count * 2, stream);
      }
      // Two strided passes: a 2D memset of one 32-bit word per row, rows 8 bytes apart, for each half.
      call = "cuMemsetD2D32Async";
      const CUresult r = api.cuMemsetD2D32Async(ptr, 8, low, 1, count, stream);
      return r != CUDA_SUCCESS ? r : api.cuMemsetD2D32Async(ptr + 4, 8, high, 1, count, stream);
    }
  }
}

Napi::Value MemFill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CUdeviceptr ptr = toPtr(info[0], "memFill", "ptr");
  const uint64_t elementBytes = toFillElementBytes(info[1], "memFill", "elementBytes");
  const uint64_t pattern = toFillPattern(info[2], elementBytes, "memFill", "pattern");
  const uint64_t count = toInteger(info[3], "memFill", "count");
  const uint64_t bytes = count * elementBytes;  // count <= 2^53, so no overflow
  checkFillAlignment(env, "memFill", "ptr", ptr, elementBytes);
  const CudaApi& api = requireCuda(env);
  std::unique_lock<std::mutex> lock;
  Context& ctx = lockedContext(env, api, "memFill", lock);
  ctx.checkRange(env, "memFill", "ptr", ptr, bytes);
  if (count == 0) return env.Undefined();
  const char* call = "";
  checkCuda(env, api, enqueueFill(api, ctx.stream(), ptr, elementBytes, pattern, count, call), call);
  ctx.syncStream(env, api);
  return env.Undefined();
}

Napi::Value MemCopy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CUdeviceptr dst = toPtr(info[0], "memCopy", "dst");
  const CUdeviceptr src = toPtr(info[1], "memCopy", "src");
  const uint64_t bytes = toInteger(info[2], "memCopy", "bytes");
  const CudaApi& api = requireCuda(env);
  std::unique_lock<std::mutex> lock;
  Context& ctx = lockedContext(env, api, "memCopy", lock);
  ctx.checkRange(env, "memCopy", "dst", dst, bytes);
  ctx.checkRange(env, "memCopy", "src", src, bytes);
  if (bytes == 0) return env.Undefined();
  checkNoOverlap(env, "memCopy", dst, src, bytes);
  checkCuda(env, api, api.cuMemcpyDtoDAsync(dst, src, static_cast<size_t>(bytes), ctx.stream()), "cuMemcpyDtoDAsync");
  ctx.syncStream(env, api);
  return env.Undefined();
}

/** Times device-to-device copies (cuMemcpyDtoDAsync) between CUDA events, as Benchmark times launches: the driver's
 *  own copy is the yardstick of the device's memory bandwidth. Returns each timed copy's milliseconds, in order. */
Napi::Value MemCopyBenchmark(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "memCopyBenchmark";
  const CUdeviceptr dst = toPtr(info[0], fn, "dst");
  const CUdeviceptr src = toPtr(info[1], fn, "src");
  const uint64_t bytes = toInteger(info[2], fn, "bytes");
  const Napi::Object opts = toObject(info[3], fn, "options");
  const uint64_t warmup = toInteger(opts.Get("warmup"), fn, "options.warmup", 0, 100000);
  const uint64_t iterations = toInteger(opts.Get("iterations"), fn, "options.iterations", 1, 1000);
  const CudaApi& api = requireCuda(env);
  std::unique_lock<std::mutex> lock;
  Context& ctx = lockedContext(env, api, fn, lock);
  ctx.checkRange(env, fn, "dst", dst, bytes);
  ctx.checkRange(env, fn, "src", src, bytes);
  if (bytes == 0) throwInvalidArgument(env, std::string(fn) + ": bytes must be at least 1", ErrorInfo::Kind::RangeError);
  checkNoOverlap(env, fn, dst, src, bytes);
  const CUstream stream = ctx.stream();
  const auto copy = [&] {
    const CUresult r = api.cuMemcpyDtoDAsync(dst, src, static_cast<size_t>(bytes), stream);
    if (r != CUDA_SUCCESS) failAfterDrain(env, api, stream, r, "cuMemcpyDtoDAsync");
  };
  return toJsNumbers(env, timeOnStream(env, api, ctx, warmup, iterations, copy, [](uint64_t) {}));
}

}  // namespace kt
