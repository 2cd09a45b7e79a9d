// NVML, read-only: the device that matches a CUDA device (by PCI bus id) and a sampler that watches its energy counter,
// power, clocks and temperature on a thread of its own while kernels run on the calling thread.
#pragma once

#include <napi.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "nvml_api.h"

namespace kt {

/** NVML loaded and initialised (nvmlInit once per process), or throws LIBRARY_NOT_FOUND / the NVML error. */
const NvmlApi& requireNvml(Napi::Env env);
/** The NVML device at `pciBusId` (CUDA's cuDeviceGetPCIBusId spelling), or throws the NVML error. */
nvmlDevice_t nvmlDeviceByPciBusId(Napi::Env env, const NvmlApi& api, const std::string& pciBusId);

/** One reading of the slow quantities; a field is negative when the device does not report it. */
struct NvmlSample {
  double tMs;
  double powerMw;
  double smClockMhz;
  double memClockMhz;
  double temperatureC;
};

/** The energy counter (mJ since the driver loaded) at the moment it was first seen to have changed. */
struct NvmlEnergyUpdate {
  double tMs;
  double energyMj;
};

/**
 * Polls the energy counter every `pollMs` and records each change (the driver updates it every 20-100 ms: 100 ms on
 * H100s; the moments of change bound the energy of the interval between them exactly), and every `sampleEvery` polls the power,
 * the SM and memory clocks and the temperature. Times are milliseconds since start(). Getters only.
 */
class NvmlSampler {
 public:
  NvmlSampler(const NvmlApi& api, nvmlDevice_t device) : api_(api), device_(device) {}
  ~NvmlSampler() { stop(); }
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  /** Reads the counter and starts the polling thread. */
  void start(double pollMs, int sampleEvery);
  /** Stops and joins the thread. Idempotent. */
  void stop();
  double elapsedMs() const;

  /** Whether the device has an energy counter (not before Volta, nor on some virtual GPUs). */
  bool hasCounter() const { return energyStartMj_ >= 0; }
  /** How many counter changes `updates` holds so far, readable while the thread runs. */
  int updateCount() const { return updateCount_.load(); }

  /** Why the energy counter could not be read (NVML's words), empty when it could. */
  std::string energyError;
  std::vector<NvmlEnergyUpdate> updates;
  std::vector<NvmlSample> samples;

 private:
  double readEnergyMj();
  NvmlSample sample(double tMs) const;
  void run(double pollMs, int sampleEvery);

  const NvmlApi& api_;
  nvmlDevice_t device_;
  std::chrono::steady_clock::time_point t0_;
  /** The counter when start() read it; negative without a counter. */
  double energyStartMj_ = -1;
  std::atomic<int> updateCount_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace kt
