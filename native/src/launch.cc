// Kernel launches and timing. Arguments are converted and checked before any CUDA call: the driver copies each
// parameter from the pointer it is given with the size the kernel declares, so a missing argument or a scalar of
// the wrong width would read host memory it does not own or pass garbage without any error.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "api.h"
#include "args.h"
#include "context.h"
#include "errors.h"
#include "nvml.h"
#include "fill.h"
#include "timing.h"

namespace kt {
namespace {

struct DTypeInfo {
  const char* name;
  size_t bytes;
  bool isFloat;
  bool isSigned;
};

const DTypeInfo kDTypes[] = {
    {"int8", 1, false, true},    {"uint8", 1, false, false},  {"int16", 2, false, true},  {"uint16", 2, false, false},
    {"int32", 4, false, true},   {"uint32", 4, false, false}, {"int64", 8, false, true},  {"uint64", 8, false, false},
    {"float32", 4, true, true},  {"float64", 8, true, true},
};

struct KernelArgs {
  std::vector<uint64_t> slots;  // one 8-byte aligned slot per argument; a scalar occupies its first bytes
  std::vector<size_t> sizes;
  std::vector<std::string> labels;  // "int32", "buffer": for messages
  std::vector<bool> isBuffer;
  std::vector<void*> params;  // &slots[i], what cuLaunchKernel reads
};

struct LaunchSpec {
  CUfunction fn = nullptr;
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t sharedMemBytes = 0;
  KernelArgs args;
};

/** An integer scalar as its two's complement bit pattern, after checking it fits the dtype. */
uint64_t integerBits(const Napi::Value& v, const DTypeInfo& t, const char* fn, const std::string& name) {
  const unsigned bits = static_cast<unsigned>(t.bytes * 8);
  const int64_t smin = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
  const int64_t smax = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  const uint64_t umax = bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
  const std::string what = std::string("an integer that fits ") + t.name;
  if (v.IsNumber()) {
    const double d = v.As<Napi::Number>().DoubleValue();
    const bool integral = std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= static_cast<double>(kMaxSafeInteger);
    if (integral && t.isSigned && d >= static_cast<double>(smin) && d <= static_cast<double>(smax)) {
      return static_cast<uint64_t>(static_cast<int64_t>(d));
    }
    if (integral && !t.isSigned && d >= 0 && d <= static_cast<double>(umax)) return static_cast<uint64_t>(d);
  } else if (v.IsBigInt()) {
    bool lossless = false;
    const Napi::BigInt b = v.As<Napi::BigInt>();
    if (t.isSigned) {
      const int64_t s = b.Int64Value(&lossless);
      if (lossless && s >= smin && s <= smax) return static_cast<uint64_t>(s);
    } else {
      const uint64_t u = b.Uint64Value(&lossless);
      if (lossless && u <= umax) return u;
    }
  }
  throwExpected(v, fn, name, what.c_str());
}

KernelArgs readArgs(const Napi::Value& value, const char* fn) {
  if (!value.IsArray()) throwExpected(value, fn, "launch.args", "an array of NativeArg");
  const Napi::Array array = value.As<Napi::Array>();
  KernelArgs out;
  const uint32_t n = array.Length();
  out.slots.assign(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string name = "launch.args[" + std::to_string(i) + "]";
    const Napi::Object arg = toObject(array.Get(i), fn, name);
    const Napi::Value kind = arg.Get("kind");
    const std::string k = kind.IsString() ? kind.As<Napi::String>().Utf8Value() : "";
    if (k == "buffer") {
      out.slots[i] = toUint64BigInt(arg.Get("ptr"), fn, name + ".ptr");
      out.sizes.push_back(sizeof(CUdeviceptr));
      out.labels.push_back("buffer");
      out.isBuffer.push_back(true);
    } else if (k == "scalar") {
      const Napi::Value dtypeValue = arg.Get("dtype");
      const std::string dtype = dtypeValue.IsString() ? dtypeValue.As<Napi::String>().Utf8Value() : "";
      const DTypeInfo* t = nullptr;
      for (const DTypeInfo& d : kDTypes) {
        if (dtype == d.name) t = &d;
      }
      if (t == nullptr) throwExpected(dtypeValue, fn, name + ".dtype", "a DType (int8 .. uint64, float32, float64)");
      const Napi::Value v = arg.Get("value");
      uint64_t bits = 0;
      if (t->isFloat) {
        if (!v.IsNumber()) throwExpected(v, fn, name + ".value", "a number");
        const double d = v.As<Napi::Number>().DoubleValue();
        if (t->bytes == 4) {
          // A finite double beyond float's range would become infinity: refuse rather than change the value.
          if (std::isfinite(d) && std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max())) {
            throwExpected(v, fn, name + ".value", "a number within float32 range");
          }
          const float f = static_cast<float>(d);
          std::memcpy(&bits, &f, sizeof f);
        } else {
          std::memcpy(&bits, &d, sizeof d);
        }
      } else {
        bits = integerBits(v, *t, fn, name + ".value");
      }
      // Little-endian: the low bytes of the slot are the scalar's bytes.
      out.slots[i] = bits;
      out.sizes.push_back(t->bytes);
      out.labels.push_back(t->name);
      out.isBuffer.push_back(false);
    } else {
      throwExpected(kind, fn, name + ".kind", "\"buffer\" or \"scalar\"");
    }
  }
  out.params.resize(n);
  for (uint32_t i = 0; i < n; ++i) out.params[i] = &out.slots[i];
  return out;
}

LaunchSpec readLaunch(const Napi::Value& value, const char* fn) {
  const Napi::Object obj = toObject(value, fn, "launch");
  LaunchSpec spec;
  spec.fn = reinterpret_cast<CUfunction>(static_cast<uintptr_t>(toUint64BigInt(obj.Get("fn"), fn, "launch.fn")));
  spec.grid = toDim3(obj.Get("grid"), fn, "launch.grid");
  spec.block = toDim3(obj.Get("block"), fn, "launch.block");
  spec.sharedMemBytes = toUint32(obj.Get("sharedMemBytes"), fn, "launch.sharedMemBytes");
  spec.args = readArgs(obj.Get("args"), fn);
  return spec;
}

/**
 * Checks the arguments against the function: buffers must point into live allocations, and where the driver can
 * describe the kernel's parameters (cuFuncGetParamInfo, CUDA 12.4+), their number and sizes must match.
 */
void checkAgainstFunction(Napi::Env env, const CudaApi& api, Context& ctx, const LaunchSpec& spec, const char* fn) {
  FunctionInfo& f = ctx.function(env, fn, "launch.fn", spec.fn);
  const KernelArgs& a = spec.args;
  for (size_t i = 0; i < a.slots.size(); ++i) {
    if (a.isBuffer[i]) ctx.checkRange(env, fn, "launch.args[" + std::to_string(i) + "].ptr", a.slots[i], 0);
  }
  if (!f.paramsQueried) {
    f.paramsQueried = true;
    if (api.cuFuncGetParamInfo != nullptr) {
      constexpr size_t kMaxParams = 4096;  // far above any real kernel; bounds the loop
      for (size_t i = 0; i < kMaxParams; ++i) {
        size_t offset = 0;
        size_t size = 0;
        const CUresult r = api.cuFuncGetParamInfo(spec.fn, i, &offset, &size);
        if (r == CUDA_SUCCESS) {
          f.paramSizes.push_back(size);
          continue;
        }
        // INVALID_VALUE past the last parameter; anything else means the driver cannot tell, so do not check.
        f.paramsKnown = r == CUDA_ERROR_INVALID_VALUE;
        break;
      }
    }
  }
  // Zero parameters reported for a call with arguments is more likely a driver that cannot tell than a real
  // mismatch (extra arguments are harmless to the driver), so only a non-empty description is enforced.
  if (!f.paramsKnown || f.paramSizes.empty()) return;
  if (f.paramSizes.size() != a.sizes.size()) {
    throwInvalidArgument(env, std::string(fn) + ": the kernel takes " + std::to_string(f.paramSizes.size()) +
                                  " parameter(s), received " + std::to_string(a.sizes.size()) + " arg(s)");
  }
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    if (f.paramSizes[i] != a.sizes[i]) {
      throwInvalidArgument(env, std::string(fn) + ": launch.args[" + std::to_string(i) + "] is " + a.labels[i] + " (" +
                                    std::to_string(a.sizes[i]) + " bytes) but the kernel's parameter " +
                                    std::to_string(i) + " has " + std::to_string(f.paramSizes[i]) + " bytes");
    }
  }
}

CUresult launchOnce(const CudaApi& api, const LaunchSpec& s, CUstream stream) {
  void** params = s.args.params.empty() ? nullptr : const_cast<void**>(s.args.params.data());
  return api.cuLaunchKernel(s.fn, s.grid[0], s.grid[1], s.grid[2], s.block[0], s.block[1], s.block[2],
                            s.sharedMemBytes, stream, params, nullptr);
}

Napi::Object toJs(Napi::Env env, const NvmlSample& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("tMs", Napi::Number::New(env, s.tMs));
  const std::pair<const char*, double> fields[] = {
      {"powerMw", s.powerMw}, {"smClockMhz", s.smClockMhz}, {"memClockMhz", s.memClockMhz}, {"temperatureC", s.temperatureC}};
  for (const auto& [key, value] : fields) {
    if (value >= 0) o.Set(key, Napi::Number::New(env, value));
  }
  return o;
}

/** What is reset before every timed launch: an output filled with a pattern, or copied from its initial content. */
struct Reset {
  bool isFill = true;
  CUdeviceptr dst = 0;
  CUdeviceptr src = 0;  // copy
  uint64_t elementBytes = 0;  // fill
  uint64_t pattern = 0;  // fill
  uint64_t count = 0;  // fill: elements; copy: bytes
  uint64_t bytes() const { return isFill ? count * elementBytes : count; }
};

std::vector<Reset> readResets(Napi::Env env, const Napi::Value& value, const char* fn) {
  std::vector<Reset> resets;
  if (value.IsUndefined()) return resets;
  if (!value.IsArray()) throwExpected(value, fn, "options.resets", "an array of fills and copies");
  const Napi::Array array = value.As<Napi::Array>();
  for (uint32_t i = 0; i < array.Length(); ++i) {
    const std::string name = "options.resets[" + std::to_string(i) + "]";
    const Napi::Object o = toObject(array.Get(i), fn, name);
    const std::string kind = toString(o.Get("kind"), fn, name + ".kind");
    Reset r;
    if (kind == "fill") {
      r.dst = toUint64BigInt(o.Get("ptr"), fn, name + ".ptr");
      r.elementBytes = toFillElementBytes(o.Get("elementBytes"), fn, name + ".elementBytes");
      r.pattern = toFillPattern(o.Get("pattern"), r.elementBytes, fn, name + ".pattern");
      r.count = toInteger(o.Get("count"), fn, name + ".count", 1);
      checkFillAlignment(env, fn, name + ".ptr", r.dst, r.elementBytes);
    } else if (kind == "copy") {
      r.isFill = false;
      r.dst = toUint64BigInt(o.Get("dst"), fn, name + ".dst");
      r.src = toUint64BigInt(o.Get("src"), fn, name + ".src");
      r.count = toInteger(o.Get("bytes"), fn, name + ".bytes", 1);
      if (r.dst < r.src + r.count && r.src < r.dst + r.count) {
        throwInvalidArgument(env, std::string(fn) + ": " + name + ": the source and destination ranges overlap",
                             ErrorInfo::Kind::RangeError);
      }
    } else {
      throwExpected(o.Get("kind"), fn, name + ".kind", "\"fill\" or \"copy\"");
    }
    resets.push_back(r);
  }
  return resets;
}

}  // namespace

Napi::Value Launch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const LaunchSpec spec = readLaunch(info[0], "launch");
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "launch");
  checkAgainstFunction(env, api, ctx, spec, "launch");
  const CUresult r = launchOnce(api, spec, ctx.stream());
  if (r != CUDA_SUCCESS) failAfterDrain(env, api, ctx.stream(), r, "cuLaunchKernel");
  ctx.syncStream(env, api);  // surfaces the kernel's own faults (illegal address, timeout, assert ...)
  return env.Undefined();
}

Napi::Value Benchmark(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "benchmark";
  const LaunchSpec spec = readLaunch(info[0], fn);
  const Napi::Object opts = toObject(info[1], fn, "options");
  constexpr uint64_t kMaxLaunches = 1000000;
  const uint64_t warmup = toInteger(opts.Get("warmup"), fn, "options.warmup", 0, kMaxLaunches);
  const uint64_t iterations = toInteger(opts.Get("iterations"), fn, "options.iterations", 1, kMaxLaunches);
  const CUdeviceptr flushPtr = toUint64BigInt(opts.Get("flushPtr"), fn, "options.flushPtr");
  const uint64_t flushBytes = toInteger(opts.Get("flushBytes"), fn, "options.flushBytes");
  if (flushPtr != 0 && flushBytes == 0) {
    throwExpected(opts.Get("flushBytes"), fn, "options.flushBytes", "a positive integer when flushPtr is set");
  }
  const std::vector<Reset> resets = readResets(env, opts.Get("resets"), fn);
  const Napi::Value idleValue = opts.Get("idleBeforeEach");
  const bool idleBeforeEach = !idleValue.IsUndefined() && toBool(idleValue, fn, "options.idleBeforeEach");

  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, fn);
  checkAgainstFunction(env, api, ctx, spec, fn);
  if (flushPtr != 0) ctx.checkRange(env, fn, "options.flushPtr", flushPtr, flushBytes);
  for (size_t i = 0; i < resets.size(); ++i) {
    const Reset& r = resets[i];
    const std::string name = "options.resets[" + std::to_string(i) + "]";
    ctx.checkRange(env, fn, name + (r.isFill ? ".ptr" : ".dst"), r.dst, r.bytes());
    if (!r.isFill) ctx.checkRange(env, fn, name + ".src", r.src, r.bytes());
  }
  const CUstream stream = ctx.stream();
  const auto launch = [&] {
    const CUresult r = launchOnce(api, spec, stream);
    if (r != CUDA_SUCCESS) failAfterDrain(env, api, stream, r, "cuLaunchKernel");
  };
  const auto beforeTimed = [&](uint64_t i) {
    // Every timed launch starts from reset outputs, so what it leaves there is its own work (resets first: the L2
    // flush below then evicts them too).
    for (const Reset& reset : resets) {
      const char* call = "cuMemcpyDtoDAsync";
      const CUresult r = reset.isFill
                             ? enqueueFill(api, stream, reset.dst, reset.elementBytes, reset.pattern, reset.count, call)
                             : api.cuMemcpyDtoDAsync(reset.dst, reset.src, static_cast<size_t>(reset.count), stream);
      if (r != CUDA_SUCCESS) failAfterDrain(env, api, stream, r, call);
    }
    if (flushPtr != 0) {
      // Overwrites more than L2 holds, so the launch starts from cold caches; a changing value defeats any elision of
      // identical writes.
      const CUresult r = api.cuMemsetD8Async(flushPtr, static_cast<unsigned char>(i & 0xff), flushBytes, stream);
      if (r != CUDA_SUCCESS) failAfterDrain(env, api, stream, r, "cuMemsetD8Async");
    }
    // As Kernel Tuner times: the start event is recorded on an idle GPU, so the launch's way from the host is timed too.
    if (idleBeforeEach) ctx.syncStream(env, api);
  };
  return toJsNumbers(env, timeOnStream(env, api, ctx, warmup, iterations, launch, beforeTimed));
}

Napi::Value EnergyBenchmark(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "energyBenchmark";
  const LaunchSpec spec = readLaunch(info[0], fn);
  const Napi::Object opts = toObject(info[1], fn, "options");
  const uint64_t batch = toInteger(opts.Get("batch"), fn, "options.batch", 1, 1000000);
  const double windowMs = static_cast<double>(toInteger(opts.Get("windowMs"), fn, "options.windowMs", 1, 600000));
  const double maxWindowMs = static_cast<double>(toInteger(opts.Get("maxWindowMs"), fn, "options.maxWindowMs", 1, 600000));
  const int minUpdates = static_cast<int>(toInteger(opts.Get("minUpdates"), fn, "options.minUpdates", 0, 1000));
  const std::string pciBusId = toString(opts.Get("pciBusId"), fn, "options.pciBusId");
  const double pollMs = static_cast<double>(toInteger(opts.Get("pollMs"), fn, "options.pollMs", 1, 100));
  const int sampleEvery = static_cast<int>(toInteger(opts.Get("sampleEvery"), fn, "options.sampleEvery", 1, 1000));

  const CudaApi& api = requireCuda(env);
  const NvmlApi& nvml = requireNvml(env);
  nvmlDevice_t device = nvmlDeviceByPciBusId(env, nvml, pciBusId);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, fn);
  checkAgainstFunction(env, api, ctx, spec, fn);
  const CUstream stream = ctx.stream();

  // Back-to-back launches, no events and no cache flush, in batches until the GPU has run them for windowMs and the
  // energy counter has changed minUpdates times (or maxWindowMs has passed). The stream is drained after each batch,
  // so the window is the time the GPU ran, not how long the host took to enqueue (a launch count taken from the
  // kernel's cold-cache time leaves a window of a third of the wanted length once the caches are warm), at the cost
  // of a few microseconds' pause per batch.
  NvmlSampler sampler(nvml, device);
  sampler.start(pollMs, sampleEvery);
  uint64_t launches = 0;
  double elapsedMs = 0;
  for (;;) {
    for (uint64_t i = 0; i < batch; ++i) {
      const CUresult r = launchOnce(api, spec, stream);
      if (r != CUDA_SUCCESS) {
        sampler.stop();
        failAfterDrain(env, api, stream, r, "cuLaunchKernel");
      }
    }
    launches += batch;
    const CUresult synced = api.cuStreamSynchronize(stream);
    elapsedMs = sampler.elapsedMs();
    if (synced != CUDA_SUCCESS) {
      sampler.stop();
      checkCuda(env, api, synced, "cuStreamSynchronize");
    }
    const bool counted = !sampler.hasCounter() || sampler.updateCount() >= minUpdates;
    if (elapsedMs >= maxWindowMs || (elapsedMs >= windowMs && counted)) break;
  }
  sampler.stop();

  Napi::Object out = Napi::Object::New(env);
  out.Set("launches", Napi::Number::New(env, static_cast<double>(launches)));
  out.Set("elapsedMs", Napi::Number::New(env, elapsedMs));
  if (!sampler.energyError.empty()) out.Set("energyError", Napi::String::New(env, sampler.energyError));
  Napi::Array updates = Napi::Array::New(env, sampler.updates.size());
  for (size_t i = 0; i < sampler.updates.size(); ++i) {
    Napi::Object u = Napi::Object::New(env);
    u.Set("tMs", Napi::Number::New(env, sampler.updates[i].tMs));
    u.Set("energyMj", Napi::Number::New(env, sampler.updates[i].energyMj));
    updates.Set(static_cast<uint32_t>(i), u);
  }
  out.Set("updates", updates);
  Napi::Array samples = Napi::Array::New(env, sampler.samples.size());
  for (size_t i = 0; i < sampler.samples.size(); ++i) samples.Set(static_cast<uint32_t>(i), toJs(env, sampler.samples[i]));
  out.Set("samples", samples);
  return out;
}

}  // namespace kt
