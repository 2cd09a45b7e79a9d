// The read-only subset of NVML (libnvidia-ml.so.1, installed with the NVIDIA driver) that the addon uses: energy,
// power, clocks, temperature and the enforced power limit of one device. Declared here so that nothing includes or
// links NVML at build time; signatures follow nvml.h (checked by tools/nvml_abi_check.cc wherever that header exists).
// Only getters are declared: the tuner never changes clocks, application clocks or power limits (test/unit/
// nvml-read-only.test.ts fails the build if a setter or reset appears in native/).
#pragma once

namespace kt {

using nvmlReturn_t = int;  // enum nvmlReturn_enum
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlClockType_t = int;           // enum nvmlClockType_enum
using nvmlTemperatureSensors_t = int;  // enum nvmlTemperatureSensors_enum

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlClockType_t NVML_CLOCK_SM = 1;
constexpr nvmlClockType_t NVML_CLOCK_MEM = 2;
constexpr nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0;

extern "C" {
using PFN_nvmlInit = nvmlReturn_t (*)();
using PFN_nvmlErrorString = const char* (*)(nvmlReturn_t result);
using PFN_nvmlDeviceGetHandleByPciBusId = nvmlReturn_t (*)(const char* pciBusId, nvmlDevice_t* device);
using PFN_nvmlDeviceGetName = nvmlReturn_t (*)(nvmlDevice_t device, char* name, unsigned int length);
using PFN_nvmlDeviceGetTotalEnergyConsumption = nvmlReturn_t (*)(nvmlDevice_t device, unsigned long long* energy);
using PFN_nvmlDeviceGetPowerUsage = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* power);
using PFN_nvmlDeviceGetEnforcedPowerLimit = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* limit);
using PFN_nvmlDeviceGetClockInfo = nvmlReturn_t (*)(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock);
using PFN_nvmlDeviceGetTemperature = nvmlReturn_t (*)(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                      unsigned int* temp);
}

/** Resolved NVML entry points; every pointer is non-null except the ones marked optional. */
struct NvmlApi {
  PFN_nvmlInit nvmlInit;  // nvmlInit_v2
  PFN_nvmlErrorString nvmlErrorString;
  PFN_nvmlDeviceGetHandleByPciBusId nvmlDeviceGetHandleByPciBusId;  // nvmlDeviceGetHandleByPciBusId_v2
  PFN_nvmlDeviceGetName nvmlDeviceGetName;
  PFN_nvmlDeviceGetTotalEnergyConsumption nvmlDeviceGetTotalEnergyConsumption;
  PFN_nvmlDeviceGetPowerUsage nvmlDeviceGetPowerUsage;
  PFN_nvmlDeviceGetEnforcedPowerLimit nvmlDeviceGetEnforcedPowerLimit;
  PFN_nvmlDeviceGetClockInfo nvmlDeviceGetClockInfo;
  PFN_nvmlDeviceGetTemperature nvmlDeviceGetTemperature;  // optional: deprecated in NVML 13 (nvmlDeviceGetTemperatureV)
};

}  // namespace kt
