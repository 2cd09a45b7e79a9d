// Timing work on the context's stream between CUDA events, shared by Benchmark (kernel launches) and MemCopyBenchmark
// (the driver's device-to-device copy), so that both measure alike.
#pragma once

#include <napi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "context.h"
#include "errors.h"

namespace kt {

/** Reports `result`, first draining the stream so that no queued work outlives the call (its errors are ignored:
 *  the first failure is the one to report). */
[[noreturn]] inline void failAfterDrain(Napi::Env env, const CudaApi& api, CUstream stream, CUresult result,
                                        const char* call) {
  const ErrorInfo info = cudaErrorInfo(api, result, call);
  api.cuStreamSynchronize(stream);
  throwError(env, info);
}

/**
 * `run()` enqueued `warmup` times untimed, then `iterations` times each between its own pair of events; returns each
 * timed run's milliseconds, in order. `beforeTimed(i)` enqueues what must precede timed run i outside its events.
 * Both report their own failures (failAfterDrain). The caller holds the context's lock.
 */
template <typename Run, typename BeforeTimed>
std::vector<double> timeOnStream(Napi::Env env, const CudaApi& api, Context& ctx, uint64_t warmup,
                                 uint64_t iterations, Run run, BeforeTimed beforeTimed) {
  const CUstream stream = ctx.stream();
  for (uint64_t i = 0; i < warmup; ++i) run();

  // Timed runs in chunks: each iteration has its own event pair, so nothing waits between runs; the chunk bounds the
  // event pool. Waiting between chunks adds idle time outside the events only.
  constexpr uint64_t kChunk = 512;
  const std::vector<CUevent>& events = ctx.events(env, api, 2 * static_cast<size_t>(std::min(iterations, kChunk)));
  std::vector<double> samples;
  samples.reserve(iterations);
  for (uint64_t begin = 0; begin < iterations; begin += kChunk) {
    const uint64_t n = std::min(kChunk, iterations - begin);
    for (uint64_t j = 0; j < n; ++j) {
      beforeTimed(begin + j);
      CUresult r = api.cuEventRecord(events[2 * j], stream);
      if (r != CUDA_SUCCESS) failAfterDrain(env, api, stream, r, "cuEventRecord");
      run();
      r = api.cuEventRecord(events[2 * j + 1], stream);
      if (r != CUDA_SUCCESS) failAfterDrain(env, api, stream, r, "cuEventRecord");
    }
    ctx.syncStream(env, api);
    for (uint64_t j = 0; j < n; ++j) {
      float ms = 0;
      checkCuda(env, api, api.cuEventElapsedTime(&ms, events[2 * j], events[2 * j + 1]), "cuEventElapsedTime");
      samples.push_back(ms);
    }
  }
  return samples;
}

inline Napi::Array toJsNumbers(Napi::Env env, const std::vector<double>& values) {
  Napi::Array out = Napi::Array::New(env, values.size());
  for (size_t i = 0; i < values.size(); ++i) out.Set(static_cast<uint32_t>(i), Napi::Number::New(env, values[i]));
  return out;
}

}  // namespace kt
