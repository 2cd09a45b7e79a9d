// NVML (read-only): loading and initialising it, finding the device of a CUDA device, a snapshot of its sensors and the
// sampler that watches them while kernels run. Nothing here changes the GPU: only NVML's getters are declared
// (nvml_api.h), so clocks, application clocks and power limits stay exactly as the machine's owner set them.
#include "nvml.h"

#include <iterator>
#include <mutex>

#include "api.h"
#include "args.h"
#include "errors.h"
#include "loader.h"

namespace kt {
namespace {

struct NvmlCode {
  nvmlReturn_t value;
  const char* name;
  const char* explanation;
};

const NvmlCode kNvmlCodes[] = {
    {1, "NVML_ERROR_UNINITIALIZED", "NVML was not initialised; this is a bug in the addon."},
    {2, "NVML_ERROR_INVALID_ARGUMENT", "NVML was given an invalid argument (a PCI bus id it cannot parse?)."},
    {3, "NVML_ERROR_NOT_SUPPORTED", "This GPU does not report this quantity through NVML."},
    {4, "NVML_ERROR_NO_PERMISSION", "This user may not query the GPU through NVML."},
    {6, "NVML_ERROR_NOT_FOUND", "NVML knows no GPU at this PCI bus id (is the CUDA device a MIG instance or remote?)."},
    {9, "NVML_ERROR_DRIVER_NOT_LOADED", "The NVIDIA kernel driver is not loaded."},
    {12, "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML could not load the driver's own libraries."},
    {15, "NVML_ERROR_GPU_IS_LOST", "The GPU has fallen off the bus or is otherwise inaccessible."},
    {18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "libnvidia-ml and the kernel driver have different versions: reboot or reinstall the NVIDIA driver."},
    {999, "NVML_ERROR_UNKNOWN", "NVML reported an unknown error."},
};

ErrorInfo nvmlErrorInfo(const NvmlApi& api, nvmlReturn_t result, const std::string& call) {
  ErrorInfo info;
  info.code = "NVML_ERROR_" + std::to_string(result);
  info.explanation = "NVML failed.";
  for (const NvmlCode& c : kNvmlCodes) {
    if (c.value == result) {
      info.code = c.name;
      info.explanation = c.explanation;
    }
  }
  info.hasStatus = true;
  info.status = result;
  info.call = call;
  info.library = "libnvidia-ml";
  const char* text = api.nvmlErrorString(result);
  info.message = call + " failed: " + info.code + " (" + (text != nullptr ? text : "no description") + "). " +
                 info.explanation;
  return info;
}

ErrorInfo nvmlNotFoundInfo() {
  ErrorInfo info;
  info.code = "LIBRARY_NOT_FOUND";
  info.library = "libnvidia-ml";
  info.explanation =
      "libnvidia-ml.so.1 (NVML) is installed with the NVIDIA driver; without it energy, power, clocks and temperature "
      "cannot be read. Install the NVIDIA driver, and in a container run with GPU access (--gpus all).";
  info.message = "NVML is not available (" + nvmlStatus().error + ")";
  return info;
}

/** A getter's reading as a JS number, or its error's code name in `unsupported[key]`. */
template <typename Read>
void setReading(Napi::Object& out, Napi::Object& unsupported, const NvmlApi& api, const char* key, Read read) {
  unsigned long long value = 0;
  const nvmlReturn_t r = read(&value);
  if (r == NVML_SUCCESS) {
    out.Set(key, Napi::Number::New(out.Env(), static_cast<double>(value)));
  } else {
    unsupported.Set(key, Napi::String::New(out.Env(), nvmlErrorInfo(api, r, key).code));
  }
}

}  // namespace

const NvmlApi& requireNvml(Napi::Env env) {
  const NvmlApi* api = nvmlApi();
  if (api == nullptr) throwError(env, nvmlNotFoundInfo());
  // nvmlInit_v2 is reference counted; once per process is enough, and NVML stays initialised until exit.
  static std::once_flag once;
  static nvmlReturn_t init = NVML_SUCCESS;
  std::call_once(once, [api] { init = api->nvmlInit(); });
  if (init != NVML_SUCCESS) throwError(env, nvmlErrorInfo(*api, init, "nvmlInit_v2"));
  return *api;
}

nvmlDevice_t nvmlDeviceByPciBusId(Napi::Env env, const NvmlApi& api, const std::string& pciBusId) {
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t r = api.nvmlDeviceGetHandleByPciBusId(pciBusId.c_str(), &device);
  if (r != NVML_SUCCESS) throwError(env, nvmlErrorInfo(api, r, "nvmlDeviceGetHandleByPciBusId_v2(" + pciBusId + ")"));
  return device;
}

// ---- sampler ----------------------------------------------------------------------------------------------------

double NvmlSampler::elapsedMs() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
}

double NvmlSampler::readEnergyMj() {
  unsigned long long mj = 0;
  const nvmlReturn_t r = api_.nvmlDeviceGetTotalEnergyConsumption(device_, &mj);
  if (r != NVML_SUCCESS) {
    if (energyError.empty()) energyError = nvmlErrorInfo(api_, r, "nvmlDeviceGetTotalEnergyConsumption").message;
    return -1;
  }
  return static_cast<double>(mj);
}

NvmlSample NvmlSampler::sample(double tMs) const {
  // The getter runs first, then its output is read: as two arguments of one call, the order of the two is unspecified
  // (GCC copies the value before the call writes it).
  auto read = [](auto&& getter) {
    unsigned int v = 0;
    return getter(&v) == NVML_SUCCESS ? static_cast<double>(v) : -1.0;
  };
  NvmlSample s{tMs, -1, -1, -1, -1};
  s.powerMw = read([&](unsigned int* v) { return api_.nvmlDeviceGetPowerUsage(device_, v); });
  s.smClockMhz = read([&](unsigned int* v) { return api_.nvmlDeviceGetClockInfo(device_, NVML_CLOCK_SM, v); });
  s.memClockMhz = read([&](unsigned int* v) { return api_.nvmlDeviceGetClockInfo(device_, NVML_CLOCK_MEM, v); });
  if (api_.nvmlDeviceGetTemperature != nullptr) {
    s.temperatureC = read([&](unsigned int* v) { return api_.nvmlDeviceGetTemperature(device_, NVML_TEMPERATURE_GPU, v); });
  }
  return s;
}

void NvmlSampler::start(double pollMs, int sampleEvery) {
  energyStartMj_ = readEnergyMj();
  t0_ = std::chrono::steady_clock::now();
  stopping_ = false;
  thread_ = std::thread([this, pollMs, sampleEvery] { run(pollMs, sampleEvery); });
}

void NvmlSampler::run(double pollMs, int sampleEvery) {
  double last = energyStartMj_;
  for (long long i = 0; !stopping_.load(); ++i) {
    const double t = elapsedMs();
    if (hasCounter()) {
      unsigned long long mj = 0;
      if (api_.nvmlDeviceGetTotalEnergyConsumption(device_, &mj) == NVML_SUCCESS && static_cast<double>(mj) != last) {
        last = static_cast<double>(mj);
        updates.push_back({t, last});
        ++updateCount_;
      }
    }
    if (i % sampleEvery == 0) samples.push_back(sample(t));
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pollMs));
  }
}

void NvmlSampler::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  thread_.join();
}

// ---- exports ----------------------------------------------------------------------------------------------------

Napi::Value NvmlSnapshot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string pciBusId = toString(info[0], "nvmlSnapshot", "pciBusId");
  const NvmlApi& api = requireNvml(env);
  nvmlDevice_t device = nvmlDeviceByPciBusId(env, api, pciBusId);
  Napi::Object out = Napi::Object::New(env);
  Napi::Object unsupported = Napi::Object::New(env);
  char name[96] = {};
  if (api.nvmlDeviceGetName(device, name, sizeof name) == NVML_SUCCESS) out.Set("name", Napi::String::New(env, name));
  // A 32-bit getter's reading widened into `out` after the getter ran (see NvmlSampler::sample on argument order).
  auto u32 = [](unsigned long long* out, auto&& getter) {
    unsigned int v = 0;
    const nvmlReturn_t r = getter(&v);
    *out = v;
    return r;
  };
  setReading(out, unsupported, api, "energyMj", [&](unsigned long long* v) {
    return api.nvmlDeviceGetTotalEnergyConsumption(device, v);
  });
  setReading(out, unsupported, api, "powerMw", [&](unsigned long long* v) {
    return u32(v, [&](unsigned int* x) { return api.nvmlDeviceGetPowerUsage(device, x); });
  });
  setReading(out, unsupported, api, "powerLimitMw", [&](unsigned long long* v) {
    return u32(v, [&](unsigned int* x) { return api.nvmlDeviceGetEnforcedPowerLimit(device, x); });
  });
  setReading(out, unsupported, api, "smClockMhz", [&](unsigned long long* v) {
    return u32(v, [&](unsigned int* x) { return api.nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM, x); });
  });
  setReading(out, unsupported, api, "memClockMhz", [&](unsigned long long* v) {
    return u32(v, [&](unsigned int* x) { return api.nvmlDeviceGetClockInfo(device, NVML_CLOCK_MEM, x); });
  });
  if (api.nvmlDeviceGetTemperature != nullptr) {
    setReading(out, unsupported, api, "temperatureC", [&](unsigned long long* v) {
      return u32(v, [&](unsigned int* x) { return api.nvmlDeviceGetTemperature(device, NVML_TEMPERATURE_GPU, x); });
    });
  } else {
    unsupported.Set("temperatureC", Napi::String::New(env, "FUNCTION_NOT_FOUND"));
  }
  out.Set("unsupported", unsupported);
  return out;
}

}  // namespace kt
